"""The workflow used as the Snakemake workflow catalog deploys it: a module of the user's own workflow.

`snakedeploy deploy-workflow` writes workflow/Snakefile in the user's folder (a `module` statement
naming this workflow's Snakefile, then `use rule * from`) and copies config/ beside it. The user's
folder then holds the config and every output; the workflow's folder is only read.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import REPO, copy_workflow, default_config, planned_jobs, run_snakemake

from crseval.planning import input_path

# What snakedeploy's template (use_module.smk.jinja) writes, for a workflow named by a local path.
DEPLOYED_SNAKEFILE = """\
from snakemake.utils import min_version


min_version("6.10.0")


configfile: "config/config.yaml"


# declare {snakefile} as a module
module crseval:
    snakefile:
        "{snakefile}"
    config:
        config


# use all rules from {snakefile}
use rule * from crseval
"""
EXPERIMENT = "deployed"


def test_a_path_is_read_from_the_working_directory_else_from_the_workflows_shipped_resources(tmp_path, monkeypatch):
    workflow, user = tmp_path / "workflow", tmp_path / "user"
    for path in ("resources/prompts/judge.txt", "resources/prompts/crs_grounded.txt", "config/config.yaml"):
        (workflow / path).parent.mkdir(parents=True, exist_ok=True)
        (workflow / path).write_text("shipped")
    (user / "resources/prompts").mkdir(parents=True)
    (user / "resources/prompts/judge.txt").write_text("the user's own")
    monkeypatch.chdir(user)
    # the user's file wins; a shipped resource the user has not got comes from the workflow
    grounded = "resources/prompts/crs_grounded.txt"
    assert input_path("resources/prompts/judge.txt", workflow) == "resources/prompts/judge.txt"
    assert input_path(grounded, workflow) == str(workflow / grounded)
    assert input_path(f"./{grounded}", workflow) == str(workflow / f"./{grounded}")
    # only resources/ is shipped: any other path, and a resource nobody has, stays as written
    assert input_path("config/config.yaml", workflow) == "config/config.yaml"
    assert input_path("resources/prompts/absent.txt", workflow) == "resources/prompts/absent.txt"
    assert input_path(str(tmp_path / "elsewhere.json"), workflow) == str(tmp_path / "elsewhere.json")


def test_the_catalog_finds_its_usage_settings_and_the_config_documentation():
    """The workflow catalog reads usage.mandatory-flags, usage.software-stack-deployment and
    usage.report from this file and shows config/README.md; a file it cannot parse is ignored."""
    usage = yaml.safe_load((REPO / ".snakemake-workflow-catalog.yml").read_text())["usage"]
    assert set(usage) == {"mandatory-flags", "software-stack-deployment", "report"}
    assert set(usage["mandatory-flags"]) == {"desc", "flags"}
    assert usage["software-stack-deployment"]["conda"] is True and usage["report"] is True
    assert (REPO / "envs" / "crseval.yaml").is_file() and (REPO / "config" / "README.md").is_file()


def tree_state(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under `root` (but Python's byte-code caches) -> (size, mtime)."""
    state = {}
    for folder, folders, files in os.walk(root):
        folders[:] = [name for name in folders if name != "__pycache__"]
        for name in files:
            stat = os.stat(Path(folder, name))
            state[str(Path(folder, name).relative_to(root))] = (stat.st_size, stat.st_mtime_ns)
    return state


@pytest.mark.workflow
def test_deployed_as_a_module_the_default_experiment_runs_llm_free_in_the_users_folder(tmp_path):
    # the workflow's folder: a scratch copy of the checkout, so that anything written into it is seen
    (tmp_path / "checkout").mkdir()
    checkout = copy_workflow(tmp_path / "checkout")
    user = tmp_path / "user"
    (user / "workflow").mkdir(parents=True)
    (user / "workflow" / "Snakefile").write_text(DEPLOYED_SNAKEFILE.format(snakefile=checkout / "Snakefile"))
    shutil.copytree(checkout / "config", user / "config")
    # the default experiment, LLM-free: the template system, 2 sessions of 3 turns, no judge; the
    # catalog is the user's own file, every other path names a resource the workflow ships
    config = default_config()
    config["experiment"] = EXPERIMENT
    config["systems"] = [system for system in config["systems"] if system["agent"] == "template"]
    config["sessions"].update(count=2, turns=3, shard_size=2)
    config["judge"] = {"enabled": False}
    config["catalog"]["path"] = "data/movies.json"
    (user / "data").mkdir()
    shutil.copy2(checkout / "resources/catalog/demo_movies.json", user / "data/movies.json")
    (user / "config" / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    before = tree_state(checkout)

    run_snakemake(user)  # a plain `snakemake --cores 2` in the user's folder

    results = user / "results" / EXPERIMENT
    sessions = pd.read_parquet(results / "tables" / "sessions.parquet")
    assert sorted(sessions["system"]) == ["template", "template"] and set(sessions["turns"]) == {3}
    for output in ("stats/summary.md", "figures/metric_bars.png", "topics/topics.parquet", "provenance.json"):
        assert (results / output).is_file(), output
    record = json.loads((results / "provenance.json").read_text())
    # planned and run with the workflow's library; the user's file read in place, the shipped ones from the workflow
    assert record["crseval"]["module"] == str((checkout / "src" / "crseval").resolve())
    assert record["catalog"]["path"] == "data/movies.json" and "read_from" not in record["catalog"]
    shipped = {entry["config_key"]: entry for entry in record["other_inputs"]}
    assert shipped["simulator.templates"]["path"] == "resources/templates/user.yaml"
    assert shipped["simulator.templates"]["read_from"] == str(checkout / "resources/templates/user.yaml")
    assert shipped["simulator.templates"]["sha256"]
    # the workflow's folder is only read
    assert tree_state(checkout) == before
    assert not any((checkout / name).exists() for name in ("results", ".snakemake", ".cache"))
    assert planned_jobs(run_snakemake(user, "-n")) == {}
