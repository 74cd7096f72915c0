"""The Snakemake CLI end to end: outputs, and which rules a config change re-runs."""

import json
import re
import zipfile

import pandas as pd
import pytest
from conftest import (
    copy_workflow,
    default_config,
    planned_jobs,
    planned_outputs,
    rerun_config,
    run_snakemake,
    write_config,
)

pytestmark = pytest.mark.workflow


fast_config = rerun_config


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory, ollama):
    """One full run of the workflow in a scratch copy, shared by the re-run checks."""
    workdir = copy_workflow(tmp_path_factory.mktemp("workflow"))
    config = fast_config(ollama.host)
    run_snakemake(workdir, "--configfile", str(write_config(workdir, config)))
    return workdir, config


def changed(config, mutate):
    config = json.loads(json.dumps(config))
    mutate(config)
    return config


def dry_run(workdir, config):
    return planned_jobs(
        run_snakemake(workdir, "-n", "--configfile", str(write_config(workdir, config, "changed.yaml")))
    )


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
    assert dry_run(workdir, config) == {
        "train_lda": 1,
        "score": 4,
        "aggregate": 1,
        "stats": 1,
        "plots": 1,
        "scorecard": 1,
        "viewer": 1,
        "findings": 1,
        "provenance": 1,
        "all": 1,
    }


def test_catalog_setting_reruns_index_and_downstream(finished_run):
    workdir, config = finished_run
    config = json.loads(json.dumps(config))
    config["catalog"]["plot_keywords"]["per_film"] = 4
    assert dry_run(workdir, config) == {
        "index_catalog": 1,
        "train_lda": 1,
        "simulate": 4,
        "score": 4,
        "judge": 4,
        "aggregate": 1,
        "stats": 1,
        "plots": 1,
        "scorecard": 1,
        "viewer": 1,
        "findings": 1,
        "provenance": 1,
        "all": 1,
    }


def test_simulator_setting_reruns_simulation_only(finished_run):
    workdir, config = finished_run
    config = changed(config, lambda c: c["simulator"].update(shift_every=c["simulator"]["shift_every"] + 1))
    assert dry_run(workdir, config) == {
        "simulate": 4,
        "score": 4,
        "judge": 4,
        "aggregate": 1,
        "stats": 1,
        "plots": 1,
        "scorecard": 1,
        "viewer": 1,
        "findings": 1,
        "provenance": 1,
        "all": 1,
    }


def test_system_setting_reruns_that_systems_shards_only(finished_run):
    workdir, config = finished_run
    config = changed(config, lambda c: c["systems"][1]["options"].update(temperature=0.2))
    jobs = run_snakemake(workdir, "-n", "--configfile", str(write_config(workdir, config, "changed.yaml")))
    assert planned_jobs(jobs) == {
        "simulate": 2,
        "score": 2,
        "judge": 2,
        "aggregate": 1,
        "stats": 1,
        "plots": 1,
        "scorecard": 1,
        "viewer": 1,
        "findings": 1,
        "provenance": 1,
        "all": 1,
    }
    assert planned_outputs(jobs, "simulate") == {f"results/rerun/sessions/fake-llm/shard-{k}.jsonl" for k in (0, 1)}


def test_more_sessions_add_only_new_shards(finished_run):
    workdir, config = finished_run
    config = changed(config, lambda c: c["sessions"].update(count=6))
    jobs = run_snakemake(workdir, "-n", "--configfile", str(write_config(workdir, config, "changed.yaml")))
    assert planned_jobs(jobs) == {
        "simulate": 2,
        "score": 2,
        "judge": 2,
        "aggregate": 1,
        "stats": 1,
        "plots": 1,
        "scorecard": 1,
        "viewer": 1,
        "findings": 1,
        "provenance": 1,
        "all": 1,
    }
    assert planned_outputs(jobs, "simulate") == {
        f"results/rerun/sessions/{s}/shard-2.jsonl" for s in ("template", "fake-llm")
    }


@pytest.mark.parametrize(
    "mutate",
    [
        lambda c: c["scoring"]["cas"].update(alignment_threshold=0.6),
        lambda c: c["scoring"]["tas"].update(alpha=0.5),
        lambda c: c["scoring"]["cas"].update(mode="thesis"),
    ],
)
def test_scoring_setting_reruns_scoring_only(finished_run, mutate):
    workdir, config = finished_run
    assert dry_run(workdir, changed(config, mutate)) == {
        "score": 4,
        "aggregate": 1,
        "stats": 1,
        "plots": 1,
        "scorecard": 1,
        "viewer": 1,
        "findings": 1,
        "provenance": 1,
        "all": 1,
    }


