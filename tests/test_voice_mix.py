"""A voice learned from several corpora (simulator.voice.mix): people counted per corpus and weighed, turns said to
a person left out, values typed only where the turn asks for films, and reactions keyed on what the reply did.

Every corpus here is written in this file: the user turns are invented for the tests, never a real corpus's."""

import json

import pytest
from test_voice import CORPUS, LEARNED, MORE, SETTINGS, SOURCE, TEMPLATES, write_corpus

from crseval.language.user_acts import read_turn
from crseval.replies.complaints import complains
from crseval.simulate.user.simulator import make_user
from crseval.simulate.user.voice import Voice, VoiceTemplate
from crseval.simulate.user.voice_learning import (
    VoiceCorpus,
    corpus_dialogues,
    learn_voice,
    states_wishes,
    to_a_person,
    voice_key,
    voice_markdown,
)
from crseval.simulate.user.voicing import WELL_SUPPLIED, fitting_reply, keyed_on_the_reply


@pytest.mark.parametrize(
    "text",
    [
        "I love comedies, how about you?",
        "and you?",
        "Have you seen anything good lately?",
        "what kind of films do you like",
        "What's your favorite film?",
        "I'm good thanks, and yourself?",
        "Did you like it?",
        "Nice chatting with you!",
    ],
)
def test_a_turn_said_to_a_person_is_told_apart(text):
    assert to_a_person(text)


@pytest.mark.parametrize(
    "text",
    [
        "any comedy for tonight?",
        "I have seen that one already",
        "can you recommend a western?",
        "do you have something with a twist?",
        "thanks, bye",
    ],
)
def test_a_turn_said_to_a_system_is_kept(text):
    assert not to_a_person(text)


@pytest.mark.parametrize(
    "text, wishes",
    [
        ("Tell me an odd fact about the comedy genre of the old days please", False),
        ("I keep wondering why the comedy of that decade was so loud", False),
        ("any comedy for tonight?", True),
        ("comedy", True),
        ("I'd like a western", True),
        ("something with James Stewart", True),
        ("hello there how are you doing", True),  # no value: nothing typed, nothing to ask
    ],
)
def test_a_value_is_a_wish_only_where_the_turn_asks_for_films(demo_matcher, text, wishes):
    assert states_wishes(read_turn(text, demo_matcher)) is wishes


MAIN = [
    ("m1", None, ["any comedy for tonight?", "Got anything else?"]),
    ("m2", None, ["any comedy for tonight?", "how about you, what do you like?"]),
]
OTHER = [
    ("o1", None, ["any comedy for tonight?", "Got anything else?"]),
    ("o2", None, ["a western please", "Got anything else?"]),
]


