"""Rule import_logs: a conversation corpus in the configured format -> session shards (same layout as
simulated ones), an import report, and with votes configured the votes table."""

import source_tree  # noqa: F401  (crseval from this source tree)

from crseval.catalog.index import CatalogIndex
from crseval.core.canonical import canonical_sha
from crseval.core.io import log_to, write_json
from crseval.core.session_records import catalog_sha, load_schema, session_validator, validate_session, write_sessions
from crseval.corpora.dialogue import film_coverage
from crseval.corpora.formats import import_logs, import_votes
from crseval.corpora.votes import write_votes
from crseval.language.concepts import ConceptMatcher
from crseval.simulate.sessions import n_shards, shard_indices

log = log_to(snakemake.log[0])
size = snakemake.params.shard_size
import_format = snakemake.params.import_format
index = CatalogIndex.read(snakemake.input.films, snakemake.input.concepts)
sessions, report = import_logs(
    list(snakemake.input.logs),
    ConceptMatcher(index.concepts, index.films),
    catalog_sha(snakemake.input.catalog_summary),
    canonical_sha({"importer": 1, "format": import_format, "shard_size": size}),
    import_format,
)
report["referenced_films"] = film_coverage(sessions)  # distinct films the replies name, per system
# The rule has a votes input (and output) only when sessions.import_votes names a file.
votes_file = getattr(snakemake.input, "votes", None)
votes = None
if votes_file:
    votes, report["votes"] = import_votes(votes_file, sessions, import_format)
# The workflow planned one output per (system, shard) from the same corpus; records go to those files only.
planned = {(system, shard): path for (system, shard), path in zip(snakemake.params.shards, snakemake.output.shards)}
validator = session_validator(load_schema(snakemake.input.schema))
for system, records in sessions.items():
    for record in records:  # every record checked before any shard is written
        validate_session(validator, record)
    for shard in range(n_shards(len(records), size)):
        if (system, shard) not in planned:
            raise ValueError(f"system {system!r}, shard {shard}: not an output the workflow planned for this corpus")
for system, records in sessions.items():
    for shard in range(n_shards(len(records), size)):
        indices = shard_indices(len(records), size, shard)
        write_sessions(records[indices.start : indices.stop], planned[system, shard])
if votes is not None:
    write_votes(votes, snakemake.output.votes)
write_json(report, snakemake.output.report)
log.info("imported %s", report)
