"""Checks of an experiment's config: the schema, and the rules that tie values together.

Snakemake's `validate` stops at the first schema error and prints it with a dump of the schema;
`check_config` reports every problem at once, one line each, starting with the key path as it is
written in the YAML file (`systems[2].backend.type`). The schema states what one value may be
(types, bounds, names); the rules here are the ones a JSON schema cannot state because they relate
several values (sums, ordering, unique names). Without them the pipeline runs and gives silently
wrong numbers, or fails late with an exception that names no key. config/README.md ("Validation")
lists the rules. The rules of a pluggable kind (a metric family's weights, an agent kind's entry) are
declared by the kind and passed in by crseval.planning.check_config, the check the workflow runs.

The schema file names no kind. An agent kind or an LLM backend declares the keys its entry takes,
each with its type, bounds and description, in the module that implements it; a registry of kinds
hands over what the schema needs of its kinds as a `SchemaPart`: the names a key may take, the
defaults that name a kind, and for entries told apart by a key (a system's `agent`, a backend's
`type`) a `Dispatch` with every kind's keys. Core cannot import the kinds, so the layer that knows
them (crseval.planning.config_schema) gathers the parts, composes the schema with `compose_schema`
and hands it to each check here. The file alone (`load_schema`) holds every default but the ones that
name a kind. A dispatching entry's schema is its keys (the file's, which every kind takes, and each
kind's) and one if/then block per kind that allows exactly the keys the kind takes and requires the
ones it must give: if/then rather than oneOf, so that a mistake is reported at the key that is wrong,
not as "not valid under any of the given schemas" at the whole entry. Kinds that take the same keys
share one block, so that the docs name them together.

Some configs run and give right numbers but leave a metric nothing to measure: `check_config` logs a
warning for each (`config_warnings` lists them), starting with its key path like a problem, and the run
goes on.

A setting the schema gives a `default` may be left out: `fill_defaults` writes the default in, so
that a config written before the setting existed keeps working, and every rule (and the provenance
record) sees the value the run uses.
"""

from __future__ import annotations

import copy
import functools
import logging
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

import yaml
from jsonschema import Draft202012Validator, validators
from jsonschema.exceptions import ValidationError, best_match

from crseval.core.config_files import ConfigError, load_config_file, size_problems
from crseval.core.experiment import imports_sessions
from crseval.core.names import NAME_PATTERN, NAME_RULE
from crseval.core.registry import did_you_mean

log = logging.getLogger(__name__)

SCHEMA_PATH = Path(__file__).resolve().with_name("schemas") / "config.schema.yaml"  # package data
SUM_TOLERANCE = 1e-9
MESSAGE_CHARS = 500  # a problem's line at most: a schema message shows the value, which may be long
# A check beyond the schema: the filled config -> one problem per line, each starting with its key path.
Rule = Callable[[Any], Iterator[str]]


def key_path(path) -> str:
    """('systems', 2, 'backend', 'type') as `systems[2].backend.type`, the root as `config`."""
    text = "".join(f"[{key}]" if isinstance(key, int) else f".{key}" for key in path).lstrip(".")
    return text or "config"


def fill_defaults(config: Any, schema: dict) -> None:
    """Write the default of `schema` (crseval.planning.config_schema) into `config`, in place, for every
    setting it leaves out.

    A section that is left out and has a default (`{}`) is created, then filled key by key, so an old
    config gains whole sections added since. Values of the wrong shape are left for check_config.
    """
    _fill(config, schema)


def _fill(value: Any, schema: dict) -> None:
    if not isinstance(value, dict):
        return
    for key, sub in schema.get("properties", {}).items():
        if key not in value and "default" in sub:
            value[key] = copy.deepcopy(sub["default"])
        if key in value:
            _fill(value[key], sub)


@functools.lru_cache(maxsize=1)
def _default_config() -> dict:
    config: dict = {}
    fill_defaults(config, load_schema())
    return config


def schema_defaults(*path: str) -> dict:
    """The schema's default of every setting of the section at `path` (("scoring", "tas")): a settings
    class takes its defaults from here, so that each default is written once, in the schema (the file's:
    a section whose settings name no kind)."""
    section = _default_config()
    for key in path:
        section = section[key]
    return copy.deepcopy(section)


