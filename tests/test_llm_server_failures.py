"""The LLM layer under bad servers: empty and junk replies, missing API keys, passwords in URLs."""

import json
import logging
import re
import socket

import pytest
from fake_servers import FakeOpenAI, RawReply, ScriptedOllama

from crseval.llm import LLMClient, LLMError, LLMRequest, LLMResponse, TransientLLMError, llamacpp_backend, make_backend
from crseval.llm.base import redact_url
from crseval.llm.cache import ResponseCache
from crseval.llm.client import RetryPolicy
from crseval.llm.llamacpp_backend import LlamaCppBackend
from crseval.llm.ollama_backend import OllamaBackend
from crseval.llm.openai_backend import OpenAIBackend

REQUEST = LLMRequest.chat([{"role": "user", "content": "A crime movie?"}], max_tokens=20, seed=9, tag="hardening@1")
NO_WAIT = RetryPolicy(max_retries=2, backoff_s=0.0)
SECRET = "s3cr3t-pw"


def chat_completion(content) -> str:
    return json.dumps(
        {
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 1},
        }
    )


def ollama_chat(message=..., done=True) -> str:
    body = {"model": "m", "created_at": "2026-01-01T00:00:00Z", "done": done, "done_reason": "stop"}
    if message is not ...:
        body["message"] = message
    return json.dumps(body)


def openai_client(server, cache=None, model="qwen"):
    return LLMClient(OpenAIBackend(model, base_url=server.base_url), cache, retry=NO_WAIT)


def ollama_client(server, cache=None, model="m"):
    return LLMClient(OllamaBackend(model, host=server.host), cache, retry=NO_WAIT)


# --- 1. empty replies are transient, never cached -----------------------------------------------------------------


def test_openai_null_content_is_retried_then_succeeds():
    with FakeOpenAI(raw=[RawReply(body=chat_completion(None))]) as server:
        client = openai_client(server)
        response = client.complete(REQUEST)
    assert server.chat_calls == 2 and client.calls == 2
    assert response.text.startswith("Try Heat")


def test_persistent_null_content_fails_clearly_and_is_never_cached(tmp_path):
    cache = ResponseCache(tmp_path)
    with FakeOpenAI(content=lambda body: None) as server:
        client = openai_client(server, cache)
        with pytest.raises(LLMError) as failure:
            client.complete(REQUEST)
    message = str(failure.value)
    assert message.startswith("openai model qwen: giving up after 3 attempts: openai model qwen at http://127.0.0.1:")
    assert "reply has no text (choices[0].message.content is null)" in message
    assert 'HTTP 200, content-type application/json, body: {"id": "chatcmpl-' in message
    assert server.chat_calls == 3 and not list(tmp_path.rglob("*.json"))
    with FakeOpenAI() as fixed:  # the server is fixed: the re-run asks again instead of serving ''
        rerun = openai_client(fixed, cache)
        response = rerun.complete(REQUEST)
    assert rerun.calls == 1 and response.text.startswith("Try Heat") and not response.cached


@pytest.mark.parametrize(
    "content, problem",
    [
        ("", "choices[0].message.content is an empty string"),
        (" \n\t", "choices[0].message.content is blank"),
        ([{"type": "text", "text": "hi"}], "choices[0].message.content is a list, not a string"),
    ],
)
def test_openai_empty_or_odd_content_has_no_text(content, problem):
    with FakeOpenAI(raw=[RawReply(body=chat_completion(content))] * 3) as server:
        with pytest.raises(LLMError, match=rf"reply has no text \({re.escape(problem)}\)"):
            openai_client(server).complete(REQUEST)


