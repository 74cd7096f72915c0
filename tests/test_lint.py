"""The lint gate: ruff (lint and format), snakefmt and `snakemake --lint` report nothing.

Part of the test suite so that the README's one test command is also the lint gate in CI.
"""

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REFERENCE_LOGS, REPO, missing_input_of

BIN = Path(sys.executable).parent
SHIPPED_CONFIGS = sorted(p.relative_to(REPO).as_posix() for p in (REPO / "config").glob("*.yaml"))


def run(*command: str) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=600)


def test_ruff_check_finds_nothing():
    result = run(str(BIN / "ruff"), "check", "--no-cache", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_would_change_nothing():
    result = run(str(BIN / "ruff"), "format", "--check", "--no-cache", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_snakefmt_would_change_nothing():
    rules = sorted(str(p.relative_to(REPO)) for p in (REPO / "workflow" / "rules").glob("*.smk"))
    result = run(str(BIN / "snakefmt"), "--check", "Snakefile", *rules)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.workflow
@pytest.mark.parametrize("configfile", SHIPPED_CONFIGS)
def test_snakemake_lint_finds_nothing(configfile):
    if configfile == "config/thesis_logs.yaml" and not REFERENCE_LOGS.exists():
        pytest.skip("the thesis logs are not on this machine (config/thesis_logs.yaml reads them to plan its jobs)")
    missing = missing_input_of(configfile)
    if missing:
        pytest.skip(f"{missing} is not on this machine ({configfile} names it; a missing input stops the run)")
    result = run(sys.executable, "-m", "snakemake", "--lint", "--configfile", configfile)
    text = result.stdout + result.stderr
    assert result.returncode == 0 and "Lints for" not in text, text
