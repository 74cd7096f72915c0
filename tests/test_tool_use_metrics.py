"""The tool_use metric family (crseval.metrics.tool_use): every column worked by hand on turn records written
here, the empty cases, bounds on any record, and the calibration systems through the toolkit on real simulated
sessions ordered as their construction says."""

from __future__ import annotations

import json
import math

import pandas as pd
import pyarrow as pa
import pytest
from conftest import default_config, model_free_scorer
from hypothesis import given, settings
from hypothesis import strategies as st
from test_sessions import arguments

from crseval.catalog.toolkit import Catalog
from crseval.checks import validity
from crseval.metrics import families, tool_use
from crseval.metrics.tool_use import SESSION_NAMES, SearchReader, error_kind, prf, score_session
from crseval.simulate.shard import build_shard_runner
from crseval.statistics import aggregate, column_registry

NOT_JSON = "the arguments are not JSON: Expecting value: line 1 column 1 (char 0)"
UNKNOWN_FILM = "no film with id 99999 in the catalog"
NO_FILMS = "film_ids must be a non-empty list of film ids"


@pytest.fixture(scope="module")
def read_search(demo_index):
    return SearchReader(Catalog(demo_index))


def c(field, value, negated=False):
    return {"field": field, "value": value, "negated": negated}


def meta(constraints, said=None):
    m = {"constraints": constraints, "focus_field": constraints[0]["field"], "focus_value": constraints[0]["value"]}
    return m | ({"said": said} if said is not None else {})


def call(name, arguments, status="ok", films=None, film=None, error=None):
    result = None
    if status == "ok":
        result = {"films": [{"id": f, "title": f"film {f}"} for f in films or []]}
        if film is not None:
            result = {"id": film, "title": f"film {film}"}
    record = {"step": 1, "name": name, "arguments": arguments, "status": status, "result": result, "error": error}
    if arguments is None:
        record["arguments_text"] = "{genre"
    return record | {"latency_s": 0.001}


def search(arguments, films=(), **kw):
    return call("search_films", arguments, films=list(films), **kw)


def commit(*films):
    return call("recommend", {"film_ids": list(films), "message": "watch these"}, films=list(films))


def turn(number, user_meta, calls, end="recommend"):
    return {"turn": number, "user_meta": user_meta, "tool_calls": calls, "tool_turn_end": end}


WISHES = [c("genre", "comedy"), c("genre", "horror", True), c("genre", "drama")]
SESSION = {
    "session_id": "hand/s0",
    "shift_events": [
        {
            "turn": 3,
            "from_focus": {"field": "genre", "value": "comedy"},
            "to_focus": {"field": "genre", "value": "crime"},
        }
    ],
    "turns": [
        # said: comedy, not horror, drama; asked: comedy, not horror -> P 1, R 2/3, F1 0.8
        turn(
            1,
            meta(WISHES, [True, True, True]),
            [
                search({"genre": "Comedy", "exclude": ["horror"], "limit": 5}, films=[10, 11]),
                commit(10),
                call("search_films", {"genre": "drama"}, status="ignored", error="after the turn's recommend: not run"),
            ],
        ),
        # said: the same (the actor is kept to itself); asked: comedy, drama, romance -> P 2/3, R 2/3, F1 2/3
        turn(
            2,
            meta([*WISHES, c("actor", "Cary Grant")], [True, True, True, False]),
            [
                search({"genre": ["comedy", "drama", "romance"]}, films=[20]),
                call("film_details", {"id": 99999}, status="error", error=UNKNOWN_FILM),
                call("film_details", {"id": 30}, film=30),
                commit(30, 11),
            ],
        ),
        # the shift: comedy -> crime. Said: crime, not horror. The first search still asks for comedy (stale), the
        # second for crime; asked together: comedy, crime, not horror -> P 2/3, R 1, F1 0.8. Film 99: no search
        # returned it before the commit (turn 4's does, after it)
        turn(
            3,
            meta([c("genre", "crime"), c("genre", "horror", True)], [True, True]),
            [
                search({"genre": "comedy"}, films=[40]),
                search({"genre": "crime", "exclude": ["genre:horror"]}, films=[21]),
                commit(99, 21),
            ],
        ),
        # no search that ran and whose arguments the record keeps: not scored for fidelity nor staleness
        turn(
            4,
            meta([c("genre", "crime"), c("genre", "horror", True)], [True, True]),
            [
                search(None, status="error", error=NOT_JSON),
                search(None, status="error", error=NOT_JSON.replace("Expecting value", "Unterminated string")),
                search(None, films=[99]),
                call("recommend", {"film_ids": []}, status="error", error=NO_FILMS),
            ],
            end="bound",
        ),
    ],
}


