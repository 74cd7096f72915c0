"""`agent: chat`: an LLM answers the conversation itself (crseval.simulate.systems.chat), and through the
workflow on the embedded model."""

import json

import pytest
from conftest import REPO, run_snakemake, write_config

from crseval.core.config_checks import effective_config
from crseval.llm import LLMClient
from crseval.llm.base import LLMResponse
from crseval.planning import config_schema
from crseval.simulate.systems.chat import ChatSystem
from crseval.simulate.systems.external import ExternalSystemError

OPTIONS = {"temperature": 0.7, "top_p": 0.95, "max_tokens": 32}
BACKEND = {"type": "openai", "model": "m", "base_url": "http://user:secret@localhost:9/v1"}


class RecordingBackend:
    name, model = "openai", "m"

    def __init__(self, text="Watch Heat."):
        self.text = text
        self.requests = []

    def complete(self, request):
        self.requests.append(request)
        return LLMResponse(self.text, self.name, self.model, 0.01, 3, 3)


def test_the_model_sees_the_system_prompt_and_the_conversation(tmp_path):
    prompt = tmp_path / "system.txt"
    prompt.write_text("Recommend films.\n")
    backend = RecordingBackend()
    chat = ChatSystem("c", LLMClient(backend, None), BACKEND, OPTIONS, prompt)
    chat.start("c/s00001", 42)
    history = [{"role": "user", "content": "A crime film?"}, {"role": "assistant", "content": "Heat."}]
    reply = chat.answer(2, "Something else?", history)
    assert reply.text == "Watch Heat." and reply.recommended is None and reply.constraints is None
    request = backend.requests[0]
    assert request.message_dicts() == [
        {"role": "system", "content": "Recommend films."},
        *history,
        {"role": "user", "content": "Something else?"},
    ]
    assert request.seed == 42 * 1000 + 2 and request.max_tokens == 32
    described = chat.describe()
    assert described["agent"] == "chat" and "secret" not in json.dumps(described)
    assert described["system_prompt"] == chat.prompt_version is not None


def test_without_a_system_prompt_the_model_gets_the_conversation_only():
    backend = RecordingBackend()
    chat = ChatSystem("c", LLMClient(backend, None), BACKEND, OPTIONS)
    chat.start("c/s00000", 1)
    chat.answer(1, "A crime film?", [])
    assert backend.requests[0].message_dicts() == [{"role": "user", "content": "A crime film?"}]
    assert chat.describe()["system_prompt"] is None


def test_a_model_that_fails_is_an_external_system_error():
    backend = RecordingBackend(text="")  # an empty reply is retried, then given up
    chat = ChatSystem("c", LLMClient(backend, None, sleep=lambda s: None), BACKEND, OPTIONS)
    chat.start("c/s00000", 1)
    with pytest.raises(ExternalSystemError, match="giving up") as error:
        chat.answer(1, "A crime film?", [])
    assert error.value.transient is True


@pytest.mark.workflow
def test_a_chat_system_runs_through_the_workflow(workflow_copy):

    config = effective_config(REPO / "config" / "own_systems.yaml", schema=config_schema())
    config["sessions"].update(count=2, turns=3, shard_size=2)
    config["scoring"]["metrics"] = ["tas"]
    config["scoring"]["response_stats"]["embeddings"] = False
    config["stats"]["metrics"] = ["tas"]
    config["llm"]["cache_dir"] = str(workflow_copy / ".cache" / "llm")
    path = write_config(workflow_copy, config)
    target = "results/own_systems/sessions/qwen-chat/shard-0.jsonl"
    run_snakemake(workflow_copy, target, "--configfile", str(path))
    records = [json.loads(line) for line in (workflow_copy / target).read_text().splitlines()]
    assert [r["session_id"] for r in records] == ["qwen-chat/s00000", "qwen-chat/s00001"]
    assert all(len(r["turns"]) == 3 and r["turns"][0]["system_text"] for r in records)
    assert all(t["candidate_titles"] == [] and t["system_constraints"] == [] for r in records for t in r["turns"])
    assert all("unknown_title_turns" in r for r in records)
    log = (workflow_copy / "results/own_systems/logs/simulate/qwen-chat/shard-0.log").read_text(errors="replace")
    assert "LLM calls 6, cache hits 0" in log
    # the same sessions again from the reply cache: the model is not asked
    (workflow_copy / target).unlink()
    run_snakemake(workflow_copy, target, "--configfile", str(path))
    again = [json.loads(line) for line in (workflow_copy / target).read_text().splitlines()]
    assert again == records
    log = (workflow_copy / "results/own_systems/logs/simulate/qwen-chat/shard-0.log").read_text(errors="replace")
    assert "LLM calls 0, cache hits 6" in log
