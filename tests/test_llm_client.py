"""The LLM client layer: Ollama protocol, retries and failures, the response cache, llama.cpp."""

import json
import socket

import pytest
from fake_servers import FakeOllama

from crseval.llm import LLMClient, LLMError, LLMRequest
from crseval.llm.cache import ResponseCache
from crseval.llm.client import RetryPolicy
from crseval.llm.ollama_backend import OllamaBackend

REQUEST = LLMRequest.chat(
    [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "A crime movie?"}],
    temperature=0.3,
    max_tokens=20,
    seed=9,
    tag="test@1",
)
NO_WAIT = RetryPolicy(max_retries=3, backoff_s=0.0)


def test_ollama_chat_protocol():
    with FakeOllama() as server:
        response = OllamaBackend("qwen:7b", host=server.host, num_ctx=4096).complete(REQUEST)
        body = server.requests[0]["body"]
    assert server.requests[0]["path"] == "/api/chat"
    assert body["model"] == "qwen:7b" and body["stream"] is False
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "A crime movie?"},
    ]
    assert body["options"] == {"temperature": 0.3, "top_p": 0.95, "seed": 9, "num_predict": 20, "num_ctx": 4096}
    assert response.text.startswith("You might enjoy")
    assert (response.backend, response.model, response.prompt_tokens) == ("ollama", "qwen:7b", 5)
    assert response.completion_tokens == len(response.text.split()) and response.latency_s >= 0


def test_ollama_json_format_is_passed_through():
    schema = {"type": "object", "properties": {"score": {"type": "integer"}}, "required": ["score"]}
    with FakeOllama() as server:
        response = OllamaBackend("m", host=server.host).complete(
            LLMRequest.chat([{"role": "user", "content": "rate"}], json_schema=schema)
        )
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
    client = LLMClient(
        OllamaBackend("m", host=f"http://127.0.0.1:{port}", timeout_s=2),
        cache=None,
        retry=RetryPolicy(max_retries=2, backoff_s=0.5),
        sleep=delays.append,
    )
    with pytest.raises(LLMError, match=r"ollama model m: giving up after 3 attempts"):
        client.complete(REQUEST)
    # exponential backoff, each wait between half and all of it (jitter from the request key)
    assert len(delays) == 2 and 0.25 <= delays[0] <= 0.5 and 0.5 <= delays[1] <= 1.0
    assert delays == [RetryPolicy(2, 0.5).delay(n, REQUEST.key("ollama", "m")) for n in range(2)]  # reproducible


def test_backoff_jitter_spreads_requests_and_honours_retry_after():
    policy = RetryPolicy(max_retries=3, backoff_s=1.0, max_wait_s=30.0)
    waits = {policy.delay(0, f"request-{n}") for n in range(50)}
    assert len(waits) == 50 and all(0.5 <= w <= 1.0 for w in waits)  # not all at once
    assert policy.delay(2, "k") == policy.delay(2, "k")
    assert policy.delay(0, "k", retry_after_s=7.0) == 7.0  # the server's wish when longer
    assert policy.delay(0, "k", retry_after_s=900.0) == 30.0  # capped


@pytest.mark.parametrize("status", [429, 503, 408])
def test_overloaded_and_rate_limited_answers_are_retried(status):
    with FakeOllama(failures=[status, status]) as server:
        delays = []
        client = LLMClient(
            OllamaBackend("m", host=server.host), cache=None, retry=RetryPolicy(3, 0.1), sleep=delays.append
        )
        assert client.complete(REQUEST).text
    assert server.chat_calls == 3 and len(delays) == 2