def effective_config(*paths: str | Path, schema: dict, rules: tuple[Rule, ...] = ()) -> dict:
    """The config the workflow runs with `--configfile <paths...>`: the files merged in order (a later
    file's mapping updates the earlier one's, key by key, as Snakemake merges them), the defaults of
    `schema` filled in, checked. Shipped configs hold only what they change; this shows the rest."""

    merged: dict = {}
    for path in paths:
        _merge(merged, load_config_file(path))  # a ConfigFileError if crseval does not read the file
    fill_defaults(merged, schema)
    check_config(merged, schema, rules)
    return merged


def _merge(into: dict, update: dict) -> None:
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = copy.deepcopy(value)


def check_config(config: Any, schema: dict, rules: tuple[Rule, ...] = ()) -> None:
    """Raise one ConfigError listing every problem of `config` against `schema` (crseval.planning.config_schema)
    and the rules; return if there is none.

    The config is checked as the workflow uses it, with the schema's defaults filled in (on a copy:
    `config` is not changed), so that the rules that relate values see the defaults too. `rules` adds
    the checks of the kinds the config selects (crseval.planning.check_config passes them); each skips
    values of the wrong shape, which the schema reports.
    """

    oversized = size_problems(config)  # before any walk over it (a config given as a dict, not read from a file)
    if oversized:
        raise ConfigError(oversized)
    filled = copy.deepcopy(config)
    fill_defaults(filled, schema)
    problems = [*_schema_problems(filled, schema), *_rule_problems(filled)]
    problems += [problem for rule in rules for problem in rule(filled)]
    if problems:
        raise ConfigError(list(dict.fromkeys(problems)))
    for warning in dict.fromkeys(_rule_warnings(filled)):
        log.warning("config warning: %s", warning)


def config_warnings(config: Any, schema: dict) -> list[str]:
    """What a config runs with but cannot measure, one line each starting with its key path (the defaults of
    `schema` filled in, on a copy); check_config logs each as a warning once the config has no problem."""
    filled = copy.deepcopy(config)
    fill_defaults(filled, schema)
    return list(dict.fromkeys(_rule_warnings(filled)))


@functools.lru_cache(maxsize=4)
def load_schema(schema_path: str | Path = SCHEMA_PATH) -> dict:
    """The config schema file, without the kinds' parts (one shared copy: do not change it). Read with libyaml
    where PyYAML has it, and not checked against the JSON Schema meta-schema here: every job reads it, and the
    check (a quarter of a second) belongs to the tests (tests/test_config_defaults.py), since the schema ships
    with the code."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(Path(schema_path).read_text(), Loader=loader)  # noqa: S506 (a safe loader)


# ------------------------------------------------------------------ the kinds' parts of the schema


@dataclass(frozen=True)
class KindKeys:
    """What one kind of a dispatching entry takes beyond the keys every kind's entry takes."""

    name: str  # its value of the dispatching key
    keys: Mapping[str, dict]  # key -> its schema, as config/README.md shows it
    required: tuple[str, ...] = ()  # the keys among them its entry must give
    # key -> what the kind asks of the key beyond its schema (an LLM's `options`: every sampling option)
    narrowed: Mapping[str, dict] = field(default_factory=dict)


@dataclass(frozen=True)
class Dispatch:
    """Entries of several kinds told apart by one key: the `$defs` entry `entry`, whose `key` names the kind."""

    entry: str
    key: str
    kinds: tuple[KindKeys, ...]  # in the order of the key's enum
    block_order: tuple[str, ...] = ()  # the kinds' if/then blocks in this order (default: the enum's)
    key_order: tuple[str, ...] = ()  # the entry's keys named here come first, in this order (the README's rows)


@dataclass(frozen=True)
class SchemaPart:
    """What a registry of kinds adds to the config schema."""

    # path of a node of the file's schema -> keywords set there (an `enum` of the kinds' names, a `default`)
    settings: Mapping[tuple[str, ...], Mapping[str, Any]] = field(default_factory=dict)
    dispatch: Dispatch | None = None


def compose_schema(base: dict, parts: Iterable[SchemaPart]) -> dict:
    """The schema `base` (the file's, not changed) with every part composed in; a ValueError when a part
    names a node the schema does not have, or two kinds give one key different schemas."""
    schema = copy.deepcopy(base)
    for part in parts:
        for path, keywords in part.settings.items():
            _node(schema, path).update(copy.deepcopy(dict(keywords)))
        if part.dispatch is not None:
            _dispatch(_node(schema, ("$defs", part.dispatch.entry)), part.dispatch)
    return schema


