"""User realism per person (crseval.checks.user_realism): folds grouped by person, the bootstrap of people,
the acts given the system's reply and the three volumes, against values computed by hand."""

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crseval.checks.realism_discriminators import person_auc_draws, side_rng
from crseval.checks.realism_volumes import VolumeSample
from crseval.checks.user_realism import (
    DEALT,
    FLOOR,
    MATCHED,
    TooFewPeople,
    UserTurns,
    dealt_to_others,
    discriminator,
    draw_people,
    equal_samples,
    gather_simulated,
    load_reference,
    matched_sample,
    person_auc_interval,
    person_folds,
    realism_markdown,
    realism_table,
    reply_act_distance,
    session_rounds,
    simulated_turns,
    volume_samples,
    what_is_said,
)

# ------------------------------------------------------------------ folds grouped by person


def test_the_folds_never_split_a_person_on_either_side():
    labels = np.array([1] * 9 + [0] * 8)
    people = np.array(["a"] * 3 + ["b"] * 2 + ["c"] * 2 + ["d"] * 2 + ["x"] * 4 + ["y", "y", "z", "w"], dtype=object)
    fold = person_folds(labels, people, folds=3, seed=0)
    for person in set(people):
        assert len(set(fold[people == person])) == 1, person  # all of a person's turns in one fold
    assert set(fold) == {0, 1, 2}
    for k in range(3):  # every training part holds both sides
        assert set(labels[fold != k]) == {0, 1}
    assert (person_folds(labels, people, 3, 0) == fold).all()  # seeded
    # a person on both sides (a reference sharing a user) stays in one fold too
    shared = people.copy()
    shared[-1] = "a"
    fold = person_folds(labels, shared, 3, 0)
    assert len(set(fold[shared == "a"])) == 1


def test_a_side_with_fewer_people_than_folds_is_refused_with_why():
    labels = np.array([1] * 6 + [0] * 6)
    people = np.array(["a"] * 6 + ["x", "y", "z", "x", "y", "z"], dtype=object)
    with pytest.raises(TooFewPeople, match="1 simulated person, fewer than the 2 folds"):
        person_folds(labels, people, folds=2, seed=0)
    with pytest.raises(TooFewPeople, match="3 real people, fewer than the 5 folds"):
        discriminator(["a b"] * 6, ["c d"] * 6, "word", 5, 0, [f"s{i}" for i in range(6)], ["x", "y", "z"] * 2)


def test_grouping_by_person_keeps_a_persons_own_words_from_giving_the_side_away():
    """Both sides say the same words, but each person repeats a word of their own: turn by turn folds learn
    the person's word in training and find it in the test fold; folds by person cannot."""
    rng = np.random.default_rng(1)
    words = ["film", "movie", "good", "watch", "tonight", "maybe", "something", "else", "like", "that"]

    def side(name: str) -> tuple[list[str], list[str]]:
        texts, people = [], []
        for person in range(12):
            for _ in range(6):
                said = " ".join(rng.choice(words, size=3))
                texts.append(f"{said} {name}word{person}")
                people.append(f"{name}{person}")
        return texts, people

    (simulated, simulated_people), (real, real_people) = side("s"), side("r")
    by_turn = discriminator(simulated, real, "word", 4, 0, resamples=200)
    by_person = discriminator(simulated, real, "word", 4, 0, simulated_people, real_people, resamples=200)
    assert by_turn["auc"] > 0.9
    assert by_person["auc"] < 0.65 and by_person["auc_ci_low"] < 0.5 < by_person["auc_ci_high"]
    assert by_person["simulated_people"] == 12 and by_person["real_people"] == 12
    # the CI over people is wider than DeLong's, which takes the 72 turns of 12 people as independent
    assert by_person["auc_ci_high"] - by_person["auc_ci_low"] > by_person["delong_high"] - by_person["delong_low"]


# ------------------------------------------------------------------ the bootstrap of people


