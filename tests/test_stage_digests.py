"""Stage digests and code digests (crseval.stage_digests), and comparability read from them (crseval.runs)."""

import copy
import json
import shutil

import pandas as pd
import pytest
from conftest import REPO, copy_workflow, load_test_config

from crseval.runs.comparability import RunError, class_key, compare_runs, differences, read_run
from crseval.stage_digests import code_digest, module_files, stage_digests

SCRIPTS = REPO / "workflow" / "scripts"


def library(paths) -> set[str]:
    return {path.relative_to(REPO / "src" / "crseval").as_posix() for path in paths}


def test_a_script_reaches_the_modules_it_imports_and_no_others():
    simulate = library(module_files([SCRIPTS / "simulate.py"]))
    score = library(module_files([SCRIPTS / "score.py"]))
    assert {"simulate/user/simulator.py", "simulate/shard.py", "core/io.py", "simulate/__init__.py"} <= simulate
    assert not any(path.startswith(("metrics/", "statistics/", "reports/")) for path in simulate)
    assert {"metrics/adherence.py", "metrics/scorer.py"} <= score
    assert "simulate/user/simulator.py" not in score


def test_the_code_digest_follows_content_not_place_or_time(tmp_path):
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
    first, second = copy_workflow(tmp_path / "a"), copy_workflow(tmp_path / "b")
    script = "workflow/scripts/score.py"

    def digest(tree):
        return code_digest([tree / script], tree / "src")

    assert digest(first) == digest(second) == code_digest([REPO / script])
    metric = second / "src" / "crseval" / "metrics" / "adherence.py"
    text = metric.read_text()
    metric.write_text(text + "\n# an edit\n")
    assert digest(second) != digest(first)
    metric.write_text(text)  # back to the same content, with a new mtime
    assert digest(second) == digest(first)
    # a module the script does not reach changes nothing
    (second / "src" / "crseval" / "reports" / "viewer.py").write_text("# another viewer\n")
    assert digest(second) == digest(first)
    # package data counts: the session schema is part of crseval.core
    schema = second / "src" / "crseval" / "core" / "schemas" / "session.schema.yaml"
    schema.write_text(schema.read_text() + "\n# an edit\n")
    assert digest(second) != digest(first)


def config(**changes) -> dict:
    loaded = load_test_config("calibration_demo")
    for key, value in changes.items():
        section, name = key.split("__")
        loaded[section][name] = value
    return loaded


def test_digests_do_not_depend_on_the_experiments_name_or_folder(tmp_path):
    base = stage_digests(config(), REPO)
    renamed = config()
    renamed["experiment"] = "another-name"
    renamed["sessions"]["count"] = 12  # more users: the same users, more of them
    (tmp_path / "tree").mkdir()
    elsewhere = stage_digests(renamed, copy_workflow(tmp_path / "tree"))
    assert json.dumps(base, sort_keys=True) == json.dumps(elsewhere, sort_keys=True)
    # a file by content: the catalog copied elsewhere under another name is the same catalog
    shutil.copy(REPO / "resources" / "catalog" / "demo_movies.json", tmp_path / "films.json")
    moved = config(catalog__path=str(tmp_path / "films.json"))
    assert stage_digests(moved, REPO)["catalog"]["digest"] == base["catalog"]["digest"]


def test_each_setting_changes_its_own_stage_only():
    base = stage_digests(config(), REPO)

    def changed(other) -> set[str]:
        found = {stage for stage in base if stage != "systems" and other[stage]["digest"] != base[stage]["digest"]}
        systems = other["systems"]
        return found | {f"systems.{n}" for n in base["systems"] if systems[n]["digest"] != base["systems"][n]["digest"]}

    assert changed(stage_digests(config(simulator__profile="realistic"), REPO)) == {"user"}
    assert changed(stage_digests(config(stats__alpha=0.01), REPO)) == {"statistics"}
    assert changed(stage_digests(config(sessions__seed=7), REPO)) == {"user"}
    lag = config()
    lag["systems"][1]["lag"] = 3
    assert changed(stage_digests(lag, REPO)) == {"systems.lag1"}
    scoring = config()
    scoring["scoring"]["tas"]["recovery_window"] = 5
    assert changed(stage_digests(scoring, REPO)) == {"metrics"}
    cache = config()
    cache["scoring"]["embedding_cache"] = "elsewhere"  # where the cache lies changes no score
    assert changed(stage_digests(cache, REPO)) == set()


