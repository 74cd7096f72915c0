"""provenance.json beside real runs: written by the rule after every output it describes, so that
re-runs, deleted tables and partial runs never leave tables and record disagreeing unnoticed."""

import copy
import hashlib
import json
import subprocess
import sys

import pytest
from conftest import copy_workflow, planned_jobs, rerun_config, run_snakemake, write_config

from crseval import provenance
from crseval.core.config_checks import fill_defaults
from crseval.planning import config_schema

pytestmark = pytest.mark.workflow
RESULTS = "results/rerun"


@pytest.fixture(scope="module")
def run(tmp_path_factory, ollama):
    """The 'rerun' test experiment, run once; the tests below change and re-run it in order."""
    workdir = copy_workflow(tmp_path_factory.mktemp("workflow"))
    config = rerun_config(ollama.host)
    run_snakemake(workdir, "--configfile", str(write_config(workdir, config)))
    return workdir, config


def record(workdir):
    return json.loads((workdir / RESULTS / "provenance.json").read_text())


def resolved(config):
    config = copy.deepcopy(config)
    fill_defaults(config, config_schema())
    return config


def cli_verify(workdir, *args):
    return subprocess.run(
        [sys.executable, "-m", "crseval.cli", "verify", RESULTS, *args],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_record_describes_every_table_statistic_and_figure(run):
    workdir, config = run
    written = record(workdir)
    assert written["config"] == resolved(config)
    outputs = {entry["path"]: entry for entry in written["outputs"]}
    for path in (
        "tables/sessions.parquet",
        "tables/model_metrics.csv",
        "tables/weight_sensitivity.csv",
        "stats/anova.csv",
        "stats/judge_reliability.md",
        "figures/metric_bars.png",
        "figures/metric_bars.svg",
        "catalog/films.parquet",
        "topics/topics.parquet",
    ):
        assert outputs[path]["sha256"] == hashlib.sha256((workdir / RESULTS / path).read_bytes()).hexdigest()
    assert not any(path.startswith(("sessions/", "scores/", "logs/")) for path in outputs)
    # the scratch copy has no .git; the job ran the copy's library, not the installed one
    assert written["source"]["commit"] is None and written["source"]["reason"]
    assert written["crseval"]["module"] == str((workdir / "src" / "crseval").resolve())
    assert {p["path"]: p["used_by"] for p in written["prompts"]} == {
        "resources/prompts/crs_grounded.txt": ["systems.fake-llm"],
        "resources/prompts/judge.txt": ["judge"],
    }
    result = cli_verify(workdir, "--configfile", "test.yaml")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "every output and input matches provenance.json" in result.stdout


def test_a_changed_threshold_rewrites_tables_and_record_together(run):
    workdir, config = run
    config["scoring"]["tas"]["recovery_threshold"] = 0.6
    configfile = str(write_config(workdir, config))
    before = cli_verify(workdir, "--configfile", "test.yaml")
    assert before.returncode == 1
    assert "config scoring.tas.recovery_threshold: recorded 0.5, config 0.6" in before.stdout
    run_snakemake(workdir, "--configfile", configfile)
    written = record(workdir)
    assert written["config"]["scoring"]["tas"]["recovery_threshold"] == 0.6
    assert cli_verify(workdir, "--configfile", "test.yaml").returncode == 0


def test_a_deleted_table_comes_back_with_its_record(run):
    workdir, config = run
    table = workdir / RESULTS / "tables" / "model_metrics.csv"
    table.unlink()
    result = cli_verify(workdir)
    assert result.returncode == 1 and "tables/model_metrics.csv: missing (recorded in provenance.json)" in result.stdout
    configfile = str(write_config(workdir, config))
    assert planned_jobs(run_snakemake(workdir, "-n", "--configfile", configfile)) == {
        "aggregate": 1,
        "stats": 1,
        "plots": 1,
        "scorecard": 1,
        "viewer": 1,
        "findings": 1,
        "provenance": 1,
        "all": 1,
    }
    run_snakemake(workdir, "--configfile", configfile)
    outputs = {entry["path"]: entry["sha256"] for entry in record(workdir)["outputs"]}
    assert outputs["tables/model_metrics.csv"] == hashlib.sha256(table.read_bytes()).hexdigest()
    assert provenance.verify(workdir / RESULTS) == []


def test_a_partial_run_is_named_until_the_record_is_written_again(run):
    """Asking for one table rewrites it without the record; verify says so, the next full run mends it."""
    workdir, config = run
    config["stats"]["alpha"] = 0.01
    configfile = str(write_config(workdir, config))
    run_snakemake(workdir, f"{RESULTS}/stats/anova.csv", "--configfile", configfile)
    result = cli_verify(workdir, "--configfile", "test.yaml")
    assert result.returncode == 1
    assert "stats/summary.md: changed since provenance.json was written" in result.stdout
    assert "config stats.alpha: recorded 0.05, config 0.01" in result.stdout
    # the findings page reads the new tests (and says the alpha); the record follows it
    assert planned_jobs(run_snakemake(workdir, "-n", "--configfile", configfile)) == {
        "scorecard": 1,
        "findings": 1,
        "provenance": 1,
        "all": 1,
    }
    run_snakemake(workdir, "--configfile", configfile)
    assert cli_verify(workdir, "--configfile", "test.yaml").returncode == 0


def test_an_edited_input_is_named(run):
    workdir, config = run
    prompt = workdir / "resources" / "prompts" / "judge.txt"
    original = prompt.read_text()
    prompt.write_text(original + "\nBe strict.\n")
    try:
        result = cli_verify(workdir)
        assert result.returncode == 1
        assert "input resources/prompts/judge.txt (judge): content differs from the recorded sha256" in result.stdout
        # the record depends on the prompt: the next run writes it again (and re-judges)
        configfile = str(write_config(workdir, config))
        assert "provenance" in planned_jobs(run_snakemake(workdir, "-n", "--configfile", configfile))
    finally:
        prompt.write_text(original)


def test_settings_no_output_depends_on_still_rewrite_the_record(run):
    workdir, config = run
    config["llm"]["threads"] = 1
    configfile = str(write_config(workdir, config))
    assert planned_jobs(run_snakemake(workdir, "-n", "--configfile", configfile)) == {"provenance": 1, "all": 1}
