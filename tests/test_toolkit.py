"""The catalog toolkit (crseval.catalog.toolkit) and the systems that search and commit through it without an LLM:
the commit rule, the bounds, hostile calls, and the deterministic tool systems against their twins."""

import json
from dataclasses import asdict

import pytest
from test_sessions import arguments

from crseval.catalog.toolkit import (
    MAX_COMMIT,
    RECOMMEND,
    SEARCH,
    TOOLS,
    Catalog,
    Toolkit,
    ToolLimits,
    ToolTurn,
    argument_constraints,
)
from crseval.core.session_records import load_schema, session_validator, validate_session
from crseval.language.tracker import Constraint
from crseval.planning import config_schema
from crseval.simulate.shard import build_shard_runner


@pytest.fixture
def toolkit(demo_index):
    return Toolkit(demo_index, seed=3)


def test_the_tools_are_declared_once_in_the_function_format():
    assert [t["function"]["name"] for t in TOOLS] == ["search_films", "film_details", "recommend"]
    for tool in TOOLS:
        assert tool["type"] == "function" and tool["function"]["parameters"]["type"] == "object"
    assert ToolLimits() == ToolLimits(calls_per_turn=8, argument_chars=10_000, result_chars=4_000, search_results=5)


def test_the_schema_states_the_toolkits_defaults():
    described = config_schema()["$defs"]["system"]["properties"]["tool_limits"]["properties"]
    for name, value in asdict(ToolLimits()).items():
        assert described[name]["description"].endswith(f"(default {value:,})"), name


def test_search_arguments_become_catalog_constraints(demo_index):
    catalog = Catalog(demo_index)
    constraints, focus, unknown = argument_constraints(
        {"genre": ["Comedy", "no-such-genre"], "exclude": ["horror", "director:Fritz Lang"], "focus": ["comedy"]},
        catalog,
    )
    assert constraints == [
        Constraint("genre", "comedy", False),
        Constraint("genre", "horror", True),
        Constraint("director", "Fritz Lang", True),
    ]
    assert focus == {("genre", "comedy")} and unknown == ["genre no-such-genre"]


def test_a_search_returns_bounded_cards_of_films_that_fit(toolkit, demo_index):
    turn = ToolTurn(toolkit)
    result = json.loads(turn.call(1, SEARCH, '{"genre": "comedy", "exclude": ["romance"], "limit": 3}'))
    assert result["total"] == len(result["films"]) == 3
    for card in result["films"]:
        assert "comedy" in demo_index.film_values(card["id"], "genre")
        assert "romance" not in demo_index.film_values(card["id"], "genre")
        assert set(card) == {"id", "title", "year", "genre", "director", "actor"}
    assert turn.calls[0]["status"] == "ok" and turn.calls[0]["result"]["total"] == 3
    assert toolkit.returned == {card["id"] for card in result["films"]}


def test_the_first_recommend_ends_the_turn_and_later_calls_are_ignored(toolkit):
    """The exploit of a commit protocol: a recommend, then in the same reply an abstaining or second one."""
    turn = ToolTurn(toolkit)
    turn.call(1, RECOMMEND, {"film_ids": [0, 1], "message": "Try these two."})
    answer = json.loads(turn.call(1, RECOMMEND, {"film_ids": [2], "message": "Actually, none of them."}))
    turn.call(2, SEARCH, "{}")
    assert turn.over and turn.end == "recommend" and turn.committed == [0, 1] and turn.message == "Try these two."
    assert [c["status"] for c in turn.calls] == ["ok", "ignored", "ignored"]
    assert "after the turn's recommend" in answer["error"] and toolkit.committed == {0, 1}
    record = turn.record()
    assert record["committed_titles"] == [toolkit.index.title(0), toolkit.index.title(1)]
    assert record["tool_turn_end"] == "recommend"


def test_committed_films_are_not_offered_again(toolkit):
    ToolTurn(toolkit).call(1, RECOMMEND, {"film_ids": [0], "message": "This one."})
    films = json.loads(ToolTurn(toolkit).call(1, SEARCH, '{"limit": 20}'))["films"]
    assert 0 not in {f["id"] for f in films}


