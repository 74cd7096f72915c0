"""User realism (crseval.analysis.user_realism) against values computed by hand."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from crseval.analysis.user_realism import (
    UserTurns,
    _auc,
    _delong_interval,
    _median,
    compare_statistics,
    discriminator,
    guiraud,
    realism_markdown,
    simulated_turns,
    turn_statistics,
)


def test_turn_statistics_by_hand():
    frame = turn_statistics(["Hi!", "Why that one?", "thanks, I'll watch it", "ok"])
    assert frame["words"].tolist() == [1, 3, 4, 1]  # "I'll" is one word
    assert frame["question"].tolist() == [0, 1, 0, 0]
    assert frame["greeting"].tolist() == [1, 0, 0, 0]
    assert frame["thanks"].tolist() == [0, 0, 1, 0]
    assert frame["chit_chat"].tolist() == [1, 0, 0, 1]
    # the reactions: "why that one?" asks about the film, "I'll watch it" takes it
    assert frame["asks_about"].tolist() == [0, 1, 0, 0]
    assert frame["takes"].tolist() == [0, 0, 1, 0]
    assert frame["turns_down"].tolist() == [0, 0, 0, 0]
    assert "names_catalog" not in frame  # only with a catalog to read


def test_reactions_unknown_words_and_the_catalog_by_hand():
    texts = ["no, something else", "what is Heat about?", "recomend me a moive", "Heat sounds good", "I have seen it"]
    frame = turn_statistics(texts, names_catalog=lambda text: "Heat" in text)
    assert frame["turns_down"].tolist() == [1, 0, 0, 0, 1]
    assert frame["asks_about"].tolist() == [0, 1, 0, 0, 0]
    assert frame["takes"].tolist() == [0, 0, 0, 1, 0]
    # "recomend" and "moive" are in no English word list; a capitalised name is not asked about
    assert frame["unknown_word"].tolist() == [0, 0, 1, 0, 0]
    assert frame["names_catalog"].tolist() == [0, 1, 0, 1, 0]


def test_word_variety_is_guirauds_index_per_session():
    # "a b a": 2 distinct words of 3; "c": 1 of 1
    assert guiraud(["a b", "a"]) == pytest.approx(2 / np.sqrt(3))
    assert np.isnan(guiraud(["?!"]))
    simulated = UserTurns("sim", ["a b", "a", "c", "?"], ["s1", "s1", "s2", "s3"])  # s3 has no words
    real = UserTurns("real", ["d d d d"], ["r1"])
    table = compare_statistics(simulated, real, resamples=50, seed=0).set_index("statistic")
    # sessions with words: s1 2/sqrt(3), s2 1/sqrt(1); real: 1/sqrt(4)
    assert table.loc["word_variety", "simulated"] == pytest.approx((2 / np.sqrt(3) + 1) / 2)
    assert table.loc["word_variety", "real"] == pytest.approx(0.5)
    with_catalog = compare_statistics(simulated, real, 50, 0, names_catalog=lambda text: "c" in text)
    assert with_catalog.set_index("statistic").loc["names_catalog", "simulated"] == pytest.approx(1 / 4)


def test_statistics_compared_by_hand():
    simulated = UserTurns("sim", ["Hi!", "Why that one?", "thanks, I'll watch it"], ["s1", "s1", "s2"])
    real = UserTurns("real", ["ok", "no", "yes please?"], ["r1", "r1", "r1"])
    table = compare_statistics(simulated, real, resamples=200, seed=1).set_index("statistic")
    # words: median of 1, 3, 4 is 3; of 1, 1, 2 is 1
    assert table.loc["words", ["simulated", "real", "difference"]].tolist() == [3, 1, 2]
    assert table.loc["question", "difference"] == pytest.approx(0)  # one question in three, both sides
    assert table.loc["turns_per_session", ["simulated", "real"]].tolist() == [1.5, 3.0]
    for row in table.itertuples():
        assert row.ci_low <= row.difference <= row.ci_high or np.isclose(row.ci_low, row.ci_high)


def test_a_user_is_needed():
    with pytest.raises(ValueError, match="no user turns"):
        UserTurns("empty", [], [])
    with pytest.raises(ValueError, match="session ids"):
        UserTurns("odd", ["hi"], [])


def test_the_discriminator_tells_apart_what_differs_and_not_what_does_not():
    rng = np.random.default_rng(0)
    words = ["film", "movie", "good", "watch", "tonight", "maybe", "something", "else", "like", "that"]

    def turns(n):
        return [" ".join(rng.choice(words, size=int(rng.integers(2, 6)))) for _ in range(n)]

    same = discriminator(turns(60), turns(60), "word", seed=2)
    assert 0.3 < same["auc"] < 0.7 and same["auc_ci_low"] < 0.5 < same["auc_ci_high"]
    told = discriminator([t + " please find me a movie starring" for t in turns(60)], turns(60), "word")
    assert told["auc"] == 1.0 and told["auc_ci_low"] == pytest.approx(1.0)
    assert {"starring", "please"} & set(told["simulated_tells"])
    longer = discriminator([t + " and one more thing" for t in turns(60)], turns(60), "statistics")
    assert longer["auc"] > 0.8 and "words" in longer["simulated_tells"]
    with pytest.raises(ValueError, match="known: word, char, statistics"):
        discriminator(turns(10), turns(10), "bert")


@given(st.lists(st.lists(st.integers(0, 30), min_size=1, max_size=15), min_size=1, max_size=6))
def test_the_median_of_a_histogram_is_numpys(rows):
    histograms = np.zeros((len(rows), 31))
    for i, values in enumerate(rows):
        np.add.at(histograms[i], values, 1)
    assert _median(histograms).tolist() == [float(np.median(values)) for values in rows]


def test_the_bootstrap_resamples_whole_sessions():
    """Two sessions of 1 and 3 turns: a draw of either session twice gives 1 or 3 turns per session."""
    simulated = UserTurns("sim", ["a", "b c", "d e f", "g"], ["x", "y", "y", "y"])
    table = compare_statistics(simulated, simulated, resamples=500, seed=3).set_index("statistic")
    assert table.loc["turns_per_session", ["simulated", "difference"]].tolist() == [2.0, 0.0]
    assert table.loc["turns_per_session", "ci_low"] == -2.0 and table.loc["turns_per_session", "ci_high"] == 2.0


@given(st.lists(st.tuples(st.booleans(), st.integers(-5, 5)), min_size=2, max_size=40))
def test_the_auc_is_sklearns_and_its_interval_holds_it(pairs):
    from sklearn.metrics import roc_auc_score

    labels = np.array([int(label) for label, _ in pairs])
    scores = np.array([float(score) for _, score in pairs])
    if labels.min() == labels.max():
        return
    assert _auc(labels, scores) == pytest.approx(roc_auc_score(labels, scores))
    low, high = _delong_interval(labels, scores) if min(labels.sum(), len(labels) - labels.sum()) > 1 else (0, 1)
    assert 0 <= low <= _auc(labels, scores) <= high <= 1


def test_reworded_turns_are_a_further_user_and_the_rules_wording_stays_the_profiles():
    def turn(text, paraphrase=None):
        return {"user_text": text, "user_meta": {"paraphrase": paraphrase}}

    reworded = {"verdict": "kept", "template_text": "I'd like a comedy.", "llm": {"model": "tiny-lm"}}
    rejected = {"verdict": "rejected", "template_text": "Why that one?", "llm": {"model": "tiny-lm"}}
    records = [
        {"session_id": "a", "system": "x", "profile": "explicit", "turns": [turn("got any comedies?", reworded)]},
        {"session_id": "b", "system": "x", "profile": "explicit", "turns": [turn("Why that one?", rejected)]},
        {"session_id": "c", "system": "y", "turns": [turn("Hello.")]},  # written before profiles and rewording
    ]
    users, systems = simulated_turns(records, {"y": "implicit"})
    assert users["explicit"].texts == ["I'd like a comedy.", "Why that one?"]
    assert users["explicit reworded by tiny-lm"].texts == ["got any comedies?", "Why that one?"]
    assert users["explicit reworded by tiny-lm"].sessions == ["a", "b"]
    assert users["implicit"].texts == ["Hello."]
    assert systems[("explicit reworded by tiny-lm", "x")].name == "explicit reworded by tiny-lm with x"


def test_the_report_shows_each_user_and_how_each_system_met_it():
    row = {"difference": np.nan, "ci_low": np.nan, "ci_high": np.nan, "simulated_tells": "", "real_tells": ""}
    table = pd.DataFrame(
        [
            {
                **row,
                "user": "u",
                "system": "all",
                "measure": "words",
                "simulated": 5.0,
                "real": 6.0,
                "difference": -1.0,
            },
            {**row, "user": "u", "system": "all", "measure": "auc_word", "simulated": 0.9, "real": np.nan},
            {**row, "user": "u", "system": "oracle", "measure": "words", "simulated": 4.0, "real": 6.0},
            {**row, "user": "u", "system": "oracle", "measure": "question", "simulated": 0.25, "real": 0.4},
            {**row, "user": "u", "system": "random", "measure": "words", "simulated": 7.0, "real": 6.0},
            {**row, "user": "u", "system": "random", "measure": "question", "simulated": 0.5, "real": 0.4},
        ]
    )
    text = realism_markdown(table, "corpus.json", UserTurns("real users", ["hi", "ok"], ["a", "b"]))
    assert "2 user turns of 2 real dialogues (corpus.json)" in text
    assert "| words | 5.00 | 6.00 | -1.00 [n/a, n/a] |" in text
    assert "| word | 0.90 [n/a, n/a] |" in text
    assert "| system | words | question |" in text
    assert "| oracle | 4.00 | 0.25 |" in text and "| random | 7.00 | 0.50 |" in text
