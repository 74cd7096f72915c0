"""Config schema: shipped configs validate; unknown keys and wrong types fail naming the key."""

import copy
import importlib.util

import pytest
import yaml
from conftest import REPO, default_config, run_snakemake, write_config

from crseval.core.config_checks import ConfigError
from crseval.planning import check_config, config_schema, effective_config


@pytest.mark.parametrize("name", ["config.yaml", "opendialkg.yaml"])
def test_shipped_configs_validate(name):
    check_config(yaml.safe_load((REPO / "config" / name).read_text()))


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda c: c["lda"].update(no_belw=3), "'no_belw' was unexpected"),
        (lambda c: c.update(extra=1), "'extra' was unexpected"),
        (lambda c: c["lda"].update(passes="twenty"), "'twenty' is not of type 'integer'"),
        (lambda c: c["catalog"]["plot_keywords"].update(max_df=1.5), "1.5 is greater than the maximum of 1"),
        (lambda c: c["lda"].update(coherence="c_w"), "'c_w' is not one of"),
        (lambda c: c.update(experiment="has space"), "does not match"),
        (lambda c: c["catalog"].pop("path"), "'path' is a required property"),
    ],
)
def test_bad_config_fails_naming_the_key(mutate, message):
    config = copy.deepcopy(default_config())
    mutate(config)
    with pytest.raises(ConfigError, match=message):
        check_config(config)


@pytest.mark.workflow
def test_workflow_refuses_a_bad_config_at_start(workflow_copy):
    config = default_config()
    config["lda"]["no_belw"] = 3
    result = run_snakemake(workflow_copy, "-n", "--configfile", str(write_config(workflow_copy, config)), check=False)
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert "lda: Additional properties are not allowed ('no_belw' was unexpected)" in output


@pytest.mark.parametrize(
    "mutate",
    [
        lambda c: c["systems"][0].pop("backend"),
        lambda c: c["systems"][0]["backend"].update(type="vllm"),
        lambda c: c["systems"][0]["backend"].update(type="ollama"),  # no host
        lambda c: c["systems"].append({"name": "bad name", "agent": "template"}),
        lambda c: c["simulator"]["paraphrase"].update(enabled=True),  # no backend/options
        lambda c: c["simulator"].update(field_order=["genre", "genre"]),
    ],
)
def test_bad_system_or_simulator_config_fails(mutate):
    config = copy.deepcopy(default_config())
    mutate(config)
    with pytest.raises(ConfigError):
        check_config(config)


@pytest.mark.workflow
def test_duplicate_system_names_fail_at_start(workflow_copy):
    config = default_config()
    config["systems"].append(dict(config["systems"][-1]))
    result = run_snakemake(workflow_copy, "-n", "--configfile", str(write_config(workflow_copy, config)), check=False)
    assert result.returncode != 0 and "unique name" in result.stdout + result.stderr


PAPER_JOBS = {
    "index_catalog": 1,
    "train_lda": 1,
    "simulate": 120,
    "score": 120,
    "judge": 120,
    "aggregate": 1,
    "stats": 1,
    "plots": 1,
    "scorecard": 1,
    "viewer": 1,
    "findings": 1,
    "provenance": 1,
    "all": 1,
}


SLURM_PLUGIN = importlib.util.find_spec("snakemake_executor_plugin_slurm") is not None


