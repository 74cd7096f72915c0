"""One analysis per text, shared by every metric family; and the matcher's and TF-IDF's shortcuts give
exactly what the plain scans they replace give."""

import math
import sys
from collections import Counter

import pandas as pd
import pytest
from conftest import default_config, model_free_scorer

from crseval.language import tokens
from crseval.language.concepts import ConceptMatcher
from crseval.language.marked_titles import _ANY_CUE_WORD, _CUE_WORDS, _ITEM_LINE, _cue_matches, _item_lines
from crseval.language.title_shapes import _WORD_TOKEN, _last_word_tokens
from crseval.language.tokens import AnalysedText, TextAnalyses, tokenize
from crseval.metrics.scorer import FAMILIES
from crseval.metrics.similarity import TfidfSimilarity, tfidf_rows

# (user, system) turns on the demo catalog: titles, a year, a list, people, genres, a near name
DIALOGUE = [
    ("I'd like a crime movie, maybe from the 1940s.", 'Try "The Maltese Falcon" (1941) with Humphrey Bogart.'),
    ("Something with Humphrey Bogart, but a romance?", "Casablanca (1942) is a romance directed by Michael Curtiz."),
    (
        "Now a comedy by Frank Capra, please.",
        "It Happened One Night: a comedy by Frank Capra with Clark Gable.\n"
        "- Mr. Smith Goes to Washington (1939)\n- Bringing Up Baby",
    ),
    ("Anything with Humphry Bogart?", "Have you seen The Maltese Falcon? Another crime classic."),
]


def record(session_id: str, turns: list[tuple[str, str]]) -> dict:
    return {
        "system": "hand",
        "session_id": session_id,
        "session_index": 0,
        "seed": 1,
        "liked_titles": [],
        "turns": [
            {
                "turn": number,
                "user_text": user,
                "system_text": reply,
                "system_constraints": [],
                "recommended_titles": [],
                "mentioned_titles": [],
                "unknown_titles": [],
            }
            for number, (user, reply) in enumerate(turns, start=1)
        ],
    }


# the second session repeats two turns of the first: each text is still read once in the shard
RECORDS = [record("hand/a", DIALOGUE), record("hand/b", [DIALOGUE[1], DIALOGUE[3], DIALOGUE[1]])]
TEXTS = {text for turn in DIALOGUE for text in turn}


def scorer(catalog_files, families):
    settings = default_config()["scoring"]
    settings = {
        **settings,
        "metrics": families,
        "cas": {**settings["cas"], "topics": "heuristic", "similarity": "tfidf"},
        "response_stats": {**settings["response_stats"], "embeddings": False, "persona_similarity": "tfidf"},
    }
    return model_free_scorer(catalog_files, settings)


@pytest.fixture
def tokenised(monkeypatch):
    """(tokeniser, text) -> calls, for the tokenisers of crseval.language.tokens wherever a module holds them."""
    calls = Counter()
    for name in ("tokenize", "token_strings", "words"):
        original = getattr(tokens, name)

        def counting(text, _original=original, _name=name):
            calls[_name, text] += 1
            return _original(text)

        for module in [m for n, m in sys.modules.items() if n.startswith("crseval")]:
            if getattr(module, name, None) is original:
                monkeypatch.setattr(module, name, counting)
    return calls


def test_every_text_is_tokenised_once_when_all_families_score_a_shard(catalog_files, tokenised):
    together = scorer(catalog_files, list(FAMILIES))
    tokenised.clear()  # set-up reads the catalog's own texts
    together.score(RECORDS)
    for text in TEXTS:
        assert tokenised["token_strings", text] + tokenised["tokenize", text] == 1, text
        assert tokenised["words", text] == 1, text
    assert len(together.texts) == 0  # the shard's analyses are dropped with it


def test_families_score_together_as_each_scores_alone(catalog_files):
    sessions, turns = scorer(catalog_files, list(FAMILIES)).score(RECORDS)
    for family in FAMILIES:
        alone_sessions, alone_turns = scorer(catalog_files, [family]).score(RECORDS)
        pd.testing.assert_frame_equal(alone_sessions, sessions[alone_sessions.columns], check_exact=True)
        pd.testing.assert_frame_equal(alone_turns, turns[alone_turns.columns], check_exact=True)
    assert sessions["tas_cc"].notna().all() and (sessions["context_adaptation_score"] > 0).all()


