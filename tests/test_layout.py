"""The library's layout: one package per stage, imports running one way only.

A package may import itself and the packages before it in LAYERS, never one after it, so that a
stage never depends on a later one (the catalog knows nothing of metrics, metrics nothing of the
statistics). Top level holds only the command line, the planning of a config's jobs and the provenance
record with its stage digests, which may use anything.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import REPO  # noqa: E402

PACKAGE = REPO / "src" / "crseval"
LAYERS = (
    "core",
    "llm",
    "language",
    "replies",
    "catalog",
    "corpora",
    "simulate",
    "metrics",
    "judge",
    "statistics",
    "checks",
    "reports",
    "runs",
)
TOP_LEVEL = {"__init__.py", "cli.py", "planning.py", "provenance.py", "stage_digests.py"}


def imported_packages(path: Path) -> set[str]:
    """The crseval packages (or top-level modules) a module imports, anywhere in its body."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "crseval" and len(parts) > 1:
                found.add(parts[1])
    return found


def test_top_level_keeps_only_the_command_line_planning_and_provenance():
    modules = {p.name for p in PACKAGE.glob("*.py")}
    packages = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert modules == TOP_LEVEL
    assert packages == set(LAYERS)


def test_every_package_says_what_its_stage_reads_and_writes():
    for layer in LAYERS:
        doc = ast.get_docstring(ast.parse((PACKAGE / layer / "__init__.py").read_text(encoding="utf-8")))
        assert doc and len(doc.split()) >= 20, f"crseval.{layer} has no docstring saying what it reads and writes"


def test_imports_run_one_way():
    wrong = []
    for layer_index, layer in enumerate(LAYERS):
        allowed = set(LAYERS[: layer_index + 1])
        for module in sorted((PACKAGE / layer).rglob("*.py")):
            for target in imported_packages(module) - allowed:
                if target in LAYERS or f"{target}.py" in TOP_LEVEL:
                    wrong.append(f"{module.relative_to(PACKAGE)} imports crseval.{target}")
    assert wrong == []


