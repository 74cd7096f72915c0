"""Rule aggregate: shard tables -> sessions.parquet, turns.parquet, model_metrics.csv. The turns
(twenty rows a session) are copied shard by shard into the table, never held together."""

import json

import pandas as pd
import source_tree  # noqa: F401  (crseval from this source tree)

from crseval.core.io import atomic_path, log_to, write_parquet
from crseval.statistics.aggregate import check_complete, model_metrics, to_table, write_shard_tables


def read_shards(paths, shards, trials=None):
    """The tables at `paths`, each with the number of the shard it holds (given by the workflow) and, with
    repeated trials, of its trial."""
    frames = [pd.read_parquet(path).assign(shard=shard) for path, shard in zip(paths, shards, strict=True)]
    if trials is not None:
        frames = [frame.assign(trial=trial) for frame, trial in zip(frames, trials, strict=True)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


log = log_to(snakemake.log[0])
shards = snakemake.params.shards  # of each table in input.sessions, input.turns and input.judge
trials = snakemake.params.get("trials")  # their trials, with sessions.trials above 1
sessions = read_shards(snakemake.input.sessions, shards, trials)
if snakemake.input.judge:
    judged = read_shards(snakemake.input.judge, shards).drop(
        columns=["system", "session_index", "shard", "trial"], errors="ignore"
    )
    sessions = sessions.merge(judged, on="session_id", how="left", validate="one_to_one")
# input.panel: every panel judge's shards, one judge after the other, each in the order of the shards
panel_shards = len(shards)
for start in range(0, len(snakemake.input.panel), panel_shards):
    judged = read_shards(snakemake.input.panel[start : start + panel_shards], shards).drop(
        columns=["system", "session_index", "shard", "trial"], errors="ignore"
    )
    sessions = sessions.merge(judged, on="session_id", how="left", validate="one_to_one")
order = ["system", "session_index", "trial"] if trials is not None else ["system", "session_index", "session_id"]
sessions = sessions.sort_values(order, kind="stable").reset_index(drop=True)
check_complete(sessions, snakemake.params.sessions_per_system)
write_parquet(to_table(sessions), snakemake.output.sessions)
turns = write_shard_tables(snakemake.input.turns, shards, "turns", snakemake.output.turns, trials)
with atomic_path(snakemake.output.model_metrics) as temporary:
    intervals = {"resamples": json.loads(snakemake.params.resamples), "seed": json.loads(snakemake.params.seed)}
    model_metrics(sessions, **intervals).to_csv(temporary, index=False)
log.info("%d sessions, %d turns, %d systems", len(sessions), turns, sessions["system"].nunique())
