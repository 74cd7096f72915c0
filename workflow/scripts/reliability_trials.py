"""Rule reliability_trials: with repeated trials of every simulated user (sessions.trials), pass^k and pass@k
of session success per system, and the share of each metric's variance between trials of the same user
(crseval.statistics.trials)."""

import json
from pathlib import Path

import pandas as pd
import source_tree  # noqa: F401  (crseval from this source tree)

from crseval.core.io import atomic_path, log_to
from crseval.reports import figures
from crseval.statistics import column_registry, trials

log = log_to(snakemake.log[0])
settings = json.loads(snakemake.params.stats)
sessions = pd.read_parquet(snakemake.input.sessions)
judges = [c for c in column_registry.JUDGE_SCORES if c in sessions] if snakemake.params.judged else []
metrics = [m for m in settings["metrics"] if m in sessions] + judges
bootstrap = {"resamples": settings["bootstrap_resamples"], "seed": settings["seed"]}
passes = trials.pass_table(sessions, trials.SUCCESS, **bootstrap) if trials.SUCCESS in sessions else None
chance = trials.chance_table(sessions, metrics, **bootstrap)
with atomic_path(snakemake.output.table) as temporary:
    (passes if passes is not None else trials.empty_pass_table()).to_csv(temporary, index=False)
with atomic_path(snakemake.output.chance) as temporary:
    chance.to_csv(temporary, index=False)
with atomic_path(snakemake.output.summary) as temporary:
    temporary.write_text(trials.markdown(passes, chance))
figures.pass_k_figure(passes, Path(snakemake.output.png).with_suffix(""))
log.info(
    "%d users x %d trials; pass^k of %s: %s",
    sessions["session_index"].nunique(),
    sessions["trial"].nunique(),
    trials.SUCCESS,
    "not computed (the goals metric family is off)" if passes is None else len(passes),
)
