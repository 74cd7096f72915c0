"""The calibration demo run (config/test/calibration_demo.yaml: seven calibration systems, six simulated users of
eight turns, the demo catalog) and what is done with finished runs: its figures, `crseval compare` and
`crseval board` across runs, and re-runs after edits to the library code.

Two more results folders start from a copy of the base run's, each in a workflow copy of its own (both made at
once): one with the oracle replaced by a two-turn lag under the same name (one system's setting changed, made
worse on purpose), whose oracle sessions are simulated again and scored, with the tables and the viewer made
again, and then its provenance record written (its figures and statistics stay the base run's: compare reads
the record's stages, the sessions table and the viewer); and one holding the record the provenance rule writes
for the config with every system meeting the `realistic` user instead of the `explicit` one, beside the base
run's tables (a refusal, the comparability heading and a board's classes read the records alone).
"""

import csv
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from conftest import REPO, copy_workflow, load_test_config, planned_jobs, run_snakemake, write_config
from test_figures import assert_written

from crseval.core.config_checks import effective_config
from crseval.planning import config_schema

pytestmark = pytest.mark.workflow
BASE = "calibration-demo"
CONFIG = "config/test/calibration_demo.yaml"


def derived(tmp: Path, base: Path, experiment: str, change, targets: tuple[str, ...]) -> tuple[Path, subprocess.Popen]:
    """A run of the calibration config changed by `change` (which returns the systems whose sessions it changes),
    started from a copy of the base run's results: the workflow makes `targets` (files of the run), then writes
    the run's provenance record. Started, not awaited."""
    (tmp / experiment).mkdir()
    workdir = copy_workflow(tmp / experiment)
    config = load_test_config("calibration_demo")
    redo = change(config)
    config["experiment"] = experiment
    results = workdir / "results" / experiment
    shutil.copytree(base, results)
    for system in redo:  # its sessions and their scores, and the tables and viewer made of them, are made anew
        shutil.rmtree(results / "sessions" / system)
        shutil.rmtree(results / "scores" / system)
    for made in [results / "tables" / "sessions.parquet", results / "tables" / "turns.parquet"] if redo else []:
        made.unlink()
    if redo:
        shutil.rmtree(results / "viewer")
    (results / "provenance.json").unlink()
    configfile = write_config(workdir, config, f"{experiment}.yaml")
    snakemake = [sys.executable, "-m", "snakemake", "--cores", "1"]
    files = [f"results/{experiment}/{target}" for target in targets]
    # targets before --configfile, which takes every file after it
    steps = [[*snakemake, *files, "--configfile", str(configfile)]] if targets else []
    record = [f"results/{experiment}/provenance.json", "--allowed-rules", "provenance"]
    steps.append([*snakemake, *record, "--configfile", str(configfile)])
    script = " && ".join(shlex.join(step) for step in steps)
    return results, subprocess.Popen(
        ["bash", "-c", script], cwd=workdir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def worse_oracle(config: dict) -> list[str]:
    config["systems"][0] = {"name": "oracle", "agent": "lagging", "lag": 2}
    return ["oracle"]


def realistic_user(config: dict) -> list[str]:
    config["simulator"]["profile"] = "realistic"
    return []


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("calibration")
    (tmp / "base").mkdir()
    workdir = copy_workflow(tmp / "base")
    run = run_snakemake(workdir, "--configfile", CONFIG)  # rule all asks for the validity figure
    base = workdir / "results" / BASE
    started = {
        "worse": derived(tmp, base, "cmp-worse", worse_oracle, ("tables/sessions.parquet", "viewer")),
        "profile": derived(tmp, base, "cmp-profile", realistic_user, ()),
    }
    found = {"workdir": workdir, "base": base, "log": run.stdout + run.stderr}
    for name, (target, process) in started.items():
        output, _ = process.communicate(timeout=900)
        assert process.returncode == 0, output[-4000:]
        found[name] = target
    return found


def test_the_calibration_run_draws_the_validity_figure(runs):
    """The validity figure beside stats/validity.csv, the TAS scatter against CAS (no judge)."""
    results = runs["base"]
    assert "rule validity_figure:" in runs["log"]
    for name in ("validity", "tas_scatter", "tas_over_turns"):
        assert_written(results / "figures" / name)
    table = pd.read_csv(results / "stats" / "validity.csv")
    assert {"tas", "context_adaptation_score"} <= set(table.loc[table["verdict"].isin(["pass", "fail"]), "metric"])
    log = (results / "logs" / "validity_figure.log").read_text()
    assert f"{(table['verdict'].isin(['pass', 'fail'])).sum()} metrics drawn" in log
    assert "TAS scatter against context_adaptation_score" in (results / "logs" / "plots.log").read_text()
    # the configured row of the weight grid is the TAS of the tables
    config = effective_config(REPO / CONFIG, schema=config_schema())
    sensitivity = pd.read_csv(results / "tables" / "weight_sensitivity.csv")
    own = sensitivity[sensitivity["configured"]].set_index("system")
    weights = {key: config["scoring"]["tas"][key] for key in ("alpha", "beta", "gamma")}
    assert (own[["alpha", "beta", "gamma"]] == pd.Series(weights)).all().all()
    metrics = pd.read_csv(results / "tables" / "model_metrics.csv").set_index("model")
    assert own["tas"].to_dict() == pytest.approx(metrics.loc[own.index, "tas"].to_dict(), abs=1e-9)


def crseval(workdir: Path, *args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "crseval.cli", *map(str, args)], cwd=workdir, capture_output=True, text=True, timeout=300
    )


