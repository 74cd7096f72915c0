"""Rule import_logs: legacy conversation logs -> session shards (same layout as simulated ones) and an import report."""

from pathlib import Path

from crseval.canonical import canonical_sha
from crseval.catalog_index import CatalogIndex
from crseval.concepts import ConceptMatcher
from crseval.importer import import_logs
from crseval.io import log_to, write_json
from crseval.session_io import catalog_sha, load_schema, session_validator, validate_session, write_sessions

log = log_to(snakemake.log[0])
index = CatalogIndex.read(snakemake.input.films, snakemake.input.concepts)
sessions, report = import_logs(list(snakemake.input.logs), ConceptMatcher(index.concepts, index.films),
                               catalog_sha(snakemake.input.catalog_summary),
                               canonical_sha({"importer": 1, "shard_size": snakemake.params.shard_size}))
sessions_folder = (Path(snakemake.params.results) / "sessions").resolve()
for system in sessions:  # the importer gives safe names; this guards the results folder if it ever did not
    if not (sessions_folder / system / "shard-0.jsonl").resolve().is_relative_to(sessions_folder):
        raise ValueError(f"system {system!r}: its session shards would be written outside {sessions_folder}")
validator = session_validator(load_schema(snakemake.input.schema))
size = snakemake.params.shard_size
for system, records in sessions.items():
    for record in records:  # every record checked before any shard is written
        validate_session(validator, record)
    for shard, start in enumerate(range(0, len(records), size)):
        path = Path(snakemake.params.results) / "sessions" / system / f"shard-{shard}.jsonl"
        write_sessions(records[start : start + size], path)
write_json(report, snakemake.output.report)
log.info("imported %s", report)