def test_the_bootstrap_of_people_by_hand():
    """Positives: person A scores 3, person B 1; negatives: C 2, D 0. A beats C and D, B beats D only.
    A draw takes each side's two people with replacement: (2, 0), (1, 1) or (0, 2) of them, with chances
    1/4, 1/2, 1/4; its AUC is sum(a_p c_q [p beats q]) / 4."""
    labels = np.array([1, 1, 0, 0])
    scores = np.array([3.0, 1.0, 2.0, 0.0])
    people = np.array(["A", "B", "C", "D"], dtype=object)
    beats = np.array([[1, 1], [0, 1]])  # rows A, B; columns C, D
    by_hand = {}
    for a, chance_a in (((2, 0), 0.25), ((1, 1), 0.5), ((0, 2), 0.25)):
        for c, chance_c in (((2, 0), 0.25), ((1, 1), 0.5), ((0, 2), 0.25)):
            auc = float(np.array(a) @ beats @ np.array(c)) / 4
            by_hand[auc] = by_hand.get(auc, 0) + chance_a * chance_c
    # 1: A twice (1/4), or A and B against D twice (1/8), or B twice against D twice (1/16); 0.5: A and B
    # against C twice (1/8), B twice against C and D (1/8); 0.75: one of each (1/4); 0: B twice against C twice
    assert by_hand == {1.0: 7 / 16, 0.5: 4 / 16, 0.75: 4 / 16, 0.0: 1 / 16}
    drawn = person_auc_draws(labels, scores, people, 20_000, seed=5)
    assert set(np.unique(drawn)) == set(by_hand)
    for auc, chance in by_hand.items():
        assert np.mean(drawn == auc) == pytest.approx(chance, abs=0.01)
    # AUC 0 in 1/16 of draws, 1 in 7/16: the 95% CI is [0, 1]
    assert person_auc_interval(labels, scores, people, 20_000, 5) == (0.0, 1.0)


def test_a_persons_turns_are_drawn_together():
    """A draws 2 turns or none, never one: with A (scores 3, 1) and B (2) against C (0) and D (2.5), every
    AUC is that of whole people, computed here turn by turn."""
    labels = np.array([1, 1, 1, 0, 0])
    scores = np.array([3.0, 1.0, 2.0, 0.0, 2.5])
    people = np.array(["A", "A", "B", "C", "D"], dtype=object)
    drawn = person_auc_draws(labels, scores, people, 3_000, seed=2)
    possible = set()
    for a in range(3):
        for c in range(3):
            weights = np.array([a, a, 2 - a, c, 2 - c], dtype=float)
            pairs = [
                weights[i] * weights[j] * (1.0 if scores[i] > scores[j] else 0.5 if scores[i] == scores[j] else 0.0)
                for i in range(3)
                for j in range(3, 5)
            ]
            possible.add(round(sum(pairs) / (weights[:3].sum() * weights[3:].sum()), 12))
    assert {round(x, 12) for x in drawn} <= possible
    # the draws are seeded, and do not depend on the block they are drawn in
    from crseval.checks import realism_discriminators

    again = person_auc_draws(labels, scores, people, 3_000, seed=2)
    assert (again == drawn).all()
    original = realism_discriminators.AUC_BLOCK
    try:
        realism_discriminators.AUC_BLOCK = 7
        assert (person_auc_draws(labels, scores, people, 3_000, seed=2) == drawn).all()
    finally:
        realism_discriminators.AUC_BLOCK = original


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(-3, 3), st.integers(0, 3)), min_size=4, max_size=30))
def test_each_draw_is_the_auc_of_whole_people_counted_turn_by_turn(turns):
    """The draws from ranks (tie groups merged into runs of one side) against the same draws weighed turn by
    turn and compared pair by pair."""
    labels = np.array([int(label) for label, _, _ in turns])
    scores = np.array([float(score) for _, score, _ in turns])
    people = np.array([f"{label}{who}" for label, _, who in turns], dtype=object)
    sides = [pd.factorize(people[labels == side])[0] for side in (1, 0)]
    if min(len(set(codes)) for codes in sides) < 2:
        assert len(person_auc_draws(labels, scores, people, 10, 0)) == 0
        return
    drawn = person_auc_draws(labels, scores, people, 30, 0)
    counts = [
        np.array(
            [
                np.bincount(row, minlength=codes.max() + 1)
                for row in side_rng(0, side).integers(codes.max() + 1, size=(30, codes.max() + 1))
            ]
        )
        for side, codes in zip((1, 0), sides)
    ]
    positive, negative = scores[labels == 1], scores[labels == 0]
    for r in range(30):
        weight_p, weight_n = counts[0][r][sides[0]], counts[1][r][sides[1]]
        pairs = sum(
            wp * wn * (1.0 if p > n else 0.5 if p == n else 0.0)
            for p, wp in zip(positive, weight_p)
            for n, wn in zip(negative, weight_n)
        )
        assert drawn[r] == pytest.approx(pairs / (weight_p.sum() * weight_n.sum()))
    assert ((0 <= drawn) & (drawn <= 1)).all()


