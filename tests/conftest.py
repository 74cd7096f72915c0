"""Shared fixtures: repository paths, a scratch copy of the workflow, the Snakemake CLI."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
DEMO_CATALOG = REPO / "resources" / "catalog" / "demo_movies.json"
NON_GENRES = REPO / "resources" / "wordlists" / "non_genre_values.tsv"
FULL_CATALOG = REPO.parent / "shared" / "data" / "opendialkg_movie_data.json"
REFERENCE_LOGS = REPO.parent / "shared" / "data" / "reference_logs"

WORKFLOW_PARTS = ("Snakefile", "workflow", "config", "resources", "src", "envs")


def default_config() -> dict:
    return yaml.safe_load((REPO / "config" / "config.yaml").read_text())


def copy_workflow(destination: Path) -> Path:
    """A scratch copy of the workflow, so that runs never touch the repository's results/."""
    for part in WORKFLOW_PARTS:
        source = REPO / part
        if source.is_dir():
            shutil.copytree(source, destination / part, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy2(source, destination / part)
    return destination


@pytest.fixture
def workflow_copy(tmp_path: Path) -> Path:
    return copy_workflow(tmp_path)


def run_snakemake(workdir: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "2", *args],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=900,
    )
    if check and result.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
    return result


def planned_jobs(result: subprocess.CompletedProcess) -> dict[str, int]:
    """Rule -> job count from the 'Job stats' table of a (dry) run; empty when nothing to do."""
    text = result.stdout + result.stderr
    match = re.search(r"Job stats:\njob\s+count\n[-\s]+\n(.*?)\ntotal\s+\d+", text, re.S)
    if not match:
        return {}
    return {line.split()[0]: int(line.split()[1]) for line in match.group(1).splitlines() if line.strip()}


def write_config(directory: Path, config: dict, name: str = "test.yaml") -> Path:
    path = directory / name
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path
