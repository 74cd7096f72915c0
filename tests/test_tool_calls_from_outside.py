"""Hostile input on the tool-use surface: what a model or server sends as tool calls (crseval.catalog.toolkit, the
`tools` agent's loop, the OpenAI and Ollama backends' tool messages) and recorded tool fields the tool_use metrics
read. Each input is bounded, refused with a reason naming it, or recorded; none crashes or is guessed at."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import pytest
from conftest import REPO
from fake_servers import ToolOpenAI
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crseval.catalog.toolkit import (
    DETAILS,
    MAX_ARGUMENT_DEPTH,
    MAX_NUMBER_DIGITS,
    RECOMMEND,
    SEARCH,
    TOOL_NAMES,
    UNKNOWN_VALUE_CHARS,
    Catalog,
    Toolkit,
    ToolLimits,
    ToolTurn,
)
from crseval.core.io import json_line
from crseval.llm.client import LLMClient
from crseval.llm.ollama_backend import ollama_messages
from crseval.llm.openai_backend import OpenAIBackend, echoed_arguments, openai_messages
from crseval.llm.prompts import PromptTemplate
from crseval.metrics.tool_use import SearchReader, ToolRecordError, score_session
from crseval.simulate.systems.tools_agent import ToolsAgent, distinct_ids

HYPOTHESIS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def strict_loads(text: str):
    """JSON as a strict decoder (a server's) reads it: NaN and Infinity refused."""

    def refuse(name):
        raise ValueError(f"{name} is no JSON")

    return json.loads(text, parse_constant=refuse)


def run_one(index, name, arguments, limits: ToolLimits = ToolLimits()) -> tuple[dict, dict, ToolTurn]:
    """One call on a fresh session's toolkit: the answer the model gets (decoded), the call's record, the turn."""
    turn = ToolTurn(Toolkit(index, seed=7, limits=limits))
    text = turn.call(1, name, arguments)
    assert len(text) <= limits.result_chars, f"{len(text)} characters handed back"
    json_line(turn.record()).encode("utf-8")  # the record can be written to a shard, whatever the model sent
    return json.loads(text), turn.calls[0], turn


# --- arguments read as strict JSON ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, arguments, error",
    [
        (DETAILS, '{"id": 3, "id": 4}', "the arguments are not JSON: the key 'id' is given twice in one object"),
        (
            RECOMMEND,
            '{"film_ids": [1], "message": "a", "message": "b"}',
            "the arguments are not JSON: the key 'message' is given twice",
        ),
        (DETAILS, '{"id": NaN}', "the arguments are not JSON: NaN is no JSON value"),
        (SEARCH, '{"limit": Infinity}', "the arguments are not JSON: Infinity is no JSON value"),
        (SEARCH, '{"limit": -Infinity}', "the arguments are not JSON: -Infinity is no JSON value"),
        (DETAILS, '{"id": 1e400}', "the arguments are not JSON: the number 1e400 is out of a double's range"),
        (
            DETAILS,
            '{"id": ' + "9" * 25 + "}",
            f"the arguments are not JSON: a number of 25 digits; at most {MAX_NUMBER_DIGITS}",
        ),
        (SEARCH, "7" * 5_000, f"the arguments are not JSON: a number of 5,000 digits; at most {MAX_NUMBER_DIGITS}"),
        (
            SEARCH,
            '{"genre": ' + "[" * 9 + "]" * 9 + "}",
            f"the arguments nest too deep: more than {MAX_ARGUMENT_DEPTH}",
        ),
        (SEARCH, "[" * 4_000 + "]" * 4_000, "the arguments are not JSON: nested too deeply"),
        (RECOMMEND, '{"film_ids": [1], "message": "\\ud800 hi"}', "the arguments are not valid text: a lone UTF-16"),
        (SEARCH, '{"genre": ["comedy", "\\udfff"]}', "the arguments are not valid text: a lone UTF-16 surrogate"),
        (SEARCH, '{"\\ud83d": 1}', "the arguments are not valid text: a lone UTF-16 surrogate"),
    ],
)
def test_arguments_that_are_not_strict_json_are_refused_naming_why(demo_index, name, arguments, error):
    answer, call, turn = run_one(demo_index, name, arguments)
    assert answer == {"error": call["error"]} and call["error"].startswith(error), call["error"]
    assert call["status"] == "error" and call["arguments"] is None and len(call["arguments_text"]) < 400
    assert not turn.over and turn.toolkit.committed == set()


