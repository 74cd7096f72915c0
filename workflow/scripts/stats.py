"""Rule stats: ANOVA/Tukey with assumption checks, paired tests, judge correlations."""

import json

import pandas as pd

from crseval import stats
from crseval.io import atomic_path, log_to

log = log_to(snakemake.log[0])
settings = json.loads(snakemake.params.stats)
sessions = pd.read_parquet(snakemake.input.sessions)
judges = [c for c in ("judge_proactiveness", "judge_coherence", "judge_personalization") if c in sessions] if snakemake.params.judged else []
metrics = [m for m in settings["metrics"] if m in sessions]
missing = sorted(set(settings["metrics"]) - set(metrics))
if missing:
    log.warning("metrics not in sessions.parquet (not computed in this run): %s", missing)
alpha = settings["alpha"]
anova = pd.DataFrame([stats.omnibus(sessions, m, alpha) for m in metrics + judges])
tukey = pd.concat([stats.tukey(sessions, m, alpha) for m in metrics + judges] or [pd.DataFrame()], ignore_index=True)
paired = pd.DataFrame([row for m in metrics + judges for row in stats.paired(sessions, m)])
correlations = stats.correlations(sessions, metrics, judges, settings["bootstrap_resamples"], settings["seed"])
for frame, path in ((anova, snakemake.output.anova), (tukey, snakemake.output.tukey), (paired, snakemake.output.paired),
                    (correlations, snakemake.output.correlations)):
    with atomic_path(path) as temporary:
        frame.to_csv(temporary, index=False)
with atomic_path(snakemake.output.summary) as temporary:
    temporary.write_text(stats.markdown_summary(anova, tukey, paired, correlations, alpha))
log.info("%d metrics compared across %d systems", len(metrics + judges), sessions["system"].nunique())
