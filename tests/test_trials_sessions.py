"""Repeated trials of a simulated user (sessions.trials): shard names, trial seeds, what a trial keeps
from its session and what follows the trial, and the flaky calibration system."""

import pytest
from fake_servers import FakeOllama
from test_sessions import arguments, ollama_system, read_jsonl

from crseval.core.config_checks import ConfigError, check_config
from crseval.core.shards import parse_shard_name, shard_name
from crseval.planning import config_schema
from crseval.simulate.sessions import session_seed, trial_seed
from crseval.simulate.shard import build_shard_runner


def test_shard_names_keep_the_first_trial_as_it_was():
    assert shard_name(3) == shard_name(3, 0) == "3"
    assert shard_name(3, 2) == "3-t2"
    assert parse_shard_name("3") == (3, 0) and parse_shard_name("3-t2") == (3, 2) and parse_shard_name(12) == (12, 0)


def test_trial_seeds_are_the_session_seed_first_then_new_and_stable():
    seed = session_seed(99, 4)
    assert trial_seed(seed, 0) == seed
    others = [trial_seed(seed, t) for t in (1, 2, 3)]
    assert len({seed, *others}) == 4 and others == [trial_seed(seed, t) for t in (1, 2, 3)]
    assert all(0 <= s < 2**31 for s in others)


def run(catalog_files, tmp_path, system, trial, indices=range(0, 3)):
    runner = build_shard_runner(**arguments(catalog_files, system, tmp_path))
    output = tmp_path / f"{system['name']}-{trial}.jsonl"
    runner.run(indices, progress=tmp_path / f"{system['name']}-{trial}.progress", output=output, trial=trial)
    return read_jsonl(output)


def test_a_deterministic_system_repeats_itself_in_every_trial(catalog_files, tmp_path):
    system = {"name": "template", "agent": "template"}
    first, again = run(catalog_files, tmp_path, system, 0), run(catalog_files, tmp_path, system, 2)
    assert [r["session_id"] for r in first] == ["template/s00000", "template/s00001", "template/s00002"]
    assert [r["session_id"] for r in again] == ["template/s00000/t2", "template/s00001/t2", "template/s00002/t2"]
    assert "trial" not in first[0] and {r["trial"] for r in again} == {2}
    assert [r["seed"] for r in again] == [r["seed"] for r in first]  # the same users
    assert [r["turns"] for r in again] == [r["turns"] for r in first]
    assert [r["shift_events"] for r in again] == [r["shift_events"] for r in first]


def test_a_sampled_llm_gets_the_trials_seed_and_the_same_user_plan(catalog_files, tmp_path):
    server = FakeOllama(content=lambda body: f"Try something, seed {body['options']['seed']}.")
    with server:
        system = ollama_system(server.host)
        first, again = (
            run(catalog_files, tmp_path, system, 0, range(1)),
            run(catalog_files, tmp_path, system, 1, range(1)),
        )
    seed = first[0]["seed"]
    assert again[0]["seed"] == seed
    assert first[0]["turns"][0]["system_text"] == f"Try something, seed {seed * 1000 + 1}."
    assert again[0]["turns"][0]["system_text"] == f"Try something, seed {trial_seed(seed, 1) * 1000 + 1}."
    assert first[0]["turns"][0]["user_text"] == again[0]["turns"][0]["user_text"]  # the same user opens the same way
    assert first[0]["shift_events"] == again[0]["shift_events"]  # and plans the same shifts


def test_the_flaky_system_is_the_oracle_or_misses_a_wish_drawn_per_trial(catalog_files, tmp_path):
    flaky = {"name": "flaky", "agent": "flaky", "reliability": 0.5}
    oracle = {"name": "oracle", "agent": "oracle"}
    served = run(catalog_files, tmp_path, oracle, 0, range(8))
    per_trial = [run(catalog_files, tmp_path, flaky, trial, range(8)) for trial in range(4)]
    kinds = set()
    for sessions in per_trial:
        for mine, best in zip(sessions, served, strict=True):
            same = [t["recommended_titles"] for t in mine["turns"]] == [t["recommended_titles"] for t in best["turns"]]
            kinds.add(same)
            if not same:  # a failed session recommends nothing that meets every current wish
                assert not any(t["user_implies"].get("accepts") for t in mine["turns"] if t["user_implies"]), (
                    "a failing session's user took a film"
                )
    assert kinds == {True, False}  # both happen at 0.5 over 32 sessions
    outcomes = [[s["turns"] == o["turns"] for s, o in zip(t, served)] for t in per_trial]
    assert len({tuple(o) for o in outcomes}) > 1  # the draw follows the trial


@pytest.mark.parametrize("value", [-0.1, 1.5])
def test_the_flaky_reliability_is_a_chance(value):
    config = {"systems": [{"name": "f", "agent": "flaky", "reliability": value}]}
    with pytest.raises(ConfigError, match="reliability"):
        check_config(config, config_schema())


def test_imported_dialogues_have_one_trial():
    config = {"sessions": {"source": "import", "import_paths": "x/*.json", "trials": 2}}
    with pytest.raises(ConfigError, match="sessions.trials: 2 repeats simulated users"):
        check_config(config, config_schema())
