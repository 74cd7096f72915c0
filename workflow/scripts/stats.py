"""Rule stats: omnibus tests, the post-hoc comparisons of the recommended one, pairwise tests with effect sizes
and adjusted p-values, paired tests where sessions pair, judge correlations, sample-size planning and, when the
same systems met several user profiles, whether the conclusions change with the user
(crseval.statistics.comparison)."""

import json

import pandas as pd
import source_tree  # noqa: F401  (crseval from this source tree)

from crseval.core.io import log_to
from crseval.judge import reliability
from crseval.statistics import comparison

log = log_to(snakemake.log[0])
sessions = pd.read_parquet(snakemake.input.sessions)
own_model = reliability.judged_by_own_model(
    json.loads(snakemake.params.judge_backends), json.loads(snakemake.params.system_backends)
)
result = comparison.compare_systems(
    sessions,
    json.loads(snakemake.params.stats),
    snakemake.params.judged,
    own_model,
    profiles=json.loads(snakemake.params.user_profiles),
    # with repeated trials, each metric's share of variance between trials (the reliability_trials rule)
    chance=pd.read_csv(snakemake.input.chance) if snakemake.input.chance else None,
)
if result.not_computed:
    log.warning("metrics not in sessions.parquet (not computed in this run): %s", result.not_computed)
for line in result.left_out:
    log.warning("left out of the tests of %s", line)
if result.paired_not_run:
    log.info("paired tests not run: %s", result.paired_not_run)
if "robustness" in result.tables:
    changes = result.tables["robustness"].groupby("metric")["conclusion_changes"].any()
    log.info("conclusions that change with the user profile: %d of %d metrics", changes.sum(), len(changes))
comparison.write(result, snakemake.output)
log.info("%d metrics compared across %d systems", len(result.compared), sessions["system"].nunique())