def test_a_surrogate_pair_is_text_and_the_same_arguments_as_an_object_follow_the_same_rules(demo_index):
    answer, call, _ = run_one(demo_index, SEARCH, '{"keywords": "\\ud83c\\udfac"}')  # a clapper board, escaped
    assert call["status"] == "ok" and call["arguments"] == {"keywords": "\U0001f3ac"} and "films" in answer
    _, call, _ = run_one(demo_index, DETAILS, {"id": math.nan})
    assert call["error"] == "the arguments are not JSON: NaN is no JSON value"
    _, call, _ = run_one(demo_index, RECOMMEND, {"film_ids": [1], "message": "\udc00"})
    assert call["error"] == "the arguments are not valid text: a lone UTF-16 surrogate"
    _, call, _ = run_one(demo_index, SEARCH, {"genre": {1, 2}})  # no JSON at all
    assert call["error"].startswith("the arguments are not JSON")


def test_a_tool_name_with_a_lone_surrogate_is_recorded_writable_and_refused(demo_index):
    answer, call, _ = run_one(demo_index, "search\udc80films", "{}")
    assert call["name"] == "search\ufffdfilms" and answer["error"].startswith("unknown tool 'search\ufffdfilms'")


@pytest.mark.parametrize(
    "arguments, error",
    [
        ({"film_ids": [], "message": "none"}, "film_ids must be a non-empty list of film ids"),
        ({"film_ids": ["3"], "message": "a"}, 'a film id must be a whole number, not "3"'),
        ({"film_ids": [3.0], "message": "a"}, "a film id must be a whole number, not 3.0"),
        ({"film_ids": [True], "message": "a"}, "a film id must be a whole number, not true"),
        ({"film_ids": [None], "message": "a"}, "a film id must be a whole number, not null"),
        ({"film_ids": [[1]], "message": "a"}, "a film id must be a whole number, not [1]"),
        ({"film_ids": [-1], "message": "a"}, "no film with id -1 in the catalog"),
        ({"film_ids": 1, "message": "a"}, "film_ids must be a non-empty list of film ids"),
        ({"film_ids": [1], "message": "\u200f\u200b \n\t\x00"}, "message must be the text the user reads"),
        ({"film_ids": [1], "message": None}, "message must be the text the user reads"),
    ],
)
def test_a_commit_of_ids_that_are_no_catalog_films_or_of_an_invisible_message_is_refused(demo_index, arguments, error):
    answer, call, turn = run_one(demo_index, RECOMMEND, json.dumps(arguments))
    assert answer["error"] == error and call["status"] == "error"
    assert turn.committed is None and turn.toolkit.committed == set()


def test_a_commit_of_repeated_ids_commits_each_film_once_and_keeps_odd_text(demo_index):
    answer, call, turn = run_one(demo_index, RECOMMEND, '{"film_ids": [4, 4, 4], "message": "\\u202eA\\u0000B"}')
    assert turn.committed == [4] and call["result"]["films"] == [{"id": 4, "title": demo_index.title(4)}]
    assert turn.message == "\u202eA\x00B" and answer == {"committed": [demo_index.title(4)]}


# --- results and records within their bounds -------------------------------------------------------------------


def test_values_the_catalog_does_not_hold_come_back_cut_and_leave_room_for_films(demo_index):
    arguments = json.dumps({"genre": ["x" * 5_000], "exclude": ["y" * 200] * 20, "limit": 5})
    answer, call, _ = run_one(demo_index, SEARCH, arguments, ToolLimits(result_chars=1_500))
    unknown = call["result"]["unknown"]
    assert len(unknown) == 21 - 1 and unknown[0].startswith("genre xxx") and unknown[0].endswith("(5000 characters)")
    assert all(len(value) <= len("exclude ") + UNKNOWN_VALUE_CHARS + 20 for value in unknown)
    assert answer["cut"] is True and answer["films"] and len(json.dumps(answer["unknown"])) <= 1_500 // 2


@pytest.mark.parametrize(
    "name, arguments, kept",
    [
        (SEARCH, '{"limit": 20}', {"films", "total", "cut"}),
        (DETAILS, '{"id": 0}', {"id", "title", "cut"}),
        ("x" * 200, "{}", {"error"}),
    ],
)
def test_every_text_handed_back_fits_the_smallest_bound_the_config_allows(demo_index, name, arguments, kept):
    answer, _, _ = run_one(demo_index, name, arguments, ToolLimits(result_chars=200))
    assert kept <= set(answer)
    if "films" in answer:  # not one whole card fits: films as id and title, rather than none
        assert answer["films"] and set(answer["films"][0]) == {"id", "title"}


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30)
    | st.sampled_from(["comedy", "Jim Carrey", "genre:drama", "1994", "\u200f", "a\x00b"]),
    lambda inner: st.lists(inner, max_size=25) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=60,
)
KEYS = st.sampled_from(["genre", "actor", "year", "exclude", "keywords", "focus", "limit", "id", "film_ids", "message"])


