"""Real embedded models: in-process llama.cpp and the OpenAI backend against llama_cpp.server."""

import json
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from crseval.core.io import sha256_file
from crseval.llm import LLMRequest
from crseval.llm.llamacpp_backend import LlamaCppBackend, merge_system_into_user
from crseval.llm.models import EMBEDDED_MODELS, model_path
from crseval.llm.openai_backend import OpenAIBackend

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
    assert backend.complete(request).text == first.text
    assert first.backend == "llamacpp" and first.completion_tokens > 0


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
