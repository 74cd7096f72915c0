"""Rule import_logs: legacy conversation logs -> session shards (same layout as simulated ones) and an import report."""

import source_tree  # noqa: F401  (crseval from this source tree)

from crseval.catalog.index import CatalogIndex
from crseval.core.canonical import canonical_sha
from crseval.core.io import log_to, write_json
from crseval.core.session_records import catalog_sha, load_schema, session_validator, validate_session, write_sessions
from crseval.corpora.thesis_logs import import_logs
from crseval.language.concepts import ConceptMatcher
from crseval.simulate.sessions import n_shards, shard_indices

log = log_to(snakemake.log[0])
size = snakemake.params.shard_size
index = CatalogIndex.read(snakemake.input.films, snakemake.input.concepts)
sessions, report = import_logs(
    list(snakemake.input.logs),
    ConceptMatcher(index.concepts, index.films),
    catalog_sha(snakemake.input.catalog_summary),
    canonical_sha({"importer": 1, "shard_size": size}),
)
# The workflow planned one output per (system, shard) from the same logs; records go to those files only.
planned = {(system, shard): path for (system, shard), path in zip(snakemake.params.shards, snakemake.output.shards)}
validator = session_validator(load_schema(snakemake.input.schema))
for system, records in sessions.items():
    for record in records:  # every record checked before any shard is written
        validate_session(validator, record)
    for shard in range(n_shards(len(records), size)):
        if (system, shard) not in planned:
            raise ValueError(f"system {system!r}, shard {shard}: not an output the workflow planned for these logs")
for system, records in sessions.items():
    for shard in range(n_shards(len(records), size)):
        indices = shard_indices(len(records), size, shard)
        write_sessions(records[indices.start : indices.stop], planned[system, shard])
write_json(report, snakemake.output.report)
log.info("imported %s", report)
