"""Rule validity: the metric-validity table of the calibration systems."""

import json

import pandas as pd
import source_tree  # noqa: F401  (crseval from this source tree)

from crseval.analysis.validity import validity_markdown, validity_table
from crseval.core.io import atomic_path, log_to

log = log_to(snakemake.log[0])
settings = json.loads(snakemake.params.stats)
roles = dict(snakemake.params.roles)
sessions = pd.read_parquet(snakemake.input.sessions)
frame = sessions[sessions["system"].isin(roles)].assign(system=lambda f: f["system"].map(roles))
table = validity_table(frame, resamples=settings["bootstrap_resamples"], seed=settings["seed"])
with atomic_path(snakemake.output.table) as temporary:
    table.to_csv(temporary, index=False)
counts = frame.groupby("system").size().to_dict()
with atomic_path(snakemake.output.summary) as temporary:
    temporary.write_text(validity_markdown(table, counts))
log.info(
    "validity of %d metrics on %d calibration systems: %s",
    len(table),
    len(counts),
    table["verdict"].value_counts().to_dict(),
)