# ------------------------------------------------------------------ equal samples of whole people


def test_the_larger_side_is_drawn_down_as_whole_people():
    people = ["a", "a", "a", "b", "b", "c", "d", "d"]
    for seed in range(20):
        picked = draw_people(people, 4, np.random.default_rng(seed))
        assert len(picked) == 4 and list(picked) == sorted(set(picked))
        taken = [people[i] for i in picked]
        partial = [p for p in set(taken) if taken.count(p) < people.count(p)]
        assert len(partial) <= 1  # all but at most the last person taken whole
    # the people's order drawn: the first of a seed's order is whole
    rng = np.random.default_rng(0)
    order = np.random.default_rng(0).permutation(4)
    picked = draw_people(people, 4, rng)
    first = ["a", "b", "c", "d"][order[0]]
    assert all(i in picked for i, p in enumerate(people) if p == first)
    # a side no larger than n: every turn
    assert list(draw_people(people, 8, np.random.default_rng(0))) == list(range(8))
    # each side its own Generator: the real side's draw does not depend on the simulated side's size
    _, real = equal_samples(["s"] * 3 + ["t"] * 3, people, seed=4)
    _, same_real = equal_samples(["u"] * 6 + ["v"] * 6, people, seed=4)
    assert len(real) == 6 and (real == draw_people(people, 6, side_rng(4, 0))).all()
    assert len(same_real) == 8  # 12 simulated turns: all 8 real


def test_a_person_is_a_profile_and_a_session_index_over_every_system_and_trial():
    def record(system, index, seed, texts, trial=0):
        turns = [{"user_text": text, "system_text": "ok?"} for text in texts]
        session_id = f"{system}/s{index}" + (f"/t{trial}" if trial else "")
        return {"session_id": session_id, "session_index": index, "seed": seed, "system": system, "turns": turns} | (
            {"trial": trial} if trial else {}
        )

    records = [
        record("x", 0, 11, ["hi", "a comedy"]),
        record("x", 1, 12, ["hello"]),
        record("y", 0, 11, ["hi", "a comedy please", "thanks"]),
        record("y", 1, 12, ["hello there"], trial=1),
    ]

    def cases(record):  # a stand-in for crseval.replies.cases: the start, then "asked"
        return ["start"] + ["asked"] * (len(record["turns"]) - 1)

    gathered = gather_simulated(records, {"x": "realistic", "y": "realistic"}, cases)
    once, pooled = gathered.users["realistic"], gathered.pooled["realistic"]
    assert set(once.people) == {"realistic#0", "realistic#1"} and len(set(once.sessions)) == 2
    # pooled: every session, each person's kept session first (the same turns as the user's row), then the next
    assert pooled.texts[: len(once.texts)] == once.texts and len(pooled.texts) == 7
    assert len(set(pooled.sessions)) == 4 and set(pooled.people) == set(once.people)
    rounds = session_rounds(pooled)
    assert list(rounds[: len(once.texts)]) == [0] * len(once.texts) and set(rounds[len(once.texts) :]) == {1}
    assert pooled.replies == [c for s in _sessions_of(pooled, records) for c in cases(s)]
    assert gathered.systems[("realistic", "y")].people == ["realistic#0"] * 3 + ["realistic#1"]
    assert simulated_turns(records, {"x": "realistic", "y": "realistic"}, cases)[0]["realistic"] == once


def _sessions_of(turns: UserTurns, records: list[dict]) -> list[dict]:
    by_id = {r["session_id"]: r for r in records}
    return [by_id[s] for s in dict.fromkeys(turns.sessions)]


def test_reworded_turns_keep_the_reply_case_of_their_place():
    reworded = {"template_text": "I'd like a comedy.", "llm": {"model": "tiny-lm"}}
    record = {
        "session_id": "a",
        "system": "x",
        "profile": "explicit",
        "turns": [
            {"user_text": "Hello."},
            {"user_text": "got any comedies?", "user_meta": {"paraphrase": reworded}},
        ],
    }
    gathered = gather_simulated([record], {}, lambda r: ["start", "asked"])
    assert gathered.users["explicit"].replies == ["start", "asked"]
    assert gathered.users["explicit reworded by tiny-lm"].replies == ["asked"]
    with pytest.raises(ValueError, match="1 reply cases for 2 user turns"):
        gather_simulated([record], {}, lambda r: ["start"])