def test_scores_cover_every_session(finished_run):
    workdir, _ = finished_run
    for system in ("template", "fake-llm"):
        tables = [
            pd.read_parquet(workdir / "results" / "rerun" / "scores" / system / f"shard-{k}.sessions.parquet")
            for k in (0, 1)
        ]
        sessions = pd.concat(tables)
        assert sorted(sessions["session_index"]) == [0, 1, 2, 3]
        assert sessions["tas"].between(-0.2, 0.8).all() and sessions["context_adaptation_score"].between(0, 1).all()
        turns = pd.read_parquet(workdir / "results" / "rerun" / "scores" / system / "shard-0.turns.parquet")
        assert len(turns) == 2 * 3


def test_llm_runtime_settings_rerun_nothing(finished_run):
    workdir, config = finished_run
    config = changed(config, lambda c: c["llm"].update(max_retries=7, timeout_s=5, backoff_s=0.1))
    config["scoring"]["embedding_cache"] = ".cache/elsewhere.sqlite"
    assert dry_run(workdir, config) == {"provenance": 1, "all": 1}  # only the record of the config


def test_sessions_are_paired_across_systems(finished_run):
    workdir, _ = finished_run
    sessions = {}
    for system in ("template", "fake-llm"):
        for shard in (0, 1):
            path = workdir / "results" / "rerun" / "sessions" / system / f"shard-{shard}.jsonl"
            sessions.setdefault(system, []).extend(json.loads(line) for line in path.read_text().splitlines())
    template, llm = sessions["template"], sessions["fake-llm"]
    assert [s["session_index"] for s in template] == [0, 1, 2, 3]
    assert [s["seed"] for s in template] == [s["seed"] for s in llm]
    assert [s["turns"][0]["user_text"] for s in template] == [s["turns"][0]["user_text"] for s in llm]
    assert all(t["llm"]["backend"] == "ollama" for s in llm for t in s["turns"])


def test_key_order_does_not_trigger_a_rerun(finished_run):
    workdir, config = finished_run
    reordered = dict(config)
    reordered["lda"] = dict(reversed(list(config["lda"].items())))
    assert dry_run(workdir, reordered) == {}


def test_tables_and_statistics(finished_run):
    workdir, _ = finished_run
    results = workdir / "results" / "rerun"
    sessions = pd.read_parquet(results / "tables" / "sessions.parquet")
    assert len(sessions) == 8 and set(sessions["system"]) == {"template", "fake-llm"}
    assert sessions["judge_coherence"].between(1, 5).all() and (sessions["judge_valid_samples"] == 1).all()
    assert sorted(sessions["shard"].unique()) == [0, 1]
    metrics = pd.read_csv(results / "tables" / "model_metrics.csv")
    assert list(metrics["model"]) == ["fake-llm", "template"]
    assert {"tas", "tas_ci_low", "context_adaptation_score", "coherence", "judge_missing_share"} <= set(metrics.columns)
    summary = (results / "stats" / "summary.md").read_text()
    assert "## Omnibus tests" in summary and "| tas |" in summary
    anova = pd.read_csv(results / "stats" / "anova.csv")
    assert "judge_coherence" in set(anova["metric"]) and "recommended_p_adj" in anova
    assert set(anova["recommended"].dropna()) <= {"permutation"}  # 4 sessions per system: a small sample
    assert "Analysis plan: significance level 0.05" in summary
    pairwise = pd.read_csv(results / "stats" / "pairwise.csv")
    assert {"welch_t_p", "welch_t_p_adj", "mannwhitney_min_p", "hedges_g_ci_low", "cliffs_delta_ci_high"} <= set(
        pairwise.columns
    )
    assert set(pairwise["metric"]) >= {"tas", "judge_coherence"}
    paired = pd.read_csv(results / "stats" / "paired.csv")  # simulated sessions share seeds: they pair
    assert len(paired) and {"wilcoxon_p_adj", "wilcoxon_testable", "rank_biserial", "cohens_dz_ci_low"} <= set(
        paired.columns
    )
    assert "Sessions pair: session i has the same seed" in summary
    assert "| tas | 4 |" in (results / "stats" / "power.md").read_text()
    reliability = (results / "stats" / "judge_reliability.md").read_text()
    assert "agreement not measured: the judge ran one sample per session" in reliability


def test_stats_setting_reruns_stats_only(finished_run):
    workdir, config = finished_run
    assert dry_run(workdir, changed(config, lambda c: c["stats"].update(alpha=0.01))) == {
        "stats": 1,
        "scorecard": 1,  # its verdicts on people's agreement test at that alpha
        "findings": 1,  # the page reads the tests' verdicts and says the alpha
        "provenance": 1,
        "all": 1,
    }


def test_judge_disabled_drops_the_judge_and_adapts(finished_run):
    workdir, config = finished_run
    jobs = dry_run(workdir, changed(config, lambda c: c.update(judge={"enabled": False})))
    assert "judge" not in jobs and jobs.get("aggregate") == 1


