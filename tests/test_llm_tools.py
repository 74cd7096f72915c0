"""Tool calls in the LLM layer: requests with tool definitions and tool messages, replies that ask for
tools, on every backend, through the client and the response cache; hostile replies bounded or refused."""

import json
import re

import pytest
from fake_servers import FakeOllama, FakeOpenAI, RawReply, ScriptedOllama, ToolOllama, ToolOpenAI

from crseval.llm import LLMClient, LLMError, LLMRequest, LLMResponse, TransientLLMError, llamacpp_backend
from crseval.llm.base import MAX_ARGUMENT_CHARS, MAX_TOOL_CALLS_PER_REPLY, MAX_TOOL_NAME_CHARS, tool_calls_from
from crseval.llm.cache import ResponseCache
from crseval.llm.client import RetryPolicy
from crseval.llm.llamacpp_backend import (
    LlamaCppBackend,
    grammar_schema,
    parse_tool_reply,
    tool_messages,
    tool_reply_schema,
)
from crseval.llm.ollama_backend import OllamaBackend
from crseval.llm.openai_backend import OpenAIBackend

NO_WAIT = RetryPolicy(max_retries=2, backoff_s=0.0)
BIG = 64 << 20  # llm.max_reply_bytes for the hostile replies: they must reach the parser, not the size bound

# A local copy of the tool-using systems' tools (crseval.catalog.toolkit.TOOLS ships the real ones).
STRINGS = {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "search_films",
            "description": "Search the film catalog; returns matching films with their ids.",
            "parameters": {
                "type": "object",
                "properties": {
                    **{field: STRINGS for field in ("genre", "actor", "director", "writer", "language", "year")},
                    "exclude": {"type": "array", "items": {"type": "string"}},
                    "keywords": {"type": "string"},
                    "focus": {"type": "array", "items": {"type": "string"}},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 20},
                },
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "film_details",
            "description": "The details of one film, by its id.",
            "parameters": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]},
        },
    },
    {
        "type": "function",
        "function": {
            "name": "recommend",
            "description": "Recommend films by their ids, with a message. Ends the turn.",
            "parameters": {
                "type": "object",
                "properties": {
                    "film_ids": {"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 10},
                    "message": {"type": "string"},
                },
                "required": ["film_ids", "message"],
            },
        },
    },
]
SYSTEM = "You are a movie recommender. Search the catalog first, then recommend films from the results."
SEARCH_CALL = {"id": "call_a", "name": "search_films", "arguments": '{"actor": "Jim Carrey", "genre": "comedy"}'}
RESULT = {"films": [{"id": 3, "title": "The Mask"}], "total": 1}
# a conversation in the neutral shape: the user's wish, the model's search, its result
CONVERSATION = [
    {"role": "system", "content": SYSTEM},
    {"role": "user", "content": "I want a comedy with Jim Carrey"},
    {"role": "assistant", "content": "", "tool_calls": [SEARCH_CALL]},
    {"role": "tool", "content": json.dumps(RESULT), "tool_call_id": "call_a", "name": "search_films"},
]


def tool_request(messages=CONVERSATION, tools=TOOLS, **options) -> LLMRequest:
    return LLMRequest.chat(messages, max_tokens=64, seed=5, tag="tools@1", tools=tools, **options)


# --- requests and their keys --------------------------------------------------------------------------------------

# Computed with the code before tool calls existed (base.py at 0b8c856): cached replies must keep their keys.
OLD_KEYS = [
    (
        LLMRequest.chat(
            [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "A crime movie?"}],
            temperature=0.3,
            max_tokens=20,
            seed=9,
            tag="test@1",
        ),
        "4e1c543cf5a496e539be932ff95467ce1848fa69ed829025268b65d4c1cd8a25",
        "2c897774354ac5a3865db689cd26719a5233dc2c92b278ddd8b403a845c24c56",
    ),
    (
        LLMRequest.sampled(
            [{"role": "user", "content": "Une comédie, s'il vous plaît"}],
            {"temperature": 0.7, "top_p": 0.9, "max_tokens": 64},
            seed=3,
            tag="crs@2",
            json_schema={"type": "object", "properties": {"x": {"type": "integer"}}},
        ),
        "ed904236e33f054e751a68b5b6df1730596e866330ab701d3547693738ea0e3d",
        "9a4a29624bb22103d8f25c8e103066030dce3e20ef0e8b9ec1e597ca383442fe",
    ),
    (
        LLMRequest.chat([{"role": "user", "content": "rate"}, {"role": "assistant", "content": "4"}], top_logprobs=5),
        "b1a8646ddcdf1c813d359fc698ac21f95648f46c909088cc6760a91b149b3ac7",
        "c648bea50ad96a652c93019a98c565935301c90531d6a16022c8a0fe1c194aaa",
    ),
]


