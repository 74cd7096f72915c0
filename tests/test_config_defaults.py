"""Defaults: a setting left out of a config takes the schema's default, which is the default
experiment's value, and a config written for the first release still validates and runs.

The library's settings dataclasses carry the same defaults (or none), so that code that builds
settings without a config behaves like the default experiment.
"""

import copy
import dataclasses

import pyarrow.parquet as pq
import pytest
import yaml
from conftest import REPO, default_config, planned_jobs, run_snakemake

from crseval.catalog.topics import LdaSettings
from crseval.core.config_checks import SCHEMA_PATH, ConfigError, fill_defaults, load_schema
from crseval.llm.base import LLMRequest
from crseval.llm.client import RetryPolicy
from crseval.metrics.grounded import TasSettings
from crseval.metrics.legacy_cas import CasSettings
from crseval.planning import check_config, config_schema
from crseval.simulate.systems.agents import AgentSettings
from crseval.simulate.user.user_plan import SimulatorSettings

SCHEMA = config_schema()  # the file with every kind's part composed in
FIRST_RELEASE = REPO / "tests" / "data" / "first_release_config.yaml"


def test_the_schema_is_a_json_schema_and_reads_the_same_without_libyaml():
    """The jobs read the schema unchecked (crseval.core.config_checks.load_schema): the check is here, of the
    file and of the schema the kinds compose from it."""
    from jsonschema import Draft202012Validator

    Draft202012Validator.check_schema(load_schema())
    Draft202012Validator.check_schema(SCHEMA)
    assert yaml.safe_load(SCHEMA_PATH.read_text()) == load_schema()


def first_release() -> dict:
    return yaml.safe_load(FIRST_RELEASE.read_text())


def schema_default(path: tuple):
    node = SCHEMA
    for key in path:
        node = node["properties"][key]
    return node["default"]


def filled_default(path: tuple):
    """The value a config that leaves out `path` runs with (a section: its keys' defaults)."""
    config = {"experiment": "x", "catalog": {"path": "catalog.json"}, "systems": []}
    fill_defaults(config, SCHEMA)
    for key in path:
        config = config[key]
    return config


def leaves(value, path: tuple = ()):
    """(path, value) of every non-dict value under `value`; an empty dict is a leaf."""
    if isinstance(value, dict) and value:
        for key, item in value.items():
            yield from leaves(item, (*path, key))
    else:
        yield path, value


def keywords_at(schema, keyword: str, path: tuple = ()):
    """The path of every use of `keyword` in `schema` (values of `properties` are keys, not keywords)."""
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == keyword and (len(path) == 0 or path[-1] != "properties"):
                yield path
            yield from keywords_at(value, keyword, (*path, key))
    elif isinstance(schema, list):
        for i, value in enumerate(schema):
            yield from keywords_at(value, keyword, (*path, i))


# --- the schema's defaults ------------------------------------------------------------------------


def test_every_default_is_where_fill_defaults_reaches_it():
    """fill_defaults follows `properties` from the root: a default anywhere else would never be used."""
    paths = list(keywords_at(SCHEMA, "default"))
    assert len(paths) > 80
    for path in paths:
        assert len(path) % 2 == 0 and all(key == "properties" for key in path[::2]), path


def test_no_required_key_has_a_default():
    for path in keywords_at(SCHEMA, "default"):
        parent = SCHEMA
        for key in path[:-2]:
            parent = parent[key]
        assert path[-1] not in parent.get("required", []), path


def test_only_the_experiment_catalog_and_systems_must_be_given():
    assert SCHEMA["required"] == ["experiment", "catalog", "systems"]
    assert SCHEMA["properties"]["catalog"]["required"] == ["path"]


def test_a_minimal_config_filled_is_the_default_experiment():
    """Every default is the default experiment's value; the judge and the sessions' size are what it sets
    otherwise."""
    shipped = default_config()
    judge = {key: shipped["judge"][key] for key in ("enabled", "backend", "options")}
    minimal = {
        "experiment": "demo",
        "catalog": {"path": shipped["catalog"]["path"]},
        "systems": shipped["systems"],
        "judge": judge,
        "sessions": {"count": 8, "shard_size": 8},
    }
    check_config(minimal)
    fill_defaults(minimal, SCHEMA)
    assert minimal == shipped
    assert schema_default(("judge", "enabled")) is False  # a config without a judge section runs no judge


