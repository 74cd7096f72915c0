"""Repeated trials: a simulated user who meets the same system k times, and how much of a result is chance.

With `sessions.trials` above 1 every seeded simulated user (a session index) meets every system k times:
the user's plan stays, the system's sampling seed changes (crseval.simulate.sessions.trial_seed). The k
sessions of one user are not k independent observations: they share the user, whose wishes and wording
make a conversation easier or harder whatever the trial, so counting them as independent would narrow
every interval by up to sqrt(k) for nothing. The user is the unit of analysis: statistics run on each
user's mean over their trials (`per_user`), and every bootstrap here resamples users, with the same drawn
users for every system (session index i is the same user in every system, so the systems pair).

What the trials add:
- pass^k (tau-bench, Yao et al. 2024): the chance that a system succeeds on every one of k tries at the
  same user, the consistency a user relying on it meets. With c successes in a user's n trials,
  C(c, k) / C(n, k) is an unbiased estimate of the user's chance; pass^k is its mean over users. pass@k,
  1 - C(n - c, k) / C(n, k), is the chance of at least one success in k tries. Both are the success rate
  at k = 1; pass^k stays there as k grows only for a system that treats each user the same every time.
- the between-trial share of a metric's variance, 1 - ICC(1) of a one-way random-effects ANOVA with users
  as groups: how much of the spread is the system's own chance (trials of one user differ) rather than
  users who differ. It says what the next experiment should buy, more trials per user or more users
  (`users_for_trials`).

`pass_table`, `chance_table` and `users_for_trials` return separate tables at full precision (their
columns differ, so they are not joined into one long table): the caller writes each as a CSV.
`markdown` writes stats/reliability_trials.md from them.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from pandas.api.types import is_numeric_dtype

from crseval.core.columns import SESSION_ID_COLUMNS
from crseval.statistics.intervals import chunks, draw_counts, expanded_tail
from crseval.statistics.power import sessions_needed

TRIAL = "trial"
SUCCESS = "success"  # the binary metric pass^k counts by default
KEYS = ["system", "session_index"]
POOLED = "all systems"
NO_SPREAD = "no spread"
TOO_FEW = "fewer than 2 users with 2 trials"
# A between-user sum of squares below this share of the squares it is the difference of is rounding (drawn
# users whose means are all equal), not spread: read as such it would make an experiment without chance
# look like one where users differ.
ROUNDING = 1e-10
# Which session a row is, not a measurement: kept from a user's lowest trial, never averaged.
IDENTIFIERS = frozenset(column.name for column in SESSION_ID_COLUMNS)
PASS_COLUMNS = ["system", "k", "users", "pass_hat_k", "ci_low", "ci_high", "pass_at_k", "at_ci_low", "at_ci_high"]
CHANCE_COLUMNS = [
    *["metric", "system", "users", "trials", "between_users", "between_trials", "trial_share"],
    *["ci_low", "ci_high", "note"],
]
PLAN_COLUMNS = ["metric", "trials", "sd_of_user_mean", "difference", "users_needed", "sessions_needed"]


def has_trials(sessions: pd.DataFrame) -> bool:
    """Whether users met a system more than once: a `trial` column with two values or more."""
    return TRIAL in sessions and sessions[TRIAL].nunique() > 1


# ------------------------------------------------------------------ one row per user


def per_user(sessions: pd.DataFrame) -> pd.DataFrame:
    """One row per (system, session_index), in order of first appearance: a user met k times counts once.

    Numeric and bool columns are the mean over the user's trials that have a value (NaN where none has);
    identifiers (session_id, seed, shard) and every other column keep the lowest trial's value, and the
    `trial` column goes. A table without trials is returned as it is."""
    if TRIAL not in sessions:
        return sessions
    if sessions.empty:
        return sessions.drop(columns=TRIAL)
    group = sessions.groupby(KEYS, sort=False, dropna=False).ngroup().to_numpy()
    by_trial = np.lexsort((sessions[TRIAL].to_numpy(), group))  # stable: rows grouped, lowest trial first
    lowest = by_trial[np.r_[True, group[by_trial][1:] != group[by_trial][:-1]]]
    users = sessions.iloc[lowest].drop(columns=TRIAL).reset_index(drop=True)
    averaged = [c for c in users.columns if c not in IDENTIFIERS and is_numeric_dtype(sessions[c])]
    if averaged:
        means = sessions[averaged].astype(float).groupby(group).mean()  # groups 0.. in order of appearance
        users[averaged] = means.to_numpy()
    return users


# ------------------------------------------------------------------ pass^k and pass@k


def _choose_ratio(top: np.ndarray, n: np.ndarray, k: int) -> np.ndarray:
    """C(top, k) / C(n, k) as the product of (top - i) / (n - i) over i < k (no factorials to overflow),
    NaN where n < k."""
    if k < 1:
        raise ValueError(f"k must be at least 1, not {k}")
    top, n = np.asarray(top, float), np.asarray(n, float)
    steps = np.arange(k)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.prod(np.maximum(top[..., None] - steps, 0.0) / (n[..., None] - steps), axis=-1)
    return np.where(n >= k, ratio, np.nan)


def pass_hat_k(successes: np.ndarray, trials: np.ndarray, k: int) -> np.ndarray:
    """Per user, the unbiased estimate of succeeding on all of k tries: C(c, k) / C(n, k); NaN where n < k."""
    return _choose_ratio(successes, trials, k)


def pass_at_k(successes: np.ndarray, trials: np.ndarray, k: int) -> np.ndarray:
    """Per user, the unbiased estimate of succeeding at least once in k tries: 1 - C(n - c, k) / C(n, k);
    NaN where n < k."""
    return 1.0 - _choose_ratio(np.asarray(trials, float) - np.asarray(successes, float), trials, k)


def _values(sessions: pd.DataFrame, metric: str) -> pd.Series:
    if metric not in sessions:
        raise ValueError(f"the sessions table has no column {metric!r}")
    try:
        return sessions[metric].astype(float)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{metric} is not numeric: {error}") from error


def _layout(sessions: pd.DataFrame) -> tuple[np.ndarray, list[str]]:
    """Every session index of the table (the users the bootstrap draws from, one code each) and the systems."""
    return np.sort(sessions["session_index"].unique()), sorted(sessions["system"].unique())


def _by_user(frame: pd.DataFrame, columns: list[str], how: str, users: np.ndarray, systems: list[str]) -> dict:
    """{column: (users x systems) array} of a per-user aggregate, 0 where a user has no row."""
    grouped = frame.groupby(KEYS)[columns].agg(how)
    return {
        c: grouped[c].unstack("system").reindex(index=users, columns=systems).fillna(0.0).to_numpy(float)
        for c in columns
    }


def pass_table(
    sessions: pd.DataFrame,
    metric: str = SUCCESS,
    max_k: int | None = None,
    resamples: int = 10_000,
    seed: int = 0,
    level: float = 0.95,
) -> pd.DataFrame:
    """pass^k and pass@k per system for k = 1..max_k (default: the most trials a user has), each the mean
    over the users with at least k trials with a value (`users`), with percentile bootstrap intervals over
    users (expanded as intervals.expanded_tail does for a mean of that many users). Every system is
    resampled with the same drawn users, drawn from every session index of the table (a user a system lacks
    is drawn too, and counts for nothing in its mean). `metric` must be 0 or 1 where it is not NaN."""
    values = _values(sessions, metric)
    odd = values.notna() & ~values.isin((0.0, 1.0))
    if odd.any():
        raise ValueError(f"pass^k counts successes: {metric} must be 0 or 1, not {sorted(set(values[odd]))[:3]}")
    users, systems = _layout(sessions)
    frame = sessions[KEYS].assign(n=values.notna(), c=values.eq(1.0))
    counts = _by_user(frame, ["n", "c"], "sum", users, systems)
    n, c = counts["n"], counts["c"]
    max_k = int(n.max(initial=0)) if max_k is None else max_k
    ks = list(range(1, max_k + 1))
    if not ks:
        return empty_pass_table()
    # users x (system, k, estimator), NaN where the user has fewer than k trials
    estimates = np.stack([f(c, n, k) for k in ks for f in (pass_hat_k, pass_at_k)], axis=-1).reshape(len(users), -1)
    known = ~np.isnan(estimates)
    filled = np.where(known, estimates, 0.0)
    width = estimates.shape[1]
    with np.errstate(invalid="ignore", divide="ignore"):
        means = filled.sum(axis=0) / known.sum(axis=0)
        resampled = _resampled(
            np.hstack([filled, known]), resamples, seed, lambda sums: sums[:, :width] / sums[:, width:]
        )
    intervals = []
    for column in range(width):
        observed = estimates[known[:, column], column]
        alike = len(observed) and (observed == observed[0]).all()
        if alike:  # the value itself, not a mean of equal floats rounded off it
            means[column] = observed[0]
        if len(observed) < 2:  # one user: a mean, no interval
            intervals.append((math.nan, math.nan))
        elif alike:
            intervals.append((means[column], means[column]))
        else:
            tail = expanded_tail(len(observed), level)
            intervals.append(_percentiles(resampled[:, column], tail, observed.min(), observed.max()))
    rows = []
    cells = iter(zip(means.reshape(-1, 2), np.reshape(intervals, (-1, 2, 2)), known.sum(axis=0)[::2]))
    for system in systems:
        for k in ks:
            (hat, at), ((low, high), (at_low, at_high)), count = next(cells)
            rows.append([system, k, int(count), hat, low, high, at, at_low, at_high])
    return pd.DataFrame(rows, columns=PASS_COLUMNS)


def empty_pass_table() -> pd.DataFrame:
    """The pass table without rows: no success values (or no success metric)."""
    return pd.DataFrame(columns=PASS_COLUMNS)


def _resampled(matrix: np.ndarray, resamples: int, seed: int, statistic) -> np.ndarray:
    """`statistic` of the weighted column sums of `matrix` (one row per user) in every resample of users
    drawn with replacement: one (rows, users) block of draws at a time, turned into counts
    (intervals.draw_counts), so that each resample's sums are one matrix product. The draws depend on the
    seed only, so every column (every system) is resampled with the same users."""
    rng = np.random.default_rng(seed)
    size = matrix.shape[0]
    blocks = [
        statistic(draw_counts(rng.integers(0, size, (rows, size)), size).astype(float) @ matrix)
        for rows in chunks(resamples, size)
    ]
    return np.concatenate(blocks)


def _percentiles(resampled: np.ndarray, tail: float, low: float, high: float) -> tuple[float, float]:
    """Percentiles `tail` and 1 - `tail` of the resampled statistics that are defined, clipped to [low, high]
    (a mean of values all equal to the maximum can round one unit in the last place above it)."""
    defined = resampled[~np.isnan(resampled)]
    if not len(defined):
        return math.nan, math.nan
    ends = np.clip(np.percentile(defined, [tail * 100, (1 - tail) * 100]), low, high)
    return float(ends[0]), float(ends[1])


# ------------------------------------------------------------------ how much is chance


def _anova_sums(sessions: pd.DataFrame, values: pd.Series, users: np.ndarray, systems: list[str]) -> np.ndarray:
    """users x (6 statistics x systems): per user with two trials or more of the metric (zeros for the
    others) 1, n_i, n_i^2, the within-user sum of squares, n_i d_i and n_i d_i^2, d_i the user's mean minus
    the system's mean. Their weighted sums over users are a one-way ANOVA of any resample of users.

    Deviations are taken from the user's first value and the system's first value, so that equal values
    give sums of squares of exactly 0 (not a rounding error that would read as all chance), and adding a
    constant to the metric changes nothing but the last bits."""
    frame = sessions[KEYS].assign(x=values)[values.notna()]
    frame["first"] = frame.groupby(KEYS)["x"].transform("first")
    frame["dev"] = frame["x"] - frame["first"]
    frame["dev2"] = frame["dev"] ** 2
    frame["reference"] = frame["first"] - frame.groupby("system")["x"].transform("first")
    sums = _by_user(frame, ["dev", "dev2"], "sum", users, systems)
    firsts = _by_user(frame, ["reference"], "first", users, systems)["reference"]
    n = _by_user(frame.assign(one=1.0), ["one"], "sum", users, systems)["one"]
    eligible = n >= 2
    n = np.where(eligible, n, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        within = np.where(eligible, np.maximum(sums["dev2"] - sums["dev"] ** 2 / n, 0.0), 0.0)
        mean = np.where(eligible, firsts + sums["dev"] / n, 0.0)
        centre = (n * mean).sum(axis=0) / n.sum(axis=0)  # the system's mean over its users' trials
    d = np.where(eligible, mean - np.nan_to_num(centre), 0.0)
    return np.hstack([eligible.astype(float), n, n**2, within, n * d, n * d**2])


def _components(sums: np.ndarray, systems: int) -> dict[str, np.ndarray]:
    """(rows, systems + 1) variance components from the weighted sums of `_anova_sums` (rows, 6 x systems),
    the last column pooled: the systems' sums of squares and degrees of freedom added up, so that each
    system's own mean is removed. MSW = SSW / (N - g), MSB = SSB / (g - 1), n0 = (N - sum n_i^2 / N) / (g - 1)
    for groups of unequal size (pooled: the numerators and g - 1 summed over systems)."""
    g, n, n2, within, first, second = (sums[:, i * systems : (i + 1) * systems] for i in range(6))
    with np.errstate(invalid="ignore", divide="ignore"):
        between = np.where(n > 0, second - first**2 / n, 0.0)
        between = np.where(between > ROUNDING * second, between, 0.0)  # users with equal means: exactly 0
        size = np.where(n > 0, n - n2 / n, 0.0)
        parts = [np.maximum(g - 1, 0.0), n - g, between, within, size]
        df_between, df_within, between, within, size = (np.hstack([p, p.sum(axis=1, keepdims=True)]) for p in parts)
        msw = within / df_within
        users = np.maximum((between / df_between - msw) / (size / df_between), 0.0)
        share = msw / (msw + users)
    defined = df_between >= 1
    return {
        "df_between": df_between,
        "between_users": np.where(defined, users, np.nan),
        "between_trials": np.where(defined, msw, np.nan),
        "trial_share": np.where(defined & (msw + users > 0), share, np.nan),
    }


def chance_table(
    sessions: pd.DataFrame, metrics: list[str], resamples: int = 10_000, seed: int = 0, level: float = 0.95
) -> pd.DataFrame:
    """Per metric, one row per system and one pooled row ("all systems"): the variance between users and
    between trials of one user (one-way random-effects ANOVA over the users with two trials or more with a
    value), and the between-trial share MSW / (MSW + between_users) = 1 - ICC(1), with a percentile bootstrap
    interval over users (the same drawn users for every system), clipped to [0, 1]. `users` counts those
    users, `trials` the most trials with a value one of them has (every user's, in a balanced design).

    The pooled row removes each system's mean: the chance within a system, not the gap between systems.
    The interval is the plain percentile one: the expansion of intervals.expanded_tail is derived for a mean,
    and the share is not one. Resamples without a share (fewer than 2 users drawn, no spread) are left out.
    Metrics the table lacks are left out."""
    users, systems = _layout(sessions)
    tail = (1 - level) / 2
    rows = []
    for metric in [m for m in metrics if m in sessions]:
        sums = _anova_sums(sessions, _values(sessions, metric), users, systems)
        point = {name: values[0] for name, values in _components(sums.sum(axis=0, keepdims=True), len(systems)).items()}
        shares = _resampled(sums, resamples, seed, lambda drawn: _components(drawn, len(systems))["trial_share"])
        counted = sums.sum(axis=0)[: len(systems)]  # users with two trials or more
        most = sums[:, len(systems) : 2 * len(systems)].max(axis=0, initial=0)  # trials of the most-met one
        counts = np.vstack([np.append(counted, counted.sum()), np.append(most, most.max(initial=0))])
        for column, system in enumerate([*systems, POOLED]):
            share = point["trial_share"][column]
            note = TOO_FEW if point["df_between"][column] < 1 else (NO_SPREAD if math.isnan(share) else "")
            low, high = (math.nan, math.nan) if note else _percentiles(shares[:, column], tail, 0.0, 1.0)
            rows.append(
                {
                    "metric": metric,
                    "system": system,
                    "users": int(counts[0, column]),
                    "trials": int(counts[1, column]),
                    "between_users": point["between_users"][column],
                    "between_trials": point["between_trials"][column],
                    "trial_share": share,
                    "ci_low": low,
                    "ci_high": high,
                    "note": note,
                }
            )
    return pd.DataFrame(rows, columns=CHANCE_COLUMNS)


# ------------------------------------------------------------------ users x trials


def users_for_trials(
    chance: pd.DataFrame, differences: dict[str, float], alpha: float, power: float, ks: list[int]
) -> pd.DataFrame:
    """Per metric with a stated difference and per k in `ks`: the SD of one user's mean over k trials,
    sqrt(between_users + between_trials / k) from the pooled row of `chance_table`, the users per system a
    two-sample t-test needs to detect the difference (power.sessions_needed), and the sessions per system
    that costs (users x k). More trials shrink only the between-trial part: where users differ, no number
    of trials replaces users."""
    pooled = chance[chance["system"] == POOLED]
    rows = []
    for row in pooled.itertuples():
        if row.metric not in differences:
            continue
        difference = float(differences[row.metric])
        for k in ks:
            sd = math.sqrt(row.between_users + row.between_trials / k)
            users = sessions_needed(difference, sd, alpha, power)
            rows.append([row.metric, k, sd, difference, users, users * k])
    return pd.DataFrame(rows, columns=PLAN_COLUMNS)


# ------------------------------------------------------------------ for a reader


def _fmt(value: float, digits: int = 2) -> str:
    return "–" if value is None or not np.isfinite(value) else f"{value:.{digits}f}"


def _cell(value: float, low: float, high: float) -> str:
    """ "0.49 [0.31, 0.66]", the estimate alone where it has no interval, "–" where there is none."""
    if not np.isfinite(value):
        return "–"
    return _fmt(value) + (f" [{_fmt(low)}, {_fmt(high)}]" if np.isfinite(low) and np.isfinite(high) else "")


def _wide(passes: pd.DataFrame, estimate: str, low: str, high: str) -> list[str]:
    """One markdown row per system, one column per k."""
    ks = sorted(passes["k"].unique())
    lines = ["| system | " + " | ".join(f"k = {k}" for k in ks) + " |", "|---|" + "---|" * len(ks)]
    for system, rows in passes.groupby("system", sort=False):
        cells = {r.k: _cell(getattr(r, estimate), getattr(r, low), getattr(r, high)) for r in rows.itertuples()}
        lines.append(f"| {system} | " + " | ".join(cells.get(k, "–") for k in ks) + " |")
    return lines


def nesting_sentence(sessions: pd.DataFrame) -> str:
    """One sentence for stats/summary.md: users met every system in several trials, so the tests run on users."""
    per_user = sessions.groupby(KEYS)[TRIAL].nunique()
    most, fewest = int(per_user.max()), int(per_user.min())
    count = f"{most} trials" if most == fewest else f"{fewest} to {most} trials"
    return (
        f"Each of the {sessions['session_index'].nunique()} simulated users met every system in {count} (repeated "
        "trials, `sessions.trials`). Trials of one user are not independent sessions: every test, interval and plan "
        "below runs on the users' means over their trials, so n counts users, not sessions "
        "(stats/reliability_trials.md: how much of each metric is chance)."
    )


def markdown(
    passes: pd.DataFrame | None, chance: pd.DataFrame, plan: pd.DataFrame | None = None, metric: str = SUCCESS
) -> str:
    """stats/reliability_trials.md: the design, pass^k and pass@k per system and k (none where `passes` is None:
    no success metric), the between-trial share of every metric's variance and what it means for the next
    experiment, and the users x trials plan when given."""
    passes = empty_pass_table() if passes is None else passes
    systems = list(dict.fromkeys([*passes["system"], *chance.loc[chance["system"] != POOLED, "system"]]))
    first = passes[passes["k"] == 1]
    users = int(first["users"].max()) if len(first) else 0
    most = int(passes.loc[passes["users"] > 0, "k"].max()) if (passes["users"] > 0).any() else 0
    users_said = (
        f"each met up to {users} simulated users (session indices with a {metric} value), each user up to {most} times"
        if users
        else "each met every simulated user several times"
    )
    lines = [
        "# Repeated trials: consistency and how much of a result is chance",
        "",
        f"{len(systems)} systems ({', '.join(systems) or 'none'}) {users_said} (trials: the same user, the system's "
        "sampling seed changed). Trials of one user are not independent sessions: every statistic here is over "
        "users, and every interval is a percentile bootstrap that resamples users, the same drawn users for every "
        "system. The CSV tables keep full precision.",
        "",
        f"## pass^k: {metric} on every one of k tries at the same user",
        "",
        "The mean over users of C(c, k) / C(n, k), c successes in the user's n trials (tau-bench's unbiased "
        "estimator), over the users with at least k trials. It equals the success rate at k = 1 and stays there as k "
        "grows only for a system that treats a user the same every time.",
        "",
        *(_wide(passes, "pass_hat_k", "ci_low", "ci_high") if len(passes) else [f"No {metric} values."]),
        "",
        f"## pass@k: {metric} at least once in k tries",
        "",
        "1 - C(n - c, k) / C(n, k) per user, averaged the same way.",
        "",
        *(_wide(passes, "pass_at_k", "at_ci_low", "at_ci_high") if len(passes) else [f"No {metric} values."]),
        "",
        "## How much is chance: the between-trial share of the variance",
        "",
        "Per metric and system, a one-way random-effects ANOVA with users as groups (users with two trials or more): "
        "the share of the variance that lies between trials of the same user, MSW / (MSW + between-user variance) "
        "= 1 - ICC(1), with its bootstrap interval. `all systems` pools the systems after removing each one's mean. "
        "A high share means the system's own chance dominates: the same user gets different results on another "
        "try, and more trials per user narrow a system's interval more than more users do. A low share means the "
        "users differ and each treats a system alike every time: more users help, more trials hardly do.",
        "",
    ]
    if len(chance):
        columns = [*dict.fromkeys(chance["system"][chance["system"] != POOLED]), POOLED]
        lines += ["| metric | " + " | ".join(columns) + " |", "|---|" + "---|" * len(columns)]
        for name, rows in chance.groupby("metric", sort=False):
            cells = {r.system: r.note or _cell(r.trial_share, r.ci_low, r.ci_high) for r in rows.itertuples()}
            lines.append(f"| {name} | " + " | ".join(cells.get(s, "–") for s in columns) + " |")
    else:
        lines.append("No metric to analyse.")
    if plan is not None and len(plan):
        lines += ["", *plan_markdown(plan).splitlines()]
    return "\n".join(lines) + "\n"


def plan_markdown(plan: pd.DataFrame, alpha: float | None = None, power: float | None = None) -> str:
    """The users x trials plan (`users_for_trials`) as a markdown section, for reliability_trials.md and
    power.md; `alpha` and `power`, when given, are said."""
    test = "a two-sample t-test" + (f" (two-sided, alpha {alpha}, power {power})" if alpha and power else "")
    lines = [
        "## Users x trials for the next experiment",
        "",
        "The SD of one user's mean over k trials, sqrt(between-user variance + between-trial variance / k), from "
        f"the pooled within-system variance components (stats/reliability_trials.md); the users per system {test} "
        "needs to detect the stated difference (`stats.power.differences`), and the sessions per system that costs "
        "(users x trials). More trials shrink only the between-trial part.",
        "",
        "| metric | trials per user | SD of a user's mean | difference | users per system | sessions per system |",
        "|---|---|---|---|---|---|",
    ]
    for r in plan.itertuples():
        count = "n/a" if not np.isfinite(r.users_needed) else f"{int(r.users_needed):,}"
        total = "n/a" if not np.isfinite(r.sessions_needed) else f"{int(r.sessions_needed):,}"
        lines.append(
            f"| {r.metric} | {r.trials} | {_fmt(r.sd_of_user_mean, 3)} | {r.difference:.3g} | {count} | {total} |"
        )
    return "\n".join(lines) + "\n"
