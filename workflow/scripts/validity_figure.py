"""Rule validity_figure: measured vs expected rank per metric, from stats/validity.csv."""

from pathlib import Path

import pandas as pd
import source_tree  # noqa: F401  (crseval from this source tree)

from crseval.core.io import log_to
from crseval.reports import figures

log = log_to(snakemake.log[0])
table = pd.read_csv(snakemake.input.table)
drawn = figures.validity_figure(table, Path(snakemake.output.png).with_suffix(""))
log.info("validity figure: %d metrics drawn, %d not measured", len(drawn), len(table) - len(drawn))
