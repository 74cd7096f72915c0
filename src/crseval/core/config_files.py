"""Reading a config file: plain YAML (or JSON), UTF-8, every key once, bounded in size, depth and aliases.

A config file is read before anything checks it, and PyYAML alone reads too much: a second `systems:`
silently replaces the first, a few hundred bytes of aliases stand for a billion values ("billion laughs")
that any walk over the config then expands, each level of nesting costs a level of recursion, and
Snakemake renders a file with `__use_yte__` as a template that runs Python expressions. `crseval config
show` and the workflow (the Snakefile, on every config file of the run) read a file here, so that both
refuse the same files, within a second and in bounded memory, with a ConfigFileError naming the file, the
line and what to change (docs/running.md, "Config files").

Anchors and aliases are allowed (a shared `options` block), up to MAX_ALIASES aliases, and the bounds on
values and depth apply to the config with every alias written out. A file that is JSON is read as JSON,
as Snakemake reads it, once it has passed the same checks. The text is parsed by PyYAML's own scanner and
parser, as Snakemake parses it, so that both take and refuse the same files.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.events import AliasEvent
from yaml.nodes import MappingNode, ScalarNode
from yaml.parser import Parser
from yaml.reader import Reader
from yaml.resolver import Resolver
from yaml.scanner import Scanner


class ConfigError(ValueError):
    """Every problem of a config, one per line after a count, each starting with its key path."""

    def __init__(self, problems: list[str], kind: str = "problem"):
        self.problems = list(problems)
        count = f"{len(self.problems)} {kind}{'s' if len(self.problems) != 1 else ''}"
        super().__init__("\n".join([f'{count} in the config (rules: config/README.md, "Validation"):', *self.problems]))


MAX_BYTES = 128 * 1024  # the shipped configs hold under 6 KiB
MAX_VALUES = 5_000  # keys and values, aliases written out; the largest shipped config holds under 300
MAX_DEPTH = 32  # levels of nesting, aliases written out; the shipped configs nest 5 levels at most
MAX_ALIASES = 64  # uses of an anchor (`*name`); the paper experiment's config has 5
DOCS = 'docs/running.md, "Config files"'
# Snakemake renders a config file with this top-level key as a YTE template, evaluating the Python in it.
YTE_KEY = "__use_yte__"
MERGE_TAG = "tag:yaml.org,2002:merge"


class ConfigFileError(ConfigError):
    """A config file crseval does not read: one line per file, each naming the file (and the line in it)."""


class _Loader(Reader, Scanner, Parser, Composer, SafeConstructor, Resolver):
    """PyYAML's safe loader with its node composer counting as it goes (values, depth, aliases, each alias
    as the size of what it names), refusing a repeated key, and naming the line of any value it cannot
    build. The composer stops at the first bound passed, before the rest of the file is parsed. Its
    scanner and parser are PyYAML's own in Python, the ones Snakemake reads a config with (not libyaml's,
    which takes text that they refuse, such as a tab after `key:`)."""

    def __init__(self, text: str, where: str):
        Reader.__init__(self, text)
        Scanner.__init__(self)
        Parser.__init__(self)
        Composer.__init__(self)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)
        self.where = where
        self.values = 0
        self.aliases = 0
        self.depth = 0  # of the node being composed
        self.deepest = 0  # deepest level reached, aliases written out
        self.sizes: dict[str, tuple[int, int]] = {}  # anchor -> (values, levels) of the node it names

    def refuse(self, mark, problem: str) -> ConfigFileError:
        return ConfigFileError([f"{self.where}, line {mark.line + 1}: {problem}"])

    def compose_node(self, parent, index):
        event = self.peek_event()
        level = self.depth + 1
        if isinstance(event, AliasEvent):
            self.aliases += 1
            if self.aliases > MAX_ALIASES:
                raise self.refuse(
                    event.start_mark, f"more than {MAX_ALIASES} aliases (*name): write the values out ({DOCS})"
                )
            if event.anchor in self.anchors and event.anchor not in self.sizes:
                raise self.refuse(
                    event.start_mark, f"*{event.anchor} names the value it stands in: a value cannot hold itself"
                )
            values, levels = self.sizes.get(event.anchor, (0, 0))  # an undefined alias: the composer names it
            self.count(values, event.start_mark)
            self.reach(level + levels - 1, event.start_mark)
            return super().compose_node(parent, index)
        self.count(1, event.start_mark)
        self.reach(level, event.start_mark)
        above = self.deepest
        self.depth = self.deepest = level
        before = self.values - 1
        try:
            node = super().compose_node(parent, index)
        finally:
            self.depth = level - 1
        if event.anchor is not None:
            self.sizes[event.anchor] = (self.values - before, self.deepest - level + 1)
        self.deepest = max(above, self.deepest)
        return node

    def count(self, values: int, mark) -> None:
        self.values += values
        if self.values > MAX_VALUES:
            raise self.refuse(
                mark,
                f"more than {MAX_VALUES:,} keys and values (aliases written out): a config is not a data file ({DOCS})",
            )

    def reach(self, level: int, mark) -> None:
        self.deepest = max(self.deepest, level)
        if level > MAX_DEPTH:
            raise self.refuse(mark, f"nested more than {MAX_DEPTH} levels deep (aliases written out) ({DOCS})")

    def construct_object(self, node, deep=False):
        try:
            return super().construct_object(node, deep)
        except (ValueError, OverflowError) as error:  # a date past the calendar, an int of too many digits
            if isinstance(error, ConfigFileError):
                raise
            shown = repr(node.value)[:80] if isinstance(node, ScalarNode) else f"this {node.id}"
            raise self.refuse(node.start_mark, f"{shown} cannot be read as {node.tag}: {error}") from None

    def construct_mapping(self, node, deep=False):
        if isinstance(node, MappingNode):
            first: dict[Any, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == MERGE_TAG:  # `<<: *base`: keys given beside it replace the merged ones
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    seen = first.get(key)
                except TypeError:
                    raise self.refuse(
                        key_node.start_mark, "a key must be a single value, not a list or mapping"
                    ) from None
                line = key_node.start_mark.line + 1
                if seen is not None:
                    where = f"on line {line}" if seen == line else f"at line {seen} and at line {line}"
                    raise self.refuse(
                        key_node.start_mark,
                        f"key {key!r} is given twice, {where}: YAML would keep the second and drop the first "
                        "without a word, so give it once",
                    )
                first[key] = line
        return super().construct_mapping(node, deep)


def load_config_file(path: str | Path) -> dict:
    """The settings a config file holds, read as Snakemake reads a --configfile, or a ConfigFileError."""
    where = str(path)
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_BYTES + 1)
    except OSError as error:
        raise ConfigFileError([f"{where}: cannot be read: {error.strerror or error}"]) from None
    if len(data) > MAX_BYTES:
        raise ConfigFileError([f"{where}: larger than {MAX_BYTES // 1024} KiB: a config is not a data file ({DOCS})"])
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise ConfigFileError(
            [
                f"{where}, line {line}: byte {error.start} ({data[error.start : error.start + 1]!r}) is not UTF-8: "
                "save the file as UTF-8"
            ]
        ) from None
    settings = _settings(text, where)
    if not isinstance(settings, dict):
        holds = "no settings" if settings is None else f"a {type(settings).__name__}"
        raise ConfigFileError(
            [f"{where}: holds {holds}; a config file holds a mapping of settings (`key: value` lines)"]
        )
    if YTE_KEY in settings:
        raise ConfigFileError(
            [
                f"{where}: {YTE_KEY} asks Snakemake to render the file as a YTE template, which evaluates the Python "
                f"expressions in it; a crseval config is plain YAML: write the values out and remove {YTE_KEY} ({DOCS})"
            ]
        )
    return settings


def _settings(text: str, where: str) -> Any:
    """What the text holds: as JSON when it is JSON, as Snakemake reads it first (`1e3` is a number in JSON,
    text in YAML), else as YAML; either once the YAML loader has checked it, which bounds the JSON's depth."""
    try:
        checked = _parse(text, where)
    except ConfigFileError as refused:
        if "\t" not in text:
            raise
        checked = _tabs_as_spaces(text, where, refused)
    try:
        return json.loads(text)
    except ValueError:
        return checked


