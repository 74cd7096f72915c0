"""Rule index_catalog: catalog JSON -> films.parquet, concepts.parquet, summary.json."""

import json

import source_tree  # noqa: F401  (crseval from this source tree)

from crseval.catalog.build import build_index
from crseval.core.io import log_to, write_json, write_parquet

log = log_to(snakemake.log[0])
settings = json.loads(snakemake.params.plot_keywords)
films, concepts, summary = build_index(snakemake.input.catalog, snakemake.input.non_genre_values, settings)
log.info("%d films, %d index rows", films.num_rows, concepts.num_rows)
write_parquet(films, snakemake.output.films)
write_parquet(concepts, snakemake.output.concepts)
write_json(summary, snakemake.output.summary)
