"""Sessions in flight against a server: the same shard as one at a time, and a kill -9 loses nothing."""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO, default_config
from fake_servers import FakeOpenAI
from test_sessions import arguments, read_jsonl

from crseval import planning
from crseval.core.canonical import without_runtime
from crseval.core.config_checks import ConfigError
from crseval.planning import (
    check_config,
    effective,
    embedding_users,
    judge_backends,
    judge_concurrency,
    judge_threads,
    scoring_backends,
    scoring_threads,
    simulate_concurrency,
    system_backends,
    system_threads,
    uses_llm,
)
from crseval.simulate.shard import build_shard_runner

HERE = Path(__file__).parent
LATENCY = re.compile(rb'"latency_s": ?[0-9.eE+-]+')


def recommend_first_candidate(body: dict) -> str:
    """A deterministic reply that names the first candidate of the turn's message, as a grounded CRS would."""
    prompt = body["messages"][-1]["content"]
    candidates = [line[2:].rsplit(" (", 1)[0] for line in prompt.splitlines() if line.startswith("- ")]
    return f"You might enjoy {candidates[0]}: it fits what you asked for." if candidates else "Tell me more."


def openai_system(base_url: str, concurrency: int | None = None) -> dict:
    system = {
        "name": "served",
        "agent": "llm",
        "prompt": str(REPO / "resources" / "prompts" / "crs_grounded.txt"),
        "backend": {"type": "openai", "model": "served-model", "base_url": base_url},
        "options": {"temperature": 0.7, "top_p": 0.95, "max_tokens": 32},
    }
    if concurrency is not None:
        system["concurrency"] = concurrency
    return system


def without_latency(path: Path) -> bytes:
    """The shard file's bytes with each reply's measured latency zeroed: the one value a clock decides."""
    return LATENCY.sub(b'"latency_s": 0', path.read_bytes())


def test_concurrency_8_writes_the_same_shard_as_concurrency_1(catalog_files, tmp_path):
    outputs, calls = {}, {}
    with FakeOpenAI(content=recommend_first_candidate, delay_s=0.05) as server:
        for concurrency in (1, 8):  # each run with its own, empty response cache
            server.max_in_flight, before = 0, server.chat_calls
            args = arguments(catalog_files, openai_system(server.base_url), tmp_path / f"c{concurrency}", turns=4)
            runner = build_shard_runner(**args, concurrency=concurrency)
            output = tmp_path / f"c{concurrency}.jsonl"
            counts = runner.run(range(0, 16), progress=tmp_path / f"c{concurrency}.progress", output=output)
            assert counts["simulated"] == 16 and runner.cache_hits == 0
            outputs[concurrency], calls[concurrency] = output, (runner.calls, server.chat_calls - before)
            if concurrency == 8:
                assert server.max_in_flight >= 4, f"only {server.max_in_flight} requests were ever in flight"
            else:
                assert server.max_in_flight == 1
    assert calls[1] == calls[8] == (64, 64)
    assert without_latency(outputs[8]) == without_latency(outputs[1])  # byte for byte, in index order
    records = read_jsonl(outputs[8])
    assert [r["session_index"] for r in records] == list(range(16))
    assert any(t["recommended_titles"] for r in records for t in r["turns"])


