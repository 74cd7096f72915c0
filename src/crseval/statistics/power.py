"""Sample-size planning from a finished run (statsmodels power of the two-sample t-test).

A pilot run gives each metric's spread; from it, for a comparison of two systems at the stated
power and alpha (two-sided):
- the smallest difference in the metric's own units this run could detect (the minimum
  detectable effect: Cohen's d solved for the run's sessions per system, times the pooled SD),
  also at the Bonferroni level alpha / pairs, the worst case of Holm over every pair of systems;
- the sessions per system needed to detect a difference at alpha: the difference stated in the
  config (`stats.power.differences`), the basis of a plan; for a metric without one, the closest
  observed pair of system means, labelled post-hoc. A sample size planned from a gap this run
  happened to observe is no evidence of anything: the gap is as noisy as the run that gave it.
When sessions pair (same seeds across systems) the paired design is planned as well, from the
SD of the per-session differences: the root mean square of that SD over pairs of systems (the
SD of a typical pair's difference, as the pooled SD is the root mean square of the systems' SDs
weighted by their degrees of freedom). Normal approximations aside, this is the textbook
calculation; it is a plan, not a guarantee.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
from statsmodels.stats.power import TTestIndPower, TTestPower

NAN = math.nan
STATED, POST_HOC = "stated", "post-hoc (observed gap)"


def _solve(analysis, **kwargs) -> float:
    try:
        value = analysis.solve_power(**kwargs)
    except (ValueError, RuntimeError):  # no solution in the solver's bracket
        return NAN
    value = float(np.asarray(value).ravel()[0])
    return value if math.isfinite(value) else NAN


def detectable_d(n: float, alpha: float, power: float, paired: bool = False) -> float:
    """Smallest standardised difference detectable with n sessions per system (or n pairs)."""
    if n < 2:
        return NAN
    if paired:
        return _solve(TTestPower(), effect_size=None, nobs=n, alpha=alpha, power=power, alternative="two-sided")
    return _solve(
        TTestIndPower(), effect_size=None, nobs1=n, ratio=1.0, alpha=alpha, power=power, alternative="two-sided"
    )


def sessions_needed(difference: float, sd: float, alpha: float, power: float, paired: bool = False) -> float:
    """Sessions per system (or pairs) to detect `difference` given the SD; NaN when undefined."""
    if not (sd > 0) or not (abs(difference) > 0):
        return NAN
    d = abs(difference) / sd
    if paired:
        n = _solve(TTestPower(), effect_size=d, nobs=None, alpha=alpha, power=power, alternative="two-sided")
    else:
        n = _solve(
            TTestIndPower(), effect_size=d, nobs1=None, ratio=1.0, alpha=alpha, power=power, alternative="two-sided"
        )
    return float(math.ceil(n)) if not math.isnan(n) else NAN


def pooled_sd(groups: list[np.ndarray]) -> float:
    """sqrt(sum((n_i - 1) s_i^2) / sum(n_i - 1)): the root mean square of the systems' SDs, weighted by
    their degrees of freedom; groups of fewer than two values carry no spread and are left out."""
    groups = [g for g in groups if len(g) >= 2]
    dof = sum(len(g) - 1 for g in groups)
    if not dof:
        return NAN
    return math.sqrt(sum((len(g) - 1) * g.var(ddof=1) for g in groups) / dof)


def power_table(
    frame: pd.DataFrame, metrics: list[str], alpha: float, power: float, differences: dict[str, float], paired: bool
) -> pd.DataFrame:
    """One row per metric (full precision): spread, detectable differences, and the sessions needed for the
    planned difference: the stated one (`basis` "stated") or else the closest observed gap ("post-hoc
    (observed gap)")."""
    rows = []
    for metric in metrics:
        groups = {s: g[metric].dropna().to_numpy(float) for s, g in frame.groupby("system", sort=True)}
        groups = {s: v for s, v in groups.items() if len(v)}
        n = min((len(v) for v in groups.values()), default=0)
        pairs = max(len(groups) * (len(groups) - 1) // 2, 1)
        sd = pooled_sd(list(groups.values()))
        means = sorted(float(v.mean()) for v in groups.values())
        closest = min((b - a for a, b in zip(means, means[1:])), default=NAN)
        basis, planned = (STATED, float(differences[metric])) if metric in differences else (POST_HOC, closest)
        row = {
            "metric": metric,
            "systems": len(groups),
            "sessions_per_system": n,
            "pooled_sd": sd,
            "mde": detectable_d(n, alpha, power) * sd,
            "mde_all_pairs": detectable_d(n, alpha / pairs, power) * sd,
            "closest_pair_difference": closest,
            "basis": basis,
            "planned_difference": planned,
            "sessions_needed": sessions_needed(planned, sd, alpha, power),
        }
        if paired:
            sd_diff, pairs_n = paired_sd_of_differences(frame, metric)
            row.update(
                {
                    "paired_sd_of_differences": sd_diff,
                    "paired_mde": detectable_d(pairs_n, alpha, power, paired=True) * sd_diff,
                    "paired_sessions_needed": sessions_needed(planned, sd_diff, alpha, power, paired=True),
                }
            )
        rows.append(row)
    return pd.DataFrame(rows)


def paired_sd_of_differences(frame: pd.DataFrame, metric: str) -> tuple[float, int]:
    """The root mean square over pairs of systems of the SD of their per-session differences, and the
    fewest sessions a pair shares. RMS, not the mean: it is the SD a typical pair's test faces (variances
    average, SDs do not), as in the pooled SD."""
    wide = frame.pivot_table(index="session_index", columns="system", values=metric, aggfunc="first")
    variances, counts = [], []
    for a, b in itertools.combinations(sorted(wide.columns), 2):
        diff = (wide[a] - wide[b]).dropna().to_numpy(float)
        if len(diff) >= 2:
            variances.append(diff.var(ddof=1))
            counts.append(len(diff))
    return (math.sqrt(float(np.mean(variances))) if variances else NAN), min(counts, default=0)


def power_markdown(table: pd.DataFrame, alpha: float, power: float, paired_reason: str) -> str:
    """power.md: the plan per metric, with every sample size planned from an observed gap marked post-hoc."""

    def fmt(x) -> str:
        return (
            "n/a"
            if x is None or (isinstance(x, float) and math.isnan(x))
            else (f"{x:.3g}" if isinstance(x, float) else str(x))
        )

    def count(x) -> str:
        return "n/a" if x is None or math.isnan(x) else f"{int(x):,}"

    paired = "paired_mde" in table
    records = table.to_dict("records")
    post_hoc = [r["metric"] for r in records if r["basis"] == POST_HOC]
    lines = [
        "# Sample size planning",
        "",
        f"Two-sample t-test, two-sided, alpha {alpha}, power {power}, from this run's pooled SD per metric. "
        "`detectable` is the smallest difference between two systems' means this run could detect; "
        "`detectable, all pairs` the same at alpha / number of pairs (the worst case of Holm's adjustment); "
        "`sessions needed` is per system, to detect the planned difference: the one stated in "
        "`stats.power.differences` (basis `stated`), or, for a metric without one, the smallest gap between two "
        "systems' means in this run (basis `post-hoc (observed gap)`).",
        "",
    ]
    if post_hoc:
        lines += [
            f"Post-hoc rows ({', '.join(post_hoc)}): a sample size or power computed from a gap this run observed "
            "is not evidence of anything, neither that the gap is real nor that a run of that size would find "
            "it; the gap is as noisy as the run. State the smallest difference that matters for these metrics "
            "in `stats.power.differences` to plan the next run.",
            "",
        ]
    lines.append(f"Paired design: {'planned too' if paired else 'not planned'} ({paired_reason}).")
    lines += [
        "",
        "| metric | sessions/system | SD | detectable | detectable, all pairs | closest pair | basis "
        "| planned difference | sessions needed |"
        + (" paired detectable | paired sessions needed |" if paired else ""),
        "|---|---|---|---|---|---|---|---|---|" + ("---|---|" if paired else ""),
    ]
    for r in records:
        line = (
            f"| {r['metric']} | {r['sessions_per_system']} | {fmt(r['pooled_sd'])} | {fmt(r['mde'])} | "
            f"{fmt(r['mde_all_pairs'])} | {fmt(r['closest_pair_difference'])} | {r['basis']} | "
            f"{fmt(r['planned_difference'])} | {count(r['sessions_needed'])} |"
        )
        if paired:
            line += f" {fmt(r['paired_mde'])} | {count(r['paired_sessions_needed'])} |"
        lines.append(line)
    return "\n".join(lines) + "\n"