def test_cache_makes_repeat_calls_free(tmp_path):
    with FakeOllama() as server:
        client = LLMClient(OllamaBackend("m", host=server.host), ResponseCache(tmp_path), retry=NO_WAIT)
        first = client.complete(REQUEST)
        second = client.complete(REQUEST)
        third = client.complete(
            LLMRequest.chat(REQUEST.message_dicts(), temperature=0.3, max_tokens=20, seed=9, tag="test@2")
        )
    assert server.chat_calls == 2 and client.calls == 2 and client.cache_hits == 1
    assert (first.cached, second.cached, third.cached) == (False, True, False)
    assert second.text == first.text and second.prompt_tokens == first.prompt_tokens


def test_request_key_covers_every_option():
    base = REQUEST.key("ollama", "m")
    assert REQUEST.key("ollama", "other") != base
    assert REQUEST.key("openai", "m") != base
    assert (
        LLMRequest.chat(REQUEST.message_dicts(), temperature=0.3, max_tokens=20, seed=10, tag="test@1").key(
            "ollama", "m"
        )
        != base
    )
    assert (
        LLMRequest.chat(REQUEST.message_dicts(), temperature=0.3, max_tokens=20, seed=9, tag="test@1").key(
            "ollama", "m"
        )
        == base
    )


def test_asking_for_token_probabilities_is_part_of_the_key_and_not_asking_keeps_the_old_key():
    # the key REQUEST had before requests could ask for token probabilities: replies cached then are still found
    assert REQUEST.key("ollama", "m") == "c76692d4d2f974a7e0421be09de3aff1a95a2f18c64dfb1cc3167a82fe81d96a"
    asking = LLMRequest.chat(
        REQUEST.message_dicts(), temperature=0.3, max_tokens=20, seed=9, tag="test@1", top_logprobs=5
    )
    assert asking.key("ollama", "m") != REQUEST.key("ollama", "m")
    assert asking.key("ollama", "m") != LLMRequest(**{**asking.__dict__, "top_logprobs": 6}).key("ollama", "m")


def test_the_cache_keeps_token_probabilities(tmp_path):
    from crseval.llm.base import LLMResponse

    cache, key = ResponseCache(tmp_path), REQUEST.key("openai", "m")
    tokens = [{"token": "4", "logprob": -0.2, "top_logprobs": [{"token": "4", "logprob": -0.2}]}]
    cache.put(key, LLMResponse("4", "openai", "m", 0.1, 3, 1, token_logprobs=tokens))
    assert cache.get(key).token_logprobs == tokens and cache.get(key).cached
    cache.put(key, LLMResponse("4", "openai", "m", 0.1, 3, 1))  # none: the entry is as it always was
    assert "token_logprobs" not in json.loads(next(tmp_path.rglob("*.json")).read_text())
    assert cache.get(key).token_logprobs is None
    next(tmp_path.rglob("*.json")).write_text(
        json.dumps(
            {
                "text": "4",
                "backend": "openai",
                "model": "m",
                "latency_s": 0.1,
                "prompt_tokens": 3,
                "completion_tokens": 1,
                "token_logprobs": "junk",
            }
        )
    )
    assert cache.get(key) is None  # unreadable probabilities: asked again


def test_corrupt_cache_entry_is_recomputed(tmp_path):
    cache = ResponseCache(tmp_path)
    key = REQUEST.key("ollama", "m")
    (tmp_path / key[:2]).mkdir()
    (tmp_path / key[:2] / f"{key}.json").write_text('{"text": "trunc')
    assert cache.get(key) is None


def test_openai_retry_after_is_honoured():
    from fake_servers import FakeOpenAI, RawReply

    from crseval.llm.openai_backend import OpenAIBackend

    busy = RawReply(429, body=json.dumps({"error": {"message": "slow down"}}), headers=(("Retry-After", "4"),))
    with FakeOpenAI(raw=[busy]) as server:
        delays = []
        client = LLMClient(
            OpenAIBackend("m", base_url=server.base_url), cache=None, retry=RetryPolicy(2, 0.1), sleep=delays.append
        )
        assert client.complete(REQUEST).text.startswith("Try Heat")
    assert delays == [4.0] and server.chat_calls == 2