def test_every_column_of_a_session_worked_by_hand(read_search):
    session, turns = score_session(SESSION, read_search)
    assert set(session) == set(SESSION_NAMES)
    assert session["search_precision"] == pytest.approx((1 + 2 / 3 + 2 / 3) / 3)
    assert session["search_recall"] == pytest.approx((2 / 3 + 2 / 3 + 1) / 3)
    assert session["search_f1"] == pytest.approx((0.8 + 2 / 3 + 0.8) / 3)
    assert session["stale_search_rate"] == pytest.approx(1 / 2)  # turn 3: one of its two searches
    assert session["invalid_call_rate"] == pytest.approx(4 / 13)  # 14 calls, one ignored (not run), 4 errors
    assert session["unsearched_commit_rate"] == pytest.approx(1 / 5)  # 10, 30, 11, 99, 21: film 99
    assert session["calls_per_turn"] == pytest.approx(14 / 4)
    assert {k: session[k] for k in ("tool_calls", "tool_errors", "tool_ignored", "tool_bound_turns")} == {
        "tool_calls": 14,
        "tool_errors": 4,
        "tool_ignored": 1,
        "tool_bound_turns": 1,
    }
    assert [t["search_f1"] for t in turns[:3]] == pytest.approx([0.8, 2 / 3, 0.8]) and math.isnan(turns[3]["search_f1"])
    kinds = [json.loads(t["tool_error_kinds"]) if t["tool_error_kinds"] else [] for t in turns]
    assert [t["tool_error_kinds"] for t in turns][0] == ""  # an ignored call is no error
    assert kinds == [[], ["no film with id 99999 in the catalog"], [], ["the arguments are not JSON", NO_FILMS]]


def test_a_film_returned_only_after_its_commit_or_only_by_a_commit_was_not_searched(read_search):
    wants = meta([c("genre", "comedy")])
    record = {
        "shift_events": [],
        "turns": [
            turn(1, wants, [commit(5), search({"genre": "comedy"}, films=[5, 6])]),  # 5: returned after the commit
            turn(2, wants, [commit(6, 7)]),  # 6 returned in turn 1; 7 never returned
            turn(3, wants, [commit(7)]),  # 7 was committed before, never returned
        ],
    }
    assert score_session(record, read_search)[0]["unsearched_commit_rate"] == pytest.approx(3 / 4)


def test_a_session_without_tool_calls_is_not_measured(read_search):
    plain = {"shift_events": SESSION["shift_events"], "turns": [{"turn": 1, "user_meta": meta(WISHES)}] * 3}
    session, turns = score_session(plain, read_search)
    assert all(math.isnan(session[name]) for name in SESSION_NAMES)
    assert len(turns) == 3 and all(math.isnan(t["search_f1"]) and t["tool_error_kinds"] is None for t in turns)
    # a tool-using system that made no call: its counts are 0, its rates not measured
    silent = {"shift_events": [], "turns": [turn(1, meta(WISHES), [], end="message")] * 2}
    session, turns = score_session(silent, read_search)
    assert session["tool_calls"] == session["tool_errors"] == session["calls_per_turn"] == 0
    assert math.isnan(session["search_f1"]) and math.isnan(session["invalid_call_rate"])
    assert math.isnan(session["unsearched_commit_rate"]) and [t["tool_error_kinds"] for t in turns] == ["", ""]


def test_the_empty_cases_of_search_fidelity(read_search):
    assert prf(set(), set()) is None
    nothing_asked = prf(set(), {("genre", "comedy", False)})
    assert math.isnan(nothing_asked[0]) and nothing_asked[1:] == (0.0, 0.0)
    nothing_said = prf({("genre", "comedy", False)}, set())
    assert nothing_said[0] == 0.0 and math.isnan(nothing_said[1]) and nothing_said[2] == 0.0
    assert prf({("genre", "comedy", False)}, {("genre", "comedy", True)}) == (0.0, 0.0, 0.0)  # not the same wish
    # without `said` every gold constraint counts as said; a turn with no wish and a search that asks nothing
    # (only a limit) is skipped
    record = {
        "shift_events": [],
        "turns": [
            turn(1, {"constraints": WISHES}, [search({"genre": "comedy", "exclude": ["horror"]})]),
            turn(2, meta(WISHES, [False, False, False]), [search({"limit": 3})]),
            turn(3, meta(WISHES, [False, True, False]), [search({"limit": 3})]),
        ],
    }
    session, turns = score_session(record, read_search)
    assert session["search_precision"] == 1.0  # turn 3 has no precision
    assert session["search_recall"] == pytest.approx((2 / 3 + 0) / 2)
    assert session["search_f1"] == pytest.approx((0.8 + 0) / 2)
    assert math.isnan(turns[1]["search_f1"]) and turns[2]["search_f1"] == 0.0