@HYPOTHESIS
@given(
    name=st.sampled_from(TOOL_NAMES),
    arguments=st.dictionaries(KEYS, JSON_VALUES, max_size=5),
    result_chars=st.integers(200, 2_000),
)
def test_any_arguments_give_a_json_answer_within_the_bound_and_a_writable_record(
    demo_index, name, arguments, result_chars
):
    limits = ToolLimits(result_chars=result_chars)
    for sent in (arguments, json.dumps(arguments)):
        answer, call, _ = run_one(demo_index, name, sent, limits)
        assert call["status"] in ("ok", "error") and (call["status"] == "error") == ("error" in answer)
        assert call["error"] is None or len(call["error"]) <= 500


# --- the tools agent's loop --------------------------------------------------------------------------------------


def test_ids_a_reply_repeats_are_made_distinct_and_others_kept():
    calls = [{"id": i, "name": "search_films", "arguments": "{}"} for i in ("a", "a", "a~1", "b", "a")]
    assert [c["id"] for c in distinct_ids(calls)] == ["a", "a~1", "a~1~1", "b", "a~2"]
    assert distinct_ids(calls[3:4])[0] is calls[3]


# The title recognition the agent runs on its final message, finding nothing: this test is about the wire.
NO_TITLES = SimpleNamespace(
    title_recognizer=SimpleNamespace(
        recognise=lambda *_, **__: SimpleNamespace(recommended=[], mentioned=[], unknown=[])
    )
)


class TemplatingOpenAI(ToolOpenAI):
    """An OpenAI-compatible server that renders the conversation as vLLM and SGLang do: every earlier call's
    arguments decoded as a JSON object, every call id answered by one tool message. `refusals` lists what such a
    server would have refused (HTTP 400)."""

    def __init__(self, calls):
        super().__init__(calls)
        self.refusals = []

    def reply(self, body: dict) -> dict:
        for message in body["messages"]:
            calls = message.get("tool_calls") or []
            ids = [call["id"] for call in calls]
            if len(set(ids)) != len(ids):
                self.refusals.append(f"tool_call ids repeated: {ids}")
            for call in calls:
                try:
                    if not isinstance(strict_loads(call["function"]["arguments"]), dict):
                        raise ValueError("not an object")
                except ValueError as error:
                    self.refusals.append(f"arguments {call['function']['arguments']!r}: {error}")
        return super().reply(body)


def model_that_fumbles_then_commits(body: dict):
    """First reply: a call cut short, one with NaN, one with the same id (OpenAI's shape); then a commit."""
    if body["messages"][-1]["role"] != "tool":
        return [
            {"id": "c", "type": "function", "function": {"name": SEARCH, "arguments": '{"genre": "com'}},
            {"id": "c", "type": "function", "function": {"name": DETAILS, "arguments": '{"id": NaN}'}},
            {"id": "c", "type": "function", "function": {"name": DETAILS, "arguments": "[3]"}},
        ]
    commit = json.dumps({"film_ids": [2], "message": "Try this one."})
    return [{"id": "c", "type": "function", "function": {"name": RECOMMEND, "arguments": commit}}]


def test_a_fumbled_call_does_not_poison_the_next_request_to_a_templating_server(demo_index):
    with TemplatingOpenAI(model_that_fumbles_then_commits) as server:
        agent = ToolsAgent(
            demo_index,
            NO_TITLES,
            5,
            LLMClient(OpenAIBackend("m", base_url=server.base_url), None),
            PromptTemplate(REPO / "resources" / "prompts" / "crs_tools.txt"),
            {"temperature": 0.2, "top_p": 0.95, "max_tokens": 64},
        )
        reply = agent.respond(1, "A comedy, please.")
        second = server.requests[1]["body"]["messages"]
    assert server.refusals == []
    assert [c["error"].split(":")[0] for c in reply.tools["tool_calls"][:3]] == ["the arguments are not JSON"] * 2 + [
        "the arguments must be a JSON object"
    ]
    assert reply.tools["tool_turn_end"] == "recommend" and reply.text == "Try this one."
    # the model sees its own calls under distinct ids, each answered once, the refused ones as {}
    assert [c["id"] for c in second[-4]["tool_calls"]] == ["c", "c~1", "c~2"]
    assert [m["tool_call_id"] for m in second[-3:]] == ["c", "c~1", "c~2"]
    assert [c["function"]["arguments"] for c in second[-4]["tool_calls"]] == ["{}"] * 3


