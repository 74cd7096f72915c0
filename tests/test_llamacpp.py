"""Real embedded models: in-process llama.cpp and the OpenAI backend against llama_cpp.server."""

import json
import math
import socket
import subprocess
import sys
import time
import urllib.request

import pytest
from conftest import REPO
from test_judge import SESSION

from crseval.core.io import sha256_file
from crseval.judge.geval import token_at
from crseval.judge.judge_columns import CRITERIA, geval_column
from crseval.judge.llm_judge import Judge
from crseval.language.concepts import ConceptMatcher
from crseval.llm import LLMClient, LLMRequest
from crseval.llm.cache import ResponseCache
from crseval.llm.client import RetryPolicy
from crseval.llm.llamacpp_backend import LlamaCppBackend, merge_system_into_user
from crseval.llm.models import EMBEDDED_MODELS, model_path
from crseval.llm.openai_backend import OpenAIBackend
from crseval.llm.prompts import PromptTemplate

pytestmark = pytest.mark.llm

SYSTEM = "You recommend movies. Candidates: Casablanca (1942); The Maltese Falcon (1941); Double Indemnity (1944)."
USER = "I want an old film noir."


def test_merge_system_into_user():
    merged = merge_system_into_user(
        [
            {"role": "system", "content": "S"},
            {"role": "user", "content": "U"},
            {"role": "assistant", "content": "A"},
            {"role": "user", "content": "V"},
        ]
    )
    assert merged == [
        {"role": "user", "content": "S\n\nU"},
        {"role": "assistant", "content": "A"},
        {"role": "user", "content": "V"},
    ]
    assert merge_system_into_user([{"role": "system", "content": "S"}]) == [{"role": "user", "content": "S"}]


@pytest.mark.parametrize("name", sorted(EMBEDDED_MODELS))
def test_embedded_model_files_match_their_published_hash(name):
    assert sha256_file(model_path(name)) == EMBEDDED_MODELS[name].sha256


def test_gemma_keeps_the_system_text_in_the_prompt():
    backend = LlamaCppBackend("gemma-3-270m", n_ctx=1024, threads=1)
    with_system = backend.complete(
        LLMRequest.chat([{"role": "system", "content": SYSTEM}, {"role": "user", "content": USER}], max_tokens=4)
    )
    user_only = backend.complete(LLMRequest.chat([{"role": "user", "content": USER}], max_tokens=4))
    assert with_system.prompt_tokens >= user_only.prompt_tokens + 20


def test_qwen_json_schema_output_parses_and_same_seed_same_reply():
    backend = LlamaCppBackend("qwen2.5-coder-0.5b-instruct", n_ctx=1024, threads=1)
    schema = {
        "type": "object",
        "properties": {"title": {"type": "string"}, "score": {"type": "integer", "minimum": 1, "maximum": 5}},
        "required": ["title", "score"],
        "additionalProperties": False,
    }
    request = LLMRequest.chat(
        [{"role": "system", "content": SYSTEM}, {"role": "user", "content": USER + " Answer as JSON."}],
        max_tokens=40,
        seed=3,
        json_schema=schema,
    )
    first = backend.complete(request)
    reply = json.loads(first.text)
    assert set(reply) == {"title", "score"} and isinstance(reply["score"], int)
    # the same seed from the same state (a prompt reused from the previous call can give other logits: see
    # docs/reproducibility.md), as in a model just loaded
    backend.llama().reset()
    assert backend.complete(request).text == first.text
    assert first.backend == "llamacpp" and first.completion_tokens > 0


def test_a_grammar_held_reply_redraws_only_the_tokens_the_grammar_refuses():
    """The token drawn without the grammar is kept when the grammar allows it; otherwise the grammar-first chain
    draws again. Values the model would not write by itself force redraws; the reply still matches the schema,
    and the same seed gives the same reply in a model just loaded."""
    schema = {
        "type": "object",
        "properties": {"verdict": {"type": "string", "enum": ["zq-keep", "zq-drop"]}},
        "required": ["verdict"],
        "additionalProperties": False,
    }
    messages = [{"role": "user", "content": USER + " Answer as JSON with a verdict."}]
    request = LLMRequest.chat(messages, max_tokens=24, seed=4, temperature=0.7, json_schema=schema)
    backend = LlamaCppBackend("qwen2.5-coder-0.5b-instruct", n_ctx=576, threads=1)  # a model of its own
    reply = backend.complete(request)
    assert json.loads(reply.text)["verdict"] in ("zq-keep", "zq-drop")
    sampler = backend.llama()._sampler
    assert 0 < sampler.redrawn < sampler.tokens  # some tokens were the model's own, some were redrawn
    again = LlamaCppBackend("qwen2.5-coder-0.5b-instruct", n_ctx=640, threads=1).complete(request)
    assert again.text == reply.text


