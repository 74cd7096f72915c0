"""Config checks (crseval.core.config_checks): every problem at once, each named by its key path and rule.

The schema states per-value bounds; check_config adds the rules that tie values together (sums,
ordering, unique names), so that no setting the pipeline would turn into silently wrong numbers
(or an exception naming no key) gets past the start of a run.
"""

import copy
import io
import math

import pandas as pd
import pytest
import yaml
from conftest import REPO, default_config, run_snakemake, write_config
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from crseval.core.config_checks import ConfigError, config_warnings
from crseval.core.names import NAME_PATTERN, is_safe_name, safe_slug
from crseval.metrics.basic import jaccard
from crseval.metrics.grounded import TasSettings, tas_value
from crseval.metrics.legacy_cas import CasSettings, score_dialogue
from crseval.metrics.response_stats import TrigramLM
from crseval.planning import check_config, config_schema

SCHEMA = config_schema()
SHIPPED = sorted((REPO / "config").glob("*.yaml"))


def problems(mutate) -> list[str]:
    """The lines of the ConfigError that the default config raises once `mutate` has changed it."""
    config = default_config()
    mutate(config)
    with pytest.raises(ConfigError) as error:
        check_config(config)
    return str(error.value).splitlines()


def has(lines: list[str], *parts: str) -> bool:
    return any(all(part in line for part in parts) for line in lines)


# --- names ---------------------------------------------------------------------------------------


def test_schema_name_patterns_are_the_one_name_pattern():
    assert SCHEMA["properties"]["experiment"]["pattern"] == NAME_PATTERN
    assert SCHEMA["$defs"]["system_name"]["pattern"] == NAME_PATTERN


def test_experiment_names_follow_the_system_name_pattern():
    config = default_config()
    config["experiment"] = "paper:v2"  # ':' as in system names such as gemma:2b
    check_config(config)
    lines = problems(lambda c: c.update(experiment="../elsewhere"))
    assert has(lines, "experiment: '../elsewhere' does not match", "safe folder name")


@pytest.mark.parametrize("name", ["my model", "a/b", "x" * 101, "None", "NA", "nan"])
def test_bad_system_name_is_named_at_the_key(name):
    lines = problems(lambda c: c["systems"][1].update(name=name))
    assert has(lines, f"systems[1].name: {name!r} does not match", "safe folder name")


def test_names_a_csv_reader_takes_for_missing_are_refused_and_slugged_apart():
    """pandas reads a model_metrics.csv row named None back as NaN; names that only contain such a word pass."""
    for name in ("None", "null", "NaN"):
        assert not is_safe_name(name) and safe_slug(name).startswith("model-")
    for name in ("Nonesuch", "nan-1", "NA:2", "none", "na"):
        assert is_safe_name(name) and safe_slug(name) == name
    # the reason for the rule: pandas reads None back as missing, none as a name
    assert pd.read_csv(io.StringIO("model\nNone\nnone\n"))["model"].isna().tolist() == [True, False]


def test_system_names_must_be_unique():
    lines = problems(lambda c: c["systems"].append({"name": "qwen-ungrounded", "agent": "template"}))
    assert lines[1:] == [
        "systems[4].name: 'qwen-ungrounded' is also the name of systems[1]; "
        "every system needs a unique name (it names the system's results folder)"
    ]


# --- cross-value rules ---------------------------------------------------------------------------


@pytest.mark.parametrize("lambdas, total", [([1, 1, 1], "3"), ([0.1, 0.3, 0.5], "0.9"), ([0, 0, 0], "0")])
def test_lm_lambdas_must_sum_to_one(lambdas, total):
    lines = problems(lambda c: c["scoring"]["response_stats"]["lm"].update(lambdas=lambdas))
    assert has(lines, f"scoring.response_stats.lm.lambdas: {lambdas} sum to {total}", "must sum to 1")


def test_lm_lambdas_summing_to_one_within_rounding_pass():
    config = default_config()
    config["scoring"]["response_stats"]["lm"]["lambdas"] = [0.7, 0.2, 0.1]  # 0.9999999999999999 in floats
    check_config(config)


def test_cas_weights_need_a_positive_sum():
    lines = problems(lambda c: c["scoring"]["cas"].update(weights=dict.fromkeys(c["scoring"]["cas"]["weights"], 0)))
    assert has(lines, "scoring.cas.weights:", "positive sum")


