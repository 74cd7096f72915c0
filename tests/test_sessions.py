"""Shards of sessions: seeds, schema, resume after kill -9, the response cache across re-runs."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO, default_config, shard_inputs
from fake_servers import FakeOllama

from crseval.core.shards import n_shards, shard_indices
from crseval.simulate.sessions import load_progress, session_seed
from crseval.simulate.shard import build_shard_runner

HERE = Path(__file__).parent


def arguments(catalog_files, system, tmp_path, turns=5):
    config = default_config()
    config["simulator"]["templates"] = str(REPO / config["simulator"]["templates"])
    return {
        "system": system,
        "simulator": config["simulator"],
        "agent": config["agent"],
        "experiment_seed": 99,
        "turns": turns,
        **shard_inputs(catalog_files, tmp_path),
    }


def ollama_system(host):
    return {
        "name": "fake-ollama",
        "agent": "llm",
        "prompt": str(REPO / "resources" / "prompts" / "crs_grounded.txt"),
        "backend": {"type": "ollama", "model": "fake:1b", "host": host},
        "options": {"temperature": 0.7, "top_p": 0.95, "max_tokens": 32},
    }


def read_jsonl(path):
    return [json.loads(line) for line in Path(path).read_text().splitlines()]


def test_session_seeds_are_stable_and_shard_independent():
    assert session_seed(1, 0) == session_seed(1, 0) != session_seed(1, 1)
    assert session_seed(1, 5) != session_seed(2, 5)
    assert list(shard_indices(10, 4, 2)) == [8, 9] and n_shards(10, 4) == 3
    assert [i for k in range(n_shards(10, 4)) for i in shard_indices(10, 4, k)] == list(range(10))


def test_template_shard_is_paired_and_valid(catalog_files, tmp_path):
    runs = {}
    for name in ("template", "template-copy"):
        runner = build_shard_runner(**arguments(catalog_files, {"name": name, "agent": "template"}, tmp_path))
        counts = runner.run(range(2, 5), progress=tmp_path / f"{name}.progress", output=tmp_path / f"{name}.jsonl")
        assert {k: counts[k] for k in ("sessions", "resumed", "simulated")} == {
            "sessions": 3,
            "resumed": 0,
            "simulated": 3,
        }
        stages = [t["user_meta"]["stage"] for r in read_jsonl(tmp_path / f"{name}.jsonl") for t in r["turns"]]
        ordinary = sum(s in ("accept", "reject", "ask", "no_title", "contradict") for s in stages)
        assert counts["ordinary_turns"] == ordinary and counts["contradictions"] == stages.count("contradict")
        assert counts["contradiction_rate_realised"] == round(stages.count("contradict") / ordinary, 4)
        assert not (tmp_path / f"{name}.progress").exists()
        runs[name] = read_jsonl(tmp_path / f"{name}.jsonl")
    a, b = runs["template"], runs["template-copy"]
    assert [r["session_index"] for r in a] == [2, 3, 4]
    assert [r["seed"] for r in a] == [session_seed(99, i) for i in (2, 3, 4)] == [r["seed"] for r in b]
    assert [r["turns"] for r in a] == [r["turns"] for r in b]  # same users, same deterministic system
    assert a[0]["session_id"] == "template/s00002" and b[0]["session_id"] == "template-copy/s00002"


def test_load_progress_drops_a_truncated_line_and_other_configs(tmp_path):
    path = tmp_path / "progress.jsonl"
    good = [
        {"session_index": 0, "config_sha": "A"},
        {"session_index": 1, "config_sha": "B"},
        {"session_index": 2, "config_sha": "A"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in good) + '{"session_index": 3, "conf')
    done = load_progress(path, "A")
    assert sorted(done) == [0, 2]
    assert path.read_text().endswith("}\n") and len(path.read_text().splitlines()) == 3


def test_kill_9_mid_shard_then_resume(catalog_files, tmp_path):
    with FakeOllama(delay_s=0.05) as server:
        args = arguments(catalog_files, ollama_system(server.host), tmp_path, turns=4)
        progress, output = tmp_path / "progress.jsonl", tmp_path / "shard.jsonl"
        child_args = {**args, "indices": [0, 8], "progress": str(progress), "output": str(output)}
        child = subprocess.Popen(
            [sys.executable, str(HERE / "shard_child.py"), json.dumps(child_args)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        deadline = time.time() + 120
        while time.time() < deadline and (not progress.exists() or progress.read_text().count("\n") < 3):
            time.sleep(0.02)
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        assert child.returncode == -signal.SIGKILL
        assert not output.exists()
        finished = progress.read_text().count("\n")
        assert 3 <= finished < 8
        calls_before = server.chat_calls

        resumed = subprocess.run(
            [sys.executable, str(HERE / "shard_child.py"), json.dumps(child_args)],
            capture_output=True,
            text=True,
            check=True,
        )
        counts = json.loads(resumed.stdout)
        assert counts["resumed"] == finished and counts["simulated"] == 8 - finished
        # only the unfinished sessions cost calls (the one cut off mid-way comes from the cache)
        assert server.chat_calls - calls_before == counts["calls"] <= (8 - finished) * 4

        # the same shard without interruption, into a fresh cache, gives the same sessions
        clean_args = {
            **child_args,
            "progress": str(tmp_path / "clean.progress"),
            "output": str(tmp_path / "clean.jsonl"),
            "llm_runtime": {**args["llm_runtime"], "cache_dir": str(tmp_path / "clean-cache")},
        }
        subprocess.run(
            [sys.executable, str(HERE / "shard_child.py"), json.dumps(clean_args)], capture_output=True, check=True
        )

    sessions = read_jsonl(output)
    assert [s["session_index"] for s in sessions] == list(range(8))

    def strip(records):
        return [[{**t, "llm": {**t["llm"], "latency_s": 0, "cached": None}} for t in r["turns"]] for r in records]

    assert strip(sessions) == strip(read_jsonl(tmp_path / "clean.jsonl"))


def test_rerun_of_a_finished_shard_makes_no_llm_calls(catalog_files, tmp_path):
    with FakeOllama() as server:
        args = arguments(catalog_files, ollama_system(server.host), tmp_path, turns=3)
        first = build_shard_runner(**args)
        first.run(range(0, 2), progress=tmp_path / "p1", output=tmp_path / "first.jsonl")
        assert first.calls == 6 and first.cache_hits == 0
        calls = server.chat_calls
        second = build_shard_runner(**args)
        second.run(range(0, 2), progress=tmp_path / "p2", output=tmp_path / "second.jsonl")
        assert second.calls == 0 and second.cache_hits == 6 and server.chat_calls == calls
    again = read_jsonl(tmp_path / "second.jsonl")
    assert all(t["llm"]["cached"] for s in again for t in s["turns"])
    assert [t["system_text"] for s in again for t in s["turns"]] == [
        t["system_text"] for s in read_jsonl(tmp_path / "first.jsonl") for t in s["turns"]
    ]


def test_failed_llm_fails_the_shard_and_keeps_finished_sessions(catalog_files, tmp_path):
    with FakeOllama() as server:
        args = arguments(catalog_files, ollama_system(server.host), tmp_path, turns=2)
        runner = build_shard_runner(**args)
        progress = tmp_path / "progress.jsonl"
        runner.run(range(0, 1), progress=tmp_path / "warmup", output=tmp_path / "warm.jsonl")
        server.failures = [500] * 20  # the server breaks down
        with pytest.raises(Exception, match=r"ollama model fake:1b: giving up after 2 attempts"):
            build_shard_runner(**args).run(range(0, 3), progress=progress, output=tmp_path / "shard.jsonl")
    assert not (tmp_path / "shard.jsonl").exists()
    kept = read_jsonl(progress)
    assert [r["session_index"] for r in kept] == [0]  # the cached session is done; nothing else invented


def paraphrase_arguments(catalog_files, tmp_path, host):
    args = arguments(catalog_files, {"name": "template", "agent": "template"}, tmp_path, turns=4)
    args["simulator"] = {
        **args["simulator"],
        "paraphrase": {
            "enabled": True,
            "backend": {"type": "ollama", "model": "fake:1b", "host": host},
            "options": {"temperature": 0.7, "top_p": 0.95, "max_tokens": 60},
        },
    }
    args["paraphrase_prompt_file"] = str(REPO / "resources" / "prompts" / "paraphrase.txt")
    return args


def test_paraphrase_kept_when_every_value_survives(catalog_files, tmp_path):
    def reword(body):
        return "So, " + body["messages"][-1]["content"].split("Message: ", 1)[1].lower()

    with FakeOllama(content=reword) as server:
        runner = build_shard_runner(**paraphrase_arguments(catalog_files, tmp_path, server.host))
        runner.run(range(0, 2), progress=tmp_path / "p", output=tmp_path / "s.jsonl")
    for session in read_jsonl(tmp_path / "s.jsonl"):
        for turn in session["turns"]:
            paraphrase = turn["user_meta"]["paraphrase"]
            assert paraphrase["verdict"] == "kept"
            assert turn["user_text"] == "So, " + paraphrase["template_text"].lower()
            assert paraphrase["llm"]["backend"] == "ollama"


def test_paraphrase_that_loses_a_value_is_rejected_and_flagged(catalog_files, tmp_path):
    with FakeOllama(content=lambda body: "Recommend me something nice, please.") as server:
        runner = build_shard_runner(**paraphrase_arguments(catalog_files, tmp_path, server.host))
        runner.run(range(0, 2), progress=tmp_path / "p", output=tmp_path / "s.jsonl")
    turns = [t for s in read_jsonl(tmp_path / "s.jsonl") for t in s["turns"]]
    assert all(t["user_meta"]["paraphrase"]["verdict"] == "rejected" for t in turns)
    assert all(t["user_text"] == t["user_meta"]["paraphrase"]["template_text"] for t in turns)


def test_paraphrase_with_structure_is_rejected(catalog_files, tmp_path):
    def leak(body):
        return body["messages"][-1]["content"].split("Message: ", 1)[1] + " {'name': 'Heat'}"

    with FakeOllama(content=leak) as server:
        runner = build_shard_runner(**paraphrase_arguments(catalog_files, tmp_path, server.host))
        runner.run(range(0, 1), progress=tmp_path / "p", output=tmp_path / "s.jsonl")
    turns = read_jsonl(tmp_path / "s.jsonl")[0]["turns"]
    assert all(t["user_meta"]["paraphrase"]["verdict"] == "rejected" and "{" not in t["user_text"] for t in turns)