def _node(schema: dict, path: tuple[str, ...]) -> dict:
    node = schema
    for depth, key in enumerate(path):
        if not isinstance(node, dict) or not isinstance(node.get(key), dict):
            raise ValueError(f"the config schema has no {'/'.join(path[: depth + 1])} to compose a kind's part into")
        node = node[key]
    return node


def _dispatch(entry: dict, dispatch: Dispatch) -> None:
    """The entry's enum of kinds, its keys (each kind's added to the common ones) and a block per kind."""
    common = list(entry["properties"])
    keys: dict[str, dict] = {}
    for kind in dispatch.kinds:
        for key, sub in kind.keys.items():
            if key in common or keys.setdefault(key, sub) != sub:
                raise ValueError(
                    f"$defs.{dispatch.entry}.{key}: the {dispatch.key} {kind.name!r} gives the key a schema of its "
                    "own, where another kind or every entry has one: a key shared by several kinds is declared once"
                )
    named = {**entry["properties"][dispatch.key], "enum": [kind.name for kind in dispatch.kinds]}
    every = {**entry["properties"], dispatch.key: named, **copy.deepcopy(keys)}
    first = [key for key in dispatch.key_order if key in every]
    entry["properties"] = {key: every[key] for key in [*first, *(key for key in every if key not in first)]}
    entry["allOf"] = _blocks(dispatch, common)


def _blocks(dispatch: Dispatch, common: list[str]) -> list[dict]:
    """One if/then block per kind, in `block_order`; kinds whose blocks are the same share one."""
    by_name = {kind.name: kind for kind in dispatch.kinds}
    order = list(dispatch.block_order or by_name)
    if sorted(order) != sorted(by_name):
        raise ValueError(f"$defs.{dispatch.entry}: the block order {order} is not one of the kinds {list(by_name)}")
    groups: list[tuple[list[str], dict]] = []
    for name in order:
        then = _then(by_name[name], common)
        same = next((names for names, other in groups if other == then), None)
        if same is None:
            groups.append(([name], then))
        else:
            same.append(name)
    return [
        {
            "if": {
                "required": [dispatch.key],
                "properties": {dispatch.key: {"const": names[0]} if len(names) == 1 else {"enum": names}},
            },
            "then": then,
        }
        for names, then in groups
    ]


def _then(kind: KindKeys, common: list[str]) -> dict:
    """The keys the kind's entry may have (`{}`: checked by the entry's own schema of the key) and those it must
    give; additionalProperties sees only the properties beside it, so the common keys are listed too."""
    if not set(kind.required) | set(kind.narrowed) <= set(kind.keys):
        raise ValueError(f"{kind.name}: a key it requires or narrows is not one of its keys {list(kind.keys)}")
    then: dict[str, Any] = {"additionalProperties": False}
    if kind.required:
        then["required"] = list(kind.required)
    then["properties"] = {key: {} for key in common} | {key: dict(kind.narrowed.get(key, {})) for key in kind.keys}
    return then


# ------------------------------------------------------------------ checking against it


@functools.lru_cache(maxsize=None)
def exact_pattern(pattern: str) -> str:
    """A schema `pattern` for Python's `re.search`, meaning what JSON Schema (ECMA-262) means: there `$` is the
    end of the text, in Python it also matches before a final line break, which would let `name\\n` pass the
    rule of names and become a folder `results/name\\n/`. Each `$` outside a character class becomes `\\Z`."""
    translated, in_class, i = [], False, 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            translated.append(pattern[i : i + 2])
            i += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
        elif char == "$":
            char = r"\Z"
        translated.append(char)
        i += 1
    return "".join(translated)


