"""Rule provenance: resolved config, code, packages, model and input hashes, machine -> provenance.json."""

from pathlib import Path

import source_tree  # noqa: F401  (crseval from this source tree)

from crseval.core.io import log_to, write_json
from crseval.provenance import JOB_RECORDS, build

log = log_to(snakemake.log[0])
record = build(
    snakemake.config,  # as the run uses it (defaults filled); params carry its per-section digests
    source_dir=Path(snakemake.scriptdir).resolve().parents[1],  # the tree whose src/ is on PYTHONPATH
    hash_cache=snakemake.params.hash_cache,
    outputs=snakemake.input.described,  # the tables, statistics and figures made with this config
    results_dir=Path(snakemake.output[0]).parent,
    # the code each job behind them ran with, as its params named it when it finished; Snakemake keeps them in
    # the working directory, which is where its jobs run
    job_records=JOB_RECORDS,
)
write_json(record, snakemake.output[0])  # atomic: written through crseval.core.io.atomic_path
source, jobs = record["source"], record["crseval"]["jobs"]
log.info(
    "crseval %s, commit %s%s, %d model setting(s), %d prompt(s), %d output file(s) hashed",
    record["crseval"]["version"],
    source["commit"] or f"unknown ({source['reason']})",
    " (dirty)" if source["dirty"] else "",
    len(record["models"]),
    len(record["prompts"]),
    len(record["outputs"]),
)
log.info("the code of %d job(s), from %s %s", jobs["jobs"], jobs["records"], jobs["reason"] or "")
for line in jobs["unreadable"]:
    log.warning("job record not read: %s", line)
stages = {name: stage for name, stage in record["stages"].items() if name != "systems"}
stages |= {f"systems.{name}": stage for name, stage in record["stages"]["systems"].items()}
for name, stage in stages.items():
    for script, reason in stage.get("code_from_tree", {}).items():
        log.info("stage %s: the code of %s from the tree: %s", name, script, reason)
    for script, digests in stage["settings"].get("code", {}).items():
        if isinstance(digests, list):  # `crseval verify` names it too
            log.warning("stage %s: its jobs ran with %d different code digests of %s", name, len(digests), script)
