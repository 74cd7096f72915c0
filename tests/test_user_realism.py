"""User realism (crseval.checks.user_realism) against values computed by hand."""

import hashlib
import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from crseval.checks.realism_discriminators import _auc, _delong_interval
from crseval.checks.realism_measures import _median
from crseval.checks.user_realism import (
    FLOOR,
    Reference,
    UserTurns,
    act_bigram_distance,
    act_bigrams,
    compare_statistics,
    content_blind,
    discriminator,
    distinct_share,
    equal_samples,
    guiraud,
    js_distance,
    load_reference,
    realism_markdown,
    realism_table,
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
    # the real users are one session: resampled, it is always itself, so there is no CI over sessions
    assert table[["ci_low", "ci_high"]].isna().all().all()
    real = UserTurns("real", ["ok", "no", "yes please?"], ["r1", "r1", "r2"])
    table = compare_statistics(simulated, real, resamples=200, seed=1).set_index("statistic")
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


# ------------------------------------------------------------------ three views, held out by construction


def test_the_content_blind_text_of_a_turn_by_hand(matcher):
    from crseval.language.user_acts import read_turn

    text = "any crime movie with Robert De Niro like Goodfellas?"
    assert content_blind(text, read_turn(text, matcher)) == "any slotgenre movie with slotactor like slottitle?"
    text = "Maybe a Comedy in French?"
    assert content_blind(text, read_turn(text, matcher)) == "Maybe a slotgenre in slotlanguage?"
    assert content_blind("hi there", read_turn("hi there", matcher)) == "hi there"  # nothing to hide
    # a turn that holds the slot marks itself cannot be read that way: it stays as said
    assert content_blind("a {genre} film", read_turn("a {genre} film", matcher)) == "a {genre} film"


def test_act_bigrams_and_their_jensen_shannon_distance_by_hand():
    # simulated: "request, take" and "request"; real: "request"
    simulated, real = [["request", "take"], ["request"]], [["request"]]
    assert act_bigrams(simulated) == {
        ("start", "request"): 2,
        ("request", "take"): 1,
        ("take", "end"): 1,
        ("request", "end"): 1,
    }
    assert act_bigrams(real) == {("start", "request"): 1, ("request", "end"): 1}
    # p = (start>request 2/5, request>end 1/5, request>take 1/5, take>end 1/5), q = (1/2, 1/2, 0, 0);
    # their mean m = (9/20, 7/20, 1/10, 1/10)
    kl_p = 2 / 5 * np.log2(8 / 9) + 1 / 5 * np.log2(4 / 7) + 2 * (1 / 5 * np.log2(2))
    kl_q = 1 / 2 * np.log2(10 / 9) + 1 / 2 * np.log2(10 / 7)
    by_hand = np.sqrt((kl_p + kl_q) / 2)
    assert by_hand == pytest.approx(0.50192, abs=1e-5)
    keys = sorted(set(act_bigrams(simulated)) | set(act_bigrams(real)))
    p = [act_bigrams(simulated).get(k, 0) for k in keys]
    q = [act_bigrams(real).get(k, 0) for k in keys]
    assert js_distance(p, q) == pytest.approx(by_hand)
    # the same through the sessions of two users (acts read by a stand-in for read_turn)
    acts = {"a comedy?": "request", "I'll watch it": "take"}
    user = UserTurns("sim", ["a comedy?", "I'll watch it", "a comedy?"], ["s1", "s1", "s2"])
    # two real sessions that each say "request": the same distribution as one
    found = act_bigram_distance(
        user, UserTurns("real", ["a comedy?"] * 2, ["r1", "r2"]), acts.get, resamples=200, seed=0
    )
    assert found["distance"] == pytest.approx(by_hand)
    assert found["ci_low"] <= found["ci_high"]
    # one real session: the distance, and no CI over sessions
    alone = act_bigram_distance(user, UserTurns("real", ["a comedy?"], ["r1"]), acts.get, 200, 0)
    assert alone["distance"] == pytest.approx(by_hand) and np.isnan(alone["ci_low"]) and np.isnan(alone["ci_high"])
    # nothing in common: 1; the same distribution: 0
    assert js_distance([1, 0], [0, 3]) == pytest.approx(1.0)
    assert js_distance([2, 1], [4, 2]) == pytest.approx(0.0)


@given(
    st.lists(st.tuples(st.integers(0, 20), st.integers(0, 20)), min_size=1, max_size=12).filter(
        lambda pairs: sum(a for a, _ in pairs) > 0 and sum(b for _, b in pairs) > 0
    )
)
def test_the_jensen_shannon_distance_is_within_0_and_1_and_symmetric(pairs):
    from scipy.spatial.distance import jensenshannon

    p, q = [a for a, _ in pairs], [b for _, b in pairs]
    distance = js_distance(p, q)
    assert 0 <= distance <= 1
    assert distance == pytest.approx(js_distance(q, p), abs=1e-12)
    assert distance == pytest.approx(jensenshannon(p, q, base=2), abs=1e-7)
    assert js_distance(p, p) == pytest.approx(0, abs=1e-7)


def test_how_sessions_flow_and_end_by_hand():
    acts = {"a comedy?": "request", "why that one?": "ask_about", "I'll watch it": "take", "ok": "small_talk"}
    simulated = UserTurns(
        "sim",
        ["a comedy?", "I'll watch it", "a comedy?", "why that one?"],
        ["s1", "s1", "s2", "s2"],
        endings={"s1": "turn_limit", "s2": "abandoned"},
    )
    real = UserTurns("real", ["a comedy?", "ok", "why that one?"], ["r1", "r1", "r2"])
    table = compare_statistics(simulated, real, resamples=100, seed=0, act=acts.get).set_index("statistic")
    assert table.loc["act_request", ["simulated", "real"]].tolist() == [2 / 4, 1 / 3]
    assert table.loc["act_take", ["simulated", "real"]].tolist() == [1 / 4, 0]
    assert table.loc["act_other", ["simulated", "real"]].tolist() == [0, 0]
    # the last turns: s1 takes, s2 asks about; r1 small talk, r2 asks about
    assert table.loc["last_act_take", ["simulated", "real"]].tolist() == [0.5, 0]
    assert table.loc["last_act_ask_about", ["simulated", "real"]].tolist() == [0.5, 0.5]
    assert table.loc["ending_abandoned", "simulated"] == 0.5 and np.isnan(table.loc["ending_abandoned", "real"])
    assert np.isnan(table.loc["ending_turn_limit", "difference"])
    # without acts, the statistics of before only
    assert not any(name.startswith("act_") for name in compare_statistics(simulated, real, 10, 0)["statistic"])


def test_simulated_sessions_keep_how_they_ended():
    records = [
        {"session_id": "a", "system": "x", "profile": "realistic", "turns": [{"user_text": "hi"}]}
        | {"ending": {"reason": "abandoned", "turn": 1, "farewell": "bye"}},
        {"session_id": "b", "system": "x", "profile": "realistic", "turns": [{"user_text": "ok"}]},  # no record
    ]
    users, systems = simulated_turns(records, {})
    assert users["realistic"].endings == {"a": "abandoned"}
    assert systems[("realistic", "x")].endings == {"a": "abandoned"}


# Twelve short dialogues written for these tests, one JSON line each (the `jsonl` importing format).
_SAID = [
    ["hello, any comedy?", "something newer", "ok thanks"],
    ["a thriller please", "why that one?"],
    ["got anything with robots", "seen it", "another one?", "fine"],
    ["recommend me a movie"],
]


def _dialogue(i: int, said: list[str], user: str | None = None) -> dict:
    turns = [
        message for text in said for message in ({"role": "user", "text": text}, {"role": "system", "text": "Up?"})
    ]
    return {"system": "crs", "dialogue_id": f"d{i}", "turns": turns} | ({"user_id": user} if user else {})


def _corpus(path, dialogues: list[dict]):
    path.write_text("".join(json.dumps(d) + "\n" for d in dialogues))
    return path


# Each user talks to two systems (dialogues 0 and 1 are user u0's), as in an arena.
DIALOGUES = [_dialogue(i, _SAID[i % 4], f"u{i // 2}") for i in range(12)]


def test_the_real_side_is_held_out_from_the_voices_part(tmp_path):
    from crseval.simulate.user.voice import dialogue_part
    from crseval.simulate.user.voice_learning import corpus_dialogues

    corpus = _corpus(tmp_path / "corpus.jsonl", DIALOGUES)
    part = {r["session_id"]: dialogue_part(r, 2) for r in corpus_dialogues(corpus, "jsonl")}
    # the split by a hash of the user's id (the corpus names users): part 1 holds users u1, u2, u4 and u5
    assert [part[f"crs/d{i}"] for i in range(12)] == [2, 2, 1, 1, 1, 1, 2, 2, 1, 1, 1, 1]
    voice = {"corpus": "corpus.jsonl", "format": "jsonl", "parts": 2, "learn_part": 1}

    everything = load_reference(corpus, "jsonl")  # no voice: every dialogue
    assert set(everything.real.sessions) == set(part) and everything.floor is None

    split = load_reference(corpus, "jsonl", voice, corpus)
    assert set(split.real.sessions) == {s for s, p in part.items() if p == 2}
    assert set(split.floor.sessions) == {s for s, p in part.items() if p == 1}
    assert split.floor.name == FLOOR and split.shared == 0
    assert split.held_out == "the dialogues of part 2 of 2, held out from the voice, which learned from part 1"
    # dialogue i says what dialogues i + 4 and i + 8 say, and part 1 says each of the four: all 4 held-out
    # dialogues are echoed; no user speaks in both parts
    assert split.echoed == 4 and split.same_users == 0
    text = realism_markdown(_one_row_table(), "corpus.jsonl", split.real, split)
    assert "(corpus.jsonl): the dialogues of part 2 of 2, held out from the voice, which learned from part 1" in text
    assert "0 of the held-out dialogues are by a user who also speaks in the voice's part, and 4 say" in text
    assert "not held out" not in text

    # another file holding the voice's part: not held out, and how many dialogues it shares
    other = _corpus(tmp_path / "other.jsonl", DIALOGUES[:6] + [_dialogue(99, ["a musical?", "too long"])])
    shared = load_reference(other, "jsonl", voice, corpus)
    assert len(set(shared.real.sessions)) == 7  # the whole reference is measured against
    # d2 to d5 are the voice's by id; d0 and d1 say what a dialogue of the voice's part says; d99 is new
    assert shared.shared == 6
    text = realism_markdown(_one_row_table(), "other.jsonl", shared.real, shared)
    assert text.startswith("# How far is the simulated user from real users? (not held out)")
    assert f"**Not held out**: {shared.shared} of the reference's 7 dialogues" in text
    assert "## All users (not held out)" in text
    # the same words under other ids are shared dialogues too
    renamed = [d | {"dialogue_id": f"other-{d['dialogue_id']}"} for d in DIALOGUES]
    copied = load_reference(_corpus(tmp_path / "renamed.jsonl", renamed), "jsonl", voice, corpus)
    assert copied.shared == 12


def _one_row_table() -> pd.DataFrame:
    return pd.DataFrame(
        [{"user": "u", "system": "all", "measure": "words", "simulated": 5.0, "real": 6.0, "difference": -1.0}]
    ).assign(ci_low=np.nan, ci_high=np.nan, simulated_tells="", real_tells="")


def test_the_floor_is_real_users_of_the_voices_part_measured_as_a_user(matcher):
    from crseval.language.user_acts import read_turn

    said = ["hello, any comedy?", "something newer", "why that one?", "ok thanks", "seen it", "a thriller please"]
    real = UserTurns("real users", said * 2, [f"r{i // 3}" for i in range(12)])
    floor = UserTurns(FLOOR, said[::-1] * 2, [f"f{i // 2}" for i in range(12)])
    simulated = UserTurns(
        "explicit",
        [f"I'd like a {genre} film starring Robert De Niro." for genre in ("crime", "drama", "comedy")] * 4,
        [f"s{i // 4}" for i in range(12)],
        endings={"s0": "turn_limit", "s1": "turn_limit", "s2": "abandoned"},
    )
    table = realism_table(
        {"explicit": simulated},
        {("explicit", "x"): simulated},
        real,
        folds=2,
        resamples=50,
        read=lambda text: read_turn(text, matcher),
        floor=floor,
    )
    overall = table[table["system"] == "all"].set_index(["user", "measure"])
    measures = ["auc_word", "auc_char", "auc_statistics", "auc_word_blind", "auc_char_blind", "act_bigram_js"]
    for user in ("explicit", FLOOR):
        assert set(measures) <= set(overall.loc[user].index)
        assert {"act_request", "last_act_ask_about", "ending_abandoned", "turns_per_session"} <= set(
            overall.loc[user].index
        )
    # the floor says what the real users say, in another order: the same words per turn, the same acts
    assert overall.loc[(FLOOR, "words"), "difference"] == 0
    assert overall.loc[(FLOOR, "act_request"), "difference"] == pytest.approx(0)
    assert np.isnan(overall.loc[(FLOOR, "ending_abandoned"), "simulated"])  # real sessions record no ending
    assert overall.loc[("explicit", "ending_abandoned"), "simulated"] == pytest.approx(1 / 3)
    assert overall.loc[("explicit", "act_request"), "simulated"] == 1  # every turn asks for a value
    assert set(table.loc[table["user"] == FLOOR, "system"]) == {"all"}  # no systems met the floor
    # the floor stands first in the overview, beside every simulated user
    split = Reference(real, floor=floor, held_out="the dialogues of part 2 of 2", voice_part="part 1 of 2")
    text = realism_markdown(table, "corpus.jsonl", real, split)
    overview = text.split("## All users")[1].split("## User")[0]
    assert overview.index("| real users |") < overview.index(f"| {FLOOR} |") < overview.index("| explicit |")
    for heading in ("### Words", "### Style apart from content", "### Flow", f"## User `{FLOOR}`"):
        assert heading in text
    assert "Act bigrams, Jensen-Shannon distance to the real users' [95% CI]:" in text


def test_distinct_share_counts_the_turns_no_other_turn_says_word_for_word():
    # "hi" twice (case and spacing aside): 2 of 5 turns are said again, 3 are distinct
    assert distinct_share(["hi", " Hi", "what is it about?", "no", "what is it  about"]) == pytest.approx(3 / 5)
    assert distinct_share(["a", "b"]) == 1 and np.isnan(distinct_share([]))


def test_equal_samples_draw_the_larger_side_down_to_the_smaller_ones_size():
    simulated, real = equal_samples(10, 4, seed=3)
    assert list(real) == [0, 1, 2, 3] and len(simulated) == 4 and len(set(simulated)) == 4
    assert list(simulated) == sorted(simulated) and max(simulated) < 10
    assert [list(x) for x in equal_samples(10, 4, seed=3)] == [list(simulated), list(real)]
    simulated, real = equal_samples(3, 7, seed=0)
    assert list(simulated) == [0, 1, 2] and len(real) == 3 and max(real) < 7


def test_a_user_is_discriminated_on_as_many_turns_as_the_real_side_and_its_repeats_are_shown():
    real_said = [f"turn number {i} about films" for i in range(10)]
    real = UserTurns("real users", real_said, [f"r{i // 2}" for i in range(10)])
    # forty turns that say one thing: any ten drawn repeat one another
    repeated = UserTurns("u", ["the same thing again"] * 40, [f"s{i // 4}" for i in range(40)])
    table = realism_table({"u": repeated}, {}, real, folds=2, resamples=20)
    row = table[(table["measure"] == "distinct_turns")].iloc[0]
    assert row["real"] == 1.0 and row["simulated"] == 0
    assert row["difference"] == -1.0


# ------------------------------------------------------------------ bounded memory, whatever the input


def test_a_long_turn_keeps_the_bootstrap_small_and_is_counted_as_the_longest_words_counted():
    """A 20,000-word turn once made every bootstrap draw a histogram as wide as it (about 340 MB here)."""
    import tracemalloc

    from crseval.checks import user_realism

    long = " ".join(["word"] * 20_000)
    simulated = UserTurns(
        "sim", ["a film please", "something else", long, "ok thanks", "who is in it"], ["s1", "s1", "s2", "s3", "s3"]
    )
    real = UserTurns("real", ["any comedy?", "seen it", "yes", "no thanks"], ["r1", "r1", "r2", "r3"])
    compare_statistics(simulated, real, resamples=10, seed=0)  # the word lists loaded before measuring
    tracemalloc.start()
    try:
        table = compare_statistics(simulated, real, resamples=1000, seed=0, act=lambda text: "other")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 48e6
    table = table.set_index("statistic")
    # words 3, 2, 20,000, 2, 4: the median stays 3; the long turn is counted, on its side only
    assert table.loc["words", ["simulated", "real"]].tolist() == [3, 2]
    assert table.loc["long_turns", ["simulated", "real"]].tolist() == [1, 0]
    # a resample of the long turn's session alone has its median at the bound
    assert table.loc["words", "ci_high"] <= user_realism.MAX_TURN_WORDS
    # a side whose turns are all over the bound: the median is the bound
    longer = UserTurns("long", [long, long + " more", "a b c"], ["l1", "l2", "l3"])
    table = compare_statistics(longer, real, resamples=20, seed=0).set_index("statistic")
    assert table.loc["words", "simulated"] == user_realism.MAX_TURN_WORDS
    assert table.loc["long_turns", ["simulated", "real"]].tolist() == [2, 0]
    # no long turns: no such row
    assert "long_turns" not in set(compare_statistics(real, real, resamples=20, seed=0)["statistic"])


def test_the_report_says_how_many_turns_are_over_the_words_counted():
    from crseval.checks.user_realism import MAX_TURN_WORDS

    table = pd.concat(
        [
            _one_row_table(),
            pd.DataFrame([{"user": "u", "system": "all", "measure": "long_turns", "simulated": 3.0, "real": 1.0}]),
        ]
    )
    text = realism_markdown(table, "corpus.jsonl", UserTurns("real users", ["hi", "ok"], ["a", "b"]))
    assert f"3 of this user's turns and 1 of the real users' are over {MAX_TURN_WORDS:,} words" in text
    assert "| long_turns |" not in text  # a count of turns, not a statistic of the table


def test_many_sessions_are_drawn_a_block_at_a_time(monkeypatch):
    """Resamples x sessions indices once all drawn at once: 20,000 x 600 took about 290 MB here."""
    import tracemalloc

    from crseval.checks import realism_measures

    said = ["any comedy?", "seen it", "what is it about?", "ok thanks, I'll watch it", "something newer"]
    simulated = UserTurns("sim", said * 240, [f"s{i}" for i in range(600)] * 2)  # 600 sessions of two turns
    real = UserTurns("real", said[::-1] * 120, [f"r{i}" for i in range(600)])  # 600 of one
    compare_statistics(simulated, real, resamples=10, seed=0)
    # blocks of 2^20 indices (the default's eighth, for a test's memory): about 25 MB each
    monkeypatch.setattr(realism_measures, "BOOTSTRAP_BLOCK", 1 << 20, raising=False)
    tracemalloc.start()
    try:
        compare_statistics(simulated, real, resamples=20_000, seed=0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 40e6


def test_the_draws_do_not_depend_on_the_block_they_are_drawn_in(monkeypatch):
    """The same Generator draws the same indices in one block or in many: every statistic is the same, but
    for the variety of words, whose sums BLAS adds in an order that depends on the block's shape."""
    from crseval.checks import realism_measures

    rng = np.random.default_rng(4)
    words = ["film", "movie", "good", "watch", "tonight", "maybe", "comedy?", "seen", "it", "thanks"]

    def invent(name: str, sessions: int) -> UserTurns:
        turns = [(f"{name}{s}", " ".join(rng.choice(words, size=int(rng.integers(1, 12))))) for s in range(sessions)]
        turns += [(f"{name}{rng.integers(sessions)}", str(rng.choice(words))) for _ in range(sessions)]
        return UserTurns(name, [text for _, text in turns], [session for session, _ in turns])

    def act(text: str) -> str:
        return "ask" if "?" in text else "small_talk" if "thanks" in text else "other"

    simulated, real = invent("s", 40), invent("r", 25)
    at_once = compare_statistics(simulated, real, 500, 7, act=act)
    distance = act_bigram_distance(simulated, real, act, 500, 7)
    monkeypatch.setattr(realism_measures, "BOOTSTRAP_BLOCK", 97)  # a row or two of draws at a time
    in_blocks = compare_statistics(simulated, real, 500, 7, act=act)
    assert act_bigram_distance(simulated, real, act, 500, 7) == distance
    variety = at_once["statistic"] == "word_variety"
    pd.testing.assert_frame_equal(in_blocks[~variety], at_once[~variety], check_exact=True)
    pd.testing.assert_frame_equal(in_blocks[variety], at_once[variety], check_exact=False, rtol=1e-12)


def test_a_reference_over_the_bytes_read_is_refused_before_it_is_read(tmp_path, monkeypatch):
    from crseval.checks import realism_reference
    from crseval.simulate.user import voice_learning

    corpus = _corpus(tmp_path / "corpus.jsonl", DIALOGUES)
    monkeypatch.setattr(realism_reference, "MAX_REFERENCE_BYTES", corpus.stat().st_size - 1)

    def unread(*_):
        raise AssertionError("the reference was read")

    monkeypatch.setattr(voice_learning, "corpus_dialogues", unread)
    for call in (lambda: load_reference(corpus, "jsonl"), lambda: load_reference(corpus, "jsonl", {}, corpus)):
        with pytest.raises(
            realism_reference.ReferenceTooLarge, match=rf"corpus\.jsonl: {corpus.stat().st_size:,} bytes"
        ):
            call()


def test_a_reference_over_the_dialogues_measured_is_refused(tmp_path, monkeypatch):
    from crseval.checks import realism_reference

    corpus = _corpus(tmp_path / "corpus.jsonl", DIALOGUES)
    monkeypatch.setattr(realism_reference, "MAX_REFERENCE_DIALOGUES", 11)
    with pytest.raises(realism_reference.ReferenceTooLarge, match=r"corpus\.jsonl: 12 dialogues, over the 11"):
        load_reference(corpus, "jsonl")
    monkeypatch.setattr(realism_reference, "MAX_REFERENCE_DIALOGUES", 12)
    assert len(set(load_reference(corpus, "jsonl").real.sessions)) == 12


def test_a_reference_of_one_dialogue_has_no_ci_over_sessions_and_the_report_says_why():
    said = ["hello, any comedy?", "something newer", "why that one?", "ok thanks", "seen it", "a thriller please"]
    real = UserTurns("real users", said, ["r1"] * 6)
    simulated = UserTurns(
        "u", [f"I'd like a {genre} film." for genre in ("crime", "drama", "comedy")] * 2, list("aabbcc")
    )
    table = realism_table({"u": simulated}, {}, real, folds=2, resamples=50)
    statistics = table[table["difference"].notna()]
    assert not statistics.empty and statistics[["ci_low", "ci_high"]].isna().all().all()
    text = realism_markdown(table, "one.jsonl", real)
    assert "**One real dialogue**: a CI over sessions needs at least 2 sessions on each side" in text
    assert "| words | 5.00 | 2.50 | 2.50 [n/a, n/a] |" in text


def test_a_simulated_person_counts_once_for_the_user_and_every_time_for_each_system():
    def record(system, index, seed, texts, trial=0):
        session_id = f"{system}/s{index:05d}" + (f"/t{trial}" if trial else "")
        turns = [{"user_text": text} for text in texts]
        record = {"session_id": session_id, "session_index": index, "seed": seed, "system": system, "turns": turns}
        return record | ({"trial": trial} if trial else {})  # as run_session records a repeated trial

    records = [
        record("x", 0, 11, ["hi", "a comedy"]),
        record("x", 1, 12, ["hello", "a drama"]),
        record("y", 0, 11, ["hi", "a comedy please"]),
        record("y", 1, 12, ["hello", "a drama please"]),
        record("y", 1, 12, ["hello", "a drama now"], trial=1),
    ]
    users, systems = simulated_turns(records, {"x": "realistic", "y": "realistic"})
    # two people, each with the session whose seed, system and trial hash lowest
    kept = {}
    for r, trial in zip(records, ["", "", "", "", "t1"]):
        rank = hashlib.sha256(f"{r['seed']}|{r['system']}|{trial}".encode()).digest()
        if r["session_index"] not in kept or rank < kept[r["session_index"]][0]:
            kept[r["session_index"]] = (rank, r)
    expected = [text for index in (0, 1) for text in (t["user_text"] for t in kept[index][1]["turns"])]
    assert users["realistic"].texts == expected and len(expected) == 4
    assert len(set(users["realistic"].sessions)) == 2
    said_to_y = ["hi", "a comedy please", "hello", "a drama please", "hello", "a drama now"]
    assert systems[("realistic", "y")].texts == said_to_y
    # the shards' order does not choose
    again = simulated_turns(records[::-1], {"x": "realistic", "y": "realistic"})[0]["realistic"]
    assert sorted(again.texts) == sorted(expected)