def shift(number, old, new):
    return {
        "turn": number,
        "from_focus": {"field": "genre", "value": old},
        "to_focus": {"field": "genre", "value": new},
    }


def test_stale_searches_follow_every_shift_and_spare_a_wish_still_held(read_search):
    def session_of(shifts, turns):
        return {"shift_events": shifts, "turns": turns}

    wants = lambda *genres: meta([c("genre", g) for g in genres])  # noqa: E731
    asks = lambda genre: [search({"genre": genre})]  # noqa: E731
    shifts = [shift(2, "comedy", "drama"), shift(3, "drama", "crime")]
    turns = [
        turn(1, wants("comedy"), asks("comedy")),  # before the first shift: not counted
        turn(2, wants("drama"), asks("comedy")),  # stale
        turn(3, wants("crime"), asks("comedy")),  # the first focus, superseded twice: stale
        turn(4, wants("crime"), asks("crime") + asks("drama")),  # one of two stale
    ]
    assert score_session(session_of(shifts, turns), read_search)[0]["stale_search_rate"] == pytest.approx(3 / 4)
    # asking for both the old and the new focus is not stale; neither is asking for an old focus still wished
    # (a shift that narrows comedy to comedy with drama), nor for a focus the user came back to
    both = [turn(1, wants("comedy"), []), turn(2, wants("drama"), [search({"genre": ["comedy", "drama"]})])]
    assert score_session(session_of(shifts[:1], both), read_search)[0]["stale_search_rate"] == 0
    held = [turn(1, wants("comedy"), []), turn(2, wants("drama", "comedy"), asks("comedy"))]
    assert score_session(session_of(shifts[:1], held), read_search)[0]["stale_search_rate"] == 0
    back = [shift(2, "comedy", "drama"), shift(3, "drama", "comedy")]
    again = [turn(1, wants("comedy"), []), turn(2, wants("drama"), []), turn(3, wants("comedy"), asks("comedy"))]
    assert score_session(session_of(back, again), read_search)[0]["stale_search_rate"] == 0
    # no shift, or no search after the first: not measured
    assert math.isnan(score_session(session_of([], turns), read_search)[0]["stale_search_rate"])
    early = [turn(1, wants("comedy"), asks("comedy")), turn(2, wants("drama"), [commit(3)])]
    assert math.isnan(score_session(session_of(shifts[:1], early), read_search)[0]["stale_search_rate"])


def test_an_error_kind_is_its_text_up_to_the_first_colon_and_60_characters():
    assert error_kind(NOT_JSON) == "the arguments are not JSON"
    assert error_kind("x" * 100) == "x" * 60 and error_kind(None) == "None"


RATES = ("search_precision", "search_recall", "search_f1", "stale_search_rate", "invalid_call_rate")
ANY_CALL = st.builds(
    lambda name, status, arguments, films: (
        call(name, arguments, status=status, films=films, error="e: x")
        if status != "ok" or name != "film_details"
        else call(name, arguments, film=films[0] if films else 1)
    ),
    st.sampled_from(["search_films", "film_details", "recommend", "no_such_tool"]),
    st.sampled_from(["ok", "error", "ignored"]),
    st.sampled_from(
        [None, {}, {"genre": "comedy"}, {"genre": ["drama", "nonsense"], "exclude": ["horror"]}, {"year": 5}]
    ),
    st.lists(st.integers(1, 6), max_size=3),
)
ANY_TURN = st.builds(
    lambda said, calls, end: turn(0, meta(WISHES, said), calls, end),
    st.one_of(st.none(), st.lists(st.booleans(), min_size=3, max_size=3)),
    st.lists(ANY_CALL, max_size=5),
    st.sampled_from(["recommend", "message", "bound", "error"]),
)


@settings(max_examples=150, deadline=None)
@given(turns=st.lists(ANY_TURN, min_size=1, max_size=5), shifts=st.lists(st.integers(1, 6), max_size=2))
def test_rates_stay_within_0_and_1_on_any_record(read_search, turns, shifts):
    for number, t in enumerate(turns, start=1):
        t["turn"] = number
    record = {"shift_events": [shift(n, "comedy", "drama") for n in shifts], "turns": turns}
    session, per_turn = score_session(record, read_search)
    for name in (*RATES, "unsearched_commit_rate"):
        assert math.isnan(session[name]) or 0 <= session[name] <= 1, name
    assert session["tool_errors"] + session["tool_ignored"] <= session["tool_calls"]
    assert session["calls_per_turn"] * len(turns) == pytest.approx(session["tool_calls"])
    assert session["tool_bound_turns"] == sum(t["tool_turn_end"] == "bound" for t in turns)
    assert all(math.isnan(t["search_f1"]) or 0 <= t["search_f1"] <= 1 for t in per_turn)
    assert all(isinstance(json.loads(t["tool_error_kinds"] or "[]"), list) for t in per_turn)