def _pattern(validator, pattern: str, instance: Any, schema: dict) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and not re.search(exact_pattern(pattern), instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


# The config's validator: JSON Schema 2020-12 with `pattern` as JSON Schema means it (exact_pattern).
ConfigValidator = validators.extend(Draft202012Validator, {"pattern": _pattern})


# id of a schema -> the schema (kept, so that its id names it) and its validator, built once per schema.
_VALIDATORS: dict[int, tuple[dict, Draft202012Validator]] = {}
VALIDATORS_KEPT = 4


def _validator(schema: dict) -> Draft202012Validator:
    kept = _VALIDATORS.get(id(schema))
    if kept is None:
        if len(_VALIDATORS) >= VALIDATORS_KEPT:
            _VALIDATORS.clear()
        kept = _VALIDATORS[id(schema)] = (schema, ConfigValidator(schema))
    return kept[1]


def _schema_problems(config: Any, schema: dict) -> Iterator[str]:
    for error in _validator(schema).iter_errors(config):
        if error.context:  # a oneOf/anyOf: the error of the alternative that fits best, at its key
            error = best_match(error.context)
        problem = f"{key_path(error.absolute_path)}: {_message(error)}"
        yield problem if len(problem) <= MESSAGE_CHARS else problem[: MESSAGE_CHARS - 1] + "…"


def _message(error: ValidationError) -> str:
    if error.validator == "pattern":
        instance, pattern = error.instance, error.validator_value
        ends = isinstance(instance, str) and instance.endswith("\n") and re.search(pattern, instance)
        message = f"{instance!r} ends in a line break" if ends else error.message
        return f"{message}: a name must be {NAME_RULE}" if pattern == NAME_PATTERN else message
    if error.validator == "enum" and isinstance(error.instance, str):
        return error.message + did_you_mean(error.instance, [str(v) for v in error.validator_value])
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        known = list(error.schema.get("properties", {}))
        unknown = [key for key in error.instance if key not in known]
        if len(unknown) == 1 and known:
            return error.message + did_you_mean(unknown[0], known)
    return error.message


def _rule_problems(config: Any) -> Iterator[str]:
    """The cross-value rules; each skips values of the wrong shape, which the schema reports."""
    yield from _finite_numbers(config, ())
    yield from _unique_system_names(config)
    yield from _unique_panel_names(config)
    yield from _one_calibration_source(config)
    yield from _trials_of_simulated_users(config)


def _rule_warnings(config: Any) -> Iterator[str]:
    """The warnings; each skips values of the wrong shape, which the schema reports."""
    yield from _last_shift_on_last_turn(config)


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


def _one_calibration_source(config: Any) -> Iterator[str]:
    """The scorecard joins one calibration experiment's verdicts: a finished table or a config to run, not both."""
    section = _at(config, ("human_agreement",))
    if isinstance(section, dict) and section.get("validity_table") and section.get("calibration_config"):
        yield (
            "human_agreement.calibration_config: give either validity_table (a finished calibration run) or "
            "calibration_config (run it here), not both"
        )


def _trials_of_simulated_users(config: Any) -> Iterator[str]:
    """A trial is a simulated user meeting a system again: an imported dialogue happened once."""
    section = _at(config, ("sessions",))
    if imports_sessions(config) and section.get("trials", 1) != 1:
        yield (
            f"sessions.trials: {section['trials']} repeats simulated users; imported dialogues "
            "(sessions.source: import) happened once, so leave trials at 1"
        )


def _last_shift_on_last_turn(config: Any) -> Iterator[str]:
    """A simulated user shifts at every turn t > 1 with (t - 1) % shift_every == 0 (crseval.simulate.user.simulator);
    a shift on the last turn leaves no user turn to react to a reply after it, so `success` and
    `turns_to_success` (crseval.metrics.goals) are NaN for every session that plays every turn."""
    turns, every = _at(config, ("sessions", "turns")), _at(config, ("simulator", "shift_every"))
    if (
        imports_sessions(config)
        or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 1 for n in (turns, every))
        or turns < 2
        or (turns - 1) % every
    ):
        return
    unmeasured = (
        f"the user reacts to no reply after the shift at turn {turns}, so success and turns_to_success cannot be "
        "measured (NaN in every session that is not left early, with success_missing_reason)"
    )
    if every == 1:
        yield (
            f"simulator.shift_every: 1 shifts at every turn, the last ({turns}) too: {unmeasured}, whatever "
            "sessions.turns is; shift_every: 2 or more leaves a reply after the last shift for the user to judge"
        )
    else:
        # one turn fewer keeps a shift (the one before) only when the last is not the first
        fewer = f" (or {turns - 1})" if turns - 1 > every else ""
        yield (
            f"sessions.turns: {turns} with simulator.shift_every: {every} puts the last shift on the last turn "
            f"(shift turns: {', '.join(map(str, range(every + 1, turns + 1, every)))}): "
            f"{unmeasured}; sessions.turns: {turns + 1}{fewer} leaves a reply after the last shift for the user "
            "to judge"
        )
