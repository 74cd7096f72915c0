"""The library's layout: one package per stage, imports running one way only.

A package may import itself and the packages before it in LAYERS, never one after it, so that a
stage never depends on a later one (the catalog knows nothing of metrics, metrics nothing of the
analysis). Top level holds only the command line and the provenance record, which may use anything.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import REPO  # noqa: E402

PACKAGE = REPO / "src" / "crseval"
LAYERS = ("core", "llm", "language", "catalog", "simulate", "corpora", "metrics", "judge", "analysis")
TOP_LEVEL = {"__init__.py", "cli.py", "provenance.py"}


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


def test_top_level_keeps_only_the_command_line_and_provenance():
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
    module.write_text("def f():\n    from crseval.analysis.stats import omnibus\n    import crseval.cli\n")
    assert imported_packages(module) == {"analysis", "cli"}