def test_the_direction_check_sees_function_level_imports(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from crseval.statistics.system_tests import omnibus\n    import crseval.cli\n")
    assert imported_packages(module) == {"statistics", "cli"}


MAX_MODULES, MAX_SHARE = 15, 0.20  # a package a newcomer can read through: a room with one purpose


def test_no_package_grows_past_a_room():
    """No package holds more than MAX_MODULES modules or MAX_SHARE of the library's lines."""
    lines = {p: len(p.read_text(encoding="utf-8").splitlines()) for p in PACKAGE.rglob("*.py")}
    total = sum(lines.values())
    for layer in LAYERS:
        modules = [p for p in lines if p.parent == PACKAGE / layer and p.stem != "__init__"]
        share = sum(n for p, n in lines.items() if PACKAGE / layer in p.parents) / total
        assert len(modules) <= MAX_MODULES, f"crseval.{layer} holds {len(modules)} modules"
        assert share <= MAX_SHARE, f"crseval.{layer} holds {share:.0%} of the library's lines"


def test_no_two_modules_share_a_name():
    """A name says which module it is, wherever it is read (a traceback, a docs page, an import)."""
    names: dict[str, list[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        if path.stem != "__init__":
            names.setdefault(path.stem, []).append(module_name(path))
    assert {name: where for name, where in names.items() if len(where) > 1} == {}


def module_imports(path: Path, modules: set[str]) -> set[str]:
    """The crseval modules `path` imports (`from crseval.a import b` is the module crseval.a.b when there
    is one, else crseval.a), anywhere in its body."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found |= {
                f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules else node.module for a in node.names
            }
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
    return found & modules


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_no_modules_import_each_other_in_a_circle():
    """Inside a package too: a circle means two modules are one concept, or a third is missing."""
    paths = {module_name(path): path for path in PACKAGE.rglob("*.py")}
    graph = {name: module_imports(path, set(paths)) - {name} for name, path in paths.items()}
    circles = []
    for start in graph:  # a path from a module back to itself
        seen, frontier = set(), [(start, (start,))]
        while frontier:
            name, route = frontier.pop()
            for target in graph[name]:
                if target == start:
                    circles.append(" -> ".join((*route, start)))
                elif target not in seen:
                    seen.add(target)
                    frontier.append((target, (*route, target)))
    assert circles == []


def unexplained_imports(path: Path) -> list[int]:
    """The lines of `path`'s imports inside a function with no reason given: a comment on the import's
    lines, on those of the imports right above it, or on the line above that group."""
    lines = path.read_text(encoding="utf-8").splitlines()
    nodes = {
        sub.lineno: sub
        for node in ast.walk(ast.parse("\n".join(lines)))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        for sub in ast.walk(node)
        if isinstance(sub, (ast.Import, ast.ImportFrom))
    }.values()
    group_of = {}  # an import's first line -> the first line of the run of imports it belongs to
    for node in sorted(nodes, key=lambda n: n.lineno):
        above = node.lineno - 1
        group_of[node.lineno] = (
            group_of.get(above, node.lineno) if above in {n.end_lineno for n in nodes} else node.lineno
        )
    explained = set()
    for node in nodes:
        start = group_of[node.lineno]
        if "#" in "".join(lines[node.lineno - 1 : node.end_lineno]) or lines[start - 2].strip().startswith("#"):
            explained.add(start)
    return sorted({n.lineno for n in nodes if group_of[n.lineno] not in explained})


def test_every_function_level_import_says_why():
    """An import inside a function is a choice (a heavy library loaded only where it is used, a circle
    avoided): the comment beside it says which, so nobody moves it up without knowing the cost."""
    unexplained = [
        f"{path.relative_to(PACKAGE)}:{line}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for line in unexplained_imports(path)
    ]
    assert unexplained == []


def test_the_import_reason_check_finds_an_unexplained_import(tmp_path):
    module = tmp_path / "m.py"
    module.write_text(
        "def f():\n    import json\n\n\ndef g():\n    # why\n    import os\n    import re\n"
        "\n\ndef h():\n    import sys  # why\n"
    )
    assert unexplained_imports(module) == [2]


def test_the_circle_check_finds_a_circle(tmp_path, monkeypatch):
    package = tmp_path / "crseval" / "p"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from crseval.p.b import x\n")
    (package / "b.py").write_text("def f():\n    from crseval.p import a\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", tmp_path / "crseval")
    with pytest.raises(AssertionError, match="crseval.p.a -> crseval.p.b -> crseval.p.a"):
        test_no_modules_import_each_other_in_a_circle()


def test_the_architecture_page_names_every_module():
    """docs/architecture.md's package map: each package's row names every module of the package."""
    rows = {}
    for line in (REPO / "docs" / "architecture.md").read_text(encoding="utf-8").splitlines():
        cells = line.split("|")
        if len(cells) > 3 and cells[1].strip().strip("`") in LAYERS:
            rows[cells[1].strip().strip("`")] = set(re.findall(r"`(\w+)`", cells[2]))
    assert set(rows) == set(LAYERS)
    for layer in LAYERS:
        modules = {p.stem for p in (PACKAGE / layer).rglob("*.py") if p.stem != "__init__"}
        wings = {p.parent.name for p in (PACKAGE / layer).glob("*/__init__.py")}
        assert (modules | wings) - rows[layer] == set(), f"{layer}: modules the map leaves out"


WINGS = {"simulate": ("user", "systems")}  # rooms of one package that know nothing of each other


def test_the_user_and_the_systems_under_test_know_nothing_of_each_other():
    """The simulated user is the same whatever system it talks to, and a system under test reads the user
    only through its turns: crseval.simulate.user and crseval.simulate.systems never import each other
    (crseval.simulate.sessions brings them together)."""
    wrong = []
    for package, wings in WINGS.items():
        for wing in wings:
            others = {f"crseval.{package}.{other}" for other in wings if other != wing}
            for module in sorted((PACKAGE / package / wing).rglob("*.py")):
                for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
                    names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
                    names += [a.name for a in node.names] if isinstance(node, ast.Import) else []
                    wrong += [
                        f"{module.relative_to(PACKAGE)} imports {n}" for n in names if n.startswith(tuple(others))
                    ]
    assert wrong == []