def test_tas_needs_a_positive_alpha_plus_beta():
    lines = problems(lambda c: c["scoring"]["tas"].update(alpha=0, beta=0, gamma=0))
    assert has(lines, "scoring.tas: alpha + beta", "must be positive")
    lines = problems(lambda c: c["scoring"]["tas"].update(alpha=0, beta=0))  # only the copying penalty left
    assert has(lines, "scoring.tas: alpha + beta", "must be positive")


@pytest.mark.parametrize("pair", [[6, 1], [3, 3]])
def test_delay_range_must_be_strictly_increasing(pair):
    lines = problems(lambda c: c["scoring"]["cas"].update(delay_range=pair))
    assert f"scoring.cas.delay_range: {pair} must be strictly increasing (first < second)" in lines


@pytest.mark.parametrize("value", [math.nan, math.inf])
def test_numbers_must_be_finite(value):
    """YAML's .nan passes every minimum and maximum of the schema (NaN compares false)."""
    lines = problems(lambda c: c["scoring"]["cas"]["weights"].update(delay=value))
    assert has(lines, f"scoring.cas.weights.delay: {value} is not a finite number")


# --- warnings: the config runs, but a metric has nothing to measure -------------------------------


def with_plan(turns: int, shift_every: int, **sessions) -> dict:
    config = default_config()
    config["sessions"].update(turns=turns, **sessions)
    config["simulator"]["shift_every"] = shift_every
    return config


def test_a_shift_on_the_last_turn_runs_with_a_warning_naming_what_cannot_be_measured(caplog):
    """10 turns with shift_every 3 shift at turns 4, 7 and 10: no user turn follows the last shift."""
    config = with_plan(10, 3)
    with caplog.at_level("WARNING", logger="crseval.core.config_checks"):
        check_config(config)  # no problem: the run goes on
    [line] = config_warnings(config, SCHEMA)
    assert line.startswith("sessions.turns: 10 with simulator.shift_every: 3 puts the last shift on the last turn")
    assert "(shift turns: 4, 7, 10)" in line and "success and turns_to_success cannot be measured" in line
    assert "sessions.turns: 11 (or 9) leaves a reply after the last shift" in line
    assert [r.getMessage() for r in caplog.records] == [f"config warning: {line}"]
    # the suggestion is a plan without the warning, which keeps a shift
    assert config_warnings(with_plan(11, 3), SCHEMA) == config_warnings(with_plan(9, 3), SCHEMA) == []
    # with the first shift on the last turn, one turn fewer would have no shift: not suggested
    [first] = config_warnings(with_plan(4, 3), SCHEMA)
    assert "sessions.turns: 5 leaves a reply" in first and "(or" not in first.split(";")[-1]


@pytest.mark.parametrize("turns, shift_every", [(6, 2), (12, 3), (20, 3), (9, 3), (2, 2), (10, 10)])
def test_no_warning_where_a_reply_after_the_last_shift_is_judged(turns, shift_every, caplog):
    with caplog.at_level("WARNING", logger="crseval.core.config_checks"):
        check_config(with_plan(turns, shift_every))
    assert config_warnings(with_plan(turns, shift_every), SCHEMA) == [] and not caplog.records


def test_a_shift_at_every_turn_is_warned_at_shift_every():
    [line] = config_warnings(with_plan(6, 1), SCHEMA)
    assert line.startswith("simulator.shift_every: 1 shifts at every turn, the last (6) too")
    assert "success and turns_to_success cannot be measured" in line and "shift_every: 2 or more" in line


def test_no_shift_warning_for_imported_dialogues():
    assert config_warnings(with_plan(10, 3, source="import", import_paths="logs/*.json"), SCHEMA) == []


# --- per-value bounds, stated by the schema ------------------------------------------------------


@pytest.mark.parametrize(
    "mutate, line",
    [
        (
            lambda c: c["scoring"]["cas"].update(alignment_threshold=1.2),
            "scoring.cas.alignment_threshold: 1.2 is greater than the maximum of 1",
        ),
        (
            lambda c: c["scoring"]["tas"].update(recovery_threshold=-0.1),
            "scoring.tas.recovery_threshold: -0.1 is less than the minimum of 0",
        ),
        (
            lambda c: c["simulator"].update(accept_rate=1.5),
            "simulator.accept_rate: 1.5 is greater than the maximum of 1",
        ),
        (
            lambda c: c["scoring"]["response_stats"]["lm"].update(lambdas=[1.5, -0.5, 0]),
            "scoring.response_stats.lm.lambdas[1]: -0.5 is less than the minimum of 0",
        ),
        (
            lambda c: c["scoring"]["cas"]["weights"].update(delay=-1),
            "scoring.cas.weights.delay: -1 is less than the minimum of 0",
        ),
        (
            lambda c: c["scoring"]["response_stats"]["lm"].update(k=0),
            "scoring.response_stats.lm.k: 0 is less than or equal to the minimum of 0",
        ),
        (lambda c: c["systems"][0]["options"].update(top_p=0), "systems[0].options.top_p: 0 is less than or equal"),
    ],
)
def test_value_out_of_its_bounds_is_named_at_the_key(mutate, line):
    assert has(problems(mutate), line)


