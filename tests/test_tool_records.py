"""Tool-calling records that must not be gameable: what a model sends cannot hide a search from the tool_use
metrics (arguments padded past what the record keeps in full) nor hide calls from the counts (calls past the
per-reply bound). The records are written by the toolkit and the `tools` agent as in a run, then scored."""

from __future__ import annotations

import json
import math

import jsonschema
import pytest
from conftest import REPO
from fake_servers import ToolOpenAI
from test_tool_calls_from_outside import NO_TITLES, recorded_call, run_one

from crseval.catalog import toolkit
from crseval.catalog.toolkit import (
    MAX_VALUES,
    RECORD_ARGUMENT_CHARS,
    SEARCH,
    SEARCH_FIELDS,
    Catalog,
    Toolkit,
    ToolLimits,
    ToolTurn,
)
from crseval.core.session_records import load_schema
from crseval.llm.base import MAX_TOOL_CALLS_PER_REPLY, LLMResponse
from crseval.llm.cache import ResponseCache
from crseval.llm.client import LLMClient
from crseval.llm.openai_backend import OpenAIBackend
from crseval.llm.prompts import PromptTemplate
from crseval.metrics.tool_use import SearchReader, ToolRecordError, score_session
from crseval.simulate.systems.tools_agent import ToolsAgent

FIDELITY = ("search_precision", "search_recall", "search_f1")
OPTIONS = {"temperature": 0.2, "top_p": 0.95, "max_tokens": 64}
PROMPT = REPO / "resources" / "prompts" / "crs_tools.txt"
# what one search may ask for: MAX_VALUES values in each field, in `exclude`, and plot keywords in `keywords`
MAX_CONSTRAINTS = (len(SEARCH_FIELDS) + 2) * MAX_VALUES


def turn_schema(key: str) -> dict:
    """The session schema's definition of one field of a turn, with the definitions it refers to."""
    schema = load_schema()
    return {"$defs": schema["$defs"], **schema["properties"]["turns"]["items"]["properties"][key]}


def assert_tool_fields_valid(record: dict) -> None:
    for key in ("tool_calls", "tool_turn_end", "tool_calls_unlisted", "committed_titles"):
        if key in record:
            jsonschema.validate(record[key], turn_schema(key))


def wish(field, value, negated=False):
    return {"field": field, "value": value, "negated": negated}


def said(*constraints) -> dict:
    return {"constraints": list(constraints), "said": [True] * len(constraints)}


# --- padding cannot hide a search ----------------------------------------------------------------------------------

FILLER = {
    "keywords": {"keywords": " ".join(["qzxv"] * 400)},  # words no film's plot keyword is
    "focus": {"focus": ["q" * 70] * MAX_VALUES},  # focus values the catalog does not hold only weigh nothing
    "exclude": {"exclude": ["z" * 70] * MAX_VALUES},  # unknown values, reported back and asking nothing
}


def searched_session(demo_index, turns: list[tuple[dict, list[dict]]], shift_at: int | None = None) -> dict:
    """A session whose turns' searches ran through the toolkit: (user_meta, search arguments) per turn."""
    session_toolkit = Toolkit(demo_index, seed=7)
    records = []
    for number, (user_meta, searches) in enumerate(turns, start=1):
        tool_turn = ToolTurn(session_toolkit)
        for arguments in searches:
            tool_turn.call(1, SEARCH, json.dumps(arguments))
        tool_turn.end = "message"
        record = tool_turn.record()
        assert_tool_fields_valid(record)
        records.append({"turn": number, "user_meta": user_meta, **record})
    shifts = []
    if shift_at is not None:
        shifts = [
            {
                "turn": shift_at,
                "from_focus": {"field": "genre", "value": "comedy"},
                "to_focus": {"field": "genre", "value": "crime"},
            }
        ]
    return {"session_id": "padded/s0", "shift_events": shifts, "turns": records}


def scores(demo_index, padding: dict) -> dict:
    """Fidelity of a faithful search beside a wrong one (padded with `padding`), and the stale rate of a search
    for the focus the user left (padded alike)."""
    wrong = {"genre": "horror", "language": "french"} | padding
    stale = {"genre": "comedy"} | padding
    session = searched_session(
        demo_index,
        [
            (said(wish("genre", "comedy")), [{"genre": "comedy"}, wrong]),
            (said(wish("genre", "crime")), [stale]),
        ],
        shift_at=2,
    )
    return score_session(session, SearchReader(Catalog(demo_index)))[0]


@pytest.mark.parametrize("filler", sorted(FILLER))
def test_padding_a_wrong_search_past_the_record_bound_does_not_lift_its_scores(demo_index, filler):
    padding = FILLER[filler]
    assert len(json.dumps({"genre": "horror", "language": "french"} | padding)) > RECORD_ARGUMENT_CHARS
    plain, padded = scores(demo_index, {}), scores(demo_index, padding)
    # turn 1 asked comedy, horror and french of a said comedy (P 1/3, R 1); turn 2 comedy of a said crime (P 0)
    assert plain["search_precision"] == pytest.approx((1 / 3 + 0) / 2)
    for column in (*FIDELITY, "stale_search_rate", "unreadable_search_rate"):
        assert padded[column] == pytest.approx(plain[column]), column
    assert padded["stale_search_rate"] == 1.0 and padded["unreadable_search_rate"] == 0.0