@pytest.mark.workflow
@pytest.mark.parametrize(
    "profile",
    [
        None,
        pytest.param(
            "profiles/slurm",
            marks=pytest.mark.skipif(not SLURM_PLUGIN, reason='the SLURM executor: pip install -e ".[slurm]"'),
        ),
    ],
)
def test_paper_config_dry_run_lists_the_expected_jobs(workflow_copy, profile):
    """6 models x 1,000 sessions in shards of 50: 20 jobs per system for simulate, score and judge."""
    from conftest import FULL_CATALOG, planned_jobs

    config = effective_config(REPO / "config" / "paper.yaml")
    config["catalog"]["path"] = str(
        FULL_CATALOG if FULL_CATALOG.exists() else REPO / "resources" / "catalog" / "demo_movies.json"
    )
    args = ["-n", "--configfile", str(write_config(workflow_copy, config))]
    if profile:
        args += ["--profile", profile]
    assert planned_jobs(run_snakemake(workflow_copy, *args)) == PAPER_JOBS
    assert [s["backend"]["type"] for s in config["systems"]] == ["ollama"] * 6
    assert (config["sessions"]["count"], config["sessions"]["turns"]) == (1000, 20)
    assert (
        config["scoring"]["cas"]["sim_topic_shift"],
        config["scoring"]["cas"]["topic_jaccard_shift"],
        config["scoring"]["cas"]["alignment_threshold"],
    ) == (0.55, 0.35, 0.65)


SHIPPED = sorted([*(REPO / "config").glob("*.yaml"), *(REPO / "config" / "test").glob("*.yaml")])


def settings_equal_to_defaults(path) -> list[str]:
    """The settings of a config file (outside `systems`) whose value is the schema's default anyway."""
    from crseval.core.config_checks import fill_defaults

    written = yaml.safe_load(path.read_text())

    def sections(node):
        return {k: sections(v) for k, v in node.items() if isinstance(v, dict)}

    defaults = {**sections(written), "experiment": written["experiment"]}
    fill_defaults(defaults, config_schema())
    found = []

    def walk(node, default, where):
        for key, value in node.items():
            if key in ("systems", "experiment") or not isinstance(default, dict) or key not in default:
                continue
            if isinstance(value, dict):
                walk(value, default[key], f"{where}{key}.")
            elif value == default[key]:
                found.append(f"{where}{key}")

    walk(written, defaults, "")
    return found


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.relative_to(REPO).as_posix())
def test_shipped_configs_say_only_what_they_change(path):
    assert settings_equal_to_defaults(path) == []


def test_the_default_check_finds_a_default(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("experiment: x\nlda: {passes: 3, num_topics: 12}\nsessions: {shard_size: 3}\n")
    assert settings_equal_to_defaults(path) == ["lda.num_topics", "sessions.shard_size"]


def test_config_show_prints_the_effective_config_of_files_merged_in_order(tmp_path, capsys):
    from crseval.cli import main

    overlay = tmp_path / "more.yaml"
    overlay.write_text("sessions: {count: 9}\nlda: {passes: 4}\n")
    assert main(["config", "show", str(REPO / "config" / "config.yaml"), str(overlay)]) == 0
    shown = yaml.safe_load(capsys.readouterr().out)
    expected = effective_config(REPO / "config" / "config.yaml")
    expected["sessions"]["count"], expected["lda"]["passes"] = 9, 4
    assert shown == expected and shown["sessions"]["turns"] == 6 and shown["llm"]["timeout_s"] == 300
    overlay.write_text("sessions: {count: -1}\n")
    assert main(["config", "show", str(REPO / "config" / "config.yaml"), str(overlay)]) == 2
    assert "sessions.count" in capsys.readouterr().err


@pytest.mark.parametrize(
    "system, key",
    [
        ({"name": "a", "agent": "llm", "prompt": "p.txt"}, "prompt"),
        ({"name": "a", "agent": "chat", "system_prompt": "s.txt"}, "system_prompt"),
        ({"name": "a", "agent": "chat"}, None),
        ({"name": "a", "agent": "http", "url": "http://x/"}, None),
        ({"name": "a", "agent": "template"}, None),
    ],
)
def test_one_place_says_which_prompt_file_a_system_reads(system, key):
    from crseval.planning import prompts_used, system_prompt_key

    assert system_prompt_key(system) == key
    used = prompts_used({"systems": [system], "judge": {"enabled": False}, "scoring": {"metrics": []}})
    assert used == ({system[key]: ["systems.a"]} if key else {})