def test_kill_9_at_concurrency_8_loses_and_duplicates_nothing(catalog_files, tmp_path):
    with FakeOpenAI(content=recommend_first_candidate, delay_s=0.1) as server:
        args = arguments(catalog_files, openai_system(server.base_url), tmp_path, turns=4)
        progress, output = tmp_path / "progress.jsonl", tmp_path / "shard.jsonl"
        child_args = {**args, "concurrency": 8, "indices": [0, 24], "progress": str(progress), "output": str(output)}
        child = subprocess.Popen(
            [sys.executable, str(HERE / "shard_child.py"), json.dumps(child_args)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        deadline = time.time() + 120
        while time.time() < deadline and (not progress.exists() or progress.read_text().count("\n") < 9):
            time.sleep(0.01)
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        assert child.returncode == -signal.SIGKILL and not output.exists()
        lines = progress.read_bytes().split(b"\n")
        finished = [json.loads(line) for line in lines[:-1]]  # every finished line is a whole record
        indices = [r["session_index"] for r in finished]
        assert len(indices) == len(set(indices)) and 9 <= len(indices) < 24
        time.sleep(0.5)  # requests the child sent just before it died reach the server's count first
        calls_before = server.chat_calls

        resumed = subprocess.run(
            [sys.executable, str(HERE / "shard_child.py"), json.dumps(child_args)],
            capture_output=True,
            text=True,
            check=True,
        )
        counts = json.loads(resumed.stdout)
        assert counts["resumed"] == len(indices) and counts["simulated"] == 24 - len(indices)
        # only unfinished sessions cost calls (those cut off mid-way take their first turns from the cache)
        assert server.chat_calls - calls_before == counts["calls"] <= (24 - len(indices)) * 4

        clean_args = {
            **child_args,
            "concurrency": 1,
            "progress": str(tmp_path / "clean.progress"),
            "output": str(tmp_path / "clean.jsonl"),
            "llm_runtime": {**args["llm_runtime"], "cache_dir": str(tmp_path / "clean-cache")},
        }
        subprocess.run(
            [sys.executable, str(HERE / "shard_child.py"), json.dumps(clean_args)], capture_output=True, check=True
        )
    strip = LATENCY, re.compile(rb'"cached": (true|false)')
    resumed_bytes, clean_bytes = output.read_bytes(), (tmp_path / "clean.jsonl").read_bytes()
    for pattern in strip:
        resumed_bytes, clean_bytes = pattern.sub(b"", resumed_bytes), pattern.sub(b"", clean_bytes)
    assert resumed_bytes == clean_bytes
    assert [r["session_index"] for r in read_jsonl(output)] == list(range(24))


def test_a_failing_server_stops_the_shard_and_keeps_what_finished(catalog_files, tmp_path):
    with FakeOpenAI(content=recommend_first_candidate) as server:
        args = arguments(catalog_files, openai_system(server.base_url), tmp_path, turns=2)
        runner = build_shard_runner(**args, concurrency=4)
        runner.run(range(0, 4), progress=tmp_path / "warm.progress", output=tmp_path / "warm.jsonl")
    # the server is gone: sessions 0-3 come from the cache, session 4 cannot be made
    runner = build_shard_runner(**args, concurrency=4)
    with pytest.raises(Exception, match=r"openai model served-model: giving up after 2 attempts: .*Connection refused"):
        runner.run(range(0, 8), progress=tmp_path / "p.jsonl", output=tmp_path / "out.jsonl")
    kept = sorted(json.loads(line)["session_index"] for line in (tmp_path / "p.jsonl").read_text().splitlines())
    assert kept == [0, 1, 2, 3] and not (tmp_path / "out.jsonl").exists()


def test_concurrency_changes_no_identity_and_in_process_models_stay_at_one():
    config = default_config()
    system = openai_system("http://127.0.0.1:1/v1", concurrency=16)
    assert without_runtime(system) == openai_system("http://127.0.0.1:1/v1")
    assert simulate_concurrency(system, config) == 16
    assert simulate_concurrency({**system, "concurrency": 1}, config) == 1
    config["llm"]["concurrency"] = 8
    assert simulate_concurrency(openai_system("x"), config) == 8  # the global default
    assert simulate_concurrency({"name": "t", "agent": "template"}, config) == 1  # no LLM call to overlap
    assert effective(8, {"a": {"type": "llamacpp"}}) == 1 and effective(8, {"a": {"type": "ollama"}}) == 8
    config["judge"] = {**config["judge"], "enabled": True, "backend": {"type": "openai", "model": "j", "base_url": "x"}}
    assert judge_concurrency(config) == 8
    config["judge"]["concurrency"] = 3
    assert judge_concurrency(config) == 3


def test_concurrency_above_one_for_an_in_process_model_is_a_config_error():
    config = default_config()
    llamacpp = next(i for i, s in enumerate(config["systems"]) if s.get("backend", {}).get("type") == "llamacpp")
    config["systems"][llamacpp]["concurrency"] = 4
    with pytest.raises(ConfigError, match=rf"systems\[{llamacpp}\]\.concurrency: 4 requests in flight need a server"):
        check_config(config)
    config["systems"][llamacpp]["concurrency"] = 1
    config["llm"]["concurrency"] = 16  # the global default is simply not applied to in-process models
    check_config(config)


OLLAMA = {"type": "ollama", "model": "m:1b", "host": "http://127.0.0.1:1"}
OPTIONS = {"temperature": 0.2, "top_p": 0.95, "max_tokens": 32}


def test_one_answer_to_which_llms_a_simulate_or_judge_job_calls():
    """Threads, concurrency and the provenance record read the same backends (crseval.planning)."""
    config = default_config()
    config["llm"]["threads"] = 4
    systems = {system["name"]: system for system in config["systems"]}
    qwen, template = systems["qwen-grounded"], systems["template"]
    assert system_backends(template, config) == {} and not uses_llm(system_backends(template, config))
    assert system_threads(template, config) == 1 and simulate_concurrency(template, config) == 1
    assert system_backends(qwen, config) == {"systems.qwen-grounded": qwen["backend"]}
    assert system_threads(qwen, config) == 4  # llama.cpp in the job's process
    # a served paraphraser makes every system call an LLM, in-process or not
    config["simulator"]["paraphrase"] = {"enabled": True, "backend": OLLAMA, "options": OPTIONS}
    assert system_backends(template, config) == {"simulator.paraphrase": OLLAMA}
    assert system_threads(template, config) == 1 and simulate_concurrency(template, config) == 1
    assert system_threads(qwen, config) == 4
    assert judge_backends(config) == {"judge": config["judge"]["backend"]} and judge_threads(config) == 4
    assert [user for user, _ in planning.backends_used(config)] == [
        "systems.qwen-grounded",
        "simulator.paraphrase",
        "systems.qwen-ungrounded",
        "systems.gemma-grounded",
        "judge",
    ]
    config["judge"] = {"enabled": False}
    assert judge_backends(config) == {} and judge_threads(config) == 1 and judge_concurrency(config) == 1
    # imported sessions: no simulate job, so no system's LLM is called
    config["sessions"]["source"] = "import"
    assert [user for user, _ in planning.backends_used(config)] == []


def test_a_score_job_takes_threads_only_for_a_model_of_a_family_it_computes():
    """The score job's threads once counted the LLM and embedding settings of families not in
    scoring.metrics (and a served LLM as in-process), where provenance counted only the families run."""
    config = default_config()
    config["llm"]["threads"] = 4
    scoring = config["scoring"]
    scoring["metrics"] = ["tas", "cas", "adherence"]
    assert scoring["response_stats"]["embeddings"] is True  # set, but response_stats does not run
    assert embedding_users(config) == [] and scoring_threads(config) == 1
    scoring["metrics"].append("response_stats")
    assert embedding_users(config) == ["scoring.response_stats.embeddings"] and scoring_threads(config) == 4
    # an LLM topic extractor: a server takes no thread of the job, llama.cpp in its process all of them
    scoring["response_stats"]["embeddings"] = False
    scoring["cas"].update(topics="llm", llm={"backend": OLLAMA, "options": OPTIONS})
    assert scoring_backends(config) == {"scoring.cas": OLLAMA} and scoring_threads(config) == 1
    scoring["cas"]["llm"]["backend"] = {"type": "llamacpp", "model": "qwen2.5-coder-0.5b-instruct"}
    assert scoring_threads(config) == 4
    assert ("scoring.cas", scoring["cas"]["llm"]["backend"]) in planning.backends_used(config)
    scoring["metrics"].remove("cas")
    assert scoring_backends(config) == {} and scoring_threads(config) == 1
    assert all(user != "scoring.cas" for user, _ in planning.backends_used(config))
