"""Rule aggregate: shard tables -> sessions.parquet, turns.parquet, model_metrics.csv. The turns
(twenty rows a session) are copied shard by shard into the table, never held together."""

import json

import pandas as pd
import source_tree  # noqa: F401  (crseval from this source tree)

from crseval.analysis.aggregate import check_complete, model_metrics, to_table, write_shard_tables
from crseval.core.io import atomic_path, log_to, write_parquet


def read_shards(paths, shards):
    """The tables at `paths`, each with the number of the shard it holds (given by the workflow)."""
    frames = [pd.read_parquet(path).assign(shard=shard) for path, shard in zip(paths, shards, strict=True)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


log = log_to(snakemake.log[0])
shards = snakemake.params.shards  # of each table in input.sessions, input.turns and input.judge
sessions = read_shards(snakemake.input.sessions, shards)
if snakemake.input.judge:
    judged = read_shards(snakemake.input.judge, shards).drop(
        columns=["system", "session_index", "shard"], errors="ignore"
    )
    sessions = sessions.merge(judged, on="session_id", how="left", validate="one_to_one")
# input.panel: every panel judge's shards, one judge after the other, each in the order of the shards
panel_shards = len(shards)
for start in range(0, len(snakemake.input.panel), panel_shards):
    judged = read_shards(snakemake.input.panel[start : start + panel_shards], shards).drop(
        columns=["system", "session_index", "shard"], errors="ignore"
    )
    sessions = sessions.merge(judged, on="session_id", how="left", validate="one_to_one")
sessions = sessions.sort_values(["system", "session_index", "session_id"], kind="stable").reset_index(drop=True)
check_complete(sessions, snakemake.params.sessions_per_system)
write_parquet(to_table(sessions), snakemake.output.sessions)
turns = write_shard_tables(snakemake.input.turns, shards, "turns", snakemake.output.turns)
with atomic_path(snakemake.output.model_metrics) as temporary:
    intervals = {"resamples": json.loads(snakemake.params.resamples), "seed": json.loads(snakemake.params.seed)}
    model_metrics(sessions, **intervals).to_csv(temporary, index=False)
log.info("%d sessions, %d turns, %d systems", len(sessions), turns, sessions["system"].nunique())
