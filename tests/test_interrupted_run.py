"""Snakemake itself killed with kill -9: the documented recovery (`--unlock`, run again) finishes the run.

The workstation profile (profiles/default, loaded without --profile) sets rerun-incomplete, so the
job that was running when Snakemake died is run again instead of stopping the re-run.
"""

import base64
import json
import os
import signal
import subprocess
import sys
import time

import pytest
from conftest import copy_workflow, run_snakemake, write_config
from fake_servers import FakeOllama
from test_workflow import fast_config

pytestmark = pytest.mark.workflow


def test_plain_snakemake_loads_the_workstation_profile(tmp_path):
    workdir = copy_workflow(tmp_path)
    config = fast_config("http://127.0.0.1:9")
    result = run_snakemake(workdir, "-n", "--configfile", str(write_config(workdir, config)))
    assert "workflow specific profile profiles/default" in result.stderr


def _wait_for_progress(progress, process, limit_s=300.0):
    start = time.monotonic()
    while time.monotonic() - start < limit_s:
        if progress.exists() and any(f.stat().st_size for f in progress.iterdir()):
            return
        if process.poll() is not None:
            raise AssertionError("snakemake ended before the simulation was under way")
        time.sleep(0.05)
    raise AssertionError("no session finished within the time limit")


def _half_write_incomplete_outputs(workdir):
    """Stand in for outputs a killed job left half written: those Snakemake still marks incomplete."""
    markers = workdir / ".snakemake" / "incomplete"
    written = []
    for marker in markers.rglob("*"):
        if marker.is_dir() or marker.name == "migration_underway":
            continue
        parts = marker.relative_to(markers).parts
        encoded = "".join(part.removeprefix("@") for part in parts)
        output = workdir / base64.urlsafe_b64decode(encoded).decode()
        if not output.exists():
            output.parent.mkdir(parents=True, exist_ok=True)
            output.write_text("half written\n")
            written.append(output)
    return written


def test_kill_9_of_snakemake_then_unlock_and_rerun_finishes(tmp_path):
    workdir = copy_workflow(tmp_path)
    with FakeOllama(delay_s=0.3) as server:
        config = fast_config(server.host)
        config["experiment"] = "killed"
        config["judge"]["enabled"] = False
        # one session at a time: a shard's sessions in flight finish together, leaving almost no
        # time in which the progress file has a finished session and the shard is not yet written
        for system in config["systems"]:
            system["concurrency"] = 1
        configfile = str(write_config(workdir, config))
        process = subprocess.Popen(
            [sys.executable, "-m", "snakemake", "--cores", "2", "--configfile", configfile],
            cwd=workdir,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        _wait_for_progress(workdir / "results/killed/sessions/fake-llm/.progress", process)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        assert _half_write_incomplete_outputs(workdir), "no job was running when snakemake was killed"

        locked = run_snakemake(workdir, "--configfile", configfile, check=False)
        assert locked.returncode != 0 and "--unlock" in locked.stdout + locked.stderr
        run_snakemake(workdir, "--unlock", "--configfile", configfile)
        finished = run_snakemake(workdir, "--configfile", configfile)
        assert "IncompleteFilesException" not in finished.stdout + finished.stderr

    for system in ("template", "fake-llm"):
        indices = [
            json.loads(line)["session_index"]
            for shard in sorted((workdir / "results/killed/sessions" / system).glob("shard-*.jsonl"))
            for line in shard.read_text().splitlines()
        ]
        assert indices == [0, 1, 2, 3]
    assert (workdir / "results/killed/tables/sessions.parquet").exists()
