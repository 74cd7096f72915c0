"""Rule findings: the page that opens the report (crseval.analysis.findings)."""

from pathlib import Path

import pandas as pd
import source_tree  # noqa: F401  (crseval from this source tree)

from crseval.analysis import findings, registry
from crseval.core.io import atomic_path, log_to

log = log_to(snakemake.log[0])


def table(path):
    """A CSV the statistics wrote; a table without rows (one system: no pairs to test) may be an empty file."""
    try:
        return pd.read_csv(path)
    except pd.errors.EmptyDataError:
        return pd.DataFrame()


sessions = pd.read_parquet(snakemake.input.sessions)
judges = [c for c in registry.JUDGE_SCORES if c in sessions] if snakemake.params.judged else []
page = findings.findings_page(
    snakemake.params.experiment,
    pd.read_csv(snakemake.input.model_metrics),
    [m for m in snakemake.params.metrics if m in sessions] + judges,
    table(snakemake.input.posthoc),
    table(snakemake.input.paired),
    table(snakemake.input.power),
    snakemake.params.alpha,
    sessions,
    validity=table(snakemake.input.validity) if snakemake.input.validity else None,
    scorecard=table(snakemake.input.scorecard) if snakemake.input.scorecard else None,
    links=dict(snakemake.params.links),
)
output = Path(snakemake.output[0])
output.mkdir(parents=True, exist_ok=True)
with atomic_path(output / "index.html") as temporary:
    temporary.write_text(page, encoding="utf-8")
log.info("findings page for %d systems", sessions["system"].nunique())
