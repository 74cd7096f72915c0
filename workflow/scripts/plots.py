"""Rule plots: every figure of the experiment from the aggregated tables."""

from pathlib import Path

import pandas as pd
import source_tree  # noqa: F401  (crseval from this source tree)

from crseval.core.io import atomic_path, log_to
from crseval.metrics import tas_weights
from crseval.reports import figures

log = log_to(snakemake.log[0])
sessions = pd.read_parquet(snakemake.input.sessions)
turns = pd.read_parquet(snakemake.input.turns)
model_metrics = pd.read_csv(snakemake.input.model_metrics)
colours = figures.palette(sorted(sessions["system"].unique()))
judges = list(figures.JUDGE_SCORES) if snakemake.params.judged else []
metrics = [m for m in snakemake.params.metrics if m in sessions] + [j for j in judges if j in sessions]


def stem(name):
    """The output `name` without its suffix (plots write PNG and SVG beside each other)."""
    return Path(snakemake.output[name]).with_suffix("")


wanted = set(snakemake.output.keys())
figures.metric_bars(model_metrics, metrics, colours, stem("metric_bars"))
figures.correlation_heatmap(sessions, metrics, stem("correlation_heatmap"))
figures.recovery_box(sessions, colours, stem("recovery_delay_box"))
figures.distributions(sessions, list(snakemake.params.distributions), colours, stem("distributions"))
if "tas_over_turns" in wanted:
    figures.tas_over_turns(turns, colours, stem("tas_over_turns"), snakemake.params.seed)
    table = tas_weights.sensitivity_table(turns, snakemake.params.figure_params["weight_sensitivity"])
    figures.weight_sensitivity(table, stem("weight_sensitivity"))
    with atomic_path(snakemake.output.sensitivity) as temporary:
        table.to_csv(temporary, index=False)
if "tas_scatter" in wanted:
    shown = figures.tas_scatter(sessions, list(snakemake.params.scatter), colours, stem("tas_scatter"))
    log.info("TAS scatter against %s", ", ".join(shown) or "nothing (no values)")
if "judge_radar" in wanted:
    figures.judge_radar(model_metrics, colours, stem("judge_radar"))
log.info("figures written for %d systems", len(colours))