def test_a_real_person_is_the_corpus_user_named_after_the_corpus(tmp_path):
    def dialogue(i, said, user=None):
        turns = [m for text in said for m in ({"role": "user", "text": text}, {"role": "system", "text": "Up?"})]
        return {"system": "crs", "dialogue_id": f"d{i}", "turns": turns} | ({"user_id": user} if user else {})

    corpus = tmp_path / "mine.jsonl"
    dialogues = [dialogue(0, ["hi", "a comedy"], "u0"), dialogue(1, ["hello"], "u0"), dialogue(2, ["yo"])]
    corpus.write_text("".join(json.dumps(d) + "\n" for d in dialogues))
    real = load_reference(corpus, "jsonl", reply_cases=lambda r: ["start"] + ["other"] * (len(r["turns"]) - 1)).real
    assert real.people == ["mine.jsonl:user:u0"] * 3 + ["mine.jsonl:crs/d2"]
    assert real.replies == ["start", "other", "start", "start"]


# ------------------------------------------------------------------ acts given the system's reply

ACTS_OF = {"a comedy": "request", "hi": "small_talk", "why?": "ask", "I'll watch it": "take"}


def test_the_acts_given_the_reply_by_hand():
    """Two cases both sides have. start: simulated request, request; real request, small talk. asked:
    simulated small talk; real ask, ask. catalog_film: the real side only."""
    simulated = UserTurns(
        "sim", ["a comedy", "hi", "a comedy"], ["s1", "s1", "s2"], replies=["start", "asked", "start"]
    )
    real = UserTurns(
        "real",
        ["a comedy", "why?", "hi", "why?", "I'll watch it"],
        ["r1", "r1", "r2", "r2", "r3"],
        replies=["start", "asked", "start", "asked", "catalog_film"],
    )
    found = reply_act_distance(simulated, real, ACTS_OF.get, resamples=500, seed=0)
    # start: p = (1, 0), q = (1/2, 1/2), m = (3/4, 1/4)
    start = np.sqrt((np.log2(4 / 3) + 0.5 * np.log2(2 / 3) + 0.5 * np.log2(2)) / 2)
    assert start == pytest.approx(0.557923, abs=1e-6)
    # asked: small talk against ask, nothing in common: 1
    by_case = {c["case"]: c for c in found["cases"]}
    assert by_case["start"]["distance"] == pytest.approx(start)
    assert by_case["asked"]["distance"] == pytest.approx(1.0)
    assert np.isnan(by_case["catalog_film"]["distance"])
    assert (by_case["catalog_film"]["simulated_turns"], by_case["catalog_film"]["real_turns"]) == (0, 1)
    # weights: start 2 of 3 simulated turns, 2 of 4 real ones: (2/3 + 1/2) / 2 = 7/12; asked (1/3 + 1/2) / 2
    assert found["distance"] == pytest.approx(7 / 12 * start + 5 / 12 * 1.0)
    assert (found["simulated_turns"], found["real_turns"]) == (3, 4)
    assert 0 <= found["ci_low"] <= found["ci_high"] <= 1
    assert [c["case"] for c in found["cases"]] == ["start", "catalog_film", "asked"]  # crseval.replies' order
    # the same turns on both sides: 0 in every case
    same = reply_act_distance(real, real, ACTS_OF.get, resamples=0)
    assert same["distance"] == pytest.approx(0) and np.isnan(same["ci_low"])


def test_the_acts_given_the_reply_need_the_cases_read():
    with pytest.raises(ValueError, match="reply case of each turn was not read"):
        reply_act_distance(UserTurns("a", ["hi"], ["s"]), UserTurns("b", ["hi"], ["r"], replies=["start"]), str)


# ------------------------------------------------------------------ the three volumes


def _person_turns(name: str, sessions: list[tuple[str, str, int]]) -> UserTurns:
    """(person, session, turns) -> UserTurns of that many turns per session."""
    texts, session_ids, people = [], [], []
    for person, session, turns in sessions:
        texts += [f"{name} {session} turn {i}" for i in range(turns)]
        session_ids += [session] * turns
        people += [person] * turns
    return UserTurns(name, texts, session_ids, people=people)


