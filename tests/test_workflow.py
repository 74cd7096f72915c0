"""The Snakemake CLI end to end: outputs, and which rules a config change re-runs."""

import json

import pandas as pd
import pytest

from conftest import copy_workflow, default_config, planned_jobs, run_snakemake, write_config

pytestmark = pytest.mark.workflow


def fast_config():
    config = default_config()
    config["experiment"] = "rerun"
    config["lda"]["passes"] = 3
    return config


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    """One full run of the workflow in a scratch copy, shared by the re-run checks."""
    workdir = copy_workflow(tmp_path_factory.mktemp("workflow"))
    config = fast_config()
    run_snakemake(workdir, "--configfile", str(write_config(workdir, config)))
    return workdir, config


def dry_run(workdir, config):
    return planned_jobs(run_snakemake(workdir, "-n", "--configfile", str(write_config(workdir, config, "changed.yaml"))))


def test_outputs_exist_and_are_consistent(finished_run):
    workdir, _ = finished_run
    results = workdir / "results" / "rerun"
    films = pd.read_parquet(results / "catalog" / "films.parquet")
    summary = json.loads((results / "catalog" / "summary.json").read_text())
    assert len(films) == summary["films"] >= 150
    topics = pd.read_parquet(results / "topics" / "topics.parquet")
    lda = json.loads((results / "topics" / "summary.json").read_text())
    assert topics["topic"].nunique() == lda["settings"]["num_topics"]
    assert lda["coherence"]["measure"] == "c_v" and 0 < lda["coherence"]["value"] < 1
    assert (results / "topics" / "lda" / "lda.model").exists()


def test_nothing_to_do_after_a_finished_run(finished_run):
    workdir, config = finished_run
    assert dry_run(workdir, config) == {}


def test_lda_setting_reruns_train_lda_only(finished_run):
    workdir, config = finished_run
    config = json.loads(json.dumps(config))
    config["lda"]["passes"] = 4
    assert dry_run(workdir, config) == {"train_lda": 1, "all": 1}


def test_catalog_setting_reruns_index_and_downstream(finished_run):
    workdir, config = finished_run
    config = json.loads(json.dumps(config))
    config["catalog"]["plot_keywords"]["per_film"] = 4
    assert dry_run(workdir, config) == {"index_catalog": 1, "train_lda": 1, "all": 1}


def test_later_stage_setting_reruns_neither_rule(finished_run):
    workdir, config = finished_run
    config = json.loads(json.dumps(config))
    config["sessions"]["count"] += 10
    config["sessions"]["turns"] += 2
    assert dry_run(workdir, config) == {}


def test_key_order_does_not_trigger_a_rerun(finished_run):
    workdir, config = finished_run
    reordered = dict(config)
    reordered["lda"] = dict(reversed(list(config["lda"].items())))
    assert dry_run(workdir, reordered) == {}