def test_old_cache_entry_with_empty_reply_is_a_miss_and_is_overwritten(tmp_path):
    cache = ResponseCache(tmp_path)
    key = REQUEST.key("openai", "qwen")
    (tmp_path / key[:2]).mkdir()
    entry = tmp_path / key[:2] / f"{key}.json"
    entry.write_text(
        json.dumps(
            {
                "text": "",
                "backend": "openai",
                "model": "qwen",
                "latency_s": 0.1,
                "prompt_tokens": 3,
                "completion_tokens": 0,
                "extra": {},
            }
        )
    )
    assert cache.get(key) is None
    with FakeOpenAI() as server:
        client = openai_client(server, cache)
        response = client.complete(REQUEST)
    assert client.calls == 1 and client.cache_hits == 0 and response.text.startswith("Try Heat")
    assert json.loads(entry.read_text())["text"] == response.text


def test_cache_refuses_an_empty_reply(tmp_path):
    with pytest.raises(ValueError, match="empty reply"):
        ResponseCache(tmp_path).put("ab" * 32, LLMResponse(" ", "openai", "m", 0.0, None, None))


@pytest.mark.parametrize(
    "body, problem",
    [
        (ollama_chat({"role": "assistant", "content": None}), r"reply has no text \(message.content is null\)"),
        (ollama_chat({"role": "assistant"}), r"reply has no text \(message.content is missing\)"),
        (ollama_chat(), r"reply has no text \(message is missing\)"),
        (
            ollama_chat({"role": "assistant", "content": ""}),
            r"reply has no text \(message.content is an empty string\)",
        ),
        (ollama_chat({"role": "assistant", "content": "Try He"}, done=False), r"reply is unfinished \(done is false\)"),
    ],
)
def test_ollama_reply_without_text_is_retried_then_fails_clearly(body, problem):
    with ScriptedOllama(raw=[RawReply(body=body)]) as server:
        assert ollama_client(server).complete(REQUEST).text.startswith("You might enjoy")
    with ScriptedOllama(raw=[RawReply(body=body)] * 3) as server:
        with pytest.raises(
            LLMError,
            match=rf"^ollama model m: giving up after 3 attempts: ollama model m at "
            rf"http://127\.0\.0\.1:\d+: {problem}; "
            r"HTTP 200, content-type application/json",
        ):
            ollama_client(server).complete(REQUEST)
        assert server.chat_calls == 3


class FakeLlama:
    """Stands in for llama_cpp.Llama: hands out the given completions in turn."""

    def __init__(self, *completions):
        self.completions = list(completions)

    def create_chat_completion(self, **kwargs):
        return self.completions.pop(0)


def llama_completion(content):
    return {
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 4, "completion_tokens": 0},
    }


def test_llamacpp_empty_completion_is_transient_then_retried(tmp_path, monkeypatch):
    gguf = tmp_path / "tiny.gguf"
    gguf.write_bytes(b"GGUF")
    llama = FakeLlama(llama_completion(""), llama_completion("Try Heat."), llama_completion(None))
    monkeypatch.setattr(llamacpp_backend, "_load", lambda *args: llama)
    backend = LlamaCppBackend(str(gguf))
    with pytest.raises(
        TransientLLMError,
        match=rf"llamacpp model {re.escape(str(gguf))}: reply has no text "
        r"\(choices\[0\]\.message\.content is an empty string\); "
        r"completion: \{",
    ):
        backend.complete(REQUEST)
    llama.completions.insert(0, llama_completion("   "))
    client = LLMClient(backend, ResponseCache(tmp_path / "cache"), retry=NO_WAIT)
    assert client.complete(REQUEST).text == "Try Heat." and client.calls == 2


class EmptyBackend:
    """A backend that breaks its contract by returning an empty text: the client still refuses it."""

    name, model = "stub", "nothing"

    def __init__(self):
        self.calls = 0

    def complete(self, request):
        self.calls += 1
        return LLMResponse("", self.name, self.model, 0.0, None, None)


def test_client_never_returns_or_caches_an_empty_reply(tmp_path):
    backend = EmptyBackend()
    with pytest.raises(LLMError, match=r"stub model nothing: giving up after 3 attempts: .*reply has no text"):
        LLMClient(backend, ResponseCache(tmp_path), retry=NO_WAIT).complete(REQUEST)
    assert backend.calls == 3 and not list(tmp_path.rglob("*.json"))