def test_the_three_volumes_count_people_sessions_and_turns_by_hand():
    # three people, two turns a session; each has a second session (with another system)
    once = _person_turns("u", [("p1", "x1", 2), ("p2", "x2", 2), ("p3", "x3", 2)])
    pooled = _person_turns(
        "u", [("p1", "x1", 2), ("p2", "x2", 2), ("p3", "x3", 2)] + [("p1", "y1", 2), ("p2", "y2", 2), ("p3", "y3", 2)]
    )
    real = _person_turns("real", [(f"r{i}", f"d{i}", 1 if i % 2 else 2) for i in range(8)])  # 12 turns
    assert list(session_rounds(pooled)) == [0] * 6 + [1] * 6
    samples = {s.volume: s for s in volume_samples(once, real, n=9, seed=3, pooled=pooled)}
    # once: 6 simulated turns of 3 people against 6 real turns drawn as whole people
    assert (len(samples["once"].simulated), samples["once"].people, samples["once"].sessions) == (6, 3, 3)
    assert len(samples["once"].real) == 6
    # floor_n: 9 turns: every person's first session (6 turns), then 3 more of their second sessions
    floor_n = samples["floor_n"]
    assert (len(floor_n.simulated), floor_n.people, floor_n.sessions) == (9, 3, 5)
    assert set(floor_n.simulated[:6]) == set(range(6)) and len(floor_n.real) == 9
    # the second sessions in the people's drawn order: the first person's whole, one turn of the next
    order = side_rng(3, 1).permutation(3)
    second = {pooled.sessions[i] for i in floor_n.simulated[6:]}
    assert second == {f"y{order[0] + 1}", f"y{order[1] + 1}"}
    # pooled: everything, weighed equally
    assert (len(samples["pooled"].simulated), samples["pooled"].sessions, len(samples["pooled"].real)) == (12, 6, 12)
    assert samples["pooled"].balanced and not floor_n.balanced
    # more turns asked for than said: all of them, and as many real ones
    everything = volume_samples(once, real, n=40, seed=3, pooled=pooled)[1]
    assert len(everything.simulated) == 12 and len(everything.real) == 12


def test_the_floor_is_measured_at_every_volume_and_the_report_says_how_many_people_it_took():
    rng = np.random.default_rng(0)
    words = ["film", "movie", "good", "watch", "tonight", "maybe", "something", "else", "like", "that"]

    def said(n):
        return [" ".join(rng.choice(words, size=int(rng.integers(2, 6)))) for _ in range(n)]

    real = UserTurns(
        "real users", said(24), [f"d{i // 2}" for i in range(24)], people=[f"r{i // 4}" for i in range(24)]
    )
    floor = UserTurns(FLOOR, said(20), [f"f{i // 2}" for i in range(20)], people=[f"q{i // 4}" for i in range(20)])
    # four people, one session of three turns each once; eight sessions pooled
    once = UserTurns("u", said(12), [f"s{i // 3}" for i in range(12)], people=[f"u#{i // 3}" for i in range(12)])
    pooled = UserTurns(
        "u",
        once.texts + said(12),
        once.sessions + [f"t{i // 3}" for i in range(12)],
        people=once.people + [f"u#{i // 3}" for i in range(12)],
    )
    table = realism_table({"u": once}, {}, real, folds=2, resamples=50, floor=floor, pooled={"u": pooled})
    rows = table.set_index(["user", "measure"])
    # the floor's comparison: 20 turns a side; u at floor_n: its 12 first sessions' turns, then 8 of its second
    assert rows.loc[("u", "auc_word_volume_floor_n"), ["simulated_turns", "real_turns"]].tolist() == [20, 20]
    assert rows.loc[("u", "auc_word_volume_floor_n"), ["simulated_people", "simulated_sessions"]].tolist() == [4, 7]
    assert rows.loc[("u", "auc_word_volume_once"), ["simulated_turns", "simulated_people", "real_turns"]].tolist() == [
        12,
        4,
        12,
    ]
    assert rows.loc[
        ("u", "auc_word_volume_pooled"), ["simulated_turns", "simulated_sessions", "real_turns"]
    ].tolist() == [
        24,
        8,
        24,
    ]
    for volume in ("once", "floor_n", "pooled"):
        assert not np.isnan(rows.loc[(FLOOR, f"auc_word_volume_{volume}"), "simulated"])
    assert rows.loc[(FLOOR, "auc_word_volume_pooled"), ["simulated_turns", "real_turns"]].tolist() == [20, 24]
    # once is the discriminator of the user's row: the same sample, the same AUC
    assert rows.loc[("u", "auc_word_volume_once"), "simulated"] == rows.loc[("u", "auc_word"), "simulated"]
    text = realism_markdown(table, "corpus.jsonl", real)
    assert "## At volume" in text
    assert "| u | floor_n | 4 (7) | 20 | 5 | 20 |" in text
    assert text.index(f"| {FLOOR} | once |") < text.index("| u | once |")


