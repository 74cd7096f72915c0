"""Every pluggable kind declares itself once, in its own package, and nothing else tests its name.

The kinds: agent kinds (crseval.simulate.systems.kinds), LLM backends (crseval.llm.backends), metric families
(crseval.metrics.families) and corpus formats (crseval.corpora.formats). A registry lists them, and the
config schema gets their names (its enums) and the keys each agent kind and backend declares from the
registries (crseval.planning.config_schema); a module outside a kind's package that compares a config
value with a kind's name would be one more place to find when a kind is added.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import REPO

from crseval.corpora.formats import CORPUS_FORMATS, corpus_format
from crseval.llm.backends import BACKEND_KINDS, backend_kind
from crseval.llm.base import LLMError
from crseval.metrics.families import FAMILY_KINDS
from crseval.planning import config_schema
from crseval.simulate.systems.agent_kind import AgentKind
from crseval.simulate.systems.kinds import AGENT_KINDS, agent_kind, calibration_roles
from crseval.simulate.user.profiles import PROFILES, resolve_profile

SRC = REPO / "src" / "crseval"
# kind -> (its names, the package that may test them)
KINDS = {
    "agent": (set(AGENT_KINDS), SRC / "simulate"),
    "backend": (set(BACKEND_KINDS), SRC / "llm"),
    "family": (set(FAMILY_KINDS), SRC / "metrics"),
    "format": (set(CORPUS_FORMATS), SRC / "corpora"),
}
FORMAT_SETTINGS = (("sessions",), ("simulator", "voice"), ("simulator", "realism"))  # the keys that name a format


def setting(schema: dict, *path: str) -> dict:
    for key in path:
        schema = schema["properties"][key]
    return schema


def test_the_schema_allows_exactly_the_registered_kinds():
    schema = config_schema()
    assert schema["$defs"]["system"]["properties"]["agent"]["enum"] == list(AGENT_KINDS)  # each once, in order
    assert schema["$defs"]["backend"]["properties"]["type"]["enum"] == list(BACKEND_KINDS)
    assert setting(schema, "scoring", "metrics")["items"]["enum"] == list(FAMILY_KINDS)
    # one list of the corpus formats, which every setting that names a format refers to
    assert schema["$defs"]["corpus_format"]["enum"] == list(CORPUS_FORMATS)
    for path in FORMAT_SETTINGS:
        key = "import_format" if path == ("sessions",) else "format"
        assert setting(schema, *path, key)["$ref"] == "#/$defs/corpus_format"
        assert setting(schema, *path, key)["default"] in CORPUS_FORMATS
    # a profile is a built-in's name or one the config defines (crseval.simulate.user.profiles.config_problems)
    assert schema["properties"]["simulator"]["properties"]["profile"]["type"] == "string"
    assert schema["$defs"]["system"]["properties"]["profile"]["type"] == "string"
    assert all(resolve_profile(name).name == name for name in PROFILES)


@pytest.mark.parametrize("name", sorted(AGENT_KINDS))
def test_every_agent_kind_declares_itself_completely(name):
    kind = AGENT_KINDS[name]
    assert isinstance(kind, AgentKind) and kind.name == name and kind.summary
    assert callable(kind.make_agent) and callable(kind.check)
    assert kind.prompt_key in (None, "prompt", "system_prompt")
    assert not (kind.external and kind.reads_ground_truth)  # a system under test never reads the ground truth
    if kind.prompt_key == "prompt":  # what the system's own LLM is asked with, or what a calibration system echoes
        assert kind.llm_backend or kind.reads_ground_truth


def schema_blocks(entry: str, key: str) -> dict[str, dict]:
    """Kind -> the `then` of the composed schema's if/then block for the `$defs` entry `entry` of that kind."""
    blocks = {}
    for rule in config_schema()["$defs"][entry]["allOf"]:
        assert rule["if"]["required"] == [key]
        test = rule["if"]["properties"][key]
        for name in test.get("enum", [test.get("const")]):
            assert name not in blocks, f"two blocks for {key} {name!r}"
            blocks[name] = rule["then"]
    return blocks


def test_every_agent_kind_and_backend_has_one_block_in_the_schema():
    assert set(schema_blocks("system", "agent")) == set(AGENT_KINDS)
    assert set(schema_blocks("backend", "type")) == set(BACKEND_KINDS)


@pytest.mark.parametrize("name", sorted(AGENT_KINDS))
def test_the_schema_allows_each_agent_kind_exactly_the_keys_it_declares(name):
    kind, then = AGENT_KINDS[name], schema_blocks("system", "agent")[name]
    keys = config_schema()["$defs"]["system"]["properties"]
    assert len(set(kind.config_keys)) == len(kind.config_keys)  # each key declared once
    assert all(keys[key] == sub for key, sub in {**kind.required_keys, **kind.optional_keys}.items())
    assert then["additionalProperties"] is False
    assert set(then["properties"]) == set(kind.config_keys)
    assert set(then.get("required", [])) == set(kind.required_keys)
    assert all(sub.get("description") for sub in {**kind.required_keys, **kind.optional_keys}.values())