# --- 2. junk bodies are transient and described -------------------------------------------------------------------

JUNK = {
    "no choices": (RawReply(body='{"choices": []}'), r"reply has no text \(choices is an empty list\)"),
    "truncated JSON": (RawReply(body='{"choices": [{"mess'), r"reply is not JSON \(Unterminated string"),
    "empty body": (RawReply(body=""), r"reply body is empty; HTTP 200, content-type application/json, body: \(empty\)"),
    "html page": (
        RawReply(content_type="text/html", body="<html><body>Gateway busy</body></html>"),
        r"reply is not JSON \(Expecting value at character 0\); HTTP 200, content-type text/html, "
        r"body: <html><body>Gateway busy</body></html>",
    ),
    "JSON list": (RawReply(body="[1, 2]"), r"reply is not a JSON object; HTTP 200"),
}


@pytest.mark.parametrize("junk", JUNK, ids=list(JUNK))
def test_openai_junk_body_is_retried_then_fails_naming_backend_model_and_body(junk):
    raw, problem = JUNK[junk]
    with FakeOpenAI(raw=[raw]) as server:
        assert openai_client(server).complete(REQUEST).text.startswith("Try Heat")
    with FakeOpenAI(raw=[raw] * 3) as server:
        with pytest.raises(
            LLMError,
            match=rf"^openai model qwen: giving up after 3 attempts: openai model qwen at "
            rf"http://127\.0\.0\.1:\d+/v1: {problem}",
        ):
            openai_client(server).complete(REQUEST)
        assert server.chat_calls == 3


@pytest.mark.parametrize("junk", [j for j in JUNK if j != "no choices"])
def test_ollama_junk_body_is_retried_then_fails_naming_backend_model_and_body(junk):
    raw, problem = JUNK[junk]
    with ScriptedOllama(raw=[raw]) as server:
        assert ollama_client(server).complete(REQUEST).text.startswith("You might enjoy")
    with ScriptedOllama(raw=[raw] * 3) as server:
        with pytest.raises(
            LLMError,
            match=rf"^ollama model m: giving up after 3 attempts: ollama model m at "
            rf"http://127\.0\.0\.1:\d+: {problem}",
        ):
            ollama_client(server).complete(REQUEST)


def test_long_bodies_are_cut_in_the_message():
    page = "<html>" + "x" * 50_000 + "</html>"
    with FakeOpenAI(raw=[RawReply(content_type="text/html", body=page)] * 3) as server:
        with pytest.raises(LLMError) as failure:
            openai_client(server).complete(REQUEST)
    assert len(str(failure.value)) < 600 and "(50013 bytes in all)" in str(failure.value)


def test_http_error_bodies_are_described_too():
    with FakeOpenAI(raw=[RawReply(404, body='{"error": {"message": "model qwen not found"}}')]) as server:
        with pytest.raises(
            LLMError,
            match=r"openai model qwen at http://\S+: HTTP 404, content-type application/json, "
            r"body: \{\"error\": \{\"message\": \"model qwen not found\"\}\}",
        ):
            openai_client(server).complete(REQUEST)
        assert server.chat_calls == 1


# --- 3. api_key_env names a variable that must be set --------------------------------------------------------------


@pytest.mark.parametrize("value", [None, "", "  "])
def test_unset_api_key_variable_fails_at_construction(monkeypatch, value):
    if value is None:
        monkeypatch.delenv("CRSEVAL_TEST_KEY", raising=False)
    else:
        monkeypatch.setenv("CRSEVAL_TEST_KEY", value)
    settings = {
        "type": "openai",
        "model": "judge-70b",
        "base_url": f"http://u:{SECRET}@vllm:8000/v1",
        "api_key_env": "CRSEVAL_TEST_KEY",
    }
    with pytest.raises(LLMError) as failure:
        make_backend(settings)
    assert str(failure.value) == (
        "environment variable CRSEVAL_TEST_KEY (llm api_key_env of openai model judge-70b at "
        "http://u:***@vllm:8000/v1) is not set; export it, or remove api_key_env "
        "for a server that needs no key"
    )