@pytest.mark.parametrize("request_, ollama_key, openai_key", OLD_KEYS)
def test_requests_without_tools_keep_their_keys(request_, ollama_key, openai_key):
    assert request_.key("ollama", "qwen:7b") == ollama_key
    assert request_.key("openai", "m") == openai_key
    assert all(len(message) == 2 for message in request_.messages) and request_.tools == ""


def test_stray_fields_of_plain_messages_do_not_change_keys():
    plain = OLD_KEYS[0][0]
    named = LLMRequest.chat(
        [{"role": "system", "content": "Be brief.", "name": "x"}, {"role": "user", "content": "A crime movie?"}],
        temperature=0.3,
        max_tokens=20,
        seed=9,
        tag="test@1",
        tools="",
    )
    assert named == plain and named.key("ollama", "qwen:7b") == OLD_KEYS[0][1]


def test_keys_cover_the_tool_definitions():
    request = tool_request()
    without = tool_request(tools="")
    other_description = json.loads(json.dumps(TOOLS))
    other_description[1]["function"]["description"] = "Details of a film."
    fewer = TOOLS[:2]
    keys = {
        r.key("ollama", "m")
        for r in (request, without, tool_request(tools=other_description), tool_request(tools=fewer))
    }
    assert len(keys) == 4
    # the definitions are kept as canonical JSON: key order and the form they are given in do not matter
    reordered = [{"function": tool["function"], "type": tool["type"]} for tool in TOOLS]
    for same in (tool_request(tools=reordered), tool_request(tools=json.dumps(TOOLS, indent=2))):
        assert same == request and same.key("ollama", "m") == request.key("ollama", "m")
    assert json.loads(request.tools) == TOOLS and request.tool_definitions() == TOOLS


@pytest.mark.parametrize(
    "change",
    [
        lambda m: m[3].update(content=json.dumps({"films": [], "total": 0})),
        lambda m: m[3].update(tool_call_id="call_b"),
        lambda m: m[3].update(name="film_details"),
        lambda m: m[2]["tool_calls"][0].update(arguments='{"actor": "Jim Carrey"}'),
        lambda m: m[2]["tool_calls"][0].update(name="film_details"),
        lambda m: m[2]["tool_calls"][0].update(id="call_z"),
        lambda m: m[2]["tool_calls"].append({"id": "call_b", "name": "film_details", "arguments": '{"id": 3}'}),
        lambda m: m[2].pop("tool_calls"),
    ],
)
def test_keys_cover_every_tool_message(change):
    messages = json.loads(json.dumps(CONVERSATION))
    change(messages)
    assert tool_request(messages).key("ollama", "m") != tool_request().key("ollama", "m")


def test_tool_messages_round_trip_and_stay_hashable():
    request = tool_request()
    assert request.message_dicts() == CONVERSATION
    assert request.messages[:2] == (("system", SYSTEM), ("user", "I want a comedy with Jim Carrey"))
    assert request.messages[2] == (
        "assistant",
        "",
        json.dumps({"tool_calls": [SEARCH_CALL]}, sort_keys=True, separators=(",", ":")),
    )
    assert len({request, tool_request()}) == 1
    sampled = LLMRequest.sampled(
        CONVERSATION, {"temperature": 0.1, "top_p": 0.9, "max_tokens": 64, "x": 1}, tools=TOOLS
    )
    assert sampled.tools == request.tools and sampled.temperature == 0.1


@pytest.mark.parametrize(
    "bad",
    [
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c", "name": "f"}]},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c", "name": "f", "arguments": {"a": 1}}]},
        {"role": "assistant", "content": "", "tool_calls": "search_films"},
    ],
)
def test_malformed_tool_calls_in_a_message_are_refused(bad):
    with pytest.raises(ValueError, match="tool_calls"):
        LLMRequest.chat([bad])


def test_malformed_tool_definitions_are_refused():
    with pytest.raises(ValueError, match="tools must be"):
        LLMRequest.chat([{"role": "user", "content": "x"}], tools=[{"type": "function", "name": "f"}])


