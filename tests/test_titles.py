"""Title recognition: which films a text refers to, and whether it recommends or only mentions them.

Hand-written sentences for each rule, then the hand-labelled real replies of the thesis logs.
"""

import json

import pandas as pd
import pytest
from conftest import REFERENCE_LOGS, REPO

from crseval.language.title_labels import evaluate, load_labels
from crseval.language.titles import TitleRecognizer

LABELS = REPO / "tests" / "data" / "title_labels" / "labels.jsonl"

FILMS = pd.DataFrame(
    {
        "title": [
            "1984",
            "Stoker",
            "War",
            "Her",
            "Titanic",
            "The Queen",
            "X-Men",
            "Heat",
            "Casino",
            "London",
            "Aladdin",
            "The Dark Knight",
            "Juno",
            "Monsters, Inc.",
            "Amélie",
            "Emma",
            "Antwone Fisher",
        ],
        "actor": [
            [],
            [],
            [],
            [],
            [],
            ["Helen Mirren"],
            [],
            [],
            [],
            [],
            [],
            [],
            ["Juno Temple", "Emma Stone"],
            [],
            [],
            [],
            [],
        ],
        "director": [[], [], [], [], [], [], [], [], [], [], [], [], [], [], [], [], []],
        "writer": [[], [], [], [], [], [], [], [], [], [], ["Bram Stoker"], [], [], [], [], [], ["Antwone Fisher"]],
    }
)


@pytest.fixture(scope="module")
def recognizer():
    return TitleRecognizer(FILMS)


def found(recognizer, text, **kwargs):
    result = recognizer.recognise(text, **kwargs)
    return result.recommended, result.mentioned


def test_titles_are_classified_by_what_else_they_could_be(recognizer):
    assert recognizer.kind["1984"] == "number"
    assert recognizer.kind["Stoker"] == "name" and recognizer.kind["Juno"] == "name"
    assert recognizer.kind["War"] == "common" and recognizer.kind["Her"] == "common"
    assert recognizer.kind["Titanic"] == "plain" and recognizer.kind["The Dark Knight"] == "plain"
    assert recognizer.quoted("1984") == '"1984"' and recognizer.quoted("Titanic") == "Titanic"


@pytest.mark.parametrize(
    "text",
    [
        "Something from 1984, please.",  # a year
        "A gothic novel written by Bram Stoker.",  # part of a name
        "Her performance is wonderful.",  # a pronoun at the start of a sentence
        "It is set during World War II.",  # part of a longer name
        "X-Men: First Class is a fine prequel.",  # a longer title than the catalog's
        "The story is set in London.",  # a place
        "Scott Weinger stars as Aladdin.",  # a character
        "Emma Stone and Juno Temple star in it.",  # names
        "A drama written by Antwone Fisher.",  # a person with a film's name
        "the dark knight rises again",  # lower case, no formatting
    ],
)
def test_traps_are_not_films(recognizer, text):
    assert found(recognizer, text) == ([], [])


@pytest.mark.parametrize(
    "text, films",
    [
        ('I recommend "1984", a dystopian classic.', ["1984"]),  # formatting
        ("Try 1984 (1984) tonight.", ["1984"]),  # a year in parentheses
        ("You could watch the film 1984 tonight.", ["1984"]),  # a film word
        ("1. 1984 - a bleak dystopia\n2. Stoker: a thriller", ["1984", "Stoker"]),  # list headings
        ("I really loved Her and you will too.", ["Her"]),  # capitalised in mid-sentence
        ("Heat and Casino are both good.", ["Heat", "Casino"]),  # a list joins a weak title to another
        ("Have you seen **the queen**?", ["The Queen"]),  # bold, case ignored
        ("'Monsters Inc' (2001) is fun.", ["Monsters, Inc."]),  # quotes, punctuation ignored
        ("“Amelie” is charming.", ["Amélie"]),  # diacritics ignored
        ("Spielberg's Titanic? No, Cameron's Titanic.", ["Titanic"]),  # a possessive before is fine
    ],
)
def test_cued_titles_are_films(recognizer, text, films):
    recommended, mentioned = found(recognizer, text)
    assert recommended + mentioned == films