def test_fill_defaults_creates_sections_keeps_given_values_and_wrong_shapes():
    config = {"experiment": "x", "catalog": {"path": "c.json"}, "lda": {"num_topics": 50}, "agent": 5}
    config["scoring"] = {"cas": {"weights": {"recovery": 0.5}}}
    fill_defaults(config, SCHEMA)
    assert config["lda"]["num_topics"] == 50 and config["lda"]["passes"] == schema_default(("lda", "passes"))
    assert config["agent"] == 5  # left for check_config to report
    assert config["stats"]["power"] == {"power": 0.8, "differences": {}}  # created, then filled
    assert config["scoring"]["cas"]["weights"]["recovery"] == 0.5
    assert config["scoring"]["cas"]["weights"]["delay"] == schema_default(("scoring", "cas", "weights", "delay"))
    again = copy.deepcopy(config)
    fill_defaults(again, SCHEMA)
    assert again == config
    config["stats"]["power"]["differences"]["tas"] = 0.1  # a default is copied, never shared
    assert schema_default(("stats", "power", "differences")) == {}


def test_check_config_sees_the_defaults_and_leaves_the_config_alone():
    config = default_config()
    del config["scoring"]["cas"]["weights"]["cross_coherence"], config["scoring"]["cas"]["weights"]["context_retention"]
    config["scoring"]["cas"]["weights"].update(recovery=0, delay=0, interference=0)
    given = copy.deepcopy(config)
    check_config(config)  # the filled-in weights give a positive sum
    assert config == given
    config["scoring"]["cas"]["weights"].update(cross_coherence=0, context_retention=0)
    with pytest.raises(ConfigError, match="scoring.cas.weights: they sum to 0"):
        check_config(config)


@pytest.mark.parametrize(
    "mutate, line",
    [
        (lambda c: c.pop("systems"), "config: 'systems' is a required property"),
        (lambda c: c["catalog"].pop("path"), "catalog: 'path' is a required property"),
        (lambda c: c["sessions"].update(source="import"), "sessions: 'import_paths' is a required property"),
        (lambda c: c["judge"].pop("backend"), "judge: 'backend' is a required property"),
        (lambda c: c["simulator"]["paraphrase"].update(enabled=True), "simulator.paraphrase: 'backend' is a required"),
    ],
)
def test_settings_without_a_default_are_still_required(mutate, line):
    config = default_config()
    mutate(config)
    with pytest.raises(ConfigError) as error:
        check_config(config)
    assert any(problem.startswith(line) for problem in error.value.problems), error.value.problems


def test_a_switch_left_out_reads_as_off_without_asking_for_its_settings():
    config = default_config()
    del config["judge"], config["simulator"]["paraphrase"], config["sessions"]["source"]
    check_config(config)
    fill_defaults(config, SCHEMA)
    assert config["judge"]["enabled"] is False and config["simulator"]["paraphrase"] == {"enabled": False}
    assert config["sessions"]["source"] == "simulate"


# --- a config of the first release ------------------------------------------------------------------


