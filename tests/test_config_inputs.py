"""Every file a config names is checked before any job runs, and a missing one is named by its key."""

from __future__ import annotations

import copy

import pytest
from conftest import REPO, default_config, run_snakemake, write_config

from crseval.core.config_checks import ConfigError, fill_defaults
from crseval.planning import check_inputs, config_schema, resolve_experiment


def filled(config: dict) -> dict:
    config = copy.deepcopy(config)
    fill_defaults(config, config_schema())
    return config


def problems(config: dict) -> list[str]:
    try:
        check_inputs(config, REPO)
    except ConfigError as error:
        return error.problems
    return []


def test_the_shipped_default_config_names_only_files_that_exist():
    assert problems(filled(default_config())) == []


def test_every_missing_file_is_named_by_its_key(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # relative resources/ paths then come from the workflow's own folder
    config = filled(default_config())
    config["catalog"]["path"] = "resources/catalog/demo_movie.json"  # one letter off
    config["systems"][0]["prompt"] = "prompts/mine.txt"
    config["systems"][1]["backend"] = {"type": "llamacpp", "model": "models/absent.gguf"}
    config["judge"].update(enabled=True, prompt="resources/prompts/judge.txt")
    assert problems(config) == [
        "catalog.path: resources/catalog/demo_movie.json does not exist",
        "systems[0].prompt: prompts/mine.txt does not exist",
        "systems[1].backend.model: models/absent.gguf does not exist",
    ]


def test_files_of_features_that_are_off_are_not_required():
    config = filled(default_config())
    config["judge"].update(enabled=False, prompt="no/such/judge.txt")
    config["systems"] = [{"name": "template", "agent": "template", "prompt": "no/such/prompt.txt"}]
    assert problems(config) == []


def test_an_import_glob_that_matches_nothing_is_named():
    config = filled(default_config())
    config["sessions"].update(source="import", import_paths="no/such/logs/*.json")
    assert problems(config) == ["sessions.import_paths: no/such/logs/*.json matches no file"]


def test_a_validity_table_from_a_run_not_yet_made_is_named_with_the_way_to_make_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = filled(default_config())
    config["human_agreement"] = {"validity_table": "results/calibration/stats/validity.csv"}
    assert problems(config) == [
        "human_agreement.validity_table: results/calibration/stats/validity.csv does not exist (run the calibration "
        "experiment first: snakemake --cores 2 --configfile config/calibration.yaml)"
    ]
    (tmp_path / "results/calibration/stats").mkdir(parents=True)
    (tmp_path / "results/calibration/stats/validity.csv").write_text("metric,check,verdict\n")
    assert problems(config) == []


def test_a_calibration_config_is_named_when_missing_and_not_given_beside_a_validity_table(tmp_path, monkeypatch):
    from crseval.core.config_checks import ConfigError, check_config

    monkeypatch.chdir(tmp_path)
    config = filled(default_config())
    config["human_agreement"] = {"calibration_config": "config/calibrate.yaml"}
    assert problems(config) == ["human_agreement.calibration_config: config/calibrate.yaml does not exist"]
    config["human_agreement"]["validity_table"] = "results/calibration/stats/validity.csv"
    with pytest.raises(ConfigError) as error:
        check_config(config, config_schema())
    assert error.value.problems == [
        "human_agreement.calibration_config: give either validity_table (a finished calibration run) or "
        "calibration_config (run it here), not both"
    ]


@pytest.mark.workflow
def test_a_typo_after_a_finished_run_stops_before_any_job(workflow_copy):
    config = {
        "experiment": "typo",
        "catalog": {"path": "resources/catalog/demo_movies.json"},
        "sessions": {"count": 2, "turns": 3, "shard_size": 2},
        "systems": [{"name": "template", "agent": "template"}],
        "scoring": {"response_stats": {"embeddings": False}},
    }
    run_snakemake(workflow_copy, "--configfile", str(write_config(workflow_copy, config)))
    results = workflow_copy / "results" / "typo"
    before = {p: p.stat().st_mtime_ns for p in results.rglob("*") if p.is_file()}
    config["catalog"]["path"] = "resources/catalog/demo_movie.json"
    config["scoring"]["tas"] = {"recovery_threshold": 0.6}  # a change that would re-run scoring
    result = run_snakemake(workflow_copy, "--configfile", str(write_config(workflow_copy, config)), check=False)
    assert result.returncode != 0
    assert "catalog.path: resources/catalog/demo_movie.json does not exist" in result.stdout + result.stderr
    assert {p: p.stat().st_mtime_ns for p in results.rglob("*") if p.is_file()} == before  # no job ran


def test_the_simulate_jobs_that_read_the_learned_voice_are_those_whose_user_needs_it():
    """One rule says it (crseval.simulate.user.profiles.needs_learned_voice): the user speaks with the voice, wants
    what people ask for or fits knobs to it, or the rewording shows the voice's turns as examples."""
    config = filled(default_config())
    config["simulator"]["profiles"] = {"fitted": {"based_on": "realistic", "fit": ["greeting"]}}
    config["systems"] = [
        {"name": name, "agent": "template", "profile": profile}
        for name, profile in (("a", "explicit"), ("b", "learned"), ("c", "fitted"), ("d", "realistic"))
    ]
    assert resolve_experiment(config, REPO).systems_with_voice == ()  # no corpus to learn a voice from
    config["simulator"]["voice"]["corpus"] = "dialogues.json"
    experiment = resolve_experiment(config, REPO)
    assert experiment.systems_with_voice == ("b", "c")
    assert experiment.profile_of == {"a": "explicit", "b": "learned", "c": "fitted", "d": "realistic"}
    rewording = {"enabled": True, "backend": {"type": "ollama", "model": "small"}, "examples": 2}
    config["simulator"]["paraphrase"] |= rewording
    assert resolve_experiment(config, REPO).systems_with_voice == ("a", "b", "c", "d")
    config["simulator"]["paraphrase"]["examples"] = 0
    assert resolve_experiment(config, REPO).systems_with_voice == ("b", "c")