# --- OpenAI-compatible servers ------------------------------------------------------------------------------------


def openai_calls(body):
    return [
        {"id": "call_1", "type": "function", "function": {"name": "film_details", "arguments": '{"id": 3}'}},
        {"id": "call_2", "type": "function", "function": {"name": "recommend", "arguments": '{"film_ids": [3]}'}},
    ]


def test_openai_round_trip_with_tools():
    with ToolOpenAI(openai_calls) as server:
        response = OpenAIBackend("qwen", base_url=server.base_url).complete(tool_request())
        body = server.requests[0]["body"]
    assert body["tools"] == TOOLS and body["tool_choice"] == "auto"
    assert body["messages"] == [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "I want a comedy with Jim Carrey"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "search_films", "arguments": SEARCH_CALL["arguments"]},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_a", "content": json.dumps(RESULT)},
    ]
    assert response.text == "" and response.extra["finish_reason"] == "tool_calls"
    assert response.tool_calls == [
        {"id": "call_1", "name": "film_details", "arguments": '{"id": 3}'},
        {"id": "call_2", "name": "recommend", "arguments": '{"film_ids": [3]}'},
    ]


def test_openai_requests_without_tools_send_none_and_ignore_calls():
    with ToolOpenAI(openai_calls, content=lambda body: "Try Heat.") as server:
        response = OpenAIBackend("qwen", base_url=server.base_url).complete(OLD_KEYS[0][0])
        body = server.requests[0]["body"]
    assert "tools" not in body and "tool_choice" not in body
    assert response.text == "Try Heat." and response.tool_calls is None


def test_openai_text_reply_to_a_request_with_tools():
    with FakeOpenAI() as server:
        response = OpenAIBackend("qwen", base_url=server.base_url).complete(tool_request())
    assert response.text.startswith("Try Heat") and response.tool_calls is None


# --- Ollama -------------------------------------------------------------------------------------------------------


def ollama_calls(body):
    return [
        {"function": {"name": "film_details", "arguments": {"id": 3}}},
        {"function": {"name": "recommend", "arguments": {"film_ids": [3], "message": "Try The Mask."}}},
    ]


def test_ollama_round_trip_with_tools():
    with ToolOllama(ollama_calls) as server:
        response = OllamaBackend("qwen3", host=server.host).complete(tool_request())
        body = server.requests[0]["body"]
    assert body["tools"] == TOOLS
    assert body["messages"] == [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "I want a comedy with Jim Carrey"},
        {
            "role": "assistant",
            "tool_calls": [{"function": {"name": "search_films", "arguments": json.loads(SEARCH_CALL["arguments"])}}],
        },
        {"role": "tool", "content": json.dumps(RESULT), "tool_name": "search_films"},
    ]
    assert response.text == ""
    assert response.tool_calls == [
        {"id": "call_0", "name": "film_details", "arguments": '{"id": 3}'},
        {"id": "call_1", "name": "recommend", "arguments": '{"film_ids": [3], "message": "Try The Mask."}'},
    ]


def test_ollama_body_without_tools_is_as_before():
    with FakeOllama() as server:
        OllamaBackend("qwen:7b", host=server.host).complete(OLD_KEYS[0][0])
        body = server.requests[0]["body"]
    assert body == {
        "model": "qwen:7b",
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "A crime movie?"}],
        "tools": [],
        "stream": False,
        "options": {"temperature": 0.3, "top_p": 0.95, "seed": 9, "num_predict": 20},
    }


def test_ollama_arguments_that_are_not_an_object_go_back_as_an_empty_one():
    messages = json.loads(json.dumps(CONVERSATION))
    messages[2]["tool_calls"][0]["arguments"] = '{"actor": "Jim'  # cut short: the loop refused it
    with ToolOllama(lambda body: None) as server:
        response = OllamaBackend("m", host=server.host).complete(tool_request(messages))
        sent = server.requests[0]["body"]["messages"][2]
    assert sent["tool_calls"] == [{"function": {"name": "search_films", "arguments": {}}}]
    assert response.text == "Try Heat." and response.tool_calls is None


