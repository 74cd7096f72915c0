"""Rule people_agreement: every metric against the verdicts of the corpora human_agreement.corpora names
-> stats/people_agreement.csv (per metric, corpus and verdict, and pooled over the corpora) and .md."""

import json
import time
from pathlib import Path

import pandas as pd
import source_tree  # noqa: F401  (crseval from this source tree)

from crseval.checks import people_agreement
from crseval.core.io import atomic_path, log_to

log = log_to(snakemake.log[0])
corpora = json.loads(snakemake.params.corpora)
tables = {
    entry["name"]: (pd.read_parquet(sessions), pd.read_parquet(votes))
    for entry, sessions, votes in zip(corpora, snakemake.input.sessions, snakemake.input.votes)
}
started = time.perf_counter()
judged, metrics = people_agreement.corpora_of(corpora, tables)
table = people_agreement.agreement_table(judged, metrics, snakemake.params.resamples, snakemake.params.seed)
log.info(
    "%d metrics against %d verdicts of %d corpora in %.1f s",
    len(metrics),
    len(judged),
    len(corpora),
    time.perf_counter() - started,
)
with atomic_path(snakemake.output.table) as temporary:
    table.to_csv(temporary, index=False)
with atomic_path(snakemake.output.summary) as temporary:
    Path(temporary).write_text(people_agreement.markdown(table, judged), encoding="utf-8")
