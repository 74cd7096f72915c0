"""The tables of config/README.md, generated from the config schema, so that a key's type, bounds,
default, meaning and what a change re-runs are written once: in the schema.

The README's prose is written by hand; each table stands between two markers,

    <!-- schema: lda -->
    ...
    <!-- end schema -->

naming a top-level key of the schema, or `backend` or `options` (the LLM settings shared by
systems, judge, paraphrase and extractors). The tables document the schema a config is checked
against: the file's with every kind's part composed in (crseval.planning.config_schema). Rewrite them
after a change of the schema or of a kind's keys with

    python -m crseval.core.config_docs config/README.md

(`--check` writes nothing and exits 1 when the file is not up to date; a test runs it).
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
from pathlib import Path

import yaml

from crseval.core.names import NAME_PATTERN

MARKER = re.compile(r"(<!-- schema: (?P<name>[\w$]+) -->\n).*?(<!-- end schema -->)", re.S)
SHARED = ("backend", "options")  # entries of $defs with a table of their own
FORMATS = {"path": "path", "glob": "glob pattern"}
# The function that composes the schema the tables document (module, name). Core imports nothing above it, so
# the command line, the one caller with no schema in hand, asks for it by name when it runs.
COMPOSER = ("crseval.planning", "config_schema")


def composed_schema() -> dict:
    """The config schema with every kind's part composed in, as COMPOSER gives it."""
    module, name = COMPOSER
    return getattr(importlib.import_module(module), name)()


def render(readme: str, schema: dict) -> str:
    """`readme` with the table between every pair of markers generated anew from `schema`."""
    return MARKER.sub(lambda m: m.group(1) + table(m["name"], schema) + m.group(3), readme)


def documented(readme: str) -> list[str]:
    """The names of the tables `readme` holds, in order."""
    return [m["name"] for m in MARKER.finditer(readme)]


def table(name: str, schema: dict) -> str:
    """The markdown table of the top-level key `name`, or of the shared entry `name` of $defs."""
    if name in SHARED:
        rows = _rows(schema["$defs"][name], schema, name, None)
        return _markdown(["key", "type", "default", "meaning"], [row[:4] for row in rows])
    if name not in schema["properties"]:
        raise KeyError(f"config/README.md has a table for {name!r}, which is not a key of the config schema")
    parent = {"required": schema.get("required", []), "properties": {name: schema["properties"][name]}}
    return _markdown(["key", "type", "default", "meaning", "re-runs"], _rows(parent, schema, "", None))


def _rows(node: dict, schema: dict, prefix: str, reruns: str | None) -> list[tuple[str, ...]]:
    """One row per setting under the object `node`: objects with keys of their own are opened up."""
    rows = []
    branches = _branches(node)
    for key, sub in node.get("properties", {}).items():
        path = f"{prefix}.{key}" if prefix else key
        here = sub.get("x-reruns", reruns)
        if sub.get("type") == "array" and "$ref" in sub.get("items", {}):  # the list of systems
            rows += _rows(_resolve(sub["items"], schema), schema, f"{path}[*]", here)
        elif sub.get("type") == "object" and "properties" in sub:
            if sub.get("additionalProperties", True) is not False and sub.get("description"):  # open: say so
                meaning = " ".join(sub["description"].split())
                rows.append((f"`{path}`", "map", _status(key, sub, node, branches), meaning, here or ""))
            rows += _rows(sub, schema, path, here)
        else:
            if not sub.get("description"):
                raise ValueError(f"{path}: the config schema gives no description")
            meaning = " ".join(sub["description"].split())
            rows.append((f"`{path}`", kind(sub, schema), _status(key, sub, node, branches), meaning, here or ""))
    return rows


def _branches(node: dict) -> list[tuple[str, dict]]:
    """(condition, then) of each if/then of `node`, direct or under allOf, e.g. ('`agent: llm`', {...})."""
    found = []
    for part in [node, *node.get("allOf", [])]:
        if "if" in part:
            (key, test), *_ = part["if"]["properties"].items()
            values = [test["const"]] if "const" in test else test["enum"]
            found.append((f"`{key}: {_or([_yaml(v) for v in values])}`", part["then"]))
    return found


