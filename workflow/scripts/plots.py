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


def weight_sensitivity(name):
    """The TAS weight grid: its table beside its figure."""
    table = tas_weights.sensitivity_table(turns, snakemake.params.figure_params[name])
    figures.weight_sensitivity(table, stem(name))
    with atomic_path(snakemake.output.sensitivity) as temporary:
        table.to_csv(temporary, index=False)


def tas_scatter(name):
    shown = figures.tas_scatter(sessions, list(snakemake.params.scatter), colours, stem(name))
    log.info("TAS scatter against %s", ", ".join(shown) or "nothing (no values)")


# How each figure is drawn; which figures the experiment has is the planner's (crseval.planning.figures),
# given here as the rule's outputs
DRAW = {
    "metric_bars": lambda name: figures.metric_bars(model_metrics, metrics, colours, stem(name)),
    "correlation_heatmap": lambda name: figures.correlation_heatmap(sessions, metrics, stem(name)),
    "recovery_delay_box": lambda name: figures.recovery_box(sessions, colours, stem(name)),
    "distributions": lambda name: figures.distributions(
        sessions, list(snakemake.params.distributions), colours, stem(name)
    ),
    "tas_over_turns": lambda name: figures.tas_over_turns(turns, colours, stem(name), snakemake.params.seed),
    "weight_sensitivity": weight_sensitivity,
    "tas_scatter": tas_scatter,
    "judge_radar": lambda name: figures.judge_radar(model_metrics, colours, stem(name)),
}
for name in snakemake.output.keys():
    if name in DRAW:
        DRAW[name](name)
log.info("figures written for %d systems", len(colours))
