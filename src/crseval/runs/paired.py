"""Paired differences between two finished runs: did RUN get worse than BASELINE on the same simulated users?

Two runs of one experiment meet the same simulated users (a user is a session index with its seed), so each
system's metric is compared user by user, not as two independent samples. Sessions pair by
(system, session_index, seed, trial); a table without a `trial` column is trial 0 throughout. A user's value
on one side is the mean over the trials where both runs have a value, so a trial missing from one run
cannot shift the other's mean, and the user, not the session, is the unit of every test and interval.

Per system present in both runs and per metric (`paired_table`):
- `diff` is the mean over paired users of run - baseline, with a bootstrap interval of that mean
  (crseval.statistics.intervals) and an exact (or Monte Carlo) two-sided Wilcoxon signed-rank p over the
  per-user differences (crseval.statistics.exact), with the smallest p the test can reach at this n.
- The family of `p_adj` is the whole comparison: every row of the table that has a p, adjusted by the
  plan's method (one family per metric instead when the plan's scope is `metric`). A comparison looks at
  every system and metric at once, so that is the family its chance findings come from. Flags read the
  unadjusted p unless `adjusted=True`: a regression check would rather show a doubtful flag with its
  p_adj beside it than miss one.
- A row is flagged as a regression when all of these hold: the test can reach alpha at all
  (min_p <= alpha), its p (p_adj with `adjusted=True`) is at most alpha, the difference lies in the
  metric's bad direction (lower for a higher-is-better metric), |diff| exceeds the row's tolerance, and the
  metric is not sparse. The same in the good direction is an improvement. A testable row failing any of
  these is "no difference found"; one whose n cannot reach alpha is "not testable at this n", never
  "no difference", since such a test could not have found one.
- Sparse rates: a 0/1 metric (every paired value 0 or 1 in both runs) with fewer than MIN_EVENTS ones over
  both runs' paired sessions is never flagged, whatever its p. Its difference is then a few users'
  outcomes flipping: too little of a rare event to call a regression, and the reason is said instead.
- A metric without a better direction (reply length, distinct-n) reports its difference and is never
  flagged; an identical metric (every paired session equal) has no test at all. Sessions that changed while
  every user's mean stayed the same (trials trading outcomes) have no p either: "no difference found".
- The verdicts are tried in this order: no pairs, identical, no direction, sparse, not testable, then
  regression, improvement or no difference found.
- An infinite value (a run from elsewhere, or a metric that overflowed) has no difference a mean could hold: such
  a session is left out of its metric's pairs as one without a value, and the row's note counts it.

`changed_sessions` points at the sessions behind a difference: per system those whose metrics moved most,
in units of the baseline's spread of each metric, so that a reader can open the two conversations.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np
import pandas as pd

from crseval.statistics import column_registry, exact, intervals
from crseval.statistics.analysis_plan import AnalysisPlan

MIN_EVENTS = 10
KEYS = ["system", "session_index", "seed", "trial"]  # one session
USER = ["system", "session_index", "seed"]  # one simulated user meeting one system
TRIAL = "trial"

IDENTICAL = "identical"
NO_PAIRS = "no pairs"
REGRESSION = "regression"
IMPROVEMENT = "improvement"
NO_DIFFERENCE = "no difference found"
NOT_TESTABLE = "not testable at this n"
SPARSE = "sparse"
NO_DIRECTION = "no direction"
VERDICTS = (IDENTICAL, NO_PAIRS, REGRESSION, IMPROVEMENT, NO_DIFFERENCE, NOT_TESTABLE, SPARSE, NO_DIRECTION)

PAIRED_COLUMNS = (
    *("system", "run_system", "metric", "label", "direction"),
    *("users", "baseline_mean", "run_mean", "diff"),
    *("ci_low", "ci_high", "ci_method", "ci_note"),
    *("p", "min_p", "testable", "p_adj"),
    *("events", "tolerance", "verdict", "flag", "note"),
)
CHANGED_COLUMNS = (
    *("system", "run_system", "session_index", "seed", "trial"),
    *("baseline_session_id", "run_session_id", "score", "metric"),
    *("baseline_value", "run_value", "metrics_changed"),
)


# ------------------------------------------------------------------ the two tables, aligned


def _prepared(frame: pd.DataFrame, metrics: list[str], side: str, system_map: dict[str, str] | None = None):
    """One run's sessions: identifiers, `run_system` (its own name), `system` (the baseline's name) and the
    metrics as floats; trial 0 where the run has no trials. Two sessions with one key are an error: they
    could not be paired, and picking one would hide the other."""
    table = pd.DataFrame(
        {
            "run_system": frame["system"].astype(str).to_numpy(),
            "session_index": frame["session_index"].to_numpy(),
            "seed": frame["seed"].to_numpy(),
            TRIAL: frame[TRIAL].to_numpy() if TRIAL in frame else np.zeros(len(frame), dtype=np.int64),
            "session_id": frame["session_id"].to_numpy() if "session_id" in frame else pd.NA,
        }
    )
    names = {name: (system_map or {}).get(name, name) for name in table["run_system"].unique()}
    targets = pd.Series(names).value_counts()
    if (targets > 1).any():
        clash = targets[targets > 1].index[0]
        raise ValueError(f"{side}: {sorted(n for n, t in names.items() if t == clash)} all map to system {clash!r}")
    table.insert(0, "system", table["run_system"].map(names))
    for position, metric in enumerate(metrics):
        try:
            table[f"m{position}"] = frame[metric].to_numpy(dtype=float, na_value=np.nan)
        except (TypeError, ValueError) as error:
            raise ValueError(f"{side}: metric {metric} holds values that are no numbers ({error})") from None
    duplicated = table.duplicated(KEYS)
    if duplicated.any():
        first = table.loc[duplicated, KEYS].iloc[0].tolist()
        raise ValueError(
            f"{side}: {int(duplicated.sum())} sessions repeat a (system, session_index, seed, trial) "
            f"already seen, e.g. {first}"
        )
    return table


def _shared_metrics(baseline: pd.DataFrame, run: pd.DataFrame, metrics: list[str]) -> list[str]:
    """The metrics asked for that both tables have, in the order asked, once each."""
    identifiers = {*KEYS, "session_id", "shard"}
    wrong = [m for m in metrics if m in identifiers]
    if wrong:
        raise ValueError(f"identifier columns are not metrics: {wrong}")
    return [m for m in dict.fromkeys(metrics) if m in baseline and m in run]


def _systems(base: pd.DataFrame, other: pd.DataFrame) -> tuple[list[str], list[str], list[str]]:
    """Systems in both runs (baseline order of first appearance), only in the baseline, only in the run
    (the run's own names)."""
    in_base = list(dict.fromkeys(base["system"]))
    named = other.drop_duplicates("system")
    in_run = dict(zip(named["system"], named["run_system"]))
    both = [s for s in in_base if s in in_run]
    return both, [s for s in in_base if s not in in_run], [in_run[s] for s in in_run if s not in set(in_base)]


def _user_counts(base: pd.DataFrame, other: pd.DataFrame, systems: list[str]) -> pd.DataFrame:
    """Per system in both runs: users only in the baseline, only in the run, and in both."""
    users = base[USER].drop_duplicates().merge(other[USER].drop_duplicates(), on=USER, how="outer", indicator=True)
    side = users["_merge"].astype(str).to_numpy()
    counts = pd.DataFrame(
        {
            name: pd.Series(side == kind).groupby(users["system"].to_numpy()).sum()
            for name, kind in (("only_baseline", "left_only"), ("only_run", "right_only"), ("both", "both"))
        }
    )
    return counts.reindex(systems, fill_value=0).astype(int)


def unmatched(baseline: pd.DataFrame, run: pd.DataFrame, system_map: dict[str, str] | None = None) -> dict:
    """What the comparison cannot pair: systems in one run only, and per shared system the users (session
    index and seed) one run has and the other lacks. A summary says these first, since every paired
    number is over what remains."""
    base = _prepared(baseline, [], "baseline")
    other = _prepared(run, [], "run", system_map)
    both, only_base, only_run = _systems(base, other)
    counts = _user_counts(base, other, both)
    return {
        "only_baseline": only_base,
        "only_run": only_run,
        "users_only_baseline": {s: int(counts.at[s, "only_baseline"]) for s in both},
        "users_only_run": {s: int(counts.at[s, "only_run"]) for s in both},
    }


# ------------------------------------------------------------------ paired table


def _direction(metric: str) -> str:
    return {True: "higher", False: "lower", None: "none"}[column_registry.direction(metric)]


def _users(count: int) -> str:
    return f"{count} user{'s' if count != 1 else ''}"


def check_tolerance(tolerance: dict) -> None:
    """ValueError unless every tolerance is a finite number >= 0: under an infinite one no difference is flagged,
    which would switch the regression gate off without a word."""
    for metric, value in tolerance.items():
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 <= value < math.inf:
            raise ValueError(f"tolerance {metric}={value!r:.40}: a tolerance is a finite non-negative number")


def paired_table(
    baseline: pd.DataFrame,
    run: pd.DataFrame,
    *,
    metrics: list[str],
    plan: AnalysisPlan,
    tolerance: dict[str, float] | None = None,
    system_map: dict[str, str] | None = None,
    adjusted: bool = False,
) -> pd.DataFrame:
    """One row per (system in both runs, metric in both tables): the paired difference run - baseline over
    the simulated users, its interval and test, and a verdict (the module docstring gives the rule).

    `tolerance`: metric -> the largest |diff| that is not worth a flag ("*" for every other metric; 0
    without). `system_map`: run name -> baseline name, for a system renamed between the runs. `adjusted`:
    flag on p_adj (the whole table one family) instead of p."""
    tolerance = dict(tolerance or {})
    check_tolerance(tolerance)
    metrics = _shared_metrics(baseline, run, metrics)
    base = _prepared(baseline, metrics, "baseline")
    other = _prepared(run, metrics, "run", system_map)
    systems, _, _ = _systems(base, other)
    counts = _user_counts(base, other, systems)
    if not systems or not metrics:
        return pd.DataFrame({name: pd.Series(dtype=object) for name in PAIRED_COLUMNS})
    values = _PairedValues.of(base, other, len(metrics))
    named = other.drop_duplicates("system")
    run_name = dict(zip(named["system"], named["run_system"]))
    rows = []
    for system in systems:
        rows += _system_rows(system, run_name[system], metrics, values, plan, tolerance, counts)
    private = ["_identical", "_unpaired", "_infinite"]
    table = pd.DataFrame(rows, columns=[c for c in PAIRED_COLUMNS if c != "p_adj"] + private)
    table = table.astype({"users": int, "testable": bool, "_identical": bool})
    table = plan.adjust(table, ["p"])
    judged = [_verdict(row, counts, plan, adjusted) for row in table.to_dict("records")]
    table["verdict"] = [verdict for verdict, _ in judged]
    table["note"] = [note for _, note in judged]
    table["flag"] = table["verdict"] == REGRESSION
    return table[list(PAIRED_COLUMNS)].reset_index(drop=True)


@dataclass(frozen=True)
class _PairedValues:
    """Both runs' values of the sessions present in both, one column per metric: per session (`b`, `r`), which
    pair (`paired`: both finite) or are lost to an infinite value (`infinite`), and per user the mean over its
    paired trials (`user_b`, `user_r`: both sides over the same trials); the rows of each system's sessions and
    users."""

    b: np.ndarray  # (sessions, metrics)
    r: np.ndarray
    infinite: np.ndarray
    paired: np.ndarray
    user_b: np.ndarray  # (users, metrics)
    user_r: np.ndarray
    session_rows: dict  # system -> its rows of b and r
    user_rows: dict  # system -> its rows of user_b and user_r

    @classmethod
    def of(cls, base: pd.DataFrame, other: pd.DataFrame, count: int) -> _PairedValues:
        names = [f"m{i}" for i in range(count)]
        pairs = base.drop(columns="run_system").merge(other, on=KEYS, how="inner", suffixes=("_b", "_r"))
        b = pairs[[f"{n}_b" for n in names]].to_numpy(dtype=float).reshape(len(pairs), len(names))
        r = pairs[[f"{n}_r" for n in names]].to_numpy(dtype=float).reshape(len(pairs), len(names))
        infinite = (np.isinf(b) & ~np.isnan(r)) | (np.isinf(r) & ~np.isnan(b))  # pairs lost to an infinite value
        paired = np.isfinite(b) & np.isfinite(r)  # a session counts for a metric only where both runs have its value
        b_paired, r_paired = np.where(paired, b, np.nan), np.where(paired, r, np.nan)
        # per user: the mean over its paired trials, both sides over the same trials
        user_code = pairs.groupby(USER, sort=False).ngroup().to_numpy()
        user_b = pd.DataFrame(b_paired).groupby(user_code).mean().to_numpy().reshape(-1, len(names))
        user_r = pd.DataFrame(r_paired).groupby(user_code).mean().to_numpy().reshape(-1, len(names))
        user_system = pairs.drop_duplicates(USER)["system"].to_numpy()
        session_rows = pairs.groupby("system", sort=False).indices
        user_rows = pd.Series(user_system).groupby(user_system, sort=False).indices
        return cls(b, r, infinite, paired, user_b, user_r, session_rows, user_rows)


def _system_rows(
    system: str,
    run_system: str,
    metrics: list[str],
    values: _PairedValues,
    plan: AnalysisPlan,
    tolerance: dict[str, float],
    counts: pd.DataFrame,
) -> list[dict]:
    """One system's row per metric, before the verdicts: the paired difference over its users, its interval
    and test, and what the verdicts read (`_identical`, `_unpaired`, `_infinite`)."""
    sessions = values.session_rows.get(system, np.array([], dtype=int))
    users = values.user_rows.get(system, np.array([], dtype=int))
    s_paired, s_b, s_r = values.paired[sessions], values.b[sessions], values.r[sessions]
    n_paired = s_paired.sum(axis=0)
    n_equal = (s_paired & (s_b == s_r)).sum(axis=0)
    binary = ~(s_paired & ~(np.isin(s_b, (0.0, 1.0)) & np.isin(s_r, (0.0, 1.0)))).any(axis=0)
    with np.errstate(invalid="ignore"):  # inf + -inf where a pair is lost to infinities: masked out
        ones = np.where(s_paired, s_b + s_r, 0.0).sum(axis=0)
    n_infinite = values.infinite[sessions].sum(axis=0)
    rows = []
    for j, metric in enumerate(metrics):
        u_b, u_r = values.user_b[users, j], values.user_r[users, j]
        known = ~np.isnan(u_b)
        u_b, u_r = u_b[known], u_r[known]
        differences = u_r - u_b
        n = len(differences)
        interval = intervals.mean_interval(differences, kind="mean", resamples=plan.resamples, seed=plan.seed)
        test = exact.wilcoxon_signed_rank(differences, seed=plan.seed, resamples=plan.permutations)
        rows.append(
            {
                "system": system,
                "run_system": run_system,
                "metric": metric,
                "label": column_registry.label(metric),
                "direction": _direction(metric),
                "users": n,
                "baseline_mean": float(u_b.mean()) if n else math.nan,
                "run_mean": float(u_r.mean()) if n else math.nan,
                # the interval's own mean: where every difference is equal it is that value exactly, so
                # the interval [d, d] holds it (a mean of equal floats can round off it)
                "diff": interval["mean"],
                "ci_low": interval["ci_low"],
                "ci_high": interval["ci_high"],
                "ci_method": interval["ci_method"],
                "ci_note": interval["note"],
                "p": test.p,
                "min_p": test.min_p,
                "testable": bool(test.min_p <= plan.alpha),
                "events": float(ones[j]) if n and binary[j] else math.nan,
                "tolerance": float(tolerance.get(metric, tolerance.get("*", 0.0))),
                "_identical": bool(n and n_equal[j] == n_paired[j]),
                "_unpaired": int(counts.at[system, "both"]) - n,
                "_infinite": int(n_infinite[j]),
            }
        )
    return rows


def _verdict(row: dict, counts: pd.DataFrame, plan: AnalysisPlan, adjusted: bool) -> tuple[str, str]:
    """A row's verdict and the reasons a reader needs beside it."""
    notes = []
    only_base, only_run = counts.at[row["system"], "only_baseline"], counts.at[row["system"], "only_run"]
    if only_base:
        notes.append(f"{_users(only_base)} only in the baseline")
    if only_run:
        notes.append(f"{_users(only_run)} only in the run")
    if row["_unpaired"]:
        notes.append(f"{_users(row['_unpaired'])} in both runs without a paired value")
    if row["_infinite"]:
        count = row["_infinite"]
        notes.append(f"{count} session{'s' if count != 1 else ''} with an infinite value left out")
    diff, alpha = row["diff"], plan.alpha
    sparse = not math.isnan(row["events"]) and row["events"] < MIN_EVENTS
    sparse_note = f"sparse: {int(row['events'])} events (flags need {MIN_EVENTS})" if sparse else ""

    def said(verdict: str, *reasons: str) -> tuple[str, str]:
        return verdict, "; ".join([*notes, *reasons])

    if row["users"] == 0:
        return said(NO_PAIRS, "no user has a value in both runs")
    if row["_identical"]:
        return said(IDENTICAL)
    if row["direction"] == "none":
        return said(NO_DIRECTION, "no better direction: reported, never flagged", *([sparse_note] if sparse else []))
    if sparse:
        return said(SPARSE, sparse_note)
    if math.isnan(row["p"]):  # paired sessions differ, yet every user's mean difference is 0
        return said(NO_DIFFERENCE, "sessions changed but every user's mean over its trials is unchanged")
    if not row["testable"]:
        return said(NOT_TESTABLE, f"smallest reachable p {row['min_p']:.3g} > alpha {alpha:g}")
    p = row["p_adj"] if adjusted else row["p"]
    if not p <= alpha:
        if adjusted and row["p"] <= alpha:
            return said(NO_DIFFERENCE, f"p {row['p']:.3g} but adjusted p {p:.3g} > alpha {alpha:g}")
        return said(NO_DIFFERENCE)
    if not abs(diff) > row["tolerance"]:
        return said(NO_DIFFERENCE, f"|diff| {abs(diff):.3g} within the tolerance {row['tolerance']:g}")
    worse = diff < 0 if row["direction"] == "higher" else diff > 0
    return said(REGRESSION if worse else IMPROVEMENT)


# ------------------------------------------------------------------ sessions that changed


def changed_sessions(
    baseline: pd.DataFrame,
    run: pd.DataFrame,
    *,
    metrics: list[str],
    system_map: dict[str, str] | None = None,
    top: int = 10,
) -> pd.DataFrame:
    """Per system, the `top` sessions whose metrics moved most between the runs, unchanged sessions left out.

    A session's score sums |run - baseline| over metrics, each in units of the baseline's standard deviation
    of that metric over all its sessions, so that a metric in words does not drown one in 0-1 (a metric
    without spread is counted in its own units). A value present on one side only counts as one unit: the
    metric appeared or vanished, which a reader should see named (`metric` is the largest standardized
    change, its values beside it)."""
    if top < 1:
        raise ValueError(f"top must be at least 1, not {top}")
    metrics = _shared_metrics(baseline, run, metrics)
    base = _prepared(baseline, metrics, "baseline")
    other = _prepared(run, metrics, "run", system_map)
    names = [f"m{i}" for i in range(len(metrics))]
    finite_base = base[names].where(np.isfinite(base[names].to_numpy(dtype=float))) if names else base[names]
    spread = finite_base.std().to_numpy(dtype=float) if names else np.zeros(0)
    scale = np.where(np.isfinite(spread) & (spread > 0), spread, 1.0)

    pairs = base.drop(columns="run_system").merge(other, on=KEYS, how="inner", suffixes=("_b", "_r"))
    b = pairs[[f"{n}_b" for n in names]].to_numpy(dtype=float).reshape(len(pairs), len(names))
    r = pairs[[f"{n}_r" for n in names]].to_numpy(dtype=float).reshape(len(pairs), len(names))
    # a value on one side only, or an infinite one, counts one unit (it appeared, vanished or overflowed); the
    # values shown stay as read
    changed = ~(np.isnan(b) & np.isnan(r)) & ~(b == r)
    with np.errstate(invalid="ignore"):
        moved = np.where(np.isfinite(b) & np.isfinite(r), np.abs(r - b) / scale, 1.0)
    change = np.where(changed, moved, 0.0)
    largest = change.argmax(axis=1) if names else np.zeros(len(pairs), dtype=int)
    rows = np.arange(len(pairs))
    table = pd.DataFrame(
        {
            "system": pairs["system"].to_numpy(),
            "run_system": pairs["run_system"].to_numpy(),
            "session_index": pairs["session_index"].to_numpy(),
            "seed": pairs["seed"].to_numpy(),
            "trial": pairs[TRIAL].to_numpy(),
            "baseline_session_id": pairs["session_id_b"].to_numpy(),
            "run_session_id": pairs["session_id_r"].to_numpy(),
            "score": change.sum(axis=1),
            "metric": np.asarray(metrics, dtype=object)[largest] if names else np.full(len(pairs), None),
            "baseline_value": b[rows, largest] if names else np.full(len(pairs), np.nan),
            "run_value": r[rows, largest] if names else np.full(len(pairs), np.nan),
            "metrics_changed": changed.sum(axis=1).astype(int),
        },
        columns=list(CHANGED_COLUMNS),
    )
    table = table[table["metrics_changed"] > 0]
    order = ["score", "system", "session_index", "seed", "trial"]
    table = table.sort_values(order, ascending=[False, True, True, True, True], kind="stable")
    return table.groupby("system", sort=False).head(top).reset_index(drop=True)