@pytest.fixture(scope="module")
def corpora(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mix")
    main = corpus_dialogues(write_corpus(folder / "main.jsonl", MAIN), "jsonl")
    other = corpus_dialogues(write_corpus(folder / "other.jsonl", OTHER), "jsonl")
    return main, other


def pool_said(voice: Voice) -> dict[str, int]:
    return {t.text: t.said for pool in voice.pools.values() for t in pool}


def test_each_person_of_a_mixed_corpus_counts_its_weight(corpora, demo_matcher):
    main, other = corpora
    voice = learn_voice(main, demo_matcher, SOURCE, mix=(VoiceCorpus("other", other, 3),))
    said = pool_said(voice)
    # "any {genre} for tonight?": two people of the main corpus (1 each) and one of the other (3)
    assert said["any {genre} for tonight?"] == 1 + 1 + 3
    assert said["a {genre} please"] == 3
    assert said["Got anything else?"] == 1 + 3 + 3  # m1, o1, o2
    by_name = {c["name"]: c for c in voice.summary["corpora"]}
    assert (by_name["other"]["people"], by_name["other"]["dialogues"], by_name["other"]["weight"]) == (2, 2, 3)
    assert by_name["toy.jsonl"]["people"] == 2 and by_name["toy.jsonl"]["turns_read"] == 4
    assert "| other | 3 | 2 | 2 | 4 | 4 |" in voice_markdown(voice)


def test_the_same_id_in_two_corpora_is_two_people(corpora, demo_matcher):
    main, _ = corpora
    twin = [dict(record) for record in main]  # the same dialogue ids in a corpus of another name
    voice = learn_voice(main, demo_matcher, SOURCE, mix=(VoiceCorpus("twin", twin, 1),))
    assert pool_said(voice)["any {genre} for tonight?"] == 4


def test_a_corpus_of_weight_zero_is_read_and_left_out(corpora, demo_matcher):
    main, other = corpora
    voice = learn_voice(main, demo_matcher, SOURCE, mix=(VoiceCorpus("other", other, 0),))
    assert voice.summary["left_out"]["a corpus of weight 0"] == 4
    assert "a {genre} please" not in pool_said(voice)


def test_turns_said_to_a_person_are_left_out_when_asked(corpora, demo_matcher):
    main, _ = corpora
    kept = learn_voice(main, demo_matcher, SOURCE)
    left = learn_voice(main, demo_matcher, SOURCE, to_a_person_turns="leave_out")
    assert "how about you, what do you like?" in pool_said(kept)
    assert "how about you, what do you like?" not in pool_said(left)
    assert left.summary["left_out"]["said to a person, not to a system"] == 1


def test_the_voice_key_follows_the_mixed_corpora_contents_not_their_paths():
    settings = {"corpus": "a.jsonl", "parts": 2, "learn_part": 1, "mix": [{"name": "o", "paths": "x/*.csv"}]}
    key = voice_key("1" * 64, settings, ("2" * 64,))
    moved = {**settings, "mix": [{"name": "o", "paths": "elsewhere/*.csv"}]}
    assert voice_key("1" * 64, moved, ("2" * 64,)) == key
    assert voice_key("1" * 64, settings, ("3" * 64,)) != key
    weighed = {**settings, "mix": [{"name": "o", "paths": "x/*.csv", "weight": 2}]}
    assert voice_key("1" * 64, weighed, ("2" * 64,)) != key


def template(name: str, after: tuple[str, ...], complaint: bool = False) -> VoiceTemplate:
    return VoiceTemplate(name, name, (), 1, after, complaint)


def test_a_complaint_answers_the_failure_it_was_said_after_and_never_a_catalog_film():
    fine = [template(f"fine{i}", ("catalog_film", "outside_film")) for i in range(WELL_SUPPLIED)]
    moan = template("moan", ("catalog_film", "outside_film"), complaint=True)
    repeat_moan = template("again", ("repeated",), complaint=True)
    pool = [*fine, moan, repeat_moan]
    assert moan not in fitting_reply(pool, "catalog_film") and repeat_moan not in fitting_reply(pool, "catalog_film")
    assert fitting_reply(pool, "catalog_film") == fine
    # after a failure, the turns people said after it (the complaints among them) where there are enough
    assert fitting_reply(pool, "outside_film") == [*fine, moan]
    # few turns said after a repeat: any turn that is no complaint, and the complaints said after a repeat
    assert fitting_reply(pool, "repeated") == [*fine, repeat_moan]
    assert fitting_reply(pool, None) == fine
    # a good reply never narrows the pool to the turns said after one: every turn that is no complaint
    other = template("other", ("asked",))
    assert fitting_reply([*fine, other], "catalog_film") == [*fine, other]
    assert fitting_reply([*fine, other], "asked") == [*fine, other]


def test_a_learned_voice_file_keeps_the_reply_cases_and_complaints(tmp_path, corpora, demo_matcher):
    main, other = corpora
    voice = learn_voice(main, demo_matcher, SOURCE, mix=(VoiceCorpus("other", other, 2),))
    path = tmp_path / "voice.json"
    voice.write(path)
    again = Voice.read(path)
    assert again.as_json() == voice.as_json()
    data = json.loads(path.read_text(encoding="utf-8"))
    firsts = [t for key, pool in data["pools"].items() if key.startswith("first|") for t in pool]
    assert firsts and all(t["after"] == ["start"] for t in firsts)
    later = [t for key, pool in data["pools"].items() if key.startswith("later|") for t in pool]
    assert later and all(t["after"] and "start" not in t["after"] for t in later)
    assert all(t["complaint"] is False for t in firsts + later)


@pytest.fixture(scope="module")
def spoken(tmp_path_factory, demo_matcher):
    """A voice the simulated user speaks with, of the dialogues test_voice writes."""
    path = write_corpus(tmp_path_factory.mktemp("corpus") / "more.jsonl", CORPUS + MORE)
    return learn_voice(corpus_dialogues(path, "jsonl"), demo_matcher, SOURCE)


def test_no_complaint_is_said_after_a_good_reply_whatever_its_parts(demo_index, demo_matcher, spoken):
    """The last guard: a worded turn that complains (crseval.replies.complaints) is drawn again unless the reply
    failed, even where learning did not mark its template a complaint (a tail of another turn may complain)."""
    unmarked = VoiceTemplate("later|other|#90", "that is not even a movie", (), 50, ("catalog_film",), False)
    fine = VoiceTemplate("later|other|#91", "hm okay", (), 50, ("catalog_film",), False)
    for seed in range(20):
        voicing = make_user(demo_index, SETTINGS, TEMPLATES, seed, demo_matcher, spoken, LEARNED).voicing
        voicing.case = "catalog_film"
        text, _, _ = voicing.voiced([[(None, [unmarked, fine])]], [], told=[])
        assert not complains(text) and voicing.record["templates"] == ["later|other|#91"], text
        assert voicing.record["redraws"] >= 0
    said = set()
    for seed in range(20):  # after a failure the complaint may be said
        voicing = make_user(demo_index, SETTINGS, TEMPLATES, seed, demo_matcher, spoken, LEARNED).voicing
        voicing.case = "outside_film"
        said.add(voicing.voiced([[(None, [unmarked, fine])]], [], told=[])[0])
    assert any(complains(text) for text in said)


def test_a_films_year_is_no_wish(tmp_path, demo_matcher):
    """A film written with its year, as corpora of two people mark films, names the film: the year is no wish."""
    path = write_corpus(tmp_path / "years.jsonl", [("y1", None, ["I liked Rear Window (1954) a lot", "any comedy?"])])
    voice = learn_voice(corpus_dialogues(path, "jsonl"), demo_matcher, SOURCE)
    assert voice.summary["left_out"] == {"a film's year read as a wish": 1}
    assert "any {genre}?" in pool_said(voice)


@pytest.mark.parametrize(
    "turn", ["sounds like a western film. I can't stand those", "any western?? i don\u00b4t really like them..."]
)
def test_a_value_the_next_sentence_dislikes_is_no_wish(tmp_path, demo_matcher, turn):
    """The rules read the western as a wish; the person rules it out: the turn is not learned as a request."""
    path = write_corpus(tmp_path / "disliked.jsonl", [("d1", None, ["any comedy?", turn])])
    voice = learn_voice(corpus_dialogues(path, "jsonl"), demo_matcher, SOURCE)
    assert voice.summary["left_out"] == {"a value disliked in the next sentence": 1}
    assert set(pool_said(voice)) == {"any {genre}?"}


def test_a_value_kept_when_the_next_sentence_dislikes_something_else(tmp_path, demo_matcher):
    path = write_corpus(tmp_path / "kept.jsonl", [("d1", None, ["any western? I don't like them too long"])])
    voice = learn_voice(corpus_dialogues(path, "jsonl"), demo_matcher, SOURCE)
    assert "any {genre}? I don't like them too long" in pool_said(voice)


def test_the_voice_counts_how_people_answered_each_case_of_reply(corpora, demo_matcher):
    main, other = corpora
    voice = learn_voice(main, demo_matcher, SOURCE, mix=(VoiceCorpus("other", other, 3),))
    # the later turns follow "Here is answer 1.": after a question of the user's ("any comedy for tonight?") that
    # reply answers it (`answered`), after "a western please" it is `other`. Each later turn asks: m1's and m2's
    # once each, o1's three times (the other corpus weighs 3); o2's three times after `other`
    assert all(read_turn(turns[1], demo_matcher).act == "ask" for _, _, turns in MAIN + OTHER)
    assert voice.acts_after("answered") == {"ask": 1 + 1 + 3}
    assert voice.acts_after("other") == {"ask": 3}
    assert voice.acts_after("start") == {}  # a dialogue's first turn answers no reply


def test_a_reaction_comes_as_often_as_people_answered_the_reply_with_its_act():
    pool = [
        VoiceTemplate("later|ask|#0", "anything else?", (), 1),
        VoiceTemplate("later|ask|#1", "more please?", (), 1),
        VoiceTemplate("later|other|#0", "hm", (), 2),
        VoiceTemplate("later|take|#0", "I'll watch it", (), 1),
    ]
    # counts: ask 2, other 2, take 1 (5); people answered with ask 3 times, other once, take never (4), and
    # requested 5 times, an act not among these templates. A count becomes said * people's * 5 * 10 // (act's * 4):
    # ask 1 * 3 * 50 // 8 = 18 each, other 2 * 1 * 50 // 8 = 12, take 0, kept at 1
    keyed = keyed_on_the_reply(pool, {"ask": 3, "other": 1, "request": 5})
    assert [t.said for t in keyed] == [18, 18, 12, 1]
    assert [t.id for t in keyed] == [t.id for t in pool]
    # shares: ask 36 of 49, other 12 of 49, where people's were 3 of 4 and 1 of 4
    assert keyed_on_the_reply(pool, {}) == pool  # nobody answered such a reply: as it was
    assert keyed_on_the_reply(pool[:2], {"ask": 3, "other": 1}) == pool[:2]  # one act: as it was
