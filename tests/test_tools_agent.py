"""The `tools` system (crseval.simulate.systems.tools_agent): the tool-call loop against a scripted model, the commit
rule (the exploit of a commit followed by another call), hostile replies within their bounds, and the reply cache."""

import json
import tracemalloc

import pytest
from conftest import REPO

from crseval.catalog.toolkit import ToolLimits
from crseval.language.concepts import ConceptMatcher
from crseval.llm.base import LLMResponse
from crseval.llm.cache import ResponseCache
from crseval.llm.client import LLMClient
from crseval.llm.prompts import PromptTemplate
from crseval.simulate.systems.tools_agent import ToolsAgent

OPTIONS = {"temperature": 0.2, "top_p": 0.95, "max_tokens": 64}


class ScriptedModel:
    """A backend whose replies a test scripts: `script(request)` gives (text, tool calls) for each request."""

    name, model, gives_token_logprobs = "openai", "scripted", False

    def __init__(self, script):
        self.script = script
        self.requests = []

    def complete(self, request):
        self.requests.append(request)
        text, calls = self.script(request)
        calls = [{"id": f"call_{i}", "name": n, "arguments": a} for i, (n, a) in enumerate(calls)] or None
        return LLMResponse(text, self.name, self.model, 0.01, 10, 5, tool_calls=calls)


def last_tool_result(request) -> dict | None:
    message = request.message_dicts()[-1]
    return json.loads(message["content"]) if message["role"] == "tool" else None


def search_details_recommend_twice(request):
    """Search, read the first film, then commit it and, in the same reply, commit another (the exploit)."""
    result = last_tool_result(request)
    if result is None:
        return "", [("search_films", json.dumps({"genre": "comedy", "limit": 3}))]
    if "films" in result:
        return "", [("film_details", json.dumps({"id": result["films"][0]["id"]}))]
    film = result["id"]
    return "", [
        ("recommend", json.dumps({"film_ids": [film], "message": "This comedy should suit you."})),
        ("recommend", json.dumps({"film_ids": [film + 1], "message": "Or rather none at all."})),
    ]


@pytest.fixture
def make_agent(demo_index, tmp_path):
    matcher = ConceptMatcher(demo_index.concepts, demo_index.films)
    prompt = PromptTemplate(REPO / "resources" / "prompts" / "crs_tools.txt")

    def make(script, cache=None, limits=ToolLimits(), max_steps=4, seed=5):
        backend = ScriptedModel(script)
        client = LLMClient(backend, ResponseCache(cache) if cache else None)
        return ToolsAgent(demo_index, matcher, seed, client, prompt, OPTIONS, limits, max_steps), backend, client

    return make


def test_a_turn_searches_reads_and_commits_and_a_second_commit_is_ignored(make_agent, demo_index):
    agent, backend, _ = make_agent(search_details_recommend_twice)
    reply = agent.respond(1, "I'd like a comedy.")
    calls = reply.tools["tool_calls"]
    assert [(c["step"], c["name"], c["status"]) for c in calls] == [
        (1, "search_films", "ok"),
        (2, "film_details", "ok"),
        (3, "recommend", "ok"),
        (3, "recommend", "ignored"),
    ]
    film = calls[1]["arguments"]["id"]
    assert reply.tools["committed_titles"] == [demo_index.title(film)] == reply.recommended_titles
    assert reply.tools["tool_turn_end"] == "recommend" and reply.text == "This comedy should suit you."
    assert "after the turn's recommend" in calls[3]["error"] and agent.toolkit.committed == {film}
    # every model call carried the tools, and each tool result went back as a tool message
    assert all(json.loads(r.tools)[0]["function"]["name"] == "search_films" for r in backend.requests)
    second = backend.requests[1].message_dicts()
    assert second[-2]["tool_calls"][0]["name"] == "search_films" and second[-1]["role"] == "tool"
    assert reply.llm["steps"] == 3
    # the conversation goes on with the message, not the tool exchange
    assert agent.history == [
        {"role": "user", "content": "I'd like a comedy."},
        {"role": "assistant", "content": "This comedy should suit you."},
    ]