# --- mistakes inside a system or backend entry are reported at the inner key ----------------------


@pytest.mark.parametrize(
    "mutate, line",
    [
        (
            lambda c: c["systems"][2]["backend"].update(type="olama"),
            "systems[2].backend.type: 'olama' is not one of ['llamacpp', 'ollama', 'openai'] (did you mean 'ollama'?)",
        ),
        (
            lambda c: c["systems"][0].update(promt=c["systems"][0].pop("prompt")),
            "systems[0]: Additional properties are not allowed ('promt' was unexpected) (did you mean 'prompt'?)",
        ),
        (lambda c: c["systems"][0].pop("prompt"), "systems[0]: 'prompt' is a required property"),
        (
            lambda c: c["systems"][3].update(agent="gpt"),
            "systems[3].agent: 'gpt' is not one of "
            "['template', 'llm', 'oracle', 'lagging', 'flaky', 'stubborn', 'random', 'parrot', 'literal', 'asker', "
            "'prompt_echo', 'chat', 'http', 'python', 'tools']",
        ),
        (lambda c: c["systems"][3].update(agent="lagging"), "systems[3]: 'lag' is a required property"),
        (lambda c: c["systems"][3].update(agent="prompt_echo"), "systems[3]: 'prompt' is a required property"),
        (
            lambda c: c["systems"][3].update(lag=2),
            "systems[3]: Additional properties are not allowed ('lag' was unexpected)",
        ),
        (
            lambda c: c["systems"][1]["backend"].update(type="ollama"),
            "systems[1].backend: 'host' is a required property",
        ),
        (
            lambda c: c["systems"][1]["backend"].update(num_ctx=4096),
            "systems[1].backend: Additional properties are not allowed ('num_ctx' was unexpected)"
            " (did you mean 'n_ctx'?)",
        ),
        (
            lambda c: c["judge"]["backend"].update(modle="x"),
            "judge.backend: Additional properties are not allowed ('modle' was unexpected) (did you mean 'model'?)",
        ),
        (
            lambda c: c["lda"].update(no_belw=3),
            "lda: Additional properties are not allowed ('no_belw' was unexpected) (did you mean 'no_below'?)",
        ),
    ],
)
def test_mistake_in_an_entry_is_named_at_the_inner_key(mutate, line):
    lines = problems(mutate)
    assert line in lines
    assert not has(lines, "is not valid under any of the given schemas")


def test_every_problem_is_reported_at_once():
    def mutate(c):
        c["scoring"]["response_stats"]["lm"]["lambdas"] = [1, 1, 1]
        c["scoring"]["cas"]["delay_range"] = [6, 1]
        c["scoring"]["cas"]["weights"] = dict.fromkeys(c["scoring"]["cas"]["weights"], 0.0)
        c["systems"][2]["backend"]["type"] = "olama"
        c["systems"][3]["name"] = "gemma-grounded"

    lines = problems(mutate)
    assert lines[0].startswith("5 problems in the config")
    for key in (
        "scoring.response_stats.lm.lambdas:",
        "scoring.cas.delay_range:",
        "scoring.cas.weights:",
        "systems[2].backend.type:",
        "systems[3].name:",
    ):
        assert sum(line.startswith(key) for line in lines) == 1, key
    assert len(lines) == 6


def test_a_config_of_the_wrong_shape_reports_instead_of_crashing():
    lines = problems(lambda c: c["scoring"].update(cas=[1, 6], tas="weights"))
    assert has(lines, "scoring.cas: [1, 6] is not of type 'object'") and has(lines, "scoring.tas: 'weights' is not of")
    with pytest.raises(ConfigError, match="config: \\[\\] is not of type 'object'"):
        check_config([])


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_shipped_configs_pass(path):
    check_config(yaml.safe_load(path.read_text()))


TEST_EXPERIMENTS = sorted((REPO / "config" / "test").glob("*.yaml"))


def test_the_test_experiments_are_there():
    assert {p.stem for p in TEST_EXPERIMENTS} >= {"rerun", "cluster", "calibration_demo"}


