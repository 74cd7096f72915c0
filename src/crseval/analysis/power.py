"""Sample-size planning from a finished run (statsmodels power of the two-sample t-test).

A pilot run gives each metric's spread; from it, for a comparison of two systems at the stated
power and alpha (two-sided):
- the smallest difference in the metric's own units this run could detect (the minimum
  detectable effect: Cohen's d solved for the run's sessions per system, times the pooled SD),
  also at the Bonferroni level alpha / pairs, the worst case of Holm over every pair of systems;
- the sessions per system needed to detect the closest observed pair of system means, and a
  difference stated in the config (`stats.power.differences`), at alpha.
When sessions pair (same seeds across systems) the paired design is planned as well, from the
SD of the per-session differences (the mean of that SD over pairs of systems). Normal
approximations aside, this is the textbook calculation; it is a plan, not a guarantee.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
from statsmodels.stats.power import TTestIndPower, TTestPower

NAN = math.nan


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
    groups = [g for g in groups if len(g) >= 2]
    dof = sum(len(g) - 1 for g in groups)
    if not dof:
        return NAN
    return math.sqrt(sum((len(g) - 1) * g.var(ddof=1) for g in groups) / dof)


def power_table(
    frame: pd.DataFrame, metrics: list[str], alpha: float, power: float, differences: dict[str, float], paired: bool
) -> pd.DataFrame:
    """One row per metric: spread, detectable differences, and sessions needed (full precision)."""
    rows = []
    for metric in metrics:
        groups = {s: g[metric].dropna().to_numpy(float) for s, g in frame.groupby("system", sort=True)}
        groups = {s: v for s, v in groups.items() if len(v)}
        n = min((len(v) for v in groups.values()), default=0)
        pairs = max(len(groups) * (len(groups) - 1) // 2, 1)
        sd = pooled_sd(list(groups.values()))
        means = sorted(float(v.mean()) for v in groups.values())
        closest = min((b - a for a, b in zip(means, means[1:])), default=NAN)
        stated = differences.get(metric, NAN)
        row = {
            "metric": metric,
            "systems": len(groups),
            "sessions_per_system": n,
            "pooled_sd": sd,
            "mde": detectable_d(n, alpha, power) * sd,
            "mde_all_pairs": detectable_d(n, alpha / pairs, power) * sd,
            "closest_pair_difference": closest,
            "sessions_for_closest_pair": sessions_needed(closest, sd, alpha, power),
            "stated_difference": stated,
            "sessions_for_stated_difference": sessions_needed(stated, sd, alpha, power),
        }
        if paired:
            wide = frame.pivot_table(index="session_index", columns="system", values=metric, aggfunc="first")
            sds, counts = [], []
            for a, b in itertools.combinations(sorted(wide.columns), 2):
                diff = (wide[a] - wide[b]).dropna().to_numpy(float)
                if len(diff) >= 2:
                    sds.append(diff.std(ddof=1))
                    counts.append(len(diff))
            sd_diff = float(np.mean(sds)) if sds else NAN
            pairs_n = min(counts, default=0)
            row.update(
                {
                    "paired_sd_of_differences": sd_diff,
                    "paired_mde": detectable_d(pairs_n, alpha, power, paired=True) * sd_diff,
                    "paired_sessions_for_closest_pair": sessions_needed(closest, sd_diff, alpha, power, paired=True),
                    "paired_sessions_for_stated_difference": sessions_needed(
                        stated, sd_diff, alpha, power, paired=True
                    ),
                }
            )
        rows.append(row)
    return pd.DataFrame(rows)


def power_markdown(table: pd.DataFrame, alpha: float, power: float, paired_reason: str) -> str:
    def fmt(x) -> str:
        return (
            "n/a"
            if x is None or (isinstance(x, float) and math.isnan(x))
            else (f"{x:.3g}" if isinstance(x, float) else str(x))
        )

    def count(x) -> str:
        return "n/a" if x is None or math.isnan(x) else f"{int(x):,}"

    paired = "paired_mde" in table
    lines = [
        "# Sample size planning",
        "",
        f"Two-sample t-test, two-sided, alpha {alpha}, power {power}, from this run's pooled SD per metric. "
        "`detectable` is the smallest difference between two systems' means this run could detect; "
        "`detectable, all pairs` the same at alpha / number of pairs (the worst case of Holm's adjustment); "
        "`sessions needed` is per system. The closest pair is the smallest gap between two systems' means in "
        "this run; a stated difference comes from `stats.power.differences`.",
        "",
    ]
    lines.append(f"Paired design: {'planned too' if paired else 'not planned'} ({paired_reason}).")
    lines += [
        "",
        "| metric | sessions/system | SD | detectable | detectable, all pairs | closest pair | sessions needed "
        "(closest) | stated difference | sessions needed (stated) |"
        + (" paired detectable | paired sessions needed (closest) |" if paired else ""),
        "|---|---|---|---|---|---|---|---|---|" + ("---|---|" if paired else ""),
    ]
    for r in table.to_dict("records"):
        line = (
            f"| {r['metric']} | {r['sessions_per_system']} | {fmt(r['pooled_sd'])} | {fmt(r['mde'])} | "
            f"{fmt(r['mde_all_pairs'])} | {fmt(r['closest_pair_difference'])} | "
            f"{count(r['sessions_for_closest_pair'])} | {fmt(r['stated_difference'])} | "
            f"{count(r['sessions_for_stated_difference'])} |"
        )
        if paired:
            line += f" {fmt(r['paired_mde'])} | {count(r['paired_sessions_for_closest_pair'])} |"
        lines.append(line)
    return "\n".join(lines) + "\n"