def rows(path: Path) -> list[dict]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_one_system_made_worse_is_flagged_and_the_others_are_exactly_zero(runs, tmp_path):
    result = crseval(runs["workdir"], "compare", runs["base"], runs["worse"], "--out", tmp_path, "--fail-on-regression")
    assert result.returncode == 1, result.stdout + result.stderr
    table = rows(tmp_path / "compare.csv")
    assert {r["system"] for r in table} == {"oracle", "lag1", "lag2", "stubborn", "random", "parrot", "prompt_echo"}
    for r in table:
        if r["system"] != "oracle":
            assert r["flag"] == "False" and r["verdict"] in ("identical", "no pairs"), r
            assert r["verdict"] == "no pairs" or float(r["diff"]) == 0.0, r
    oracle = [r for r in table if r["system"] == "oracle" and r["verdict"] != "no pairs"]
    assert any(float(r["diff"]) != 0 for r in oracle)
    assert all(float(r["ci_low"]) <= float(r["diff"]) <= float(r["ci_high"]) for r in oracle)
    flagged = [r for r in table if r["flag"] == "True"]
    assert (
        flagged and {r["system"] for r in flagged} == {"oracle"} and {r["verdict"] for r in flagged} == {"regression"}
    )
    assert "tas" in {r["metric"] for r in flagged}
    assert "oracle" in result.stdout and "regression(s) flagged" in result.stdout
    summary = json.loads((tmp_path / "compare.json").read_text())
    stages = {s["stage"]: s for s in summary["runs"][0]["stages"]}
    assert [stage for stage, s in stages.items() if not s["equal"]] == ["systems.oracle"]
    assert 'system.agent: baseline "oracle", run "lagging"' in stages["systems.oracle"]["differences"]
    assert {r["system"] for r in rows(tmp_path / "changed.csv")} == {"oracle"}
    page = (tmp_path / "compare.html").read_text()
    assert "class='regression'" in page and "side by side" in page
    # without --fail-on-regression the flags are reported, not failed on
    assert crseval(runs["workdir"], "compare", runs["base"], runs["worse"], "--out", tmp_path).returncode == 0


def test_a_run_compared_with_itself_flags_nothing(runs, tmp_path):
    result = crseval(runs["workdir"], "compare", runs["base"], runs["base"], "--out", tmp_path, "--fail-on-regression")
    assert result.returncode == 0, result.stderr
    assert {r["verdict"] for r in rows(tmp_path / "compare.csv")} <= {"identical", "no pairs"}
    summary = json.loads((tmp_path / "compare.json").read_text())
    assert summary["runs"][0]["name"] == f"{BASE} (2)" and summary["runs"][0]["regressions"] == []