def test_a_padded_search_keeps_its_constraints_whole_beside_the_excerpt(demo_index):
    arguments = {"genre": ["Horror", "nothing-here"], "exclude": ["genre:comedy"], "keywords": "alien, " + "w " * 900}
    _, call, turn = run_one(demo_index, SEARCH, json.dumps(arguments))
    assert call["status"] == "ok" and call["arguments"] is None and len(call["arguments_text"]) < 400
    assert call["constraints"] == [
        wish("genre", "horror"),
        wish("plot_keyword", "alien"),
        wish("genre", "comedy", True),
    ]
    assert_tool_fields_valid(turn.record())
    # arguments the record keeps whole are read from them, as before: no second copy
    _, small, _ = run_one(demo_index, SEARCH, json.dumps({"genre": "horror"}))
    assert small["arguments"] == {"genre": "horror"} and "constraints" not in small


def test_the_recorded_constraints_have_a_natural_bound_the_schema_states(demo_index):
    catalog = Catalog(demo_index)
    widest = {name: sorted(catalog.by_field[name].values())[:MAX_VALUES] for name in SEARCH_FIELDS}
    keywords = sorted(catalog.by_field["plot_keyword"].values())
    widest |= {"keywords": ", ".join(keywords[:MAX_VALUES]), "exclude": keywords[-MAX_VALUES:]}
    _, call, turn = run_one(demo_index, SEARCH, json.dumps(widest))
    assert call["status"] == "ok", call["error"]
    assert MAX_VALUES * len(SEARCH_FIELDS) < len(call["constraints"]) <= MAX_CONSTRAINTS == toolkit.MAX_CONSTRAINTS
    described = turn_schema("tool_calls")["items"]["properties"]["constraints"]
    assert described["maxItems"] == MAX_CONSTRAINTS and f"at most {MAX_VALUES} values" in described["description"]
    assert_tool_fields_valid(turn.record())
    # the one value without a list bound of its own: plot keywords in the keywords text, bounded likewise
    answer, call, _ = run_one(demo_index, SEARCH, json.dumps({"keywords": " ".join(keywords[: MAX_VALUES + 1])}))
    assert call["status"] == "error" and answer["error"] == call["error"]
    assert call["error"] == f"keywords name {MAX_VALUES + 1} plot keywords of the catalog; at most {MAX_VALUES}"


def test_a_search_the_record_cannot_read_is_counted_unreadable_not_skipped(demo_index):
    unreadable = recorded_call(arguments=None, arguments_text='{"genre": "horror", "keywords": "qz… (5000 characters)')
    cut = recorded_call(arguments=None, arguments_text="{…", constraints=[wish("genre", "horror")])
    record = {
        "session_id": "legacy/s1",
        "turns": [
            {"turn": 1, "user_meta": said(wish("genre", "comedy")), "tool_calls": [recorded_call(), unreadable]},
            {"turn": 2, "user_meta": said(wish("genre", "comedy")), "tool_calls": [cut]},
            {"turn": 3, "user_meta": said(wish("genre", "comedy")), "tool_calls": [unreadable]},
        ],
    }
    session, turns = score_session(record, SearchReader(Catalog(demo_index)))
    assert session["unreadable_search_rate"] == pytest.approx(2 / 4)
    # fidelity over what was read: turn 1 comedy (P 1), turn 2 the recorded horror (P 0); turn 3 has nothing read
    assert session["search_precision"] == pytest.approx(1 / 2) and math.isnan(turns[2]["search_f1"])
    assert turns[1]["search_f1"] == 0.0


def test_a_session_without_a_successful_search_has_no_unreadable_share(demo_index):
    record = {"session_id": "s", "turns": [{"turn": 1, "tool_calls": [recorded_call(status="error", result=None)]}]}
    assert math.isnan(score_session(record, SearchReader(Catalog(demo_index)))[0]["unreadable_search_rate"])


@pytest.mark.parametrize(
    "fields, problem",
    [
        ({"constraints": "genre:horror"}, 'tool_calls[0] constraints is text "genre:horror", not a list'),
        (
            {"constraints": [{"field": "genre"}]},
            "tool_calls[0] constraints[0] is an object of 1, not a constraint (field, value, negated)",
        ),
        (
            {"constraints": [wish("genre", "horror") | {"negated": "no"}]},
            "tool_calls[0] constraints[0] is an object of 3, not a constraint (field, value, negated)",
        ),
        (
            {"constraints": [wish("mood", "dark")]},
            "tool_calls[0] constraints[0] is an object of 3, not a constraint (field, value, negated)",
        ),
        (
            {"constraints": [wish("genre", "horror")] * (MAX_CONSTRAINTS + 1)},
            f"tool_calls[0] constraints holds {MAX_CONSTRAINTS + 1}; at most {MAX_CONSTRAINTS}",
        ),
    ],
)
def test_recorded_constraints_of_the_wrong_shape_are_named(demo_index, fields, problem):
    turn = {"turn": 4, "user_meta": None, "tool_calls": [recorded_call(arguments=None, **fields)]}
    with pytest.raises(ToolRecordError) as refused:
        score_session({"session_id": "hand/s2", "turns": [turn]}, SearchReader(Catalog(demo_index)))
    assert str(refused.value) == f"session hand/s2, turn 4: {problem}"