# --- the client and the cache -------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["openai", "ollama"])
def test_a_reply_of_tool_calls_only_is_accepted_cached_and_restored(tmp_path, kind):
    server = ToolOpenAI(openai_calls) if kind == "openai" else ToolOllama(ollama_calls)
    with server:
        backend = (
            OpenAIBackend("m", base_url=server.base_url) if kind == "openai" else OllamaBackend("m", host=server.host)
        )
        first = LLMClient(backend, ResponseCache(tmp_path), retry=NO_WAIT).complete(tool_request())
        again = LLMClient(backend, ResponseCache(tmp_path), retry=NO_WAIT)
        second = again.complete(tool_request())
    assert server.chat_calls == 1 and again.calls == 0 and again.cache_hits == 1
    assert second.cached and not first.cached
    assert second.tool_calls == first.tool_calls and [c["name"] for c in second.tool_calls] == [
        "film_details",
        "recommend",
    ]
    assert second.text == "" and second.extra == first.extra
    entry = json.loads(next(tmp_path.rglob("*.json")).read_text())
    assert entry["tool_calls"] == first.tool_calls


def test_cache_entries_of_replies_without_calls_have_no_tool_calls_field(tmp_path):
    with FakeOllama() as server:
        LLMClient(OllamaBackend("m", host=server.host), ResponseCache(tmp_path)).complete(OLD_KEYS[0][0])
    assert "tool_calls" not in json.loads(next(tmp_path.rglob("*.json")).read_text())


def test_a_reply_with_neither_text_nor_calls_is_retried_then_refused(tmp_path):
    empty = json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": None, "tool_calls": []}}]})
    with FakeOpenAI(raw=[RawReply(body=empty)]) as server:
        client = LLMClient(OpenAIBackend("m", base_url=server.base_url), ResponseCache(tmp_path), retry=NO_WAIT)
        assert client.complete(tool_request()).text.startswith("Try Heat")
    assert client.calls == 2
    with FakeOpenAI(raw=[RawReply(body=empty)] * 3) as server:
        client = LLMClient(OpenAIBackend("m", base_url=server.base_url), ResponseCache(tmp_path / "2"), retry=NO_WAIT)
        with pytest.raises(
            LLMError,
            match=r"giving up after 3 attempts: .*reply has no text \(choices\[0\]\.message\.content is null\)",
        ):
            client.complete(tool_request())
    assert not list((tmp_path / "2").rglob("*.json"))


@pytest.mark.parametrize(
    "entry",
    [
        {"text": "", "tool_calls": None},
        {"text": "", "tool_calls": []},
        {"text": "", "tool_calls": "search_films"},
        {"text": "", "tool_calls": [{"id": "c", "name": "f"}]},
        {"text": "", "tool_calls": [{"id": "c", "name": 5, "arguments": "{}"}]},
        {"text": "ok", "tool_calls": [["c", "f", "{}"]]},
    ],
)
def test_cache_entries_without_content_or_with_malformed_calls_are_misses(tmp_path, entry):
    cache = ResponseCache(tmp_path)
    key = "ab" + "0" * 62
    record = {"backend": "b", "model": "m", "latency_s": 0.1, "prompt_tokens": 1, "completion_tokens": 1, "extra": {}}
    cache._path(key).parent.mkdir(parents=True)
    cache._path(key).write_text(json.dumps({**record, **entry}))
    assert cache.get(key) is None
    good = LLMResponse("", "b", "m", 0.1, 1, 1, tool_calls=[{"id": "c", "name": "f", "arguments": "{}"}])
    cache.put(key, good)
    assert cache.get(key).tool_calls == good.tool_calls
    with pytest.raises(ValueError, match="empty reply"):
        cache.put(key, LLMResponse("", "b", "m", 0.1, 1, 1, tool_calls=[]))


class CallingBackend:
    """A backend that returns a prepared response (to check what the client lets through)."""

    name, model, gives_token_logprobs = "stub", "calls", False

    def __init__(self, response):
        self.response, self.calls = response, 0

    def complete(self, request):
        self.calls += 1
        return self.response


def test_the_client_refuses_malformed_calls_from_any_backend():
    bad = LLMResponse("", "stub", "calls", 0.0, None, None, tool_calls=[{"name": "f"}])
    backend = CallingBackend(bad)
    with pytest.raises(LLMError, match=r"stub model calls: giving up after 3 attempts: .*reply has no text"):
        LLMClient(backend, None, retry=NO_WAIT).complete(tool_request())
    assert backend.calls == 3
    good = LLMResponse("", "stub", "calls", 0.0, None, None, tool_calls=[{"id": "c", "name": "f", "arguments": "{}"}])
    assert LLMClient(CallingBackend(good), None).complete(tool_request()).tool_calls == good.tool_calls


