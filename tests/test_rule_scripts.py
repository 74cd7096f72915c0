"""Rule scripts run with the library of their own source tree, wherever a job runs (workflow/scripts/source_tree.py).

Snakemake clears PYTHONPATH for jobs in a conda environment, so the scripts do not rely on it: each
imports `source_tree` (found because Snakemake puts a script's folder on sys.path), which puts the
tree's src/ first.
"""

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, copy_workflow

SCRIPTS = sorted(p for p in (REPO / "workflow" / "scripts").glob("*.py") if p.name != "source_tree.py")


def imported_modules(script: Path) -> list[str]:
    modules = []
    for node in ast.parse(script.read_text()).body:
        if isinstance(node, ast.Import):
            modules += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            modules.append(node.module)
    return modules


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_every_rule_script_imports_source_tree_before_crseval(script):
    modules = imported_modules(script)
    first = next(i for i, name in enumerate(modules) if name.split(".")[0] == "crseval")
    assert "source_tree" in modules[:first]


def test_a_script_imports_the_library_of_its_tree_without_an_installed_crseval(tmp_path):
    workdir = copy_workflow(tmp_path)
    scripts = workdir / "workflow" / "scripts"
    # -S: no site-packages, so no installed crseval; the script folder appended to sys.path as Snakemake does
    code = f"import sys; sys.path.append({str(scripts)!r}); import source_tree, crseval; print(crseval.__file__)"
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    result = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert Path(result.stdout.strip()).resolve() == (workdir / "src" / "crseval" / "__init__.py").resolve()
