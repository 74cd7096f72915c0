"""Rule stats: omnibus tests with assumption checks, Tukey, pairwise tests with effect sizes and
adjusted p-values, paired tests where sessions pair, judge correlations, sample-size planning."""

import json

import pandas as pd
import source_tree  # noqa: F401  (crseval from this source tree)

from crseval.analysis import power, stats
from crseval.core.io import atomic_path, log_to
from crseval.judge import reliability as judge_reliability

log = log_to(snakemake.log[0])
settings = json.loads(snakemake.params.stats)
sessions = pd.read_parquet(snakemake.input.sessions)
judges = (
    [c for c in ("judge_proactiveness", "judge_coherence", "judge_personalization") if c in sessions]
    if snakemake.params.judged
    else []
)
metrics = [m for m in settings["metrics"] if m in sessions]
missing = sorted(set(settings["metrics"]) - set(metrics))
if missing:
    log.warning("metrics not in sessions.parquet (not computed in this run): %s", missing)
alpha, resamples, seed = settings["alpha"], settings["bootstrap_resamples"], settings["seed"]
compared = metrics + judges
anova = stats.omnibus_with_adjustment(pd.DataFrame([stats.omnibus(sessions, m, alpha) for m in compared]))
tukey = pd.concat([stats.tukey(sessions, m, alpha) for m in compared] or [pd.DataFrame()], ignore_index=True)
pairwise = stats.adjust(
    pd.DataFrame(
        [row for i, m in enumerate(compared) for row in stats.pairwise(sessions, m, resamples, seed + 1000 * i)]
    ),
    ["welch_t_p", "mannwhitney_p"],
)
pairs, pairing_reason = stats.pairing(sessions)
paired_rows = [
    row for i, m in enumerate(compared) for row in stats.paired(sessions, m, resamples, seed + 1000 * i + 500)
]
paired = stats.adjust(pd.DataFrame(paired_rows if pairs else []), ["paired_t_p", "wilcoxon_p"])
if not pairs:
    log.info("paired tests not run: %s", pairing_reason)
    paired = pd.DataFrame(columns=["metric", "system_a", "system_b", "pairs", "note"])
correlations = stats.correlations(sessions, metrics, judges, resamples, seed)
planning = power.power_table(
    sessions, compared, alpha, settings["power"]["power"], settings["power"]["differences"], pairs
)
for frame, path in (
    (anova, snakemake.output.anova),
    (tukey, snakemake.output.tukey),
    (pairwise, snakemake.output.pairwise),
    (paired, snakemake.output.paired),
    (correlations, snakemake.output.correlations),
    (planning, snakemake.output.power_table),
):
    with atomic_path(path) as temporary:
        frame.to_csv(temporary, index=False)
with atomic_path(snakemake.output.summary) as temporary:
    temporary.write_text(stats.markdown_summary(anova, tukey, pairwise, paired, correlations, pairing_reason, alpha))
with atomic_path(snakemake.output.power) as temporary:
    temporary.write_text(power.power_markdown(planning, alpha, settings["power"]["power"], pairing_reason))
if snakemake.params.judged:
    reliability = judge_reliability.reliability_table(sessions, alpha, resamples, seed)
    with atomic_path(snakemake.output.reliability) as temporary:
        reliability.to_csv(temporary, index=False)
    with atomic_path(snakemake.output.reliability_summary) as temporary:
        temporary.write_text(judge_reliability.reliability_markdown(reliability, alpha))
log.info("%d metrics compared across %d systems", len(compared), sessions["system"].nunique())
