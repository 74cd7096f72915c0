"""Checks of an experiment's config: the schema, and the rules that tie values together.

Snakemake's `validate` stops at the first schema error and prints it with a dump of the schema;
`check_config` reports every problem at once, one line each, starting with the key path as it is
written in the YAML file (`systems[2].backend.type`). The schema states what one value may be
(types, bounds, names); the rules here are the ones a JSON schema cannot state because they relate
several values (sums, ordering, unique names). Without them the pipeline runs and gives silently
wrong numbers, or fails late with an exception that names no key. config/README.md ("Validation")
lists the rules.

A setting the schema gives a `default` may be left out: `fill_defaults` writes the default in, so
that a config written before the setting existed keeps working, and every rule (and the provenance
record) sees the value the run uses.
"""

from __future__ import annotations

import copy
import difflib
import functools
import glob
import importlib
import math
import os
from pathlib import Path
from typing import Any, Iterator

import yaml
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, best_match

from crseval.core.names import NAME_PATTERN, NAME_RULE

SCHEMA_PATH = Path(__file__).resolve().with_name("schemas") / "config.schema.yaml"  # package data
SUM_TOLERANCE = 1e-9
LM_LAMBDAS = ("scoring", "response_stats", "lm", "lambdas")
CAS_WEIGHTS = ("scoring", "cas", "weights")
TAS = ("scoring", "tas")
RANGES = (("scoring", "cas", "delay_range"),)  # every [low, high] pair of the schema


class ConfigError(ValueError):
    """Every problem of a config, one per line after a count, each starting with its key path."""

    def __init__(self, problems: list[str], kind: str = "problem"):
        self.problems = list(problems)
        count = f"{len(self.problems)} {kind}{'s' if len(self.problems) != 1 else ''}"
        super().__init__("\n".join([f'{count} in the config (rules: config/README.md, "Validation"):', *self.problems]))


def key_path(path) -> str:
    """('systems', 2, 'backend', 'type') as `systems[2].backend.type`, the root as `config`."""
    text = "".join(f"[{key}]" if isinstance(key, int) else f".{key}" for key in path).lstrip(".")
    return text or "config"


def fill_defaults(config: Any, schema_path: str | Path = SCHEMA_PATH) -> None:
    """Write the schema's default into `config`, in place, for every setting it leaves out.

    A section that is left out and has a default (`{}`) is created, then filled key by key, so an old
    config gains whole sections added since. Values of the wrong shape are left for check_config.
    """
    _fill(config, load_schema(str(schema_path)))


def _fill(value: Any, schema: dict) -> None:
    if not isinstance(value, dict):
        return
    for key, sub in schema.get("properties", {}).items():
        if key not in value and "default" in sub:
            value[key] = copy.deepcopy(sub["default"])
        if key in value:
            _fill(value[key], sub)


def effective_config(*paths: str | Path, schema_path: str | Path = SCHEMA_PATH) -> dict:
    """The config the workflow runs with `--configfile <paths...>`: the files merged in order (a later
    file's mapping updates the earlier one's, key by key, as Snakemake merges them), the schema's defaults
    filled in, checked. Shipped configs hold only what they change; this shows the rest."""
    merged: dict = {}
    for path in paths:
        loaded = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
        if not isinstance(loaded, dict):
            raise ConfigError([f"{path}: a config file holds a mapping of settings"])
        _merge(merged, loaded)
    fill_defaults(merged, schema_path)
    check_config(merged, schema_path)
    return merged


def _merge(into: dict, update: dict) -> None:
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = copy.deepcopy(value)


def check_config(config: Any, schema_path: str | Path = SCHEMA_PATH) -> None:
    """Raise one ConfigError listing every problem of `config`; return if there is none.

    The config is checked as the workflow uses it, with the schema's defaults filled in (on a copy:
    `config` is not changed), so that the rules that relate values see the defaults too.
    """
    filled = copy.deepcopy(config)
    fill_defaults(filled, schema_path)
    problems = [*_schema_problems(filled, str(schema_path)), *_rule_problems(filled)]
    if problems:
        raise ConfigError(list(dict.fromkeys(problems)))


def check_inputs(config: dict, workflow_dir: str | Path, embedded_models=frozenset()) -> None:
    """Raise one ConfigError naming every file the config names that does not exist, by its key.

    Run before any job is planned, so that a typo in a path stops the run at once whatever is already
    under results/ (Snakemake would otherwise re-run nothing upstream of a missing input, or fail
    later without naming the key). Paths are resolved as the rules resolve them (experiment.input_path).
    """
    from crseval.core import experiment

    problems = []
    named = {**experiment.config_inputs(config), **experiment.model_paths(config, frozenset(embedded_models))}
    for key, path in named.items():
        if not os.path.isfile(experiment.input_path(path, workflow_dir)):
            problems.append(f"{key}: {path} does not exist" + (" (or is not a file)" if os.path.exists(path) else ""))
    if not experiment.simulating(config):
        pattern = config["sessions"].get("import_paths")
        if pattern and not glob.glob(pattern):
            problems.append(f"sessions.import_paths: {pattern} matches no file")
        votes = config["sessions"].get("import_votes")
        if votes and not os.path.isfile(votes):
            problems.append(
                f"sessions.import_votes: {votes} does not exist"
                + (" (or is not a file)" if os.path.exists(votes) else "")
            )
    validity = (config.get("human_agreement") or {}).get("validity_table")
    if validity and not os.path.isfile(validity):
        problems.append(
            f"human_agreement.validity_table: {validity} does not exist (run the calibration experiment first: "
            "snakemake --cores 2 --configfile config/calibration.yaml)"
        )
    calibration = (config.get("human_agreement") or {}).get("calibration_config")
    if calibration and not os.path.isfile(calibration):
        problems.append(f"human_agreement.calibration_config: {calibration} does not exist")
    if problems:
        raise ConfigError(problems, "missing input file")