@pytest.mark.parametrize("path", TEST_EXPERIMENTS, ids=lambda p: p.name)
def test_test_experiments_pass(path):
    """config/test/*.yaml are whole experiments (the tests run them as they are, or with a server's host)."""
    check_config(yaml.safe_load(path.read_text()))


# --- what the user of the workflow sees -----------------------------------------------------------


@pytest.mark.workflow
def test_snakemake_prints_every_problem_naming_its_key(workflow_copy):
    config = default_config()
    config["scoring"]["response_stats"]["lm"]["lambdas"] = [1, 1, 1]
    config["scoring"]["cas"]["delay_range"] = [6, 1]
    config["systems"][2]["backend"]["type"] = "olama"
    result = run_snakemake(workflow_copy, "-n", "--configfile", str(write_config(workflow_copy, config)), check=False)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "scoring.response_stats.lm.lambdas: [1, 1, 1] sum to 3" in output
    assert "scoring.cas.delay_range: [6, 1] must be strictly increasing (first < second)" in output
    assert "systems[2].backend.type: 'olama' is not one of ['llamacpp', 'ollama', 'openai']" in output
    assert "Failed validating" not in output  # no schema dump


@pytest.mark.workflow
def test_snakemake_fills_the_schema_defaults(workflow_copy):
    config = default_config()
    del config["sessions"]["source"], config["agent"], config["stats"]["power"]  # a key, a section, a nested section
    result = run_snakemake(workflow_copy, "-n", "--configfile", str(write_config(workflow_copy, config)))
    assert "rule simulate:" in result.stdout + result.stderr


# --- property: a single in-bounds change passes, or fails naming that key, never anything else -----


def _branches(schema: dict, instance) -> list[dict]:
    """`schema` after $ref, and the `then` of every if/then (top level or in allOf) that `instance` meets."""
    while "$ref" in schema:
        schema = SCHEMA["$defs"][schema["$ref"].rsplit("/", 1)[1]]
    found = [schema]
    for part in [schema, *schema.get("allOf", [])]:
        if "if" in part and Draft202012Validator(part["if"]).is_valid(instance):
            found += _branches(part.get("then", {}), instance)
    return found


