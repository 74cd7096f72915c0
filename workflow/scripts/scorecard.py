"""Rule scorecard: the evidence about every metric of the experiment (calibration under each user profile,
stability across profiles, agreement with people) -> stats/scorecard.csv and .md (crseval.checks.scorecard)."""

from pathlib import Path

import pandas as pd
import source_tree  # noqa: F401  (crseval from this source tree)

from crseval.checks import scorecard
from crseval.checks.human_agreement import session_metrics
from crseval.core.io import atomic_path, log_to

log = log_to(snakemake.log[0])


def table(path):
    """A CSV an earlier rule wrote, None where the rule gives none (an empty file is a table without rows)."""
    if not path:
        return None
    try:
        return pd.read_csv(path)
    except pd.errors.EmptyDataError:
        return pd.DataFrame()


lead = list(snakemake.params.lead)
card = scorecard.scorecard(
    session_metrics(pd.read_parquet(snakemake.input.sessions)),
    validity=table(snakemake.input.validity),
    robustness=table(snakemake.input.robustness),
    people=table(snakemake.input.people),
    users=table(snakemake.input.users),
    lead=lead,
    alpha=snakemake.params.alpha,
)
with atomic_path(snakemake.output.table) as temporary:
    card.to_csv(temporary, index=False)
with atomic_path(snakemake.output.summary) as temporary:
    Path(temporary).write_text(scorecard.markdown(card, lead), encoding="utf-8")
log.info("%d metrics, %d may lead (evidence: %s)", len(card), int(card["leads"].sum()), ", ".join(lead) or "none")