def test_runs_under_different_user_profiles_are_refused_naming_the_profile(runs, tmp_path):
    result = crseval(runs["workdir"], "compare", runs["base"], runs["profile"], "--out", tmp_path)
    assert result.returncode == 2
    assert 'simulator.profile: baseline "explicit", run "realistic"' in result.stderr
    assert not (tmp_path / "compare.csv").read_text().strip()
    result = crseval(runs["workdir"], "compare", runs["base"], runs["profile"], "--out", tmp_path, "--allow-different")
    assert result.returncode == 0, result.stderr
    page = (tmp_path / "compare.html").read_text()
    assert "Compared although the user differ" in page and "simulator.profile" in page
    assert len(rows(tmp_path / "compare.csv")) > 0


def test_a_board_of_three_runs_shows_two_classes(runs, tmp_path):
    result = crseval(runs["workdir"], "board", runs["base"], runs["worse"], runs["profile"], "--out", tmp_path)
    assert result.returncode == 0, result.stderr
    assert "3 runs in 2 comparability class(es)" in result.stdout
    table = rows(tmp_path / "board.csv")
    classes = {r["run"]: r["class"] for r in table}
    assert classes[BASE] == classes["cmp-worse"] != classes["cmp-profile"]


def dry_run(workdir: Path) -> dict[str, int]:
    return planned_jobs(run_snakemake(workdir, "-n", "--configfile", CONFIG))


def edited(path: Path):
    """Append a comment to a library module for the length of a `with` block."""

    class Edit:
        def __enter__(self):
            self.text = path.read_text(encoding="utf-8")
            path.write_text(self.text + "\n# an edit\n", encoding="utf-8")

        def __exit__(self, *_):
            path.write_text(self.text, encoding="utf-8")

    return Edit()


def test_code_edits_re_run_what_they_affect(runs):
    workdir = runs["workdir"]
    assert dry_run(workdir) == {}
    with edited(workdir / "src" / "crseval" / "simulate" / "user" / "simulator.py"):
        jobs = dry_run(workdir)
    assert jobs["simulate"] == 7 and jobs["score"] == 7 and "provenance" in jobs
    with edited(workdir / "src" / "crseval" / "metrics" / "adherence.py"):
        jobs = dry_run(workdir)
    assert "simulate" not in jobs and jobs["score"] == 7 and "aggregate" in jobs


@pytest.mark.browser
@pytest.mark.skipif(
    os.environ.get("CRSEVAL_SYSTEM_TESTS") != "1",
    reason="installs chromium and chromium-driver with apt-get and drives them: run with CRSEVAL_SYSTEM_TESTS=1",
)
def test_the_compare_page_opens_both_runs_conversations_in_a_browser(runs, tmp_path):
    """The compare page in headless Chromium: a changed session's link opens a page with the session in the
    baseline's viewer and in the run's, side by side (screenshot in tests/artifacts/compare*.png)."""
    from selenium.webdriver.common.by import By
    from test_viewer_browser import ARTIFACTS, chromium_driver, install_chromium, wait_for

    install_chromium()
    pytest.importorskip("selenium")
    out = tmp_path / "compare"
    assert crseval(runs["workdir"], "compare", runs["base"], runs["worse"], "--out", out).returncode == 0
    changed = rows(out / "changed.csv")[0]
    driver = chromium_driver()
    try:
        driver.get((out / "compare.html").as_uri())
        assert driver.find_element(By.TAG_NAME, "h1").text.startswith(f"Compare: {BASE} against cmp-worse")
        ARTIFACTS.mkdir(exist_ok=True)
        driver.save_screenshot(str(ARTIFACTS / "compare.png"))
        driver.find_elements(By.CSS_SELECTOR, "a.side-by-side")[0].click()
        wait_for(driver, "document.querySelectorAll('iframe').length === 2")
        for frame, session in (("baseline", changed["baseline_session_id"]), ("run", changed["run_session_id"])):
            driver.switch_to.frame(driver.find_element(By.ID, frame))
            wait_for(driver, f"document.body.dataset.session === {session!r}")
            assert driver.find_elements(By.CSS_SELECTOR, ".msg.user .text")
            driver.switch_to.default_content()
        driver.save_screenshot(str(ARTIFACTS / "compare-side-by-side.png"))
    finally:
        driver.quit()