def test_a_plain_message_commits_nothing(make_agent, demo_index):
    title = demo_index.title(0)
    agent, _, _ = make_agent(lambda request: (f"Have you seen {title}?", []))
    reply = agent.respond(1, "Anything good?")
    assert reply.tools == {"tool_calls": [], "tool_turn_end": "message"}
    assert reply.recommended_titles == [] and reply.text == f"Have you seen {title}?"


def test_spent_model_calls_end_the_turn_at_the_bound(make_agent):
    agent, backend, _ = make_agent(lambda request: ("", [("search_films", "{}")]), max_steps=3)
    reply = agent.respond(1, "Something.")
    assert reply.tools["tool_turn_end"] == "bound" and len(backend.requests) == 3
    assert reply.recommended_titles == [] and reply.text == ""


@pytest.mark.parametrize(
    "calls, error",
    [
        ([("delete_everything", "{}")], "unknown tool"),
        ([("search_films", "{this is not json")], "not JSON"),
        ([("search_films", json.dumps({"genre": {"a": 1}}))], "genre must be a string or a list of strings"),
        ([("film_details", json.dumps({"id": 10**9}))], "no film with id"),
        ([("recommend", json.dumps({"film_ids": list(range(10_000)), "message": "all of them"}))], "at most 10,000"),
        ([("recommend", json.dumps({"film_ids": list(range(11)), "message": "all of them"}))], "at most 10 a turn"),
    ],
)
def test_hostile_calls_are_recorded_errors_and_the_session_goes_on(make_agent, calls, error):
    replies = iter([("", calls), ("Let me ask instead: which genre?", [])])
    agent, _, _ = make_agent(lambda request: next(replies))
    reply = agent.respond(1, "Hi.")
    assert reply.tools["tool_calls"][0]["status"] == "error" and error in reply.tools["tool_calls"][0]["error"]
    assert reply.tools["tool_turn_end"] == "message" and reply.text.startswith("Let me ask")


def test_thousands_of_calls_and_a_10_mb_argument_stay_within_their_bounds(make_agent):
    huge = json.dumps({"keywords": "x" * 10_000_000})
    tracemalloc.start()
    agent, _, _ = make_agent(lambda request: ("", [("search_films", huge)] + [("search_films", "{}")] * 5_000))
    reply = agent.respond(1, "Hi.")
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    calls = reply.tools["tool_calls"]
    assert calls[0]["status"] == "error" and "at most 10,000" in calls[0]["error"]
    assert sum(c["status"] != "ignored" for c in calls) == ToolLimits().calls_per_turn
    assert len(calls) <= 64 * 4 and len(json.dumps(calls)) < 200_000
    assert reply.tools["tool_turn_end"] == "bound"
    assert peak < 80 * 2**20, f"peak {peak / 2**20:.0f} MiB"


def without_latency(record: dict) -> dict:
    return {**record, "tool_calls": [{k: v for k, v in c.items() if k != "latency_s"} for c in record["tool_calls"]]}


def test_a_rerun_finds_every_step_in_the_cache(make_agent, tmp_path):
    turns = ((1, "A comedy?"), (2, "Another one."))
    first, backend, client = make_agent(search_details_recommend_twice, cache=tmp_path / "cache")
    records = [without_latency(first.respond(t, text).tools) for t, text in turns]
    assert client.calls == len(backend.requests) == 6
    again, backend_again, client_again = make_agent(search_details_recommend_twice, cache=tmp_path / "cache")
    assert [without_latency(again.respond(t, text).tools) for t, text in turns] == records
    assert client_again.calls == 0 and client_again.cache_hits == 6 and backend_again.requests == []
