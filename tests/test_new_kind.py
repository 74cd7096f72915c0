"""A new kind is its own module and its entry in the registry: the config schema takes the kinds' names and
keys from the registries when it is loaded (crseval.planning.config_schema), and the schema file names none.

The test adds a toy agent kind with a key of its own and a toy corpus format to a copy of the source tree,
touching nothing but their new modules and, in each registry, the module's import and its entry, and checks
configs against the copy.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import yaml
from conftest import REPO

from crseval.core.config_checks import SCHEMA_PATH
from crseval.corpora.formats import CORPUS_FORMATS
from crseval.llm.backends import BACKEND_KINDS
from crseval.metrics.families import FAMILY_KINDS
from crseval.simulate.systems.kinds import AGENT_KINDS

TOY_AGENT = '''"""A toy agent kind: the template agent, with a key of its own."""

from crseval.simulate.systems.agent_kind import AgentKind
from crseval.simulate.systems.agents import TEMPLATE

KIND = AgentKind(
    "toy",
    "the template agent, with a key of its own",
    make_agent=TEMPLATE.make_agent,
    required_keys={"toy_level": {"type": "integer", "minimum": 1, "description": "how playful it is"}},
)
'''
TOY_FORMAT = '''"""A toy corpus format: JSON lines, read as the jsonl format reads them."""

import dataclasses

from crseval.corpora import jsonl

KIND = dataclasses.replace(jsonl.KIND, name="toy", summary="JSON lines under another name")
'''
# Run in the copy: the composed schema's names, and the problems of a config with the toy kinds and of one with
# a misspelt key of the toy agent.
CHECK = """
import json, sys
import yaml
import crseval
from crseval.core.config_checks import ConfigError
from crseval.planning import check_config, config_schema

assert crseval.__file__.startswith(sys.argv[1]), crseval.__file__
schema = config_schema()
found = {"agents": schema["$defs"]["system"]["properties"]["agent"]["enum"]}
found["formats"] = schema["$defs"]["corpus_format"]["enum"]
found["described"] = schema["properties"]["sessions"]["properties"]["import_format"]["description"]
config = yaml.safe_load(open("config/config.yaml"))
config.setdefault("sessions", {}).update(source="import", import_paths="corpus/*.jsonl", import_format="toy")
for name, key in (("valid", "toy_level"), ("misspelt", "toy_levle")):
    config["systems"] = [{"name": "toy-1", "agent": "toy", key: 2}]
    try:
        check_config(config)
        found[name] = []
    except ConfigError as error:
        found[name] = error.problems
print(json.dumps(found))
"""


def add_line(path, after: str, line: str) -> None:
    """`line` added below the line `after` of the file at `path`."""
    text = path.read_text(encoding="utf-8")
    assert text.count(after + "\n") == 1, after
    path.write_text(text.replace(after + "\n", f"{after}\n{line}\n"), encoding="utf-8")


def test_a_new_agent_kind_and_format_are_their_modules_and_registry_lines(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(REPO / "src", src, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    systems, corpora = src / "crseval" / "simulate" / "systems", src / "crseval" / "corpora"
    (systems / "toy_agent.py").write_text(TOY_AGENT, encoding="utf-8")
    (corpora / "toy_format.py").write_text(TOY_FORMAT, encoding="utf-8")
    kinds, formats = systems / "kinds.py", corpora / "formats.py"
    add_line(
        kinds,
        "from crseval.simulate.systems.agent_kind import AgentKind",
        "from crseval.simulate.systems import toy_agent",
    )
    add_line(kinds, "        tools_agent.KIND,", "        toy_agent.KIND,")
    add_line(formats, "from crseval.corpora.format_kind import CorpusFormat", "from crseval.corpora import toy_format")
    add_line(formats, "        inspired.KIND,", "        toy_format.KIND,")

    environment = {**os.environ, "PYTHONPATH": str(src)}
    result = subprocess.run(
        [sys.executable, "-c", CHECK, str(src)], cwd=REPO, env=environment, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)

    assert found["agents"] == [*AGENT_KINDS, "toy"] and found["formats"] == [*CORPUS_FORMATS, "toy"]
    assert "`toy` (JSON lines under another name)" in found["described"]
    assert found["valid"] == []
    assert found["misspelt"] == [
        "systems[0]: Additional properties are not allowed ('toy_levle' was unexpected) (did you mean 'toy_level'?)",
        "systems[0]: 'toy_level' is a required property",
    ]


# Words that name a kind and something else: a metric family's own setting that picks an LLM topic extractor.
SETTING_VALUES = {("properties", "scoring", "properties", family): "llm" for family in ("cas", "adherence")}


def named_values(node, path: tuple = ()):
    """(path, value) of every value an `enum`, a `const` or a `default` of the schema `node` names."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("enum", "const", "default") and (not path or path[-1] != "properties"):
                for named in value if isinstance(value, list) else [value]:
                    yield path, named
            yield from named_values(value, (*path, key))
    elif isinstance(node, list):
        for value in node:
            yield from named_values(value, path)


def test_the_schema_file_names_no_kind():
    kinds = {*AGENT_KINDS, *BACKEND_KINDS, *FAMILY_KINDS, *CORPUS_FORMATS}
    named = [
        (path, value)
        for path, value in named_values(yaml.safe_load(SCHEMA_PATH.read_text(encoding="utf-8")))
        if isinstance(value, str) and value in kinds and SETTING_VALUES.get(path[:4]) != value
    ]
    assert named == []


def test_the_check_of_the_file_finds_a_kind_named_in_an_enum():
    schema = {"properties": {"a": {"enum": ["x", "tools"]}, "b": {"if": {"properties": {"c": {"const": "llm"}}}}}}
    assert [value for _, value in named_values(schema) if value in AGENT_KINDS] == ["tools", "llm"]