def test_figures_and_report(finished_run):
    workdir, config = finished_run
    figures = workdir / "results" / "rerun" / "figures"
    for name in (
        "metric_bars",
        "judge_radar",
        "correlation_heatmap",
        "recovery_delay_box",
        "tas_over_turns",
        "distributions",
        "weight_sensitivity",
    ):
        assert (figures / f"{name}.png").stat().st_size > 5000 and (figures / f"{name}.svg").exists(), name
    report = workdir / "report.zip"
    run_snakemake(workdir, "--configfile", str(write_config(workdir, config)), "--report", str(report))
    with zipfile.ZipFile(report) as archive:
        names = archive.namelist()
        html = archive.read("report/report.html").decode(errors="replace")
    assert len(html) > 100_000 and "tas_over_turns.png" in html and "model_metrics.csv" in html
    # the findings page and the session viewer, with its data beside it
    pages = [name for name in names if name.endswith("/index.html")]
    assert len(pages) == 2 and any(name.endswith("/list.js") for name in names)
    assert "findings.html" in html and "viewer.html" in html


def test_llm_jobs_take_cpu_threads_equal_to_their_threads(workflow_copy):
    """The workflow caps `cpu_threads` at the machine's cores; each in-process LLM job takes as
    many as it runs threads (llm.threads), every other job one."""
    configfile = str(write_config(workflow_copy, default_config()))
    text = run_snakemake(workflow_copy, "-n", "--cores", "8", "--configfile", configfile).stdout
    jobs = re.findall(
        r"rule (\w+):\n(?:[ \t]+.*\n)*?[ \t]+wildcards: system=([\w.-]+).*\n(?:[ \t]+threads: (\d+)\n)?[ \t]+resources: (.*)",  # noqa: E501
        text,
    )
    simulate = {system: (threads, resources) for rule, system, threads, resources in jobs if rule == "simulate"}
    assert simulate["qwen-grounded"][0] == "2" and "cpu_threads=2" in simulate["qwen-grounded"][1]
    assert "llm_slots=1" in simulate["gemma-grounded"][1]
    assert (
        simulate["template"][0] == ""
        and "cpu_threads=1" in simulate["template"][1]
        and "llm_slots=0" in simulate["template"][1]
    )


def test_concurrency_changes_speed_only_so_only_the_provenance_record_reruns(finished_run):
    workdir, config = finished_run

    def more_in_flight(c):
        c["llm"]["concurrency"] = 8
        c["systems"][1]["concurrency"] = 16
        c["judge"]["concurrency"] = 1

    # provenance.json records the whole resolved config, so it is written again; no result is
    assert dry_run(workdir, changed(config, more_in_flight)) == {"provenance": 1, "all": 1}


def test_llm_slots_are_the_jobs_concurrency_capped_by_the_resource(workflow_copy):
    config = default_config()
    config["systems"] = [
        {
            "name": "served",
            "agent": "llm",
            "prompt": "resources/prompts/crs_grounded.txt",
            "backend": {"type": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1"},
            "options": {"temperature": 0.7, "top_p": 0.95, "max_tokens": 32},
            "concurrency": 16,
        },
        {"name": "template", "agent": "template"},
    ]
    config["judge"]["backend"] = {"type": "openai", "model": "j", "base_url": "http://127.0.0.1:9/v1"}
    config["judge"]["concurrency"] = 6
    path = str(write_config(workflow_copy, config, "served.yaml"))
    pattern = r"rule (simulate|judge):\n(?:[ \t]+.*\n)*?[ \t]+wildcards: system=([\w.-]+).*\n(?:[ \t]+.*\n)*?[ \t]+resources: (.*)"  # noqa: E501
    for cap, expected in (
        (None, {"simulate/served": 16, "simulate/template": 0, "judge/served": 6}),
        (4, {"simulate/served": 4, "simulate/template": 0, "judge/served": 4}),
    ):
        extra = ("--resources", f"llm_slots={cap}") if cap else ()
        text = run_snakemake(workflow_copy, "-n", "--configfile", path, *extra).stdout
        slots = {
            f"{rule}/{system}": int(re.search(r"llm_slots=(\d+)", resources).group(1))
            for rule, system, resources in re.findall(pattern, text)
        }
        assert {k: v for k, v in slots.items() if k in expected} == expected


def test_rerun_reasons_name_the_changed_section_not_the_whole_config(finished_run):
    """A changed setting re-runs provenance with a reason a reader can follow: per-section digests (a
    setting no output depends on, so that the changed params are the record's only reason to re-run)."""
    workdir, config = finished_run
    new = changed(config, lambda c: c["llm"].update(threads=1))
    result = run_snakemake(workdir, "-n", "--configfile", str(write_config(workdir, new, "changed.yaml")))
    text = result.stdout + result.stderr
    provenance = text[text.index("rule provenance:") :].split("\n\n")[0]
    assert "Params have changed" in provenance
    assert '"experiment"' not in text and '"simulator"' not in text  # no config dumped as JSON
    assert len(text) < 20000