@pytest.mark.parametrize(
    "name, arguments, error",
    [
        ("drop_tables", "{}", "unknown tool 'drop_tables'"),
        (SEARCH, "{not json", "not JSON"),
        (SEARCH, "[1, 2]", "must be a JSON object"),
        (SEARCH, '{"genre": 5.5}', "genre must be a string or a list of strings"),
        (SEARCH, '{"colour": "red"}', "unknown argument(s) colour"),
        (SEARCH, '{"limit": 1000}', "limit must be between 1 and 20"),
        (SEARCH, json.dumps({"keywords": "x" * 10_000_000}), "at most 10,000"),
        ("film_details", '{"id": 99999999}', "no film with id 99999999"),
        ("film_details", '{"id": "3"}', "a film id must be a whole number"),
        (RECOMMEND, json.dumps({"film_ids": list(range(1000)), "message": "all"}), f"at most {MAX_COMMIT} a turn"),
        (RECOMMEND, json.dumps({"film_ids": list(range(10_000)), "message": "all"}), "at most 10,000"),
        (RECOMMEND, '{"film_ids": [1], "message": ""}', "message must be the text the user reads"),
        (RECOMMEND, '{"film_ids": [123456], "message": "this"}', "no film with id 123456"),
    ],
)
def test_hostile_calls_end_in_a_recorded_error_within_the_bound(toolkit, name, arguments, error):
    turn = ToolTurn(toolkit)
    answer = json.loads(turn.call(1, name, arguments))
    assert error in answer["error"] and turn.calls[0]["status"] == "error" and error in turn.calls[0]["error"]
    assert not turn.over and toolkit.committed == set()
    if turn.calls[0]["arguments"] is None and "arguments_text" in turn.calls[0]:
        assert len(turn.calls[0]["arguments_text"]) < 400  # an excerpt, never the whole argument
    assert len(json.dumps(turn.calls[0])) < 2_000


def test_thousands_of_calls_in_one_turn_stop_at_the_bound(toolkit):
    turn = ToolTurn(toolkit)
    for _ in range(2_000):
        turn.call(1, SEARCH, "{}")
    assert turn.end == "bound" and sum(c["status"] == "ok" for c in turn.calls) == 8
    assert {c["status"] for c in turn.calls[8:]} == {"ignored"}
    # the results handed back stay within their bound however many films a search finds
    wide = Toolkit(toolkit.index, 1, ToolLimits(result_chars=300))
    assert len(ToolTurn(wide).call(1, SEARCH, '{"limit": 20}')) <= 300 + 40


def sessions_of(catalog_files, tmp_path, system: dict, turns: int = 6) -> list[dict]:
    runner = build_shard_runner(**arguments(catalog_files, system, tmp_path / system["name"], turns=turns))
    output = tmp_path / f"{system['name']}.jsonl"
    runner.run(range(0, 6), progress=tmp_path / f"{system['name']}.progress", output=output)
    return [json.loads(line) for line in output.read_text().splitlines()]


@pytest.mark.parametrize(
    "entry",
    [
        {"agent": "template"},
        {"agent": "oracle"},
        {"agent": "lagging", "lag": 1},
        {"agent": "stubborn"},
    ],
)
def test_a_system_through_the_toolkit_commits_the_films_its_twin_recommends(catalog_files, tmp_path, entry):
    """The same tracking (or ground truth), retrieval and tie-breaking draws: the tool-using twin commits exactly
    the films the plain system's reply recommends, so the users and the conversations are the same."""
    plain = sessions_of(catalog_files, tmp_path, {"name": "plain", **entry})
    tools = sessions_of(catalog_files, tmp_path, {"name": "tools", **entry, "tools": True})
    validator = session_validator(load_schema())
    for a, b in zip(plain, tools, strict=True):
        validate_session(validator, b)
        for turn_a, turn_b in zip(a["turns"], b["turns"], strict=True):
            assert turn_b["recommended_titles"] == turn_a["recommended_titles"]
            assert turn_b["system_text"] == turn_a["system_text"] and turn_b["user_text"] == turn_a["user_text"]
            assert [c["name"] for c in turn_b["tool_calls"]] == (
                ["search_films", "recommend"] if turn_a["recommended_titles"] else ["search_films"]
            )
            if turn_a["recommended_titles"]:
                assert turn_b["committed_titles"] == turn_a["recommended_titles"]
                assert turn_b["tool_turn_end"] == "recommend"
            assert "tool_calls" not in turn_a


def test_the_random_system_commits_films_no_search_returned(catalog_files, tmp_path):
    sessions = sessions_of(catalog_files, tmp_path, {"name": "random", "agent": "random", "tools": True})
    for session in sessions:
        for turn in session["turns"]:
            assert [c["name"] for c in turn["tool_calls"]] == ["recommend"]
            assert turn["committed_titles"] == turn["recommended_titles"] and len(turn["committed_titles"]) == 2
