"""Rule import_logs: one shard of a conversation corpus (the sessions its slice of the corpus manifest
names) -> a session shard (the same layout as simulated ones) and the films its replies name."""

import json
from pathlib import Path

import source_tree  # noqa: F401  (crseval from this source tree)

from crseval.catalog.index import CatalogIndex
from crseval.core.canonical import canonical_sha
from crseval.core.io import log_to, write_json
from crseval.core.session_records import catalog_sha, load_schema, session_validator, validate_session, write_sessions
from crseval.corpora.manifest import import_slice
from crseval.language.concepts import ConceptMatcher

log = log_to(snakemake.log[0])
piece = json.loads(Path(snakemake.input.slice).read_text(encoding="utf-8"))
planned = (snakemake.wildcards.system, int(snakemake.wildcards.shard))
if (piece.get("system"), piece.get("shard")) != planned:  # a slice edited by hand or left from another plan
    raise ValueError(
        f"{snakemake.input.slice} is for system {piece.get('system')!r}, shard {piece.get('shard')}, "
        f"not system {planned[0]!r}, shard {planned[1]}: run the workflow again to re-plan the import"
    )
index = CatalogIndex.read(snakemake.input.films, snakemake.input.concepts)
records, films = import_slice(
    piece,
    ConceptMatcher(index.concepts, index.films),
    catalog_sha(snakemake.input.catalog_summary),
    canonical_sha({"importer": 1, "format": snakemake.params.import_format, "shard_size": snakemake.params.shard_size}),
)
validator = session_validator(load_schema(snakemake.input.schema))
for record in records:  # every record checked before the shard is written
    validate_session(validator, record)
write_sessions(records, snakemake.output.shard)
write_json(films, snakemake.output.films)
log.info(
    "system %s, shard %s: %d sessions from %d file(s) of the corpus manifest",
    piece["system"],
    piece["shard"],
    len(records),
    len(piece["paths"]),
)
