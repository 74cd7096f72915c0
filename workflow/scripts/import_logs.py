"""Rule import_logs: legacy conversation logs -> session shards (same layout as simulated ones) and an import report."""

import json
from pathlib import Path

import jsonschema

from crseval.catalog import CatalogIndex
from crseval.concepts import ConceptMatcher
from crseval.importer import import_logs
from crseval.io import atomic_path, log_to, write_json
from crseval.sessions import canonical_sha, load_schema

log = log_to(snakemake.log[0])
index = CatalogIndex.read(snakemake.input.films, snakemake.input.concepts)
catalog_sha = json.loads(Path(snakemake.input.catalog_summary).read_text())["catalog"]["sha256"]
sessions, report = import_logs(list(snakemake.input.logs), ConceptMatcher(index.concepts, index.films), catalog_sha,
                               canonical_sha({"importer": 1, "shard_size": snakemake.params.shard_size}))
sessions_folder = (Path(snakemake.params.results) / "sessions").resolve()
for system in sessions:  # the importer gives safe names; this guards the results folder if it ever did not
    if not (sessions_folder / system / "shard-0.jsonl").resolve().is_relative_to(sessions_folder):
        raise ValueError(f"system {system!r}: its session shards would be written outside {sessions_folder}")
validator = jsonschema.Draft202012Validator(load_schema(snakemake.input.schema))
size = snakemake.params.shard_size
for system, records in sessions.items():
    for record in records:
        errors = list(validator.iter_errors(record))
        if errors:
            raise ValueError(f"{record['session_id']}: does not match the session schema: {errors[0].message}")
    for shard, start in enumerate(range(0, len(records), size)):
        path = Path(snakemake.params.results) / "sessions" / system / f"shard-{shard}.jsonl"
        with atomic_path(path) as temporary:
            temporary.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records[start:start + size]), encoding="utf-8")
write_json(report, snakemake.output.report)
log.info("imported %s", report)