def test_a_candidate_title_needs_less(recognizer):
    assert found(recognizer, "Stoker doesn't fit.") == ([], [])
    assert found(recognizer, "Stoker doesn't fit.", candidates=["Stoker"]) == (["Stoker"], [])


def test_roles(recognizer):
    assert found(recognizer, "Since you liked Titanic, try Casino (1995).") == (["Casino"], ["Titanic"])
    assert found(recognizer, "From the director of Titanic and The Dark Knight comes Heat (1995).") == (
        ["Heat"],
        ["Titanic", "The Dark Knight"],
    )
    asked = "What's the mood of The Queen?"
    assert found(recognizer, "The Queen is a quiet drama about Helen Mirren's queen.", user_text=asked) == (
        [],
        ["The Queen"],
    )
    assert found(recognizer, "I'd recommend The Queen: a quiet drama.", user_text=asked) == (["The Queen"], [])
    assert found(recognizer, "If you enjoyed Titanic, Casino (1995) is a great choice.") == (["Casino"], ["Titanic"])


def test_a_film_proposed_and_referred_to_is_recommended_once(recognizer):
    result = recognizer.recognise("Titanic is great. Since you liked Titanic, watch Titanic again.")
    assert result.recommended == ["Titanic"] and result.mentioned == []


def test_proposals_comparisons_and_taste_questions(recognizer):
    assert found(recognizer, "Have you seen Heat (1995)?") == (["Heat"], [])  # a proposal, not a back-reference
    assert found(recognizer, "Something along the lines of Heat (1995)? Or try Casino (1995).") == (
        ["Casino"],
        ["Heat"],
    )
    assert found(recognizer, "Do you prefer Heat (1995) or Titanic (1997)?") == ([], ["Heat", "Titanic"])
    assert found(recognizer, "Yes, he starred in Titanic.") == ([], ["Titanic"])
    # the proposal after the user's film is about the film that follows it
    liked = "I liked Titanic a lot."
    assert found(recognizer, "Given your taste for Titanic, I'd suggest watching Heat (1995).", user_text=liked) == (
        ["Heat"],
        ["Titanic"],
    )


def test_people_type_titles_in_any_case(recognizer):
    assert recognizer.recognise("have you seen the dark knight?", by_user=True).all == ["The Dark Knight"]
    assert recognizer.recognise("have you seen the dark knight?").all == []  # a reply is read as written
    assert recognizer.recognise("i loved monsters inc as a kid", by_user=True).all == ["Monsters, Inc."]
    # the user's film, typed in lower case, is only mentioned by a reply that does not propose it again
    assert found(recognizer, "The Dark Knight is a great movie.", user_text="i loved the dark knight") == (
        [],
        ["The Dark Knight"],
    )


@pytest.mark.parametrize(
    "text, unknown",
    [
        (
            "I would recommend the following items:\n1: Arrival (2016)\n2: Blade Runner 2049 (2017)",
            ["Arrival", "Blade Runner 2049"],
        ),
        (
            "Here are some movies:\n1. Ex Machina\n2. Upgrade - a revenge thriller with a twist",
            ["Ex Machina", "Upgrade"],
        ),
        ("Have you seen Zombian?", ["Zombian"]),
        ("What actors are in the movie It?", ["It"]),
        ('Try "Yes Please" tonight.', ["Yes Please"]),
        ("You might like Titanic or The Lady from the Banks.", ["The Lady from the Banks"]),
        ("Look Who's Talking (1989) is pretty good.", ["Look Who's Talking"]),
        (
            "1: Rabbits (2002) 2: Take Off Your Clothes and Live! (1963) 3: Heat (1995)",
            ["Rabbits", "Take Off Your Clothes and Live!"],
        ),
        ("Which genre do you like?\n1. Action\n2. Comedy", []),  # genres, not films
        ("The cast:\n- Emma Stone as Gwen Stacy\n- Al Pacino as Tony", []),  # a cast list
        ("It follows a young girl named Anna who moves to London.", []),  # a character
        ("Sure, The The Secret of the same year.", []),  # a stutter
        ("Helen Mirren in The Queen (2006) is superb.", []),  # a catalog film after a person
        ("Nolan's Titanic (1997) is long.", []),
    ],
)
def test_films_outside_the_catalog_are_read_where_the_text_marks_a_title(recognizer, text, unknown):
    assert recognizer.recognise(text).unknown == unknown