def test_the_family_is_registered_and_its_columns_declared():
    kind = families.family_kind("tool_use")
    assert kind is tool_use.KIND and kind.scorer.name == "tool_use"
    for name in SESSION_NAMES:
        assert column_registry.session_column(name) in kind.session_columns
    assert column_registry.TURN_COLUMNS["tool_error_kinds"].dtype == "string"
    counts = ("tool_calls", "tool_errors", "tool_ignored", "tool_bound_turns")  # the findings page reads these
    assert [name for name in counts if column_registry.session_column(name).metric] == []
    assert column_registry.metric_names(SESSION_NAMES) == [n for n in SESSION_NAMES if n not in counts]


SYSTEMS = [
    {"name": "oracle", "agent": "oracle"},
    {"name": "lag1", "agent": "lagging", "lag": 1},
    {"name": "lag2", "agent": "lagging", "lag": 2},
    {"name": "stubborn", "agent": "stubborn"},
    {"name": "random", "agent": "random"},
]


@pytest.fixture(scope="module")
def calibration_tables(catalog_files, tmp_path_factory):
    """The sessions and turns tables of the calibration systems through the toolkit (10 users, 8 turns), scored
    by the registered family, and the template system without tools."""
    tmp = tmp_path_factory.mktemp("tool_calibration")
    scoring = default_config()["scoring"] | {"metrics": ["tool_use"]}
    scorer = model_free_scorer(catalog_files, scoring)
    sessions, turns = [], []
    for system in [*({**s, "tools": True} for s in SYSTEMS), {"name": "template", "agent": "template"}]:
        runner = build_shard_runner(**arguments(catalog_files, system, tmp / system["name"], turns=8))
        output = tmp / f"{system['name']}.jsonl"
        runner.run(range(10), progress=tmp / f"{system['name']}.progress", output=output)
        s, t = scorer.score([json.loads(line) for line in output.read_text().splitlines()])
        sessions.append(s)
        turns.append(t)
    return pd.concat(sessions, ignore_index=True), pd.concat(turns, ignore_index=True)


def test_the_calibration_systems_through_the_toolkit_order_as_built(calibration_tables):
    sessions, turns = calibration_tables
    means = sessions.groupby("system")[list(SESSION_NAMES)].mean()
    # search fidelity: the oracle asks for exactly what the user said (every wish, under `explicit`)
    assert means.loc["oracle", ["search_precision", "search_recall", "search_f1"]].tolist() == [1.0, 1.0, 1.0]
    assert means.loc["oracle", "search_f1"] > means.loc["lag1", "search_f1"] > means.loc["stubborn", "search_f1"]
    assert means.loc["lag1", "search_recall"] > means.loc["lag2", "search_recall"] > 0
    # stale searches: never for the oracle, after the shifts for the others
    assert means.loc["oracle", "stale_search_rate"] == 0
    assert (means.loc[["lag1", "lag2", "stubborn"], "stale_search_rate"] > 0).all()
    # the random system never searches; it commits films no search returned, the others only films found
    random = sessions[sessions["system"] == "random"]
    assert random[["search_f1", "stale_search_rate"]].isna().all().all()
    assert (random["unsearched_commit_rate"] == 1).all()
    searching = sessions[sessions["system"].isin(["oracle", "lag1", "lag2", "stubborn"])]
    assert (searching["unsearched_commit_rate"] == 0).all() and (searching["invalid_call_rate"] == 0).all()
    assert (searching["tool_ignored"] == 0).all() and (searching["tool_calls"] > 0).all()
    # the template system without tools: every column missing
    template = sessions[sessions["system"] == "template"]
    assert template[list(SESSION_NAMES)].isna().all().all()
    assert turns.loc[turns["system"] == "template", "tool_error_kinds"].isna().all()
    assert (turns.loc[turns["system"] == "oracle", "tool_error_kinds"] == "").all()
    # both tables take their declared types
    aggregate.to_table(sessions, "sessions")
    assert aggregate.to_table(turns, "turns").schema.field("tool_error_kinds").type == pa.string()


def test_the_declared_expectations_pass_on_the_calibration_systems(calibration_tables):
    sessions, _ = calibration_tables
    frame = sessions[sessions["system"] != "template"]
    for expectation in tool_use.EXPECTATIONS:
        row = validity.assess(frame, expectation, resamples=200)
        assert row["verdict"] == "pass", row
    # an order with the random system on a search column is never measured: it has no value there
    with_random = validity.Expectation(tool_use.SEARCH_F1, ("oracle", "lag<k>", "stubborn", "random"), "x")
    assert validity.assess(frame, with_random, resamples=10)["verdict"] == "not measured (a system has no value)"
