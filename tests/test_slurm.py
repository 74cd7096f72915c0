"""The workflow on a real one-node SLURM cluster (slurmctld, slurmd, slurmdbd with MariaDB),
started on this machine from Debian's packages, compared with a local run of the same config.

The compared experiment is config/test/cluster.yaml: the default config with its LLM-free system
only and the judge off, so that both runs take minutes; the LLM systems go through the same
`simulate` rule.
"""

import importlib.util
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pandas as pd
import pytest
from conftest import copy_workflow, run_snakemake

# Installs Debian packages and starts system services: only when asked (.ci/run asks).
SYSTEM_TESTS = "CRSEVAL_SYSTEM_TESTS"
pytestmark = [
    pytest.mark.slurm,
    pytest.mark.skipif(
        os.environ.get(SYSTEM_TESTS) != "1",
        reason=f"installs slurm-wlm, slurmdbd, mariadb-server and munge and starts them as root: run with "
        f"{SYSTEM_TESTS}=1 (about 5 minutes)",
    ),
]
HERE = Path(__file__).parent
PACKAGES = ["slurm-wlm", "slurmdbd", "mariadb-server", "munge"]


def install_slurm():
    if all(shutil.which(tool) for tool in ("slurmctld", "slurmd", "slurmdbd", "mariadbd", "munged")):
        return
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", *PACKAGES]):
        result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
        if result.returncode != 0:
            pytest.fail(f"{' '.join(command)} failed:\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}")


@pytest.fixture
def slurm_cluster(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("starting a SLURM cluster needs root")
    if importlib.util.find_spec("snakemake_executor_plugin_slurm") is None:
        pytest.fail('the SLURM executor is not installed: pip install -e ".[slurm]" (the dev extra has it)')
    install_slurm()
    # outside pytest's private (0700) tmp folders: the mysql user must reach its data folder
    state = Path(tempfile.mkdtemp(prefix="crseval-slurm-"))
    state.chmod(0o755)
    started = subprocess.run(
        ["bash", str(HERE / "slurm" / "start_cluster.sh"), str(state)], capture_output=True, text=True, timeout=300
    )
    try:
        if started.returncode != 0 or "idle" not in started.stdout:
            logs = "\n".join(p.read_text(errors="replace")[-1500:] for p in (state / "log").glob("*.log"))
            pytest.fail(f"the SLURM cluster did not start:\n{started.stdout}\n{started.stderr}\n{logs}")
        yield state
    finally:
        subprocess.run(["bash", str(HERE / "slurm" / "stop_cluster.sh"), str(state)], capture_output=True, timeout=120)
        shutil.rmtree(state, ignore_errors=True)


def test_slurm_run_matches_a_local_run(tmp_path, slurm_cluster):
    runs = {}
    for name, extra in (("slurm", ["--profile", "profiles/slurm"]), ("local", [])):
        (tmp_path / name).mkdir()
        workdir = copy_workflow(tmp_path / name)
        run_snakemake(workdir, "--configfile", "config/test/cluster.yaml", *extra)
        runs[name] = workdir / "results" / "cluster"
    jobs = subprocess.run(
        ["sacct", "-n", "-X", "-P", "-o", "JobName,State"], capture_output=True, text=True, check=True
    ).stdout
    completed = [line for line in jobs.splitlines() if line.endswith("|COMPLETED")]
    assert len(completed) >= 9, jobs  # index_catalog, train_lda, 2 simulate, 2 score, aggregate, stats, plots
    for table in ("sessions", "turns"):
        slurm = pd.read_parquet(runs["slurm"] / "tables" / f"{table}.parquet")
        local = pd.read_parquet(runs["local"] / "tables" / f"{table}.parquet")
        pd.testing.assert_frame_equal(slurm, local)
    for shard in (0, 1):
        path = Path("sessions") / "template" / f"shard-{shard}.jsonl"
        assert (runs["slurm"] / path).read_text() == (runs["local"] / path).read_text()