@functools.lru_cache(maxsize=4)
def load_schema(schema_path: str | Path = SCHEMA_PATH) -> dict:
    """The config schema, checked against the JSON Schema meta-schema (one shared copy: do not change it)."""
    schema = yaml.safe_load(Path(schema_path).read_text())
    Draft202012Validator.check_schema(schema)
    return schema


@functools.lru_cache(maxsize=4)
def _validator(schema_path: str) -> Draft202012Validator:
    return Draft202012Validator(load_schema(schema_path))


def _schema_problems(config: Any, schema_path: str) -> Iterator[str]:
    for error in _validator(schema_path).iter_errors(config):
        if error.context:  # a oneOf/anyOf: the error of the alternative that fits best, at its key
            error = best_match(error.context)
        yield f"{key_path(error.absolute_path)}: {_message(error)}"


def _message(error: ValidationError) -> str:
    if error.validator == "pattern" and error.validator_value == NAME_PATTERN:
        return f"{error.message}: a name must be {NAME_RULE}"
    if error.validator == "enum" and isinstance(error.instance, str):
        return error.message + _did_you_mean(error.instance, [str(v) for v in error.validator_value])
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        known = list(error.schema.get("properties", {}))
        unknown = [key for key in error.instance if key not in known]
        if len(unknown) == 1 and known:
            return error.message + _did_you_mean(unknown[0], known)
    return error.message


def _did_you_mean(given: str, known: list[str]) -> str:
    """ " (did you mean 'x'?)" for the closest known name, if one is close; "" otherwise."""
    close = difflib.get_close_matches(given.lower(), known, n=1, cutoff=0.7)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _rule_problems(config: Any) -> Iterator[str]:
    """The cross-value rules; each skips values of the wrong shape, which the schema reports."""
    yield from _finite_numbers(config, ())
    yield from _lm_lambdas(config)
    yield from _cas_weights(config)
    yield from _tas_weights(config)
    yield from _ranges(config)
    yield from _unique_system_names(config)
    yield from _unique_panel_names(config)
    yield from _import_votes(config)
    yield from _in_process_concurrency(config)
    yield from _one_calibration_source(config)
    yield from _python_entry_points(config)


def _at(config: Any, path: tuple) -> Any:
    """The value at `path`, or None where the config has another shape."""
    value = config
    for key in path:
        if isinstance(key, int):
            if not isinstance(value, list) or key >= len(value):
                return None
        elif not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _numbers(value: Any, count: int | None = None) -> list | None:
    """`value` as a list of finite numbers (of length `count`), or None."""
    if isinstance(value, list) and (count is None or len(value) == count) and all(map(_is_number, value)):
        return value
    return None


def _show(number: float) -> str:
    return format(round(number, 12), ".12g")