def _tabs_as_spaces(text: str, where: str, refused: ConfigFileError) -> Any:
    """JSON indented with tabs, which YAML refuses where JSON takes them as spaces: checked with a space for
    each tab (a tab in valid JSON is whitespace, never part of a value); any other text stays `refused`."""
    try:
        checked = _parse(text.replace("\t", " "), where)
        json.loads(text)
    except (ConfigFileError, ValueError):
        raise refused from None
    return checked


def _parse(text: str, where: str) -> Any:
    loader = None
    try:
        loader = _Loader(text, where)  # the reader refuses a control character here
        return loader.get_single_data()
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        at = f", line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        said = ", ".join(part for part in (error.context, error.problem) if part)
        raise ConfigFileError([f"{where}{at}: {said}"]) from None
    except yaml.YAMLError as error:
        raise ConfigFileError([f"{where}: {error}"]) from None
    finally:
        if loader is not None:
            loader.dispose()


def check_config_files(paths: Iterable[str | Path]) -> None:
    """Raise one ConfigFileError naming the problem of every file of `paths` crseval does not read."""
    problems = []
    for path in paths:
        try:
            load_config_file(path)
        except ConfigFileError as error:
            problems += error.problems
    if problems:
        raise ConfigFileError(problems)


def size_problems(config: Any) -> list[str]:
    """The bounds of a config file, on a config already in memory (merged from several files, given as
    `--config` values or as a module's config): at most MAX_VALUES keys and values, MAX_DEPTH levels, a
    value shared in several places counted in each (a value that holds itself passes the bound)."""
    values, stack = 0, [(config, 1)]
    while stack:
        value, level = stack.pop()
        if level > MAX_DEPTH:
            return [f"config: nested more than {MAX_DEPTH} levels deep ({DOCS})"]
        values += 1 + (len(value) if isinstance(value, dict) else 0)
        if values > MAX_VALUES:
            return [f"config: more than {MAX_VALUES:,} keys and values: a config is not a data file ({DOCS})"]
        if isinstance(value, dict):
            stack += [(item, level + 1) for item in value.values()]
        elif isinstance(value, (list, tuple)):
            stack += [(item, level + 1) for item in value]
    return []