@pytest.mark.parametrize("name", sorted(BACKEND_KINDS))
def test_the_schema_allows_each_backend_exactly_the_keys_it_declares(name):
    kind, then = BACKEND_KINDS[name], schema_blocks("backend", "type")[name]
    keys = config_schema()["$defs"]["backend"]["properties"]
    assert all(keys[key] == sub for key, sub in {**kind.required_keys, **kind.optional_keys}.items())
    assert set(then["properties"]) == {"type", "model", *kind.required_keys, *kind.optional_keys}
    assert set(then.get("required", [])) == set(kind.required_keys)


@pytest.mark.parametrize("name", sorted(AGENT_KINDS))
def test_an_agent_kind_takes_the_keys_its_declaration_reads(name):
    kind = AGENT_KINDS[name]
    if kind.llm_backend:  # its own LLM and how to sample it
        assert {"backend", "options"} <= set(kind.required_keys)
    if kind.prompt_key:
        assert kind.prompt_key in kind.config_keys


def test_the_calibration_kinds_give_their_roles_and_nothing_else_has_one():
    systems = [{"name": f"s-{name}", "agent": name, "lag": 2} for name in AGENT_KINDS]
    roles = calibration_roles(systems)
    assert roles == {
        "s-oracle": "oracle",
        "s-lagging": "lag2",
        "s-flaky": "flaky",
        "s-stubborn": "stubborn",
        "s-random": "random",
        "s-parrot": "parrot",
        "s-literal": "literal",
        "s-asker": "asker",
        "s-prompt_echo": "prompt_echo",
    }


@pytest.mark.parametrize("name", sorted(BACKEND_KINDS))
def test_every_backend_kind_declares_itself_completely(name):
    kind = backend_kind(name)
    assert kind.name == name and kind.summary and callable(kind.build)
    settings = {"type": name, "model": "/models/a.gguf", "host": "http://localhost:1", "base_url": "http://[::1]:1/v1"}
    assert (kind.model_file(settings) == "/models/a.gguf") is kind.in_process
    assert (name, "/models/a.gguf") in kind.identities(settings)


def test_two_server_kinds_on_one_loopback_server_are_the_same_model():
    ollama = {"type": "ollama", "model": "m", "host": "localhost:8080"}
    openai = {"type": "openai", "model": "m", "base_url": "http://127.0.0.1:8080/v1"}
    assert backend_kind("ollama").identities(ollama) & backend_kind("openai").identities(openai)


def test_unknown_kind_names_fail_naming_the_known_ones_and_the_closest():
    with pytest.raises(
        ValueError, match=r"unknown agent 'templte' \(did you mean 'template'\?\); known: template, llm"
    ):
        agent_kind("templte")
    with pytest.raises(LLMError, match=r"'llama_cpp' \(did you mean 'llamacpp'\?\); known: llamacpp, ollama, openai"):
        backend_kind("llama_cpp")
    with pytest.raises(ValueError, match=r"format 'crs_arena' \(did you mean 'crsarena'\?\); known: thesis"):
        corpus_format("crs_arena")


def sources() -> list[Path]:
    return sorted([*SRC.rglob("*.py"), *(REPO / "workflow").rglob("*.py"), *(REPO / "workflow").rglob("*.smk")]) + [
        REPO / "Snakefile"
    ]


def name_tests(text: str, names: set[str]) -> list[str]:
    """The lines of `text` that compare something with one of `names` (==, !=, in, a literal collection
    of names tested for membership) or read a config entry's kind key to branch on it."""
    quoted = "|".join(re.escape(name) for name in sorted(names, key=len, reverse=True))
    literal = rf"""["']({quoted})["']"""
    patterns = [
        rf"(==|!=)\s*{literal}",
        rf"{literal}\s*(==|!=|in\b|not in\b)",
        rf"\bin\s*[\(\[\{{][^\)\]\}}]*{literal}",
    ]
    return [
        line.strip()
        for line in text.splitlines()
        if not line.strip().startswith("#") and any(re.search(p, line) for p in patterns)
    ]


# Words that name a kind and something else: a table's column (`tas`), a family's own setting value (a topic
# extractor that is an `llm`). Those comparisons are not tests of a kind.
COLUMN_TESTS = re.compile(r"""["']tas["']\s+in\s+(sessions|turns|table|frame|columns)\b""")
SETTING_VALUES = re.compile(r"""["'](extractor|topics)["']\]?\)?\s*==\s*["']llm["']""")


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_no_module_outside_a_kinds_package_tests_its_names(kind):
    names, home = KINDS[kind]
    found = []
    for path in sources():
        if home in path.parents:
            continue
        for line in name_tests(path.read_text(encoding="utf-8"), names):
            if not COLUMN_TESTS.search(line) and not SETTING_VALUES.search(line):
                found.append(f"{path.relative_to(REPO)}: {line}")
    assert found == []


def test_the_grep_finds_the_tests_it_is_meant_to_find():
    names = {"llm", "http"}
    assert name_tests('if system["agent"] == "llm":', names)
    assert name_tests("if agent in ('chat', 'http'):", names)
    assert name_tests('if "llm" in kinds:', names)
    assert not name_tests('backends["llm"] = x', names)
    assert not name_tests('KIND = AgentKind("http", "served over HTTP")', names)
