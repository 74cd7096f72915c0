"""Packaging contracts: the conda env pins what pyproject pins; CI runs the README's command."""

import re
import subprocess
import tomllib

import yaml
from conftest import REPO


def test_conda_env_pins_the_project_dependencies():
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    env = yaml.safe_load((REPO / "envs" / "crseval.yaml").read_text())
    pip = next(item["pip"] for item in env["dependencies"] if isinstance(item, dict))
    assert sorted(pip) == sorted(pyproject["project"]["dependencies"])
    assert "python=3.11" in env["dependencies"]
    assert all(
        re.fullmatch(r"[A-Za-z0-9_.\-]+(\[[\w,]+\])?==[\w.]+", dep) for dep in pyproject["project"]["dependencies"]
    )


def test_the_slurm_executor_is_an_extra():
    """Snakemake imports every installed executor plugin at start, and the SLURM one asks `scontrol` for the
    cluster's configuration then: a user without a cluster must not install it with the project."""
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    extras = pyproject["project"]["optional-dependencies"]
    assert not any(dep.startswith("snakemake-executor-plugin-slurm") for dep in pyproject["project"]["dependencies"])
    assert extras["slurm"] == ["snakemake-executor-plugin-slurm==2.8.0"]
    assert "crseval[slurm]" in extras["dev"]  # the tests run the SLURM profile


def test_every_rule_uses_the_conda_env():
    for rules in (REPO / "workflow" / "rules").glob("*.smk"):
        text = rules.read_text()
        assert len(re.findall(r"^\s*rule \w+:", text, re.M)) == text.count("conda:"), rules.name


def test_ci_runs_the_readme_test_command_verbatim():
    readme = (REPO / "README.md").read_text()
    block = re.search(r"<!-- quickstart:test -->\n```bash\n(.*?)\n```", readme, re.S).group(1)
    extracted = subprocess.run(
        [
            "awk",
            "/<!-- quickstart:test -->/{found=1; next} found && /^```bash/{grab=1; next} grab && /^```/{exit} grab{print}",  # noqa: E501
            "README.md",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert extracted == block
    assert "pytest" in block and "pip install" in block
    ci = (REPO / ".ci" / "run").read_text()
    assert "quickstart:test" in ci and 'bash -c "$command"' in ci