def test_the_first_release_config_validates_and_takes_todays_defaults():
    old = first_release()
    check_config(old)
    filled = copy.deepcopy(old)
    fill_defaults(filled, SCHEMA)
    given = dict(leaves(old))
    added = {path: value for path, value in leaves(filled) if path not in given}
    # settings added since, each off or neutral by default
    assert set(added) == {
        ("sessions", "source"),
        ("sessions", "import_format"),
        ("agent", "track_plot_keywords"),
        ("llm", "concurrency"),
        ("judge", "top_logprobs"),
        ("stats", "power", "power"),
        ("stats", "power", "differences"),
        ("stats", "permutation_resamples"),
        ("stats", "family", "scope"),
        ("stats", "family", "method"),
        ("stats", "min_sessions"),
        ("stats", "small_sample"),
        ("simulator", "profile"),  # explicit: the thesis user
        ("scoring", "goals"),  # a family without settings
        ("simulator", "realism", "format"),  # used only with a reference, which is not given
        ("simulator", "realism", "folds"),
        ("sessions", "trials"),  # 1: each user meets each system once, as it always has
        ("simulator", "profiles"),  # none defined: the built-ins only
        ("simulator", "voice", "format"),  # used only with a corpus, which is not given
        ("simulator", "voice", "parts"),
        ("simulator", "voice", "learn_part"),
        ("simulator", "voice", "weight"),  # one corpus, its people counted once each, as before
        ("simulator", "voice", "mix"),  # no further corpus
        ("simulator", "voice", "to_a_person"),
        ("sessions", "max_sessions"),  # bounds on the plan, far above the first release's
        ("sessions", "max_jobs"),
        ("human_agreement", "corpora"),  # none: no agreement with people unless corpora are named
        ("human_agreement", "resamples"),
        ("human_agreement", "lead"),  # what the scorecard asks of a metric before the findings page leads with it
    }
    for path, value in added.items():
        assert value == schema_default(path), path
    assert all(filled_value == given[path] for path, filled_value in leaves(filled) if path in given)


@pytest.mark.workflow
def test_the_first_release_config_runs(workflow_copy):
    """Planned whole as it was; the LLM-free part (catalog, topics, the template system's first shard
    and its scores, whose rule reads settings the old config leaves out) run for real. (The provenance
    record comes after every table, so it is checked on a whole run in test_provenance_rerun.py.)"""
    config = workflow_copy / "first_release.yaml"
    config.write_text(FIRST_RELEASE.read_text())
    plan = planned_jobs(run_snakemake(workflow_copy, "-n", "--configfile", str(config)))
    assert plan == {
        "index_catalog": 1,
        "train_lda": 1,
        "simulate": 8,
        "score": 8,
        "judge": 8,
        "aggregate": 1,
        "stats": 1,
        "plots": 1,
        "scorecard": 1,
        "viewer": 1,
        "findings": 1,
        "provenance": 1,
        "all": 1,
    }
    scores = "results/demo/scores/template/shard-0.sessions.parquet"
    run_snakemake(workflow_copy, scores, "--configfile", str(config))
    assert pq.read_table(workflow_copy / scores).num_rows == 3


# --- the library's settings dataclasses --------------------------------------------------------------

# dataclass -> (config section, {field: (key, index) where the field is one element of a pair})
SETTINGS = {
    SimulatorSettings: (("simulator",), {}),
    AgentSettings: (("agent",), {}),
    LdaSettings: (("lda",), {}),
    TasSettings: (("scoring", "tas"), {}),
    CasSettings: (("scoring", "cas"), {"delay_min": ("delay_range", 0), "delay_max": ("delay_range", 1)}),
    RetryPolicy: (("llm",), {}),
}
NOT_SETTINGS = {RetryPolicy: {"max_wait_s"}}  # no config key: a server's Retry-After is capped in code


def defaults(cls) -> dict:
    found = {}
    for field in dataclasses.fields(cls):
        if field.default is not dataclasses.MISSING:
            found[field.name] = field.default
        elif field.default_factory is not dataclasses.MISSING:
            found[field.name] = field.default_factory()
    return found


def as_config(value):
    return list(value) if isinstance(value, tuple) else value


@pytest.mark.parametrize("cls", list(SETTINGS), ids=lambda cls: cls.__name__)
def test_settings_defaults_are_the_default_experiments(cls):
    section, pairs = SETTINGS[cls]
    shipped = default_config()
    for key in section:
        shipped = shipped[key]
    checked = 0
    for name, value in defaults(cls).items():
        if name in NOT_SETTINGS.get(cls, set()):
            continue
        key, index = pairs.get(name, (name, None))
        expected = filled_default((*section, key))
        expected = expected if index is None else expected[index]
        given = shipped[key] if index is None else shipped[key][index]
        assert as_config(value) == expected == given, f"{cls.__name__}.{name}"
        checked += 1
    assert checked >= 2


def test_an_llm_requests_default_options_are_the_default_experiments():
    """A request built without options samples like the default experiment's LLM systems."""
    request = defaults(LLMRequest)
    for system in default_config()["systems"]:
        if system["agent"] == "llm":
            assert {key: request[key] for key in system["options"]} == system["options"], system["name"]