# --- the backends' tool messages ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "arguments, sent",
    [
        ('{"genre": "comedy"}', '{"genre": "comedy"}'),
        ('{"genre": "com', "{}"),
        ("", "{}"),
        ("[1, 2]", "{}"),
        ('"comedy"', "{}"),
        ('{"id": NaN}', "{}"),
        ('{"id": 1e400}', "{}"),
        ("[" * 3_000, "{}"),
    ],
)
def test_both_backends_send_back_only_arguments_a_strict_decoder_reads_as_an_object(arguments, sent):
    assert echoed_arguments(arguments) == sent
    message = {"role": "assistant", "content": "", "tool_calls": [{"id": "c", "name": SEARCH, "arguments": arguments}]}
    assert openai_messages([message])[0]["tool_calls"][0]["function"]["arguments"] == sent
    ollama = ollama_messages([message])[0]["tool_calls"][0]["function"]["arguments"]
    assert ollama == json.loads(sent)
    strict_loads(json.dumps(ollama, allow_nan=False))  # the request body stays JSON for Ollama's decoder


# --- recorded tool fields the metrics read -----------------------------------------------------------------------


def recorded_call(**fields) -> dict:
    call = {"step": 1, "name": SEARCH, "arguments": {"genre": "comedy"}, "status": "ok", "error": None}
    return call | {"result": {"films": [{"id": 1, "title": "a film"}], "total": 1}, "latency_s": 0.0} | fields


@pytest.mark.parametrize(
    "turn_fields, problem",
    [
        ({"tool_calls": 5}, "turn 2: tool_calls is the number 5, not a list"),
        ({"tool_calls": "search_films"}, 'turn 2: tool_calls is text "search_films", not a list'),
        ({"tool_calls": None}, "turn 2: tool_calls is null, not a list"),
        ({"tool_calls": ["search_films"]}, 'turn 2: tool_calls[0] is text "search_films", not an object'),
        ({"tool_calls": [recorded_call(status="maybe")]}, 'tool_calls[0] status is text "maybe", not one of ok, err'),
        ({"tool_calls": [recorded_call(name=["x"])]}, "tool_calls[0] name is a list of 1, not text"),
        ({"tool_calls": [recorded_call(arguments="{}")]}, 'tool_calls[0] arguments is text "{}", not an object or n'),
        ({"tool_calls": [recorded_call(result="films")]}, 'tool_calls[0] result is text "films", not an object or n'),
        ({"tool_calls": [recorded_call(result={"films": 3})]}, "tool_calls[0] result.films is the number 3, not a li"),
        (
            {"tool_calls": [recorded_call(result={"films": [{"id": "1"}]})]},
            'tool_calls[0] result.films[0] has id text "1", not a whole number',
        ),
        (
            {"tool_calls": [recorded_call(name=DETAILS, result={"id": [1]})]},
            "tool_calls[0] result.id is a list of 1, not a whole number",
        ),
        ({"tool_calls": [recorded_call(error={"why": 1})]}, "tool_calls[0] error is an object of 1, not text or null"),
        ({"tool_calls": [recorded_call(status=None)]}, "tool_calls[0] status is null, not one of ok, error, ignored"),
        ({"tool_calls": [], "tool_turn_end": "later"}, 'turn 2: tool_turn_end is text "later", not one of recommend'),
    ],
)
def test_malformed_recorded_tool_fields_stop_scoring_naming_the_session_turn_and_field(
    demo_index, turn_fields, problem
):
    good = {"turn": 1, "user_meta": None, "tool_calls": [recorded_call()], "tool_turn_end": "message"}
    record = {"session_id": "hand/s7", "turns": [good, {"turn": 2, "user_meta": None, **turn_fields}]}
    with pytest.raises(ToolRecordError) as refused:
        score_session(record, SearchReader(Catalog(demo_index)))
    assert str(refused.value).startswith("session hand/s7, ") and problem in str(refused.value), str(refused.value)


def test_a_turn_that_is_no_object_is_named_and_well_formed_records_still_score(demo_index):
    read_search = SearchReader(Catalog(demo_index))
    with pytest.raises(ToolRecordError, match=r"^session s1: turns\[0\] is text \"junk\", not an object$"):
        score_session({"session_id": "s1", "turns": ["junk"]}, read_search)
    commit = recorded_call(name=RECOMMEND, arguments=None, result={"films": [{"id": 1, "title": "a film"}]})
    record = {"session_id": "s2", "turns": [{"turn": 1, "tool_calls": [recorded_call(), commit]}]}
    session, _ = score_session(record, read_search)
    assert session["tool_calls"] == 2 and session["unsearched_commit_rate"] == 0
    assert math.isnan(score_session({"session_id": "s3", "turns": [{"turn": 1}]}, read_search)[0]["tool_calls"])
