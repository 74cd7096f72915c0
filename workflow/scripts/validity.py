"""Rule validity: the metric-validity table of the calibration systems, per user profile, with each profile's
shifts read from the calibration systems' session records (how many stay within one field)."""

import json

import pandas as pd
import source_tree  # noqa: F401  (crseval from this source tree)

from crseval.checks.validity import field_shifts_by_profile, validity_by_profile, validity_markdown
from crseval.core.io import atomic_path, log_to
from crseval.core.session_records import read_shards
from crseval.statistics.trials import per_user

log = log_to(snakemake.log[0])
settings = json.loads(snakemake.params.stats)
roles = dict(snakemake.params.roles)
profiles = dict(snakemake.params.profiles)
sessions = per_user(pd.read_parquet(snakemake.input.sessions))  # with repeated trials, each user's mean
frame = sessions[sessions["system"].isin(roles)].assign(
    profile=lambda f: f["system"].map(profiles), system=lambda f: f["system"].map(roles)
)
shifts = field_shifts_by_profile(read_shards(snakemake.input.shards), profiles)
table = validity_by_profile(
    frame, profiles, resamples=settings["bootstrap_resamples"], seed=settings["seed"], shifts=shifts
)
with atomic_path(snakemake.output.table) as temporary:
    table.to_csv(temporary, index=False)
counts = {profile: own.groupby("system").size().to_dict() for profile, own in frame.groupby("profile", sort=False)}
with atomic_path(snakemake.output.summary) as temporary:
    temporary.write_text(validity_markdown(table, counts, shifts))
log.info(
    "validity of %d metrics on the calibration systems of %d user profiles: %s; shifts within one field: %s",
    table["metric"].nunique(),
    len(counts),
    table["verdict"].value_counts().to_dict(),
    {profile: f"{own.within} of {own.total}" for profile, own in shifts.items()},
)