def _finite_numbers(value: Any, path: tuple) -> Iterator[str]:
    """YAML's .nan and .inf pass every minimum and maximum of the schema (NaN compares false)."""
    if isinstance(value, float) and not math.isfinite(value):
        yield f"{key_path(path)}: {value} is not a finite number"
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _finite_numbers(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _finite_numbers(item, (*path, i))


def _lm_lambdas(config: Any) -> Iterator[str]:
    """Interpolation weights: any sum other than 1 scales every probability, hence the perplexity."""
    lambdas = _numbers(_at(config, LM_LAMBDAS), 3)
    if lambdas is not None and abs(math.fsum(lambdas) - 1) > SUM_TOLERANCE:
        yield (
            f"{key_path(LM_LAMBDAS)}: {lambdas} sum to {_show(math.fsum(lambdas))}, but must sum to 1 "
            "(they interpolate the unigram, bigram and trigram models)"
        )


def _cas_weights(config: Any) -> Iterator[str]:
    """CAS divides by the sum of its weights: with no positive weight it is NaN for every session."""
    weights = _at(config, CAS_WEIGHTS)
    if isinstance(weights, dict) and weights and all(map(_is_number, weights.values())):
        total = math.fsum(weights.values())
        if total <= 0:
            yield (
                f"{key_path(CAS_WEIGHTS)}: they sum to {_show(total)}, but must have a positive sum "
                "(CAS is the mean of its components weighted by them)"
            )


def _tas_weights(config: Any) -> Iterator[str]:
    """TAS = alpha CC + beta CR - gamma I: without alpha and beta it rewards no adherence at all."""
    alpha, beta = _at(config, (*TAS, "alpha")), _at(config, (*TAS, "beta"))
    if _is_number(alpha) and _is_number(beta) and alpha + beta <= 0:
        yield (
            f"{key_path(TAS)}: alpha + beta is {_show(alpha + beta)}, but must be positive "
            "(TAS = alpha CC + beta CR - gamma I would be 0 or below for every system)"
        )


def _ranges(config: Any) -> Iterator[str]:
    """A [low, high] range normalises by high - low: an empty or reversed one divides by 0 or flips."""
    for path in RANGES:
        pair = _numbers(_at(config, path), 2)
        if pair is not None and not pair[0] < pair[1]:
            yield f"{key_path(path)}: {pair} must be strictly increasing (first < second)"


def _unique_system_names(config: Any) -> Iterator[str]:
    """A system's name is its results folder and its key in every table."""
    systems = _at(config, ("systems",))
    first: dict[str, int] = {}
    for i, system in enumerate(systems if isinstance(systems, list) else []):
        name = system.get("name") if isinstance(system, dict) else None
        if not isinstance(name, str):
            continue
        if name in first:
            yield (
                f"systems[{i}].name: {name!r} is also the name of systems[{first[name]}]; "
                "every system needs a unique name (it names the system's results folder)"
            )
        else:
            first[name] = i


def _unique_panel_names(config: Any) -> Iterator[str]:
    """A panel judge's name is its results folder and the prefix of its columns."""
    panel = _at(config, ("judge", "panel"))
    first: dict[str, int] = {}
    for i, entry in enumerate(panel if isinstance(panel, list) else []):
        name = entry.get("name") if isinstance(entry, dict) else None
        if not isinstance(name, str):
            continue
        if name in first:
            yield (
                f"judge.panel[{i}].name: {name!r} is also the name of judge.panel[{first[name]}]; "
                "every panel judge needs a unique name (it names the judge's columns and results folder)"
            )
        else:
            first[name] = i


def _import_votes(config: Any) -> Iterator[str]:
    """Votes belong to an imported corpus whose format has them; elsewhere they would be silently unused."""
    sessions = _at(config, ("sessions",))
    if not isinstance(sessions, dict) or sessions.get("import_votes") is None:
        return
    if sessions.get("source") != "import":
        yield "sessions.import_votes: votes are read only with `source: import` (they are votes on imported dialogues)"
    elif sessions.get("import_format") == "thesis_logs":
        yield "sessions.import_votes: the thesis_logs format has no votes (votes come with `crsarena` or `jsonl`)"


def _one_calibration_source(config: Any) -> Iterator[str]:
    """The scorecard joins one calibration experiment's verdicts: a finished table or a config to run, not both."""
    section = _at(config, ("human_agreement",))
    if isinstance(section, dict) and section.get("validity_table") and section.get("calibration_config"):
        yield (
            "human_agreement.calibration_config: give either validity_table (a finished calibration run) or "
            "calibration_config (run it here), not both"
        )


def _python_entry_points(config: Any) -> Iterator[str]:
    """A `python` system's class is imported here, so that a typo in its module or class stops the run
    before any job, named by its key (the import runs the module's top-level code, as the job would)."""
    systems = _at(config, ("systems",))
    for i, system in enumerate(systems if isinstance(systems, list) else []):
        if not isinstance(system, dict) or system.get("agent") != "python":
            continue
        entry = system.get("entry_point")
        if not isinstance(entry, str) or entry.count(":") != 1:
            continue  # the schema's pattern reports it
        module_name, class_name = entry.split(":")
        try:
            module = importlib.import_module(module_name)
        except Exception as error:  # any failure of the import is the user's to see, by key
            yield f"systems[{i}].entry_point: {entry!r}: module {module_name!r} does not import: {error!r}"
            continue
        if not isinstance(getattr(module, class_name, None), type):
            yield f"systems[{i}].entry_point: {entry!r}: module {module_name!r} has no class {class_name!r}"


def _in_process_concurrency(config: Any) -> Iterator[str]:
    """An explicit concurrency above 1 for an in-process llama.cpp backend would promise a speed-up
    that one model instance in the job cannot give (the global llm.concurrency is simply not applied
    to such jobs, see crseval.core.experiment)."""
    entries = [(("systems", i), system) for i, system in enumerate(_at(config, ("systems",)) or [])]
    entries.append((("judge",), _at(config, ("judge",))))
    panel = _at(config, ("judge", "panel"))
    entries += [(("judge", "panel", i), entry) for i, entry in enumerate(panel if isinstance(panel, list) else [])]
    for path, entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("backend"), dict):
            continue
        concurrency = entry.get("concurrency")
        if entry["backend"].get("type") == "llamacpp" and _is_number(concurrency) and concurrency > 1:
            yield (
                f"{key_path((*path, 'concurrency'))}: {concurrency} requests in flight need a server backend "
                "(ollama, openai); the llamacpp backend runs in the job's process, one request at a time: use 1"
            )
