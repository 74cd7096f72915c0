"""Rule validity: the metric-validity table of the calibration systems, per user profile."""

import json

import pandas as pd
import source_tree  # noqa: F401  (crseval from this source tree)

from crseval.checks.validity import validity_by_profile, validity_markdown
from crseval.core.io import atomic_path, log_to
from crseval.statistics.trials import per_user

log = log_to(snakemake.log[0])
settings = json.loads(snakemake.params.stats)
roles = dict(snakemake.params.roles)
profiles = dict(snakemake.params.profiles)
sessions = per_user(pd.read_parquet(snakemake.input.sessions))  # with repeated trials, each user's mean
frame = sessions[sessions["system"].isin(roles)].assign(
    profile=lambda f: f["system"].map(profiles), system=lambda f: f["system"].map(roles)
)
table = validity_by_profile(frame, profiles, resamples=settings["bootstrap_resamples"], seed=settings["seed"])
with atomic_path(snakemake.output.table) as temporary:
    table.to_csv(temporary, index=False)
counts = {profile: own.groupby("system").size().to_dict() for profile, own in frame.groupby("profile", sort=False)}
with atomic_path(snakemake.output.summary) as temporary:
    temporary.write_text(validity_markdown(table, counts))
log.info(
    "validity of %d metrics on the calibration systems of %d user profiles: %s",
    table["metric"].nunique(),
    len(counts),
    table["verdict"].value_counts().to_dict(),
)