@pytest.mark.parametrize(
    "text, unknown",
    [
        # lists: a bare number (in sequence), "1)", "1 -", bullets with or without a space
        ("Here are some picks:\n1  Black Panther (2018)\n2 Get Out (2017)", ["Black Panther", "Get Out"]),
        ("Some films you might like:\n1) Arrival\n2) Moon", ["Arrival", "Moon"]),
        ("Movies to watch:\n1 - Arrival\n2 - Moon", ["Arrival", "Moon"]),
        ("Try these movies:\n• Arrival\n•Moon\n* Sicario\n- Upgrade", ["Arrival", "Moon", "Sicario", "Upgrade"]),
        # quotes of every kind; a single word in a list of quoted titles; any case after "the movie"
        ('I recommend "Arrival", ‘Moon’ and “Sicario”.', ["Arrival", "Moon", "Sicario"]),
        ("You could watch 'The Lighthouse' tonight.", ["The Lighthouse"]),
        ('Have you seen the movie "the lighthouse"?', ["the lighthouse"]),
        ('How about "Identity Thief (2013)?"', ["Identity Thief"]),
        # inserted markup, with or without a corpus's film id
        ("Try @12345 <Arrival (2016)> or <Moon (2009)>, or @111 <Harry Potter >.", ["Arrival", "Moon", "Harry Potter"]),
        # "Title (Year)" in chat text: abbreviations, possessives, an ellipsis, words that open titles
        ("Did you see Guardians of the Galaxy Vol. 2 (2017)?", ["Guardians of the Galaxy Vol. 2"]),
        ("I loved Ocean's Eight (2018) a lot", ["Ocean's Eight"]),
        ("Let me think....The Lego Batman Movie (2017)", ["The Lego Batman Movie"]),
        ("I love La La Land (2016)", ["La La Land"]),
        ("maybe I Kill Giants (2017)", ["I Kill Giants"]),
        ("or It Follows (2014) is scary", ["It Follows"]),
        ("I love Love Story (1970)", ["Love Story"]),
        ("Have you seen Me, Myself & Irene (2000)?", ["Me, Myself & Irene"]),
        ("Honestly, Arrival (2016) is great.", ["Arrival"]),
        # two films joined, and one title holding "or" or "and"
        ("how about Ace Ventura or The Hitman's Bodyguard (2017)", ["Ace Ventura", "The Hitman's Bodyguard"]),
        ("try Hot Tub Time Machine and Super Troopers (2001)", ["Hot Tub Time Machine", "Super Troopers"]),
        ("Have you seen Zootopia or Moana?", ["Zootopia", "Moana"]),
        ("I liked Truth or Dare (2013)", ["Truth or Dare"]),
        ("I love Dumb and Dumber (1994)", ["Dumb and Dumber"]),
        ("I liked The Quick and the Quiet: Harbor Lights (2006)", ["The Quick and the Quiet: Harbor Lights"]),
    ],
)
def test_titles_as_real_replies_write_them(recognizer, text, unknown):
    assert recognizer.recognise(text).unknown == unknown


@pytest.mark.parametrize(
    "text",
    [
        "Here are three reasons to watch it:\n1. Great Acting\n2. Tense Score\n3. Iconic Shootout",  # reasons
        "How to watch it:\n1. Open Netflix\n2. Search The Catalog",  # steps
        "Steps to follow:\n1 Open The App\n2 Pick A Genre",  # steps, bare numbers
        "The main actors of the movie are:\n1. Tom Hanks\n2. Meg Ryan",  # actors, though "movie" is named
        "I saw it 2 Times\nand loved it",  # a number at a line's start, no list
        'She said "I will be there soon." and left.',  # a quoted sentence
        'As they say, "life is like a box of chocolates".',
        "<br> <B> <Hello World>",  # markup without a year or a film id
        "Mine is a slow movie Have you tried it",  # an unpunctuated sentence after "movie"
    ],
)
def test_lists_and_quotes_that_are_no_films(recognizer, text):
    result = recognizer.recognise(text)
    assert result.all == [] and result.unknown == []


