"""Re-running an import through the workflow: a changed log re-imports only its shard, an added log
only the shard it lands in, a removed log its shard and the later ones of its system
(docs/importing.md, "How an import is planned and re-run"); no job lists the corpus files."""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import REFERENCE_LOGS, copy_workflow, default_config, planned_outputs, run_snakemake, write_config

pytestmark = [
    pytest.mark.workflow,
    pytest.mark.skipif(not REFERENCE_LOGS.exists(), reason="the thesis logs are not beside the repository"),
]
EXPERIMENT = "rerun-import"
SHARD_SIZE = 3


def log_name(model: str, number: int) -> str:
    return f"{model}_session_{model}_{number}.json"


def imported_shards(result) -> set[str]:
    return {output.rstrip(",") for output in planned_outputs(result, "import_logs")}  # the shard, first output


def test_a_changed_added_or_removed_log_reimports_only_the_shards_it_changes(tmp_path):
    workdir = copy_workflow(tmp_path)
    corpus = workdir / "corpus"
    corpus.mkdir()
    for model, count in (("gemma:2b", 7), ("qwen:4b", 4)):
        for number in range(count):
            shutil.copy(REFERENCE_LOGS / log_name(model, number), corpus)
    config = default_config()
    config.update(experiment=EXPERIMENT, judge={"enabled": False}, systems=[{"name": "unused", "agent": "template"}])
    config["sessions"] = {
        "source": "import",
        "import_format": "thesis_logs",
        "import_paths": "corpus/*.json",
        "shard_size": SHARD_SIZE,
    }
    config["scoring"]["metrics"] = ["tas"]
    write_config(workdir, config, "import.yaml")
    target = f"results/{EXPERIMENT}/sessions/import_report.json"
    first = run_snakemake(workdir, target, "--configfile", "import.yaml")
    shard = f"results/{EXPERIMENT}/sessions/{{}}/shard-{{}}.jsonl".format
    assert imported_shards(first) == {shard("gemma:2b", k) for k in range(3)} | {shard("qwen:4b", k) for k in range(2)}
    # the job lines name the shard's slice, never a log file
    assert "corpus/" not in (first.stdout + first.stderr).replace("corpus_manifest", "")
    assert imported_shards(run_snakemake(workdir, target, "--configfile", "import.yaml", "-n")) == set()

    # a changed log (session 4 of gemma:2b, shard 1): that shard only
    changed = corpus / log_name("gemma:2b", 4)
    data = json.loads(changed.read_text())
    data["conversation"][0]["text"] += " Something with Al Pacino, please."
    changed.write_text(json.dumps(data))
    rerun = run_snakemake(workdir, target, "--configfile", "import.yaml")
    assert imported_shards(rerun) == {shard("gemma:2b", 1)}

    # an added log with the next number: the last shard of its system only
    shutil.copy(REFERENCE_LOGS / log_name("qwen:4b", 4), corpus)
    rerun = run_snakemake(workdir, target, "--configfile", "import.yaml")
    assert imported_shards(rerun) == {shard("qwen:4b", 1)}
    report = json.loads((workdir / target).read_text())
    assert report["sessions"] == {"gemma:2b": 7, "qwen:4b": 5}

    # a removed log (gemma:2b session 1): its shard and the later shards of its system; the last
    # shard, left empty (6 sessions in 2 shards), is no longer planned
    (corpus / log_name("gemma:2b", 1)).unlink()
    rerun = run_snakemake(workdir, target, "--configfile", "import.yaml")
    assert imported_shards(rerun) == {shard("gemma:2b", 0), shard("gemma:2b", 1)}
    report = json.loads((workdir / target).read_text())
    assert report["sessions"] == {"gemma:2b": 6, "qwen:4b": 5}
    records = [json.loads(line) for k in range(2) for line in (workdir / shard("gemma:2b", k)).read_text().splitlines()]
    assert [r["session_index"] for r in records] == [0, 2, 3, 4, 5, 6]