SCORE_SCHEMA = {
    "type": "object",
    "properties": {"score": {"type": "integer", "minimum": 1, "maximum": 5}},
    "required": ["score"],
    "additionalProperties": False,
}


def test_token_probabilities_are_llama_cpps_own():
    """The logits processor reads what llama-cpp-python's `logprobs` option reports (which needs the
    model loaded with logits_all): the same tokens, the same top tokens, the same probabilities (the same
    grammar-held sampling as the product's, crseval.llm.lazy_grammar)."""
    from crseval.llm.lazy_grammar import LazyGrammarLlama as Llama

    messages = [{"role": "user", "content": USER + " Rate film noir from 1 to 5 as JSON."}]
    request = LLMRequest.chat(
        messages, max_tokens=16, seed=5, temperature=0.7, json_schema=SCORE_SCHEMA, top_logprobs=5
    )
    ours = LlamaCppBackend("qwen2.5-coder-0.5b-instruct", n_ctx=512, threads=1).complete(request)
    assert "".join(t["token"] for t in ours.token_logprobs) == ours.text and ours.extra["finish_reason"] == "stop"
    llm = Llama(
        str(model_path("qwen2.5-coder-0.5b-instruct")), n_ctx=512, n_threads=1, seed=0, logits_all=True, verbose=False
    )
    theirs = llm.create_chat_completion(
        messages=messages,
        max_tokens=16,
        seed=5,
        temperature=0.7,
        top_p=request.top_p,
        response_format={"type": "json_object", "schema": SCORE_SCHEMA},
        logprobs=True,
        top_logprobs=5,
    )
    assert theirs["choices"][0]["message"]["content"] == ours.text
    reference = theirs["choices"][0]["logprobs"]["content"]
    assert [t["token"] for t in reference] == [t["token"] for t in ours.token_logprobs]
    for mine, their in zip(ours.token_logprobs, reference):
        assert mine["logprob"] == pytest.approx(float(their["logprob"]), abs=1e-3)
        # theirs lists the sampled token besides the top 5 (a dict: once, if it is among them)
        top = sorted(their["top_logprobs"], key=lambda t: -t["logprob"])[:5]
        assert [t["token"] for t in mine["top_logprobs"]] == [t["token"] for t in top]
        assert [t["logprob"] for t in mine["top_logprobs"]] == pytest.approx(
            [float(t["logprob"]) for t in top], abs=1e-3
        )
    digit = token_at(ours.text, ours.text.index(str(json.loads(ours.text)["score"])), ours.token_logprobs)
    assert digit["token"].strip() == str(json.loads(ours.text)["score"])
    assert (
        LlamaCppBackend("qwen2.5-coder-0.5b-instruct", n_ctx=512, threads=1)
        .complete(LLMRequest.chat(messages, max_tokens=16, seed=5, temperature=0.7, json_schema=SCORE_SCHEMA))
        .text
        == ours.text
    )  # looking changes nothing


def test_the_embedded_judge_gives_geval_scores_and_a_rerun_asks_nothing(small_index, tmp_path):
    def judge(client):
        return Judge(
            client,
            PromptTemplate(REPO / "resources" / "prompts" / "judge.txt"),
            ConceptMatcher(small_index.concepts, small_index.films),
            {"temperature": 0.2, "top_p": 0.95, "max_tokens": 150},
            1,
            2,
            seed=7,
            top_logprobs=10,
        )

    backend = LlamaCppBackend("qwen2.5-coder-0.5b-instruct", n_ctx=2048, threads=1)
    client = LLMClient(backend, ResponseCache(tmp_path), RetryPolicy(0, 0.0))
    row = judge(client).judge_session(SESSION)
    assert row["judge_valid_samples"] == 1 and row["judge_geval_missing_reason"] is None
    for criterion in CRITERIA:
        assert 1 <= row[geval_column(criterion)] <= 5
        # the weighted score lies within one point of the score written, most of the mass being near it
        assert abs(row[geval_column(criterion)] - row[f"judge_{criterion}"]) < 2
    again = LLMClient(backend, ResponseCache(tmp_path), RetryPolicy(0, 0.0))
    assert judge(again).judge_session(SESSION) == row and again.calls == 0