def test_configured_api_key_is_sent_and_keyless_servers_still_work(monkeypatch):
    monkeypatch.setenv("CRSEVAL_TEST_KEY", "sk-test-123")
    with FakeOpenAI() as server:
        make_backend(
            {"type": "openai", "model": "m", "base_url": server.base_url, "api_key_env": "CRSEVAL_TEST_KEY"}
        ).complete(REQUEST)
        make_backend({"type": "openai", "model": "m", "base_url": server.base_url}).complete(REQUEST)
    assert [r["headers"].get("authorization") for r in server.requests] == ["Bearer sk-test-123", None]


# --- 4. passwords in URLs never reach a message ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "url, expected",
    [
        (f"http://alice:{SECRET}@example.org:8000/v1", "http://alice:***@example.org:8000/v1"),
        (f"https://:{SECRET}@example.org", "https://:***@example.org"),
        (f"alice:{SECRET}@localhost:11434", "alice:***@localhost:11434"),
        (f"http://example.org/v1?api_key={SECRET}&model=x", "http://example.org/v1?api_key=***&model=x"),
        (f"http://example.org/v1?key={SECRET}&token={SECRET}", "http://example.org/v1?key=***&token=***"),
        ("http://alice@example.org:8000", "http://alice@example.org:8000"),
        ("http://localhost:11434", "http://localhost:11434"),
        ("resources/prompts/judge.txt", "resources/prompts/judge.txt"),
    ],
)
def test_redact_url(url, expected):
    assert redact_url(url) == expected


def unused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_passwords_never_reach_errors_warnings_logs_or_repr(caplog):
    caplog.set_level(logging.DEBUG)
    failures = []
    with FakeOpenAI(failures=[500] * 3) as server:
        url = server.base_url.replace("http://", f"http://user:{SECRET}@") + f"?api_key={SECRET}"
        backend = OpenAIBackend("qwen", base_url=url)
        with pytest.raises(LLMError) as failure:
            LLMClient(backend, None, retry=NO_WAIT).complete(REQUEST)
        failures.append(str(failure.value))
        assert "at http://user:***@127.0.0.1:" in failures[0] and "/v1?api_key=***: HTTP 500" in failures[0]
        server.raw = [RawReply(content_type="text/html", body="<html>busy</html>")] * 3
        with pytest.raises(LLMError) as failure:
            LLMClient(backend, None, retry=NO_WAIT).complete(REQUEST)
        failures.append(str(failure.value))
        LLMClient(backend, None, retry=NO_WAIT).complete(REQUEST)  # httpx logs the request URL at INFO
    refused = f"http://user:{SECRET}@127.0.0.1:{unused_port()}"
    down_servers = (
        OpenAIBackend("qwen", base_url=refused + "/v1", timeout_s=2),
        OllamaBackend("m", host=refused, timeout_s=2),
    )
    for down in down_servers:
        with pytest.raises(LLMError) as failure:
            LLMClient(down, None, retry=RetryPolicy(1, 0.0)).complete(REQUEST)
        failures.append(str(failure.value))
        failures.append(repr(down))
    assert "OllamaBackend(model='m', host='http://user:***@127.0.0.1:" in failures[-1]
    assert "OpenAIBackend(model='qwen', base_url='http://user:***@127.0.0.1:" in failures[-3]
    assert any("retry 1 in" in r.getMessage() for r in caplog.records)
    # the user part travels as a header, never in the address httpx logs; a key in the query is redacted there
    assert any("HTTP Request: POST http://127.0.0.1:" in r.getMessage() for r in caplog.records)
    assert any("/v1/chat/completions?api_key=*** " in r.getMessage() for r in caplog.records)
    for text in failures + [r.getMessage() for r in caplog.records]:
        assert SECRET not in text
