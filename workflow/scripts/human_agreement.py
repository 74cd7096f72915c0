"""Rule human_agreement: metrics against the users' verdicts and votes -> stats/human_agreement.* and a figure."""

import json
from pathlib import Path

import pandas as pd
import source_tree  # noqa: F401  (crseval from this source tree)

from crseval.checks import human_agreement
from crseval.core.io import atomic_path, log_to
from crseval.reports import figures

log = log_to(snakemake.log[0])
settings = json.loads(snakemake.params.stats)
sessions = pd.read_parquet(snakemake.input.sessions)
turns = pd.read_parquet(snakemake.input.turns)
votes = pd.read_parquet(snakemake.input.votes) if snakemake.input.votes else None
dialogues, systems, rankings = human_agreement.agree(sessions, turns, votes, settings, snakemake.params.verdict)
for name, table in (("table", dialogues), ("systems", systems), ("rankings", rankings)):
    with atomic_path(snakemake.output[name]) as temporary:
        table.to_csv(temporary, index=False)
with atomic_path(snakemake.output.summary) as temporary:
    Path(temporary).write_text(human_agreement.markdown(dialogues, systems, rankings, settings["alpha"]))
figures.human_agreement_figure(dialogues, systems, Path(snakemake.output.png).with_suffix(""))
skipped = human_agreement.unmeasured(sessions)
if skipped:
    log.info("metrics without a value in these dialogues (not applicable): %s", ", ".join(skipped))
log.info(
    "%d metrics and references against %d labelled dialogues: %s",
    len(dialogues),
    int(sessions[snakemake.params.verdict].notna().sum()),
    dialogues["verdict"].value_counts().to_dict(),
)
