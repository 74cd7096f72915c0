"""Rule provenance: resolved config, code, packages, model and input hashes, machine -> provenance.json."""

from pathlib import Path

import source_tree  # noqa: F401  (crseval from this source tree)

from crseval.core.io import log_to, write_json
from crseval.provenance import build

log = log_to(snakemake.log[0])
record = build(
    snakemake.config,  # as the run uses it (defaults filled); params carry its per-section digests
    source_dir=Path(snakemake.scriptdir).resolve().parents[1],  # the tree whose src/ is on PYTHONPATH
    hash_cache=snakemake.params.hash_cache,
    outputs=snakemake.input.described,  # the tables, statistics and figures made with this config
    results_dir=Path(snakemake.output[0]).parent,
)
write_json(record, snakemake.output[0])  # atomic: written through crseval.core.io.atomic_path
source = record["source"]
log.info(
    "crseval %s, commit %s%s, %d model setting(s), %d prompt(s), %d output file(s) hashed",
    record["crseval"]["version"],
    source["commit"] or f"unknown ({source['reason']})",
    " (dirty)" if source["dirty"] else "",
    len(record["models"]),
    len(record["prompts"]),
    len(record["outputs"]),
)
