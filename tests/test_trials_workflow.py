"""Repeated trials through the workflow (config/test/trials_demo.yaml): adding trials adds jobs and redoes
none, the tables carry the trial, the statistics run on users, and pass^k comes out as constructed: about
0.7^k for the flaky calibration system, flat for the systems that repeat themselves."""

import hashlib
import json

import pandas as pd
import yaml
from conftest import planned_jobs, planned_outputs, run_snakemake

from crseval.statistics import trials


def digests(folder):
    return {path.name: hashlib.sha256(path.read_bytes()).hexdigest() for path in sorted(folder.glob("shard-*.jsonl"))}


def test_trials_add_work_redo_none_and_pass_k_is_as_constructed(workflow_copy):
    config = workflow_copy / "config" / "test" / "trials_demo.yaml"
    settings = yaml.safe_load(config.read_text())
    settings["sessions"]["trials"] = 2
    config.write_text(yaml.safe_dump(settings))
    run_snakemake(workflow_copy, "--configfile", str(config))
    results = workflow_copy / "results" / "trials-demo"
    before = {system: digests(results / "sessions" / system) for system in ("oracle", "flaky", "template")}
    assert set(before["flaky"]) == {"shard-0.jsonl", "shard-1.jsonl", "shard-0-t1.jsonl", "shard-1-t1.jsonl"}

    settings["sessions"]["trials"] = 4
    config.write_text(yaml.safe_dump(settings))
    dry = run_snakemake(workflow_copy, "-n", "--configfile", str(config))
    assert planned_jobs(dry)["simulate"] == planned_jobs(dry)["score"] == 3 * 2 * 2  # systems x shards x new trials
    assert all("-t2." in path or "-t3." in path for path in planned_outputs(dry, "simulate"))
    run_snakemake(workflow_copy, "--configfile", str(config))
    for system, shards in before.items():  # the first two trials' sessions were not touched
        after = digests(results / "sessions" / system)
        assert {name: after[name] for name in shards} == shards and len(after) == 8

    sessions = pd.read_parquet(results / "tables" / "sessions.parquet")
    assert len(sessions) == 3 * 40 * 4 and sorted(sessions["trial"].unique()) == [0, 1, 2, 3]
    assert sessions.groupby(["system", "session_index"]).size().eq(4).all()
    first = sessions[sessions["trial"] == 0]
    assert not first["session_id"].str.contains("/t").any()
    assert sessions.loc[sessions["trial"] == 3, "session_id"].str.endswith("/t3").all()
    # the template system repeats itself: every trial of a user scores the same
    template = sessions[sessions["system"] == "template"]
    assert template.groupby("session_index")["tas"].nunique().eq(1).all()

    passes = pd.read_csv(results / "stats" / "reliability_trials.csv").set_index(["system", "k"])
    for k in range(1, 5):
        flaky = passes.loc[("flaky", k)]
        oracle = passes.loc[("oracle", k)]
        # the flaky system serves a share 0.7 of its sessions as the oracle does, each trial drawn anew
        expected = oracle["pass_hat_k"] * 0.7**k
        assert flaky["ci_low"] <= expected <= flaky["ci_high"], (k, dict(flaky), expected)
        for system in ("oracle", "template"):  # deterministic: pass^k = pass^1
            assert abs(passes.loc[(system, k), "pass_hat_k"] - passes.loc[(system, 1), "pass_hat_k"]) < 1e-12
    # on the users the oracle serves, the flaky system succeeds with chance 0.7 in every trial: pass^k = 0.7^k
    served = sessions.loc[(sessions["system"] == "oracle") & (sessions["success"] == 1), "session_index"].unique()
    on_served = trials.pass_table(sessions[sessions["session_index"].isin(served)], resamples=2000, seed=3)
    for row in on_served[on_served["system"] == "flaky"].itertuples():
        assert row.ci_low <= 0.7**row.k <= row.ci_high, row
    chance = pd.read_csv(results / "stats" / "reliability_trials_chance.csv")
    shares = chance.set_index(["metric", "system"])["trial_share"]
    assert shares["success", "template"] == 0 and shares["success", "flaky"] > 0.5

    model = pd.read_csv(results / "tables" / "model_metrics.csv").set_index("model")
    assert model.loc["flaky", "sessions"] == 40 and model.loc["flaky", "trials_per_user"] == 4
    summary = (results / "stats" / "summary.md").read_text()
    assert "4 trials" in summary and "users' means" in summary
    paired = pd.read_csv(results / "stats" / "paired.csv")
    assert (paired["pairs"].dropna() <= 40).all()  # pairs are users, not sessions
    assert "trials" in (results / "stats" / "power.md").read_text()
    assert (results / "figures" / "pass_k.png").stat().st_size > 0
    described = {record["path"] for record in json.loads((results / "provenance.json").read_text())["outputs"]}
    assert {"stats/reliability_trials.md", "stats/power_trials.csv", "figures/pass_k.png"} <= described