# --- hostile replies ----------------------------------------------------------------------------------------------


def openai_reply(tool_calls, content=None) -> RawReply:
    message = {"role": "assistant", "content": content, "tool_calls": tool_calls}
    return RawReply(body=json.dumps({"choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}]}))


def ollama_reply(tool_calls, content="") -> RawReply:
    message = {"role": "assistant", "content": content, "tool_calls": tool_calls}
    return RawReply(body=json.dumps({"model": "m", "message": message, "done": True}))


@pytest.mark.parametrize(
    "calls, problem",
    [
        ("search_films", "reply's tool_calls is a string, not a list"),
        ({"function": {"name": "f"}}, "reply's tool_calls is an object, not a list"),
        ([{"function": {"arguments": "{}"}}], r"tool_calls\[0\]\.function\.name is missing, not a string"),
        ([{"function": {"name": 7, "arguments": "{}"}}], r"tool_calls\[0\]\.function\.name is a number, not a string"),
        ([{"function": {"name": "  ", "arguments": "{}"}}], r"tool_calls\[0\]\.function\.name is blank"),
        ([{"id": "c"}], r"tool_calls\[0\]\.function is missing, not an object"),
        ([{"function": "recommend"}], r"tool_calls\[0\]\.function is a string, not an object"),
        ([{"function": {"name": "f"}}, 3], r"tool_calls\[1\] is a number, not an object"),
    ],
)
@pytest.mark.parametrize("kind", ["openai", "ollama"])
def test_garbage_tool_calls_are_transient_errors_naming_the_problem(kind, calls, problem):
    if kind == "openai":
        server = FakeOpenAI(raw=[openai_reply(calls)] * 4)
    else:
        server = ScriptedOllama([ollama_reply(calls)] * 4)
    with server:
        backend = (
            OpenAIBackend("m", base_url=server.base_url) if kind == "openai" else OllamaBackend("m", host=server.host)
        )
        with pytest.raises(TransientLLMError, match=problem):
            backend.complete(tool_request())
        with pytest.raises(LLMError, match=rf"giving up after 3 attempts: .*{problem}"):
            LLMClient(backend, None, retry=NO_WAIT).complete(tool_request())


def served_backend(kind: str, server):
    """The `kind` backend on `server`, its reply bound raised out of the way (the tests bound the calls)."""
    if kind == "openai":
        return OpenAIBackend("m", base_url=server.base_url, max_reply_bytes=BIG)
    return OllamaBackend("m", host=server.host, max_reply_bytes=BIG)


@pytest.mark.parametrize("kind", ["openai", "ollama"])
def test_ten_thousand_tool_calls_are_cut_to_the_bound(kind):
    if kind == "openai":
        calls = [
            {"id": f"c{i}", "type": "function", "function": {"name": "f", "arguments": f'{{"i": {i}}}'}}
            for i in range(10_000)
        ]
        server = FakeOpenAI(raw=[openai_reply(calls)])
    else:
        calls = [{"function": {"name": "f", "arguments": {"i": i}}} for i in range(10_000)]
        server = ScriptedOllama([ollama_reply(calls)])
    with server:
        response = served_backend(kind, server).complete(tool_request())
    assert len(response.tool_calls) == MAX_TOOL_CALLS_PER_REPLY == 64
    assert response.extra["tool_calls_dropped"] == 10_000 - 64
    assert response.tool_calls[-1]["arguments"] == '{"i": 63}'


def test_ten_thousand_tool_calls_within_the_derived_bound_are_refused_by_size():
    calls = [{"id": f"c{i}", "type": "function", "function": {"name": "f", "arguments": "{}"}} for i in range(10_000)]
    with FakeOpenAI(raw=[openai_reply(calls)]) as server:
        with pytest.raises(LLMError, match="max_tokens 64"):
            OpenAIBackend("m", base_url=server.base_url).complete(tool_request())


@pytest.mark.parametrize("kind", ["openai", "ollama"])
def test_a_ten_megabyte_arguments_string_is_cut_and_flagged(kind):
    huge = '{"keywords": "' + "x" * (10 << 20) + '"}'
    if kind == "openai":
        server = FakeOpenAI(
            raw=[
                openai_reply([{"id": "c", "type": "function", "function": {"name": "search_films", "arguments": huge}}])
            ]
        )
    else:
        server = ScriptedOllama([ollama_reply([{"function": {"name": "search_films", "arguments": json.loads(huge)}}])])
    with server:
        response = served_backend(kind, server).complete(tool_request())
    (call,) = response.tool_calls
    assert len(call["arguments"]) == MAX_ARGUMENT_CHARS and call["arguments"].startswith('{"keywords": "xxx')
    assert response.extra["tool_arguments_cut"] == [0]
    with pytest.raises(json.JSONDecodeError):  # what the loop refuses as not JSON
        json.loads(call["arguments"])


def test_long_names_and_ids_are_cut_missing_ids_made_and_unicode_cleaned():
    raw = [
        {"id": "x" * 500, "function": {"name": "n" * 1000, "arguments": None}},
        {"function": {"name": "caf\udce9", "arguments": [1, 2]}},
    ]
    calls, notes = tool_calls_from("here", raw, "seen")
    assert calls[0] == {"id": "x" * MAX_TOOL_NAME_CHARS, "name": "n" * MAX_TOOL_NAME_CHARS, "arguments": "{}"}
    assert calls[1] == {"id": "call_1", "name": "caf\ufffd", "arguments": "[1, 2]"}
    assert notes == {"tool_names_cut": [0]}
    assert tool_calls_from("here", None, "seen") == (None, {}) == tool_calls_from("here", [], "seen")


def test_text_beside_tool_calls_must_be_a_string():
    with FakeOpenAI(
        raw=[openai_reply([{"id": "c", "function": {"name": "f", "arguments": "{}"}}], content=5)]
    ) as server:
        with pytest.raises(TransientLLMError, match="reply's text is a number, not a string"):
            OpenAIBackend("m", base_url=server.base_url).complete(tool_request())
    with FakeOpenAI(
        raw=[openai_reply([{"id": "c", "function": {"name": "f", "arguments": "{}"}}], content="Let me look.")]
    ) as server:
        response = OpenAIBackend("m", base_url=server.base_url).complete(tool_request())
    assert response.text == "Let me look." and response.tool_calls[0]["name"] == "f"


# --- llama.cpp: the JSON-envelope format (without a model) --------------------------------------------------------


class FakeLlama:
    def __init__(self, *contents):
        self.contents, self.kwargs = list(contents), []

    def create_chat_completion(self, **kwargs):
        self.kwargs.append(kwargs)
        content = self.contents.pop(0)
        return {
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 40, "completion_tokens": 9},
        }


@pytest.fixture
def fake_llama(tmp_path, monkeypatch):
    gguf = tmp_path / "tiny.gguf"
    gguf.write_bytes(b"GGUF")

    def make(*contents):
        llama = FakeLlama(*contents)
        monkeypatch.setattr(llamacpp_backend, "_load", lambda *args: llama)
        return LlamaCppBackend(str(gguf)), llama

    return make


def test_llamacpp_sends_the_tools_as_a_grammar_and_plain_turns(fake_llama):
    backend, llama = fake_llama('{"tool": "recommend", "arguments": {"film_ids": [3], "message": "Try The Mask."}}')
    messages = [*CONVERSATION, {"role": "assistant", "content": "Anything else?"}, {"role": "user", "content": "no"}]
    response = backend.complete(tool_request(messages))
    assert response.text == "" and response.tool_calls == [
        {"id": "call_0", "name": "recommend", "arguments": '{"film_ids": [3], "message": "Try The Mask."}'}
    ]
    sent = llama.kwargs[0]
    assert sent["response_format"] == {"type": "json_object", "schema": tool_reply_schema(TOOLS)}
    alternatives = sent["response_format"]["schema"]["anyOf"]
    assert [a["properties"].get("tool", {}).get("const") for a in alternatives] == [
        "search_films",
        "film_details",
        "recommend",
        None,
    ]
    # the arguments as the tool declares them, but for the size bounds a grammar cannot unroll (the tools check them)
    assert alternatives[2]["properties"]["arguments"] == grammar_schema(TOOLS[2]["function"]["parameters"])
    assert "minItems" in json.dumps(TOOLS[2]) and "minItems" not in json.dumps(alternatives)
    roles = [m["role"] for m in sent["messages"]]
    assert roles == ["system", "user", "assistant", "user", "assistant", "user"]
    assert (
        sent["messages"][0]["content"].startswith(SYSTEM)
        and "- film_details: The details" in sent["messages"][0]["content"]
    )
    assert json.loads(sent["messages"][2]["content"]) == {
        "tool": "search_films",
        "arguments": json.loads(SEARCH_CALL["arguments"]),
    }
    assert sent["messages"][3]["content"] == f"Result of search_films: {json.dumps(RESULT)}"
    assert json.loads(sent["messages"][4]["content"]) == {"message": "Anything else?"}


def test_llamacpp_message_replies_and_requests_without_tools(fake_llama):
    backend, llama = fake_llama('{"message": "Which decade?"}', "Plain text.")
    response = backend.complete(tool_request())
    assert (response.text, response.tool_calls) == ("Which decade?", None)
    plain = backend.complete(OLD_KEYS[0][0])
    assert plain.text == "Plain text." and "response_format" not in llama.kwargs[1]
    assert llama.kwargs[1]["messages"] == OLD_KEYS[0][0].message_dicts()


def test_llamacpp_blank_message_is_transient(fake_llama):
    backend, _ = fake_llama('{"message": "  "}')
    with pytest.raises(TransientLLMError, match=r"reply has no text \(message is blank\)"):
        backend.complete(tool_request())


def test_llamacpp_tools_and_a_json_schema_together_are_refused(fake_llama):
    backend, _ = fake_llama()
    with pytest.raises(LLMError, match="tools cannot also have a json_schema"):
        backend.complete(tool_request(json_schema={"type": "object"}))


def test_llamacpp_models_without_a_system_role_get_the_tools_in_the_first_user_turn(fake_llama):
    backend, llama = fake_llama('{"message": "Hi"}')
    backend._system_role = False
    backend.complete(tool_request())
    first = llama.kwargs[0]["messages"][0]
    assert first["role"] == "user" and first["content"].startswith(SYSTEM) and "search_films" in first["content"]
    assert first["content"].endswith("I want a comedy with Jim Carrey")


@pytest.mark.parametrize(
    "text, expected",
    [
        ('{"tool": "search_films", "arguments": {"genre": "com', ("", "search_films", '{"genre": "com', True)),
        ('{"message": "You might like The Ma', ("You might like The Ma", None, None, True)),
        ('{"message": "Done."}', ("Done.", None, None, False)),
        ('{"tool": "film_details", "arguments": {"id": 3}}', ("", "film_details", '{"id": 3}', False)),
    ],
)
def test_llamacpp_replies_cut_short_are_still_read(text, expected):
    reply, calls, notes = parse_tool_reply("here", text, "seen")
    assert (reply, calls[0]["name"] if calls else None, calls[0]["arguments"] if calls else None) == expected[:3]
    assert notes.get("tool_reply_cut", False) is expected[3]


def test_tool_messages_without_a_system_message_get_one():
    shaped = tool_messages([{"role": "user", "content": "hi"}], TOOLS)
    assert [m["role"] for m in shaped] == ["system", "user"] and "recommend" in shaped[0]["content"]
    cut = {"id": "c", "name": "search_films", "arguments": '{"genre": "com'}
    shaped = tool_messages([{"role": "assistant", "content": "", "tool_calls": [cut]}], TOOLS)
    assert shaped[1]["content"] == '{"tool": "search_films", "arguments": {"genre": "com}'


# --- llama.cpp: the embedded Qwen model -------------------------------------------------------------------------


@pytest.mark.llm
def test_embedded_qwen_answers_a_request_with_tools_with_a_known_call_or_text():
    backend = LlamaCppBackend("qwen2.5-coder-0.5b-instruct", n_ctx=2048, threads=1)
    request = LLMRequest.chat(
        [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "I want a comedy with Jim Carrey"}],
        temperature=0.2,
        max_tokens=160,
        seed=1,
        tools=TOOLS,
    )
    response = LLMClient(backend, None, retry=NO_WAIT).complete(request)
    names = {tool["function"]["name"] for tool in TOOLS}
    if response.tool_calls:
        (call,) = response.tool_calls
        assert call["name"] in names and call["id"] == "call_0"
        if not response.extra.get("tool_reply_cut"):
            assert isinstance(json.loads(call["arguments"]), dict)
    else:
        assert response.text.strip() and not re.match(r'\s*\{\s*"(tool|message)"', response.text)
