"""The LLM client layer: Ollama protocol, retries and failures, the response cache, llama.cpp."""

import json
import socket

import pytest

from crseval.llm import LLMClient, LLMError, LLMRequest
from crseval.llm.cache import ResponseCache
from crseval.llm.client import RetryPolicy
from crseval.llm.ollama_backend import OllamaBackend

from fake_servers import FakeOllama

REQUEST = LLMRequest.chat([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "A crime movie?"}],
                          temperature=0.3, max_tokens=20, seed=9, tag="test@1")
NO_WAIT = RetryPolicy(max_retries=3, backoff_s=0.0)


def test_ollama_chat_protocol():
    with FakeOllama() as server:
        response = OllamaBackend("qwen:7b", host=server.host, num_ctx=4096).complete(REQUEST)
        body = server.requests[0]["body"]
    assert server.requests[0]["path"] == "/api/chat"
    assert body["model"] == "qwen:7b" and body["stream"] is False
    assert body["messages"] == [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "A crime movie?"}]
    assert body["options"] == {"temperature": 0.3, "top_p": 0.95, "seed": 9, "num_predict": 20, "num_ctx": 4096}
    assert response.text.startswith("You might enjoy")
    assert (response.backend, response.model, response.prompt_tokens) == ("ollama", "qwen:7b", 5)
    assert response.completion_tokens == len(response.text.split()) and response.latency_s >= 0


def test_ollama_json_format_is_passed_through():
    schema = {"type": "object", "properties": {"score": {"type": "integer"}}, "required": ["score"]}
    with FakeOllama() as server:
        response = OllamaBackend("m", host=server.host).complete(LLMRequest.chat([{"role": "user", "content": "rate"}], json_schema=schema))
        assert server.requests[0]["body"]["format"] == schema
    assert 1 <= json.loads(response.text)["score"] <= 5


def test_server_errors_are_retried_then_succeed():
    with FakeOllama(failures=[500, 503]) as server:
        client = LLMClient(OllamaBackend("m", host=server.host), cache=None, retry=NO_WAIT)
        response = client.complete(REQUEST)
    assert server.chat_calls == 3 and client.calls == 3
    assert response.text.startswith("You might enjoy")


def test_persistent_server_errors_fail_naming_backend_and_model():
    with FakeOllama(failures=[500] * 10) as server:
        client = LLMClient(OllamaBackend("llama3:instruct", host=server.host), cache=None, retry=RetryPolicy(2, 0.0))
        with pytest.raises(LLMError, match=r"ollama model llama3:instruct: giving up after 3 attempts: .*HTTP 500"):
            client.complete(REQUEST)
    assert server.chat_calls == 3


def test_client_errors_are_not_retried():
    with FakeOllama(failures=[404]) as server:
        client = LLMClient(OllamaBackend("missing:model", host=server.host), cache=None, retry=NO_WAIT)
        with pytest.raises(LLMError, match=r"ollama model missing:model .*HTTP 404"):
            client.complete(REQUEST)
    assert server.chat_calls == 1


def test_unreachable_server_fails_after_retries():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    delays = []
    client = LLMClient(OllamaBackend("m", host=f"http://127.0.0.1:{port}", timeout_s=2), cache=None,
                       retry=RetryPolicy(max_retries=2, backoff_s=0.5), sleep=delays.append)
    with pytest.raises(LLMError, match=r"ollama model m: giving up after 3 attempts"):
        client.complete(REQUEST)
    assert delays == [0.5, 1.0]  # exponential backoff


def test_cache_makes_repeat_calls_free(tmp_path):
    with FakeOllama() as server:
        client = LLMClient(OllamaBackend("m", host=server.host), ResponseCache(tmp_path), retry=NO_WAIT)
        first = client.complete(REQUEST)
        second = client.complete(REQUEST)
        third = client.complete(LLMRequest.chat(REQUEST.message_dicts(), temperature=0.3, max_tokens=20, seed=9, tag="test@2"))
    assert server.chat_calls == 2 and client.calls == 2 and client.cache_hits == 1
    assert (first.cached, second.cached, third.cached) == (False, True, False)
    assert second.text == first.text and second.prompt_tokens == first.prompt_tokens


def test_request_key_covers_every_option():
    base = REQUEST.key("ollama", "m")
    assert REQUEST.key("ollama", "other") != base
    assert REQUEST.key("openai", "m") != base
    assert LLMRequest.chat(REQUEST.message_dicts(), temperature=0.3, max_tokens=20, seed=10, tag="test@1").key("ollama", "m") != base
    assert LLMRequest.chat(REQUEST.message_dicts(), temperature=0.3, max_tokens=20, seed=9, tag="test@1").key("ollama", "m") == base


def test_corrupt_cache_entry_is_recomputed(tmp_path):
    cache = ResponseCache(tmp_path)
    key = REQUEST.key("ollama", "m")
    (tmp_path / key[:2]).mkdir()
    (tmp_path / key[:2] / f"{key}.json").write_text('{"text": "trunc')
    assert cache.get(key) is None