def test_dealing_the_floors_turns_keeps_every_session_and_every_turn_and_moves_only_who_says_it():
    floor = UserTurns(
        FLOOR,
        ["a1", "a2", "a3", "b1", "b2", "c1"],
        ["da", "da", "da", "db", "db", "dc"],
        people=["pa", "pa", "pa", "pb", "pb", "pc"],
        replies=["start", "ra2", "ra3", "start", "rb2", "start"],
    )
    dealt = dealt_to_others(floor, seed=3)
    assert dealt.name == DEALT
    assert (dealt.sessions, dealt.people) == (floor.sessions, floor.people)  # each session keeps its person and size
    assert sorted(dealt.texts) == sorted(floor.texts) and dealt.texts != floor.texts  # each turn once, elsewhere
    # a turn keeps the reply it followed: "a2" followed "ra2" wherever it lands
    assert {text: reply for text, reply in zip(dealt.texts, dealt.replies)} == dict(zip(floor.texts, floor.replies))
    assert dealt_to_others(floor, seed=3) == dealt  # seeded
    assert any(dealt_to_others(floor, seed=s).texts != dealt.texts for s in range(4, 8))


def test_one_persons_words_dealt_to_others_are_learned_in_one_fold_and_found_in_the_next():
    # every person writes a word of their own beside common ones: grouped by person, a discriminator meets
    # a person's word in one fold only, so real users against real users score about chance; dealt out, a
    # floor person's word is said by people of every fold, and the dealt turns are told apart
    rng = np.random.default_rng(5)
    common = ["a", "film", "good", "tonight", "please", "some", "movie", "watch"]

    def people(prefix, n):
        texts, who = [], []
        for person in range(n):
            for _ in range(4):
                texts.append(" ".join([*rng.choice(common, size=3), f"{prefix}word{person}"]))
                who.append(f"{prefix}{person}")
        return UserTurns(prefix, texts, [f"{w}-d" for w in who], people=who)

    real, floor = people("r", 30), people("f", 30)
    floor = UserTurns(FLOOR, floor.texts, floor.sessions, people=floor.people)
    table = realism_table({}, {}, real, folds=5, resamples=50, floor=floor).set_index(["user", "measure"])
    as_said = table.loc[(FLOOR, "auc_word_volume_once"), "simulated"]
    dealt = table.loc[(DEALT, "auc_word_volume_once"), "simulated"]
    assert as_said < 0.65 and dealt > as_said + 0.25
    text = realism_markdown(table.reset_index(), "corpus.jsonl", real)
    assert text.index(f"| {FLOOR} | once |") < text.index(f"| {DEALT} | once |")
    assert f"| {DEALT} |" not in text.split("## At volume")[0]  # measured at volume only: not in the overview
    assert f"## User `{DEALT}`" not in text


