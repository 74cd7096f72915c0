"""Rule aggregate: shard tables -> sessions.parquet, turns.parquet, model_metrics.csv."""

from crseval.aggregate import check_complete, model_metrics, read_tables, sessions_table, to_table
from crseval.io import atomic_path, log_to, write_parquet

log = log_to(snakemake.log[0])
sessions = sessions_table(list(snakemake.input.sessions), list(snakemake.input.judge))
check_complete(sessions, snakemake.params.sessions_per_system)
turns = read_tables(list(snakemake.input.turns))
write_parquet(to_table(sessions), snakemake.output.sessions)
write_parquet(to_table(turns), snakemake.output.turns)
with atomic_path(snakemake.output.model_metrics) as temporary:
    model_metrics(sessions).to_csv(temporary, index=False)
log.info("%d sessions, %d turns, %d systems", len(sessions), len(turns), sessions["system"].nunique())