def test_a_list_of_reasons_after_a_list_of_films_is_no_film_list(recognizer):
    films = "Here are two films:\n1. Arrival (2016)\n2. Moon (2009)"
    text = films + "\n\nWhy you'll like them:\n1. Great Acting\n2. Smart Plots"
    assert recognizer.recognise(text).unknown == ["Arrival", "Moon"]


@pytest.mark.parametrize(
    "text, films",
    [
        ("Top picks:\n1  Heat (1995)\n2 Casino", ["Heat", "Casino"]),
        ("Watch these:\n1 - War\n2 - Her", ["War", "Her"]),  # everyday words, named by a list item
        ("Movies:\n• Titanic\n• Heat", ["Titanic", "Heat"]),
        ("I recommend “Heat” and ‘Casino’", ["Heat", "Casino"]),
        ("Try @1 <Heat (1995)> and <Casino (1995)>, or @9 <1984>", ["Heat", "Casino", "1984"]),
    ],
)
def test_catalog_titles_in_the_same_patterns(recognizer, text, films):
    result = recognizer.recognise(text)
    assert result.all == films and result.unknown == []


def test_words_that_open_sentences_and_a_year_that_names_another_film():
    films = pd.DataFrame(
        {"title": ["You", "Yes", "The Darkest Hour", "Silence"], "year": [2014.0, 2004.0, 2011.0, 2011.0]}
    )
    recognizer = TitleRecognizer(films, people=[])
    for text in ("It was fun You should see it", "Yes I have", "Yes", "You'd love it"):  # chat without full stops
        assert recognizer.recognise(text).all == [], text
    assert recognizer.recognise("I liked You (2014)").all == ["You"]
    assert recognizer.recognise("Southside with You (2016)").unknown == ["Southside with You"]
    # another spelling of a catalog title with a year far from the film's is another film
    result = recognizer.recognise("Darkest Hour (2017) is good")
    assert result.all == [] and result.unknown == ["Darkest Hour"]
    assert recognizer.recognise("Darkest Hour (2011) is good").all == ["The Darkest Hour"]
    assert recognizer.recognise("The Darkest Hour (2017)").all == ["The Darkest Hour"]  # the title as the catalog's
    assert recognizer.recognise("The Silence (2014)").all == ["Silence"]  # catalog years may be a few years off


def test_an_outside_title_hides_the_catalog_title_inside_it(recognizer):
    result = recognizer.recognise("I would recommend the following items:\n1: The Dark Knight Returns (2012)\n2: Heat")
    assert result.all == ["Heat"] and result.unknown == ["The Dark Knight Returns"]
    text = "Have you seen Blade Runner 2049 (2017)? Or Heat (1995)."
    spans = recognizer.spans(text)
    assert (text.index("Blade"), text.index("(2017)") + len("(2017)")) in spans  # the year belongs to it
    assert (text.index("Heat"), text.index("Heat") + 4) in spans  # a catalog film's year is a concept


@pytest.mark.skipif(not REFERENCE_LOGS.exists(), reason="the thesis logs are not beside the repository")
def test_title_recognition_on_hand_labelled_real_replies(full_index):
    """At least 150 real replies of six models, labelled by hand (tests/data/title_labels/GUIDE.md)."""
    replies = load_labels(LABELS, REFERENCE_LOGS)
    assert len(replies) >= 150 and len({r.model for r in replies}) == 6
    result = evaluate(full_index_recognizer(full_index), replies)
    report = {
        k: {m: round(v, 3) if isinstance(v, float) else v for m, v in result[k].items()}
        for k in ("referenced", "recommended", "mentioned")
    }
    print(json.dumps(report, indent=1), result["traps"])
    for key in ("referenced", "recommended"):
        assert result[key]["precision"] >= 0.95, (key, result[key], result["errors"][:10])
        assert result[key]["recall"] >= 0.90, (key, result[key], result["errors"][:10])
    assert result["traps"]["taken_for_films"] <= 0.05 * result["traps"]["total"]