def test_the_matched_sample_keeps_of_each_kind_as_many_turns_as_the_side_with_fewer_by_hand():
    # the kind of a turn is its first word here; the simulated side asks far more often than the real one
    simulated = UserTurns(
        "u",
        ["ask a", "ask b", "ask c", "ask d", "take e", "greet f", "ask g"],
        list("ssttuuv"),
    )
    real = UserTurns("real", ["ask p", "take q", "take r", "other s", "take t"], list("abcde"))
    once = VolumeSample("once", simulated, np.arange(7), np.arange(5))
    matched = matched_sample(once, real, lambda text: text.split()[0], seed=1)
    assert matched.volume == MATCHED and matched.source is simulated
    said = lambda turns, picked: sorted(turns.texts[i].split()[0] for i in picked)  # noqa: E731
    # ask: 5 simulated, 1 real -> 1 each; take: 1 and 3 -> 1 each; greet and other: on one side only -> none
    assert said(simulated, matched.simulated) == ["ask", "take"] == said(real, matched.real)
    assert simulated.texts[matched.simulated[1]] == "take e" and matched.simulated[0] in {0, 1, 2, 3, 6}
    # the same seed draws the same turns; the draw stays within the `once` sample it is given
    again = matched_sample(once, real, lambda text: text.split()[0], seed=1)
    assert again.simulated.tolist() == matched.simulated.tolist() and again.real.tolist() == matched.real.tolist()
    narrower = VolumeSample("once", simulated, np.array([4, 5, 6]), np.array([0, 1]))
    assert matched_sample(narrower, real, lambda text: text.split()[0], seed=1).simulated.tolist() == [4, 6]


def test_what_is_said_is_the_act_the_fields_and_roles_and_a_greeting(matcher):
    from crseval.language.user_acts import read_turn

    def kind(text):
        return what_is_said(read_turn(text, matcher))

    assert kind("hi, any comedy films?") == kind("hello! any good drama?") != kind("any comedy films?")
    assert kind("any comedy films?").split("|")[1] == "genre:wish"
    assert kind("no horror please, a comedy") != kind("a comedy please")


def test_an_auc_without_enough_people_is_na_and_says_why():
    said = ["hello, any comedy?", "something newer", "why that one?", "ok thanks", "seen it", "a thriller please"]
    real = UserTurns("real users", said, ["r1"] * 6)  # one person
    simulated = UserTurns("u", [f"I'd like a {g} film." for g in ("crime", "drama", "comedy")] * 2, list("aabbcc"))
    table = realism_table({"u": simulated}, {}, real, folds=2, resamples=20)
    row = table.set_index("measure").loc["auc_word"]
    assert (
        np.isnan(row["simulated"])
        and row["note"] == "n/a: 1 real person, fewer than the 2 folds (a person is in one fold)"
    )
    assert (row["simulated_people"], row["real_people"]) == (3, 1)
    text = realism_markdown(table, "one.jsonl", real)
    assert "- auc_word: n/a: 1 real person, fewer than the 2 folds" in text


def test_the_report_shows_the_acts_given_the_reply_for_the_user_and_the_floor(matcher):
    from crseval.language.user_acts import read_turn

    said = ["hello, any comedy?", "something newer", "why that one?", "ok thanks", "seen it", "a thriller please"]
    cases = ["start", "catalog_film", "catalog_film", "asked", "start", "asked"]
    real = UserTurns("real users", said * 2, [f"r{i // 3}" for i in range(12)], replies=cases * 2)
    floor = UserTurns(FLOOR, said[::-1] * 2, [f"f{i // 2}" for i in range(12)], replies=cases[::-1] * 2)
    simulated = UserTurns(
        "u",
        [f"I'd like a {g} film." for g in ("crime", "drama", "comedy")] * 4,
        [f"s{i // 4}" for i in range(12)],
        replies=["start", "asked", "catalog_film", "asked"] * 3,
    )
    table = realism_table(
        {"u": simulated}, {}, real, folds=2, resamples=50, read=lambda t: read_turn(t, matcher), floor=floor
    )
    rows = table.set_index(["user", "measure"])
    for user in ("u", FLOOR):
        assert {"reply_act_js", "reply_act_js_start", "reply_act_js_asked", "reply_act_js_catalog_film"} <= set(
            rows.loc[user].index
        )
    # the floor says the same turns after other replies; the user's every turn asks for a value
    assert rows.loc[("u", "reply_act_js"), "simulated_turns"] == 12
    text = realism_markdown(table, "corpus.jsonl", real)
    assert "Acts given the system's reply before them, Jensen-Shannon distance" in text
    # with turns read, the once turns matched by what they say, for the user and the floor alike
    for user in ("u", FLOOR):
        assert {"auc_word_volume_matched", "auc_word_blind_volume_matched"} <= set(rows.loc[user].index)
    assert f"| {FLOOR} | matched |" in text and "| u | matched |" in text
    assert "| reply case | simulated turns | real turns | JS distance [95% CI] |" in text
    assert "| reply case | the voice's part's turns | real turns | JS distance [95% CI] |" in text
