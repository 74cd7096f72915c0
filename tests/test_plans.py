"""`snakemake -n` plans the same jobs for every shipped and test config as the recorded plans.

tests/data/plans/<config>.json holds, per job, its rule, outputs and threads as planned with
`--forceall --cores 2`. A change of the library's layout, of the config's defaults or of the
rule files must leave them alone; a change meant to alter the DAG rewrites them with
    .venv/bin/python tests/test_plans.py --write
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import REFERENCE_LOGS, REPO, missing_input_of  # noqa: E402

pytestmark = pytest.mark.workflow  # each test runs `snakemake -n`

PLANS = REPO / "tests" / "data" / "plans"
CONFIGS = sorted(
    p.relative_to(REPO).as_posix() for p in [*REPO.glob("config/*.yaml"), *REPO.glob("config/test/*.yaml")]
)


def plan_name(configfile: str) -> str:
    """config/test/rerun.yaml -> test_rerun"""
    return configfile.removeprefix("config/").removesuffix(".yaml").replace("/", "_")


def plan(configfile: str) -> list[dict]:
    """Every job of a forced dry run: rule, outputs as printed, threads."""
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--cores", "2", "--forceall", "--workflow-profile", "none"]
        + ["--configfile", configfile],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    jobs = []
    for rule, body in re.findall(r"^(?:local)?rule (\w+):\n((?:    .*\n)+)", result.stdout + result.stderr, re.M):
        output = re.search(r"^    output: (.*)$", body, re.M)
        threads = re.search(r"^    threads: (\d+)$", body, re.M)
        jobs.append(
            {
                "rule": rule,
                "output": output.group(1) if output else "",
                "threads": int(threads.group(1)) if threads else 1,
            }
        )
    return sorted(jobs, key=lambda job: (job["rule"], job["output"]))


@pytest.mark.parametrize("configfile", CONFIGS)
def test_dry_run_plans_the_recorded_jobs(configfile):
    if "thesis_logs" in configfile and not REFERENCE_LOGS.exists():
        pytest.skip("the thesis logs are not on this machine (config/thesis_logs.yaml plans its jobs from them)")
    missing = missing_input_of(configfile)
    if missing:
        pytest.skip(f"{missing} is not on this machine ({configfile} names it; a missing input stops the run)")
    expected = json.loads((PLANS / f"{plan_name(configfile)}.json").read_text())
    actual = plan(configfile)
    assert [j for j in actual if j not in expected] == [] and [j for j in expected if j not in actual] == []


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    for configfile in CONFIGS:
        (PLANS / f"{plan_name(configfile)}.json").write_text(json.dumps(plan(configfile), indent=1) + "\n")
        print("wrote", plan_name(configfile))