def full_index_recognizer(index):
    from crseval.language.concepts import ConceptMatcher

    return ConceptMatcher(index.concepts, index.films).title_recognizer


def test_eval_titles_command(tmp_path, small_index, capsys):
    import hashlib

    import pyarrow as pa

    from crseval.cli import main
    from crseval.core.io import write_parquet

    index_dir = tmp_path / "catalog"
    index_dir.mkdir()
    write_parquet(
        pa.Table.from_pandas(small_index.films.reset_index(drop=True), preserve_index=False),
        index_dir / "films.parquet",
    )
    write_parquet(pa.Table.from_pandas(small_index.concepts, preserve_index=False), index_dir / "concepts.parquet")
    reply = "Since you liked Casino, try Goodfellas (1990) and Scream."
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "m_1.json").write_text(
        json.dumps(
            {
                "model_name": "m",
                "conversation": [{"speaker": "USER", "text": "I loved Casino."}, {"speaker": "SYSTEM", "text": reply}],
            }
        )
    )
    label = {
        "id": "m_1.json#1",
        "model": "m",
        "file": "m_1.json",
        "message_index": 1,
        "sha256": hashlib.sha256(reply.encode()).hexdigest(),
        "recommended": ["Goodfellas", "Scream"],
        "mentioned": ["Casino"],
        "traps": [],
    }
    labels = tmp_path / "labels.jsonl"
    labels.write_text(json.dumps(label) + "\n")
    args = ["eval-titles", str(labels), "--logs", str(tmp_path / "logs"), "--catalog-index", str(index_dir)]
    assert main(args) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["referenced"]["precision"] == 1.0 and result["referenced"]["recall"] == 1.0
    assert result["recommended"]["tp"] == 2 and result["mentioned"]["tp"] == 1
    labels.write_text(json.dumps({**label, "sha256": "0" * 64}) + "\n")  # the log changed since labelling
    assert main(args) == 2
    assert "changed since it was labelled" in capsys.readouterr().err
    labels.write_text(json.dumps({k: v for k, v in label.items() if k != "traps"}) + "\n")
    assert main(args) == 2
    assert "missing traps" in capsys.readouterr().err


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_PIECES = st.sampled_from(
    [
        "I recommend",
        "since you liked",
        "from",
        "written by Bram",
        '"',
        "'",
        "**",
        "(1995)",
        ",",
        " and ",
        "\n1. ",
        ".",
        "War",
        "Her",
        "1984",
        "Stoker",
        "Titanic",
        "The Queen",
        "Heat",
        "Casino",
        "X-Men",
        ": First Class",
        "the director of",
        "London",
        "as",
        "Emma Stone",
        "“",
        "”",
        "@12 <",
        ">",
        "\n2 ",
        "\n3 - ",
        "•",
        "Vol.",
        "I Kill",
        ", Missouri",
        "You",
        "....",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=300), st.lists(_PIECES, max_size=25).map(" ".join)))
def test_recognition_invariants(text):
    recognizer = _RECOGNIZER
    result = recognizer.recognise(text, candidates=["Stoker"], user_text=text[:40])
    assert not set(result.recommended) & set(result.mentioned)
    assert len(set(result.recommended)) == len(result.recommended) and len(set(result.mentioned)) == len(
        result.mentioned
    )
    assert set(result.all) <= set(FILMS["title"])
    for ref in result.references:
        assert 0 <= ref.start < ref.end <= len(text) and ref.role in ("recommended", "mentioned")
    assert set(result.all) == {r.title for r in result.references}
    assert not set(result.unknown) & set(FILMS["title"])


_RECOGNIZER = TitleRecognizer(FILMS)