# --- calls past the per-reply bound are counted -------------------------------------------------------------------


class ManyCalls:
    """A backend whose replies ask for `counts[i]` searches at its i-th call, then answers with a message."""

    name, model, gives_token_logprobs = "openai", "many", False

    def __init__(self, *counts: int):
        self.counts = list(counts)
        self.requests = 0

    def complete(self, request):
        count = self.counts[self.requests] if self.requests < len(self.counts) else 0
        self.requests += 1
        calls = [{"id": f"c{i}", "name": SEARCH, "arguments": '{"genre": "comedy"}'} for i in range(count)]
        return LLMResponse(
            "" if calls else "Which genre?", self.name, self.model, 0.01, 10, 5, tool_calls=calls or None
        )


def tools_agent(demo_index, client, limits=ToolLimits()) -> ToolsAgent:
    return ToolsAgent(demo_index, NO_TITLES, 5, client, PromptTemplate(PROMPT), OPTIONS, limits)


def scored_turn(demo_index, tools: dict) -> dict:
    assert_tool_fields_valid(tools)
    record = {"session_id": "many/s0", "turns": [{"turn": 1, "user_meta": None, **tools}]}
    return score_session(record, SearchReader(Catalog(demo_index)))[0]


def test_every_call_of_a_reply_past_the_bound_is_counted_in_the_turn(demo_index):
    reply = tools_agent(demo_index, LLMClient(ManyCalls(300), None)).respond(1, "A comedy.")
    listed = reply.tools["tool_calls"]
    assert len(listed) == MAX_TOOL_CALLS_PER_REPLY and reply.tools["tool_calls_unlisted"] == 300 - 64
    assert f"({MAX_TOOL_CALLS_PER_REPLY})" in turn_schema("tool_calls_unlisted")["description"]
    session = scored_turn(demo_index, reply.tools)
    assert session["tool_calls"] == 300 and session["calls_per_turn"] == 300
    assert session["tool_ignored"] == 300 - ToolLimits().calls_per_turn  # run: the first 8, within the bound
    assert session["invalid_call_rate"] == 0.0


def test_calls_past_the_bound_are_counted_over_every_model_call_of_the_turn(demo_index):
    limits = ToolLimits(calls_per_turn=500)
    reply = tools_agent(demo_index, LLMClient(ManyCalls(100, 70), None), limits).respond(1, "A comedy.")
    assert len(reply.tools["tool_calls"]) == 2 * 64 and reply.tools["tool_calls_unlisted"] == 36 + 6
    assert reply.tools["tool_turn_end"] == "message"
    session = scored_turn(demo_index, reply.tools)
    assert session["tool_calls"] == 170 and session["tool_ignored"] == 42


def test_calls_a_server_sends_past_the_bound_are_counted_and_survive_the_cache(demo_index, tmp_path):
    def three_hundred_calls(body):
        if body["messages"][-1]["role"] == "tool":
            return None
        arguments = json.dumps({"genre": "comedy"})
        return [
            {"id": f"c{i}", "type": "function", "function": {"name": SEARCH, "arguments": arguments}}
            for i in range(300)
        ]

    with ToolOpenAI(three_hundred_calls) as server:
        client = LLMClient(OpenAIBackend("m", base_url=server.base_url), ResponseCache(tmp_path / "cache"))
        first = tools_agent(demo_index, client).respond(1, "A comedy.")
        asked = len(server.requests)
        again = tools_agent(demo_index, client).respond(1, "A comedy.")
        assert len(server.requests) == asked  # every step from the cache
    for reply in (first, again):
        assert len(reply.tools["tool_calls"]) == 64 and reply.tools["tool_calls_unlisted"] == 236
        assert scored_turn(demo_index, reply.tools)["tool_calls"] == 300


def test_a_turn_within_the_bound_records_no_unlisted_calls(demo_index):
    reply = tools_agent(demo_index, LLMClient(ManyCalls(3), None)).respond(1, "A comedy.")
    assert "tool_calls_unlisted" not in reply.tools and len(reply.tools["tool_calls"]) == 3


@pytest.mark.parametrize(
    "value, shown", [(-3, "the number -3"), ("5", 'text "5"'), (True, "a boolean true"), (1.5, "the number 1.5")]
)
def test_an_unlisted_count_that_is_no_count_is_named(demo_index, value, shown):
    turn = {"turn": 2, "user_meta": None, "tool_calls": [recorded_call()], "tool_calls_unlisted": value}
    with pytest.raises(ToolRecordError) as refused:
        score_session({"session_id": "hand/s3", "turns": [turn]}, SearchReader(Catalog(demo_index)))
    assert str(refused.value) == f"session hand/s3, turn 2: tool_calls_unlisted is {shown}, not a whole number >= 1"