@pytest.fixture(scope="module")
def llama_server():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(model_path("gemma-3-270m")),
            "--model_alias",
            "gemma-3-270m",
            "--chat_format",
            "gemma",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_threads",
            "1",
            "--n_ctx",
            "1024",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                urllib.request.urlopen(f"{base}/v1/models", timeout=1)
                break
            except OSError:
                if process.poll() is not None:
                    pytest.fail("llama_cpp.server exited during start-up")
                time.sleep(0.5)
        else:
            pytest.fail("llama_cpp.server did not start within 60 s")
        yield f"{base}/v1"
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_openai_backend_against_llama_cpp_server(llama_server):
    backend = OpenAIBackend("gemma-3-270m", base_url=llama_server, timeout_s=60)
    response = backend.complete(
        LLMRequest.chat([{"role": "user", "content": SYSTEM + "\n\n" + USER}], max_tokens=12, seed=1)
    )
    assert response.backend == "openai" and response.model == "gemma-3-270m"
    assert response.prompt_tokens > 20 and 0 < response.completion_tokens <= 12
    assert isinstance(response.text, str)


def test_openai_backend_reads_token_probabilities_from_llama_cpp_server(llama_server):
    backend = OpenAIBackend("gemma-3-270m", base_url=llama_server, timeout_s=60)
    request = LLMRequest.chat([{"role": "user", "content": USER}], max_tokens=8, seed=1, top_logprobs=3)
    response = backend.complete(request)
    tokens = response.token_logprobs
    assert tokens and "".join(t["token"] for t in tokens) == response.text
    for token in tokens:
        assert token["logprob"] <= 0 and 1 <= len(token["top_logprobs"]) <= 4  # the top 3 and the one written
        assert all(math.isfinite(t["logprob"]) and t["logprob"] <= 0 for t in token["top_logprobs"])
    assert (
        backend.complete(LLMRequest.chat([{"role": "user", "content": USER}], max_tokens=8, seed=1)).token_logprobs
        is None
    )


def test_a_call_sharing_the_previous_prompts_prefix_evaluates_only_the_rest(monkeypatch):
    """llama-cpp-python keeps the KV cache of the longest prefix a prompt shares with the previous call
    (Gemma's sliding-window layers too: llama.cpp keeps a full-size SWA cache), so the second call
    evaluates only what follows the shared system text, and says what a model evaluating the whole
    prompt says. (llama.cpp's floats can depend on how a prompt is cut into batches: a reused prefix
    gave other logits than a fresh evaluation for some prompts, benchmarks/bench_llm_prefix.py.)"""
    from llama_cpp import Llama

    evaluated = []
    original = Llama.eval
    monkeypatch.setattr(Llama, "eval", lambda self, tokens: (evaluated.append(len(tokens)), original(self, tokens))[1])
    backend = LlamaCppBackend("gemma-3-270m", n_ctx=1024, threads=1)
    system = {"role": "system", "content": SYSTEM}
    first = LLMRequest.chat([system, {"role": "user", "content": USER}], max_tokens=4, seed=2)
    second = LLMRequest.chat(
        [
            system,
            {"role": "user", "content": "Which of these three is the most famous, and why do people still watch it?"},
        ],
        max_tokens=8,
        seed=2,
    )
    backend.complete(first)
    evaluated.clear()
    reused = backend.complete(second)
    assert 0 < evaluated[0] < reused.prompt_tokens - 20  # the system text (and more) was not evaluated again
    backend.llama().reset()  # nothing kept: the whole prompt is evaluated, as by a model just loaded
    evaluated.clear()
    fresh = backend.complete(second)
    assert evaluated[0] == fresh.prompt_tokens
    assert reused.text == fresh.text