def test_an_analysed_text_reads_as_its_string(demo_index):
    matcher = ConceptMatcher(demo_index.concepts, demo_index.films)
    for text in TEXTS:
        analysed = AnalysedText(text)
        assert analysed.tokens == tokenize(text)
        assert list(analysed.lowered) == [token.lower() for token, _, _ in tokenize(text)]
        assert matcher.values(analysed) == matcher.values(text)
        assert matcher.title_recognizer.recognise(analysed) == matcher.title_recognizer.recognise(text)
    assert matcher.values("Try The Maltese Falcon with Humphry Bogart, a crime film.")  # a title, a near name
    analyses = TextAnalyses()
    assert analyses("a b") is analyses("a b") and len(analyses) == 1


@pytest.mark.parametrize(
    "text",
    [
        "",
        "ΟΔΟΣ ΟΔΟΣ. Σ ΣΑΣ 'Σ",  # a final sigma depends on its neighbours
        "İstanbul and ǅemal: ẞ",  # lower case longer than upper case
        "Tab\tand  spaces\nand lines",
    ],
)
def test_tokens_lowered_at_once_are_lowered_one_by_one(text):
    analysed = AnalysedText(text)
    assert list(analysed.lowered) == [token.lower() for token, _, _ in tokenize(text)]
    assert tuple(text[start:end] for _, start, end in analysed.tokens) == analysed.keys


CUE_TEXTS = [
    "Have you seen Heat? I LIKED Arrival and loved Up. How about The Thing, or try Alien.",
    "you might also enjoy Casablanca; you should watch M. Check out Rope. The movie It, a thriller called Nope.",
    "I have ſeen Heat, and you'll like Up.",  # "ſ" is "s" to a pattern that ignores case: read whole
    "movie movie Film The Movie 2012 watched   Heat",
    "",
]


@pytest.mark.parametrize("text", CUE_TEXTS)
def test_cue_matches_are_the_patterns_scans(text):
    analysed = AnalysedText(text)
    places = [i for i, word in enumerate(analysed.lowered) if word in _ANY_CUE_WORD]
    for cue in _CUE_WORDS:
        expected = [(m.span(), m.group()) for m in cue.finditer(text)]
        assert [(m.span(), m.group()) for m in _cue_matches(cue, analysed, places)] == expected


@pytest.mark.parametrize(
    "text",
    [
        "Here are some:\n1. Heat (1995)\n2. Up\n- Arrival\n",
        "1\n. A list number on its own line\n* and an item",
        "no list here",
        "\n\n  - an indented item\n\t+ another\n",
        "",
    ],
)
def test_item_lines_are_the_patterns_scan(text):
    assert [m.span() for m in _item_lines(text)] == [m.span() for m in _ITEM_LINE.finditer(text)]


@pytest.mark.parametrize(
    "text",
    [
        "word " * 100 + "Heat (1995)",
        "A.I. Sorcerer's Startup.com Live! " * 30 + "(2001)",
        "x" * 400 + " Heat",
        "w " * 50 + "z" * 150 + " a b c d (2001)",  # few tokens near the end: the whole line is read
        "a b c",
    ],
)
def test_the_last_word_tokens_are_those_of_the_whole_line(text):
    full = list(_WORD_TOKEN.finditer(text, 0, len(text)))
    last = _last_word_tokens(text, 0, len(text))
    assert [m.span() for m in last] == [m.span() for m in full[len(full) - len(last) :]]
    assert len(last) >= 18 or len(last) == len(full)


def test_tfidf_rows_are_scikit_learns_transform(demo_index):
    films = demo_index.films
    similarity = TfidfSimilarity(films["name"].tolist(), films["plot"].tolist())
    texts = [*TEXTS, "", "the and of", "Crime crime CRIME movies", "über café naïve", *films["plot"].tolist()[:20]]
    matrix = similarity.vectorizer.transform(texts).tocsr()
    rows = tfidf_rows(texts, similarity.vectorizer.vocabulary_, similarity.vectorizer.idf_.tolist())
    for i, row in enumerate(rows):
        start, end = matrix.indptr[i], matrix.indptr[i + 1]
        assert list(row.items()) == list(zip(matrix.indices[start:end].tolist(), matrix.data[start:end].tolist()))
    assert any(rows) and not rows[len(TEXTS) + 1]  # stop words only: no term
    assert math.isclose(similarity(texts[-1], texts[-1]), 1.0)


def test_the_stop_words_are_scikit_learns_read_without_importing_it():
    """A job that only tokenises must not pay scikit-learn's import (seconds): the list is read from its module
    alone, and it is the very list the TF-IDF analysis drops."""
    import subprocess
    import sys

    code = (
        "import sys; from crseval.language.text import content_words, stop_words; "
        "assert content_words('The films of the year') == ['film', 'year']; "
        "print(len(stop_words()), 'sklearn' in sys.modules)"
    )
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    from crseval.language.text import stop_words

    assert shown == [str(len(ENGLISH_STOP_WORDS)), "False"]
    assert stop_words() == frozenset(ENGLISH_STOP_WORDS)