def _status(key: str, sub: dict, node: dict, branches: list[tuple[str, dict]]) -> str:
    """required, required with a condition, the default, or optional (only with a condition)."""
    if key in node.get("required", []):
        return "required"
    needed = [condition for condition, then in branches if key in then.get("required", [])]
    if needed:
        return f"required with {_or(needed)}"
    if "default" in sub:
        return f"`{_yaml(sub['default'])}`"
    listing = [(condition, key in then["properties"]) for condition, then in branches if "properties" in then]
    allowed = [condition for condition, here in listing if here]
    if listing and len(allowed) < len(listing):
        return f"optional, only with {_or(allowed)}"
    return "optional"


def kind(sub: dict, schema: dict, plural: bool = False) -> str:
    """The type and bounds of a setting in words: `int in [1, 1024]`, `list of tas, cas (at least 1)`."""
    if "$ref" in sub:
        name = sub["$ref"].rsplit("/", 1)[1]
        return f"{name} (see below)" if name in SHARED else kind(_resolve(sub, schema), schema, plural)
    if "enum" in sub:
        return _or([f"`{value}`" for value in sub["enum"]])
    s = "s" if plural else ""
    kinds = {
        "boolean": lambda: f"bool{s}",
        "integer": lambda: _bounded(f"int{s}", sub),
        "number": lambda: _bounded(f"number{s}", sub),
        "string": lambda: _string(sub, plural),
        "array": lambda: _array(sub, schema),
        "object": lambda: _object(sub, schema),
    }
    return kinds[sub["type"]]()


def _bounded(word: str, sub: dict) -> str:
    low = ("[", sub["minimum"]) if "minimum" in sub else ("(", sub.get("exclusiveMinimum"))
    high = (sub["maximum"], "]") if "maximum" in sub else (sub.get("exclusiveMaximum"), ")")
    if low[1] is not None and high[0] is not None:
        return f"{word} in {low[0]}{low[1]}, {high[0]}{high[1]}"
    if low[1] is not None:
        return f"{word} {'>=' if low[0] == '[' else '>'} {low[1]}"
    if high[0] is not None:
        return f"{word} {'<=' if high[1] == ']' else '<'} {high[0]}"
    return word


def _string(sub: dict, plural: bool) -> str:
    if sub.get("pattern") == NAME_PATTERN:
        return "name (see Validation)"
    word = FORMATS.get(sub.get("format", ""), "string") + ("s" if plural else "")
    return f"non-empty {word}" if sub.get("minLength", 0) > 0 and "format" not in sub else word


def _array(sub: dict, schema: dict) -> str:
    items = kind(sub["items"], schema, plural=True)
    if sub.get("minItems") is not None and sub.get("minItems") == sub.get("maxItems"):
        return f"{sub['minItems']} {items}"
    limits = [f"at least {sub['minItems']}"] if sub.get("minItems") else []
    limits += ["no repeats"] if sub.get("uniqueItems") else []
    return f"list of {items}" + (f" ({', '.join(limits)})" if limits else "")


def _object(sub: dict, schema: dict) -> str:
    if isinstance(sub.get("additionalProperties"), dict):
        return f"map of name -> {kind(sub['additionalProperties'], schema)}"
    return "`{" + ", ".join(sub.get("properties", {})) + "}`"


def _resolve(sub: dict, schema: dict) -> dict:
    return schema["$defs"][sub["$ref"].rsplit("/", 1)[1]]


def _yaml(value) -> str:
    """`value` as written in the config, in YAML's flow style (inside a list, so a lone string ends no document)."""
    return yaml.safe_dump([value], default_flow_style=True, width=10**6).strip()[1:-1]


def _or(words: list[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"


def _markdown(header: list[str], rows: list[tuple[str, ...]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None, schema: dict | None = None) -> int:
    """Rewrite (or check) the README's tables from `schema` (default: the composed config schema)."""
    parser = argparse.ArgumentParser(description="Rewrite the tables of config/README.md from the config schema.")
    parser.add_argument("readme", type=Path, nargs="?", default=Path("config/README.md"))
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if the file is not up to date")
    args = parser.parse_args(argv)
    text = args.readme.read_text(encoding="utf-8")
    generated = render(text, composed_schema() if schema is None else schema)
    if args.check:
        if generated != text:
            print(f"{args.readme} is not up to date: run python -m crseval.core.config_docs {args.readme}")
            return 1
        return 0
    args.readme.write_text(generated, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