def _numeric_leaves(schema: dict, instance, path: tuple = ()):
    """(path, merged schema) of every number in `instance` (the default config), found in `schema`."""
    parts = [s for s in _branches(schema, instance) if isinstance(s, dict)]
    if isinstance(instance, bool) or instance is None:
        return
    if isinstance(instance, (int, float)):
        merged = {}
        for part in parts:
            merged.update(
                {
                    k: v
                    for k, v in part.items()
                    if k in ("type", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
                }
            )
        yield path, merged
    elif isinstance(instance, dict):
        for key, value in instance.items():
            sub = next(
                (
                    p["properties"][key]
                    for p in parts
                    if key in p.get("properties", {}) and isinstance(p["properties"][key], dict)
                ),
                None,
            )
            if sub is not None:
                yield from _numeric_leaves(sub, value, (*path, key))
    elif isinstance(instance, list):
        items = next(p["items"] for p in parts if "items" in p)
        for i, value in enumerate(instance):
            yield from _numeric_leaves(items, value, (*path, i))


DEFAULT = default_config()
NUMERIC = list(_numeric_leaves(SCHEMA, DEFAULT))


def dotted(path: tuple) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")


def in_bounds(bounds: dict) -> st.SearchStrategy:
    """Any value the schema allows: floats (for numbers) and integers between the bounds."""
    low_open, high_open = "exclusiveMinimum" in bounds, "exclusiveMaximum" in bounds
    low = bounds.get("minimum", bounds.get("exclusiveMinimum", -1e6))
    high = bounds.get("maximum", bounds.get("exclusiveMaximum", low + 1e6))
    first = math.floor(low) + 1 if low_open else math.ceil(low)
    last = math.ceil(high) - 1 if high_open else math.floor(high)
    integers = st.integers(first, last)
    if bounds["type"] == "integer":
        return integers
    floats = st.floats(low, high, exclude_min=low_open, exclude_max=high_open)
    return floats | integers if first <= last else floats


def names_key(line: str, key: str) -> bool:
    """The problem `line` is about `key`, or about the group of values `key` belongs to."""
    path = line.split(":", 1)[0]
    return key == path or key.startswith((f"{path}.", f"{path}["))


def changed_values(path: tuple, bounds: dict) -> st.SearchStrategy:
    """Any value the schema allows at `path`, often a bound or the value of a neighbour (where ties
    and sums go wrong: a range [6, 6], weights that cancel)."""
    parent = _parent(DEFAULT, path)
    neighbours = [
        v
        for v in (parent.values() if isinstance(parent, dict) else parent)
        if isinstance(v, (int, float)) and not isinstance(v, bool)
    ]
    edges = [
        v
        for v in [*neighbours, bounds.get("minimum"), bounds.get("maximum"), 0, 1]
        if v is not None and Draft202012Validator(bounds).is_valid(v)
    ]
    return st.sampled_from(edges) | in_bounds(bounds) if edges else in_bounds(bounds)


def _parent(config: dict, path: tuple):
    for key in path[:-1]:
        config = config[key]
    return config


def test_the_property_covers_every_kind_of_numeric_key():
    keys = {dotted(path) for path, _ in NUMERIC}
    assert {
        "scoring.cas.delay_range[0]",
        "scoring.response_stats.lm.lambdas[2]",
        "scoring.cas.weights.delay",
        "scoring.tas.alpha",
        "systems[0].options.top_p",
        "systems[0].backend.n_ctx",
        "judge.options.temperature",
        "stats.power.power",
        "lda.minimum_probability",
    } <= keys
    assert all(bounds.get("type") in ("integer", "number") for _, bounds in NUMERIC)


CAS_DIALOGUE = (
    ["crime film please", "crime film again please", "now romance instead", "now romance instead please"],
    ["a crime film for you", "another crime film", "more crime film", "a romance in paris"],
    [["crime", "heist"], ["crime", "heist"], ["romance", "paris"], ["romance", "paris"]],
    [["crime"], ["crime", "heist"], ["crime", "heist"], ["romance", "paris", "love"]],
)


def word_jaccard(a, b):
    return jaccard(set(a.split()), set(b.split()))


@pytest.mark.parametrize("path, bounds", NUMERIC, ids=[dotted(path) for path, _ in NUMERIC])
def test_one_in_bounds_change_passes_or_fails_naming_that_key(path, bounds):
    @settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(changed_values(path, bounds))
    def check(value):
        config = copy.deepcopy(DEFAULT)
        _parent(config, path)[path[-1]] = value
        passes_or_names_the_key(config, dotted(path))

    check()


def passes_or_names_the_key(config: dict, key: str) -> None:
    try:
        check_config(config)
    except ConfigError as error:
        lines = str(error).splitlines()[1:]
        assert lines and all(names_key(line, key) for line in lines), (key, lines)
        return
    # a config that passes gives numbers that mean something: a finite CAS, a positive TAS for a
    # perfect turn, and a language model whose probabilities sum to 1
    scoring = config["scoring"]
    cas = score_dialogue(*CAS_DIALOGUE, word_jaccard, CasSettings.from_config(scoring["cas"]))[0]
    assert math.isfinite(cas["context_adaptation_score"])
    assert tas_value(1.0, 1.0, 0.0, TasSettings.from_config(scoring["tas"])) > 0
    lm_config = scoring["response_stats"]["lm"]
    lm = TrigramLM(k=lm_config["k"], lambdas=tuple(lm_config["lambdas"])).fit(["a heist in paris", "a crime in rome"])
    assert sum(lm.prob("a", "heist", w) for w in lm.vocabulary) == pytest.approx(1.0)


@pytest.mark.parametrize(
    "where, value, hint",
    [
        (("systems", 3, "agent"), "templat", "(did you mean 'template'?)"),
        (("systems", 0, "backend", "type"), "olama", "(did you mean 'ollama'?)"),
        (("sessions", "import_format"), "jsonlines", "(did you mean 'jsonl'?)"),
        (("scoring", "metrics", 0), "tass", "(did you mean 'tas'?)"),
        (("stats", "family", "method"), "xyz", "is not one of ['holm', 'bh', 'bonferroni']\n"),
    ],
)
def test_an_unknown_name_lists_the_known_ones_and_the_closest(where, value, hint):
    config = default_config()
    node = config
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = value
    with pytest.raises(ConfigError) as caught:
        check_config(config)
    assert hint in str(caught.value) + "\n" and "did you mean" not in str(caught.value).replace(hint, "")


def test_a_misspelt_key_is_named_with_the_closest_known_one():
    config = default_config()
    config["lda"]["pases"] = 3
    with pytest.raises(ConfigError, match=r"lda: .*'pases' was unexpected\) \(did you mean 'passes'\?\)"):
        check_config(config)
