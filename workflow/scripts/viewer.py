"""Rule viewer: every session of the experiment as a static page (crseval.reports.viewer)."""

import source_tree  # noqa: F401  (crseval from this source tree)

from crseval.core.io import log_to
from crseval.reports.viewer import write_viewer

log = log_to(snakemake.log[0])
counts = write_viewer(
    snakemake.input.sessions,
    snakemake.input.turns,
    list(snakemake.input.shards),
    snakemake.output[0],
    title=snakemake.params.title,
)
log.info("session viewer: %s", counts)