def write_run(folder, stages, stats=None):
    folder.mkdir(parents=True)
    record = {"config": {"stats": stats or {}}, "stages": stages}
    (folder / "provenance.json").write_text(json.dumps(record))
    return read_run(folder)


def test_comparability_names_every_differing_setting_and_refuses_the_user(tmp_path):
    base = stage_digests(config(), REPO)
    other = stage_digests(config(simulator__profile="realistic"), REPO)
    comparability = compare_runs(write_run(tmp_path / "a", base), write_run(tmp_path / "b", other))
    assert [s.stage for s in comparability.refused] == ["user"]
    assert 'simulator.profile: baseline "explicit", run "realistic"' in comparability.stage("user").differences
    assert any(key.startswith("profiles.realistic") for key in comparability.differing_keys)
    assert class_key(read_run(tmp_path / "a"))[0] != class_key(read_run(tmp_path / "b"))[0]


def test_renamed_systems_pair_through_the_map(tmp_path):
    base = stage_digests(config(), REPO)
    renamed = copy.deepcopy(base)
    renamed["systems"]["oracle-v2"] = renamed["systems"].pop("oracle")
    a, b = write_run(tmp_path / "a", base), write_run(tmp_path / "b", renamed)
    plain = compare_runs(a, b)
    assert (plain.only_baseline, plain.only_run) == (["oracle"], ["oracle-v2"])
    mapped = compare_runs(a, b, {"oracle-v2": "oracle"})
    assert mapped.only_baseline == mapped.only_run == [] and mapped.stage("systems.oracle").equal
    with pytest.raises(RunError, match="no system 'nobody'"):
        compare_runs(a, b, {"nobody": "oracle"})
    assert class_key(a) == class_key(b)


def test_records_without_stages_or_past_the_bound_are_refused_with_the_way_out(tmp_path, monkeypatch):
    folder = tmp_path / "old"
    folder.mkdir()
    (folder / "provenance.json").write_text(json.dumps({"schema_version": 2, "outputs": []}))
    with pytest.raises(RunError, match="no stage digests.*--forcerun provenance"):
        read_run(folder)
    (folder / "provenance.json").write_text(json.dumps({"stages": {"catalog": "x"}}))
    with pytest.raises(RunError, match="stages.catalog"):
        read_run(folder)
    (folder / "provenance.json").write_text("[1, 2]")
    with pytest.raises(RunError, match="not a provenance record"):
        read_run(folder)
    monkeypatch.setattr("crseval.runs.comparability.MAX_RECORD_BYTES", 4)
    with pytest.raises(RunError, match="more than the 4"):
        read_run(folder)
    with pytest.raises(RunError, match="not a results folder"):
        read_run(tmp_path / "missing")


def test_differences_walk_objects_key_by_key():
    found = differences({"a": {"b": 1, "c": [1]}, "d": 2}, {"a": {"b": 2, "c": [1]}, "e": 3})
    assert found == ["a.b: baseline 1, run 2", "d: only in the baseline (2)", "e: only in the run (3)"]
    assert differences({"x": "s" * 200}, {"x": "t"})[0].endswith('..., run "t"')


def test_a_sessions_table_without_its_identifiers_is_refused_by_name(tmp_path):
    run = write_run(tmp_path / "a", stage_digests(config(), REPO))
    (run.path / "tables").mkdir()
    pd.DataFrame({"system": ["oracle"], "tas": [0.5]}).to_parquet(run.path / "tables" / "sessions.parquet")
    with pytest.raises(RunError, match="no column session_id, session_index, seed"):
        run.sessions()
    with pytest.raises(RunError, match="model_metrics.csv cannot be read"):
        run.model_metrics()
