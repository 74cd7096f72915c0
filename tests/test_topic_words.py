"""The LLM topic extractor reads its prompt from resources/prompts/topics.txt, like the other prompts."""

from __future__ import annotations

import json

import pytest
from conftest import REPO
from fake_servers import FakeOllama

from crseval.llm import LLMClient, LLMError
from crseval.llm.client import RetryPolicy
from crseval.llm.ollama_backend import OllamaBackend
from crseval.llm.prompts import PromptTemplate
from crseval.metrics.topic_words import LlmTopics
from crseval.planning import TOPICS_PROMPT, prompts_used

OPTIONS = {"temperature": 0.0, "top_p": 1.0, "max_tokens": 40}


def extractor(server, prompt_path) -> LlmTopics:
    client = LLMClient(OllamaBackend("topics:1b", host=server.host), cache=None, retry=RetryPolicy(0, 0.0))
    return LlmTopics(client, OPTIONS, PromptTemplate(prompt_path))


def test_the_request_is_the_shipped_prompt_with_the_text_in_its_slot():
    with FakeOllama(content=lambda body: json.dumps(["Heist", " crime "])) as server:
        topics = extractor(server, REPO / TOPICS_PROMPT)(["A crew robs a bank.", "", "A crew robs a bank."])
        sent = [r["body"]["messages"][0]["content"] for r in server.requests]
    assert topics == [["heist", "crime"], [], ["heist", "crime"]]  # each distinct text asked once, none for ""
    assert sent == [(REPO / TOPICS_PROMPT).read_text().strip().format(text="A crew robs a bank.")]


def test_an_edited_prompt_is_a_new_version(tmp_path):
    edited = tmp_path / "topics.txt"
    edited.write_text("Topics of: {text}\n")
    assert PromptTemplate(edited).version != PromptTemplate(REPO / TOPICS_PROMPT).version
    with FakeOllama(content=lambda body: json.dumps(["war"])) as server:
        assert extractor(server, edited)(["A war film."]) == [["war"]]
        assert server.requests[0]["body"]["messages"][0]["content"] == "Topics of: A war film."


def test_an_unusable_reply_fails_naming_the_text():
    with FakeOllama(content=lambda body: '{"topics": "war"}') as server:
        with pytest.raises(LLMError, match="unusable reply .* for text 'A war film.'"):
            extractor(server, REPO / TOPICS_PROMPT)(["A war film."])


def test_provenance_records_the_topics_prompt_only_when_an_llm_extracts_topics():
    config = {
        "sessions": {"source": "import"},
        "judge": {"enabled": False},
        "scoring": {"metrics": ["cas", "adherence"], "cas": {"topics": "lda"}, "adherence": {"extractor": "catalog"}},
    }
    assert prompts_used(config) == {}
    config["scoring"]["cas"] = {"topics": "llm", "llm": {"backend": {"type": "ollama", "model": "m"}}}
    config["scoring"]["adherence"] = {"extractor": "llm", "llm": {"backend": {"type": "ollama", "model": "m"}}}
    assert prompts_used(config) == {TOPICS_PROMPT: ["scoring.cas", "scoring.adherence"]}
