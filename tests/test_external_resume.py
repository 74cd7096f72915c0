"""Systems under test from outside: the reference server (examples/crs_http_server.py) on loopback
and the example class (examples/my_recommender.py). Sessions in flight give the records of one at
a time, and a shard stopped mid-way (a failure, or kill -9) resumes without losing or repeating a
session."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_own_systems_workflow import start_server
from test_sessions import arguments, read_jsonl

from crseval.simulate.sessions import session_seed
from crseval.simulate.shard import build_shard_runner
from crseval.simulate.systems.external import ExternalSystemError

HERE = Path(__file__).parent
TURNS = 4
SESSIONS = 12


@pytest.fixture(scope="module")
def served(catalog_files):
    """The reference server's URL, the server run as its docstring says on the test catalog."""
    agent = arguments(catalog_files, {}, catalog_files)["agent"]
    server, url = start_server(catalog_files, agent)
    yield url
    server.terminate()
    server.wait(timeout=10)
    server.stderr.close()


def http_system(url: str) -> dict:
    return {"name": "served", "agent": "http", "url": url, "timeout": 30, "retries": 2}


def python_system(catalog_files) -> dict:
    agent = arguments(catalog_files, {}, catalog_files)["agent"]
    films, concepts = str(catalog_files / "films.parquet"), str(catalog_files / "concepts.parquet")
    options = {"films": films, "concepts": concepts, **agent}
    return {
        "name": "served",
        "agent": "python",
        "entry_point": "examples.my_recommender:MyRecommender",
        "options": options,
    }


def shard_arguments(catalog_files, url: str, folder, system: dict | None = None) -> dict:
    """build_shard_runner's arguments for the served system (or `system`), with a reply cache of its own
    under `folder`."""
    return arguments(catalog_files, system or http_system(url), folder, turns=TURNS)


def test_three_sessions_in_flight_write_the_shard_of_one_at_a_time(catalog_files, served, tmp_path):
    outputs = {}
    for concurrency in (1, 3):  # each run with its own, empty reply cache
        args = shard_arguments(catalog_files, served, tmp_path / f"c{concurrency}")
        runner = build_shard_runner(**args, concurrency=concurrency)
        output = tmp_path / f"c{concurrency}.jsonl"
        counts = runner.run(range(SESSIONS), progress=tmp_path / f"c{concurrency}.progress", output=output)
        assert counts["simulated"] == SESSIONS and counts["resumed"] == 0
        assert (runner.calls, runner.cache_hits) == (SESSIONS * TURNS, 0)
        outputs[concurrency] = output
    assert outputs[3].read_bytes() == outputs[1].read_bytes()  # byte for byte, in index order
    records = read_jsonl(outputs[3])
    assert [r["session_index"] for r in records] == list(range(SESSIONS))
    assert all(len(r["turns"]) == TURNS for r in records)
    assert any(t["recommended_titles"] for r in records for t in r["turns"])


def fail_at(runner, session_index: int, turn: int) -> None:
    """Make the runner's system fail at one turn of one session, before the request is sent."""
    seed, make_agent = session_seed(runner.experiment_seed, session_index), runner.make_agent

    def agent_that_fails(agent_seed: int):
        agent = make_agent(agent_seed)
        if agent_seed == seed:
            answer = agent.system.answer

            def answer_until(asked_turn, user_text, history):
                if asked_turn == turn:
                    raise ExternalSystemError("the service went away", transient=True)
                return answer(asked_turn, user_text, history)

            agent.system.answer = answer_until
        return agent

    runner.make_agent = agent_that_fails


@pytest.mark.parametrize("concurrency", [1, 3])
def test_a_shard_stopped_mid_session_resumes_without_losing_or_repeating_one(
    catalog_files, served, tmp_path, concurrency
):
    args = shard_arguments(catalog_files, served, tmp_path)
    progress, output = tmp_path / "progress.jsonl", tmp_path / "shard.jsonl"
    broken, failing_turn = 5, 3
    runner = build_shard_runner(**args, concurrency=concurrency)
    fail_at(runner, broken, failing_turn)
    with pytest.raises(ExternalSystemError, match=rf"session served/s{broken:05d}, turn {failing_turn}: .*went away"):
        runner.run(range(SESSIONS), progress=progress, output=output)
    assert not output.exists()
    kept = [json.loads(line)["session_index"] for line in progress.read_text().splitlines()]
    assert len(kept) == len(set(kept)) and set(range(broken)) <= set(kept) and broken not in kept
    assert len(kept) < SESSIONS

    resumed = build_shard_runner(**args, concurrency=concurrency)
    counts = resumed.run(range(SESSIONS), progress=progress, output=output)
    assert counts["resumed"] == len(kept) and counts["simulated"] == SESSIONS - len(kept)
    # the broken session takes the turns answered before the failure from the cache, asks the rest
    answered = failing_turn - 1
    assert resumed.cache_hits == answered
    assert resumed.calls == (SESSIONS - len(kept)) * TURNS - answered
    assert not progress.exists()

    clean_args = shard_arguments(catalog_files, served, tmp_path / "clean")
    clean = tmp_path / "clean.jsonl"
    build_shard_runner(**clean_args, concurrency=1).run(range(SESSIONS), progress=tmp_path / "clean.p", output=clean)
    assert output.read_bytes() == clean.read_bytes()
    assert [r["session_index"] for r in read_jsonl(output)] == list(range(SESSIONS))


@pytest.mark.parametrize("kind", ["http", "python"])
def test_kill_9_of_a_shard_in_flight_loses_and_repeats_nothing(catalog_files, served, tmp_path, kind):
    sessions = 40  # enough that the shard is still running when the first sessions are written
    system = python_system(catalog_files) if kind == "python" else None
    args = shard_arguments(catalog_files, served, tmp_path, system)
    progress, output = tmp_path / "progress.jsonl", tmp_path / "shard.jsonl"
    child_args = {**args, "concurrency": 3, "indices": [0, sessions], "progress": str(progress), "output": str(output)}
    command = [sys.executable, str(HERE / "shard_child.py"), json.dumps(child_args)]
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE.parent), os.environ.get("PYTHONPATH", "")])}
    child = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True, env=environment
    )
    deadline = time.time() + 120
    while time.time() < deadline and (not progress.exists() or progress.read_text().count("\n") < 4):
        time.sleep(0.005)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    assert child.returncode == -signal.SIGKILL and not output.exists()
    finished = [json.loads(line) for line in progress.read_bytes().split(b"\n")[:-1]]  # whole lines only
    kept = [r["session_index"] for r in finished]
    assert len(kept) == len(set(kept)) and 4 <= len(kept) < sessions

    resumed = subprocess.run(command, capture_output=True, text=True, check=True, env=environment)
    counts = json.loads(resumed.stdout)
    assert counts["resumed"] == len(kept) and counts["simulated"] == sessions - len(kept)
    # only unfinished sessions ask the server (those cut off mid-way take their first turns from the cache)
    assert counts["calls"] + counts["cache_hits"] == (sessions - len(kept)) * TURNS and counts["calls"] > 0

    clean_args = shard_arguments(catalog_files, served, tmp_path / "clean", system)
    clean = tmp_path / "clean.jsonl"
    build_shard_runner(**clean_args).run(range(sessions), progress=tmp_path / "clean.p", output=clean)
    assert output.read_bytes() == clean.read_bytes()
    assert [r["session_index"] for r in read_jsonl(output)] == list(range(sessions))
