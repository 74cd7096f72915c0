"""The template agent served three ways through the whole workflow: built in, behind the reference
HTTP server (examples/crs_http_server.py) and as the example class (examples/my_recommender.py).
The three must hold the same sessions, and the outside ones must be re-run from the reply cache."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading

import pytest
import yaml
from conftest import REPO, run_snakemake, write_config

from crseval.core.config_checks import effective_config
from crseval.planning import config_schema

EXPERIMENT = "own_systems"
RESULTS = f"results/{EXPERIMENT}"
SYSTEMS = ("template", "served", "imported")
TURNS = 4


def three_ways_config(workdir, url: str) -> dict:
    """config/own_systems.yaml, small, with the template agent built in, over HTTP and as a class."""
    config = effective_config(REPO / "config" / "own_systems.yaml", schema=config_schema())
    config["sessions"].update(count=2, turns=TURNS, shard_size=2)
    config["scoring"]["response_stats"]["embeddings"] = False
    config["judge"]["enabled"] = False
    config["llm"]["cache_dir"] = str(workdir / ".cache" / "llm")
    config["systems"] = [
        {"name": "template", "agent": "template"},
        {"name": "served", "agent": "http", "url": url, "timeout": 30, "retries": 2},
        {
            "name": "imported",
            "agent": "python",
            "entry_point": "examples.my_recommender:MyRecommender",
            "options": {
                "films": f"{RESULTS}/catalog/films.parquet",
                "concepts": f"{RESULTS}/catalog/concepts.parquet",
                **config["agent"],
            },
        },
    ]
    return config


def start_server(catalog, agent: dict) -> tuple[subprocess.Popen, str]:
    """The reference server as its docstring runs it, on a free loopback port; (process, URL)."""
    command = [sys.executable, str(REPO / "examples" / "crs_http_server.py"), "--port", "0", "--catalog", str(catalog)]
    command += ["--candidates", str(agent["candidates"])]
    if agent["track_plot_keywords"]:
        command.append("--track-plot-keywords")
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    while True:
        line = process.stderr.readline()
        if not line:
            raise AssertionError(f"the server stopped before serving (exit {process.wait(timeout=10)})")
        if found := re.search(r"template recommender on (http://127\.0\.0\.1:\d+/)", line):
            # keep reading its request log, so that a full pipe never blocks the server
            drain = threading.Thread(target=process.stderr.read, daemon=True)
            drain.start()
            return process, found.group(1)


def shard(workdir, system: str) -> list[dict]:
    path = workdir / RESULTS / "sessions" / system / "shard-0.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def shard_log(workdir, system: str) -> str:
    return (workdir / RESULTS / "logs" / "simulate" / system / "shard-0.log").read_text(errors="replace")


def dialogue(records: list[dict]) -> list[tuple]:
    """What the user said, what the system replied and which titles it recommended, turn by turn."""
    return [
        (r["session_index"], t["turn"], t["user_text"], t["system_text"], t["recommended_titles"])
        for r in records
        for t in r["turns"]
    ]


@pytest.mark.workflow
def test_the_template_agent_served_three_ways_holds_the_same_sessions(workflow_copy):
    # no PYTHONPATH: `examples` is importable because the workflow runs from the copy's top folder
    index_config = write_config(workflow_copy, three_ways_config(workflow_copy, "http://127.0.0.1:9/"), "index.yaml")
    run_snakemake(workflow_copy, "index_catalog", "--configfile", str(index_config))
    config = yaml.safe_load(index_config.read_text())
    server, url = start_server(workflow_copy / RESULTS / "catalog", config["agent"])
    try:
        path = write_config(workflow_copy, three_ways_config(workflow_copy, url))
        run_snakemake(workflow_copy, "--configfile", str(path))

        records = {system: shard(workflow_copy, system) for system in SYSTEMS}
        assert [len(r["turns"]) for r in records["template"]] == [TURNS, TURNS]
        assert any(t["recommended_titles"] for r in records["template"] for t in r["turns"])
        assert dialogue(records["served"]) == dialogue(records["template"])
        assert dialogue(records["imported"]) == dialogue(records["template"])
        for system in ("served", "imported"):
            assert f"LLM calls {2 * TURNS}, cache hits 0" in shard_log(workflow_copy, system)

        provenance = json.loads((workflow_copy / RESULTS / "provenance.json").read_text())
        described = {entry["system"]: entry for entry in provenance["external_systems"]}
        assert described["served"]["agent"] == "http" and described["served"]["url"] == url
        assert described["imported"]["agent"] == "python"
        assert described["imported"]["entry_point"] == "examples.my_recommender:MyRecommender"

        # the same shards again from the reply cache: neither the server nor the class is asked
        for system in SYSTEMS:
            (workflow_copy / RESULTS / "sessions" / system / "shard-0.jsonl").unlink()
        targets = [f"{RESULTS}/sessions/{system}/shard-0.jsonl" for system in SYSTEMS]
        run_snakemake(workflow_copy, *targets, "--configfile", str(path))
        for system in ("served", "imported"):
            assert shard(workflow_copy, system) == records[system]
            assert f"LLM calls 0, cache hits {2 * TURNS}" in shard_log(workflow_copy, system)
    finally:
        server.terminate()
        server.wait(timeout=10)
        server.stderr.close()
