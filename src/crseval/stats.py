"""Statistical comparison of systems, per metric.

- One-way ANOVA (statsmodels `anova_oneway`, equal variances) with eta squared, and Tukey HSD pairs.
- Assumption checks: Levene (equal variances) and Shapiro-Wilk per system (normality). Welch's
  ANOVA and Kruskal-Wallis are always reported; `recommended` names the omnibus test whose
  assumptions hold (ANOVA if both checks pass at `alpha`, Welch if only normality holds,
  Kruskal-Wallis otherwise).
- Paired tests between systems on the same sessions (same seeds): Wilcoxon signed-rank and
  paired t.
- Spearman correlations between automated metrics and judge scores, with seeded percentile
  bootstrap 95% confidence intervals (sessions resampled with replacement).
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pandas as pd
from scipy import stats as sps
from statsmodels.stats.multicomp import pairwise_tukeyhsd
from statsmodels.stats.oneway import anova_oneway

ALPHA = 0.05


def _groups(frame: pd.DataFrame, metric: str) -> dict[str, np.ndarray]:
    return {system: g[metric].dropna().to_numpy(dtype=float) for system, g in frame.groupby("system", sort=True)}


def omnibus(frame: pd.DataFrame, metric: str, alpha: float = ALPHA) -> dict:
    all_groups = _groups(frame, metric)
    groups = {k: v for k, v in all_groups.items() if len(v) >= 2}
    left_out = sorted(set(all_groups) - set(groups))
    row = {"metric": metric, "systems": len(groups), "n": int(sum(len(v) for v in groups.values())),
           "left_out": ", ".join(left_out)}
    if len(groups) < 2:
        return {**row, "note": "fewer than two systems with two or more values"}
    values = np.concatenate(list(groups.values()))
    if np.allclose(values, values[0]):
        return {**row, "note": "constant metric"}
    labels = np.concatenate([[k] * len(v) for k, v in groups.items()])
    grand = values.mean()
    ss_between = sum(len(v) * (v.mean() - grand) ** 2 for v in groups.values())
    ss_within = sum(((v - v.mean()) ** 2).sum() for v in groups.values())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        classic = anova_oneway(values, labels, use_var="equal")
        f_value, anova_p = float(classic.statistic), float(classic.pvalue)
        levene_p = float(sps.levene(*groups.values()).pvalue)
        shapiro = [sps.shapiro(v).pvalue for v in groups.values() if len(v) >= 3 and np.ptp(v) > 0]
        welch = anova_oneway(values, labels, use_var="unequal")
        kruskal_p = float(sps.kruskal(*groups.values()).pvalue)
    normal = bool(shapiro) and min(shapiro) >= alpha
    equal_var = levene_p >= alpha
    recommended = "anova" if normal and equal_var else ("welch" if normal else "kruskal")
    return {
        **row, "anova_f": f_value, "anova_p": anova_p, "eta_squared": ss_between / (ss_between + ss_within),
        "levene_p": levene_p, "shapiro_min_p": min(shapiro) if shapiro else math.nan,
        "welch_f": float(welch.statistic), "welch_p": float(welch.pvalue), "kruskal_p": kruskal_p,
        "recommended": recommended,
        "recommended_p": {"anova": anova_p, "welch": float(welch.pvalue), "kruskal": kruskal_p}[recommended],
        "note": f"left out (fewer than two values): {row['left_out']}" if left_out else "",
    }


def tukey(frame: pd.DataFrame, metric: str, alpha: float = ALPHA) -> pd.DataFrame:
    data = frame[["system", metric]].dropna()
    if data["system"].nunique() < 2 or data[metric].nunique() < 2:
        return pd.DataFrame()
    result = pairwise_tukeyhsd(data[metric].to_numpy(dtype=float), data["system"].to_numpy(), alpha=alpha)
    table = pd.DataFrame(result.summary().data[1:], columns=result.summary().data[0])
    table.insert(0, "metric", metric)
    return table.rename(columns={"group1": "system_a", "group2": "system_b", "meandiff": "mean_diff", "p-adj": "p_adj"})


def paired(frame: pd.DataFrame, metric: str) -> list[dict]:
    """Each pair of systems on the sessions both have (matched by session index)."""
    wide = frame.pivot_table(index="session_index", columns="system", values=metric, aggfunc="first")
    rows = []
    for a, b in itertools.combinations(sorted(wide.columns), 2):
        both = wide[[a, b]].dropna()
        row = {"metric": metric, "system_a": a, "system_b": b, "pairs": len(both),
               "mean_diff": float((both[a] - both[b]).mean()) if len(both) else math.nan}
        diff = (both[a] - both[b]).to_numpy()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if len(both) >= 2 and np.any(diff != 0):
                row["wilcoxon_p"] = float(sps.wilcoxon(both[a], both[b]).pvalue)
                row["paired_t_p"] = float(sps.ttest_rel(both[a], both[b]).pvalue) if np.ptp(diff) > 0 else math.nan
            else:
                row["wilcoxon_p"] = row["paired_t_p"] = math.nan
        rows.append(row)
    return rows


def spearman_bootstrap(x: np.ndarray, y: np.ndarray, resamples: int, seed: int, level: float = 0.95) -> dict:
    mask = ~(np.isnan(x) | np.isnan(y))
    x, y = x[mask], y[mask]
    n = len(x)
    if n < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return {"n": n, "rho": math.nan, "p": math.nan, "ci_low": math.nan, "ci_high": math.nan}
    rho, p = sps.spearmanr(x, y)
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(resamples):
        idx = rng.integers(0, n, n)
        if np.ptp(x[idx]) > 0 and np.ptp(y[idx]) > 0:
            draws.append(sps.spearmanr(x[idx], y[idx])[0])
    low, high = (np.percentile(draws, [(1 - level) / 2 * 100, (1 + level) / 2 * 100]) if draws else (math.nan, math.nan))
    return {"n": n, "rho": float(rho), "p": float(p), "ci_low": float(low), "ci_high": float(high)}


def correlations(frame: pd.DataFrame, metrics: list[str], judges: list[str], resamples: int, seed: int) -> pd.DataFrame:
    rows = []
    for i, (metric, judge) in enumerate(itertools.product(metrics, judges)):
        if metric in frame and judge in frame:
            result = spearman_bootstrap(frame[metric].to_numpy(float), frame[judge].to_numpy(float), resamples, seed + i)
            rows.append({"metric": metric, "judge": judge, **result})
    return pd.DataFrame(rows)


def markdown_summary(anova: pd.DataFrame, tukey_table: pd.DataFrame, paired_table: pd.DataFrame,
                     correlation_table: pd.DataFrame, alpha: float = ALPHA) -> str:
    lines = ["# Statistical comparison of systems", "",
             f"Significance level {alpha}. Omnibus test per metric: the `recommended` one is the test whose assumptions "
             "hold (ANOVA: normal residuals and equal variances; Welch: normal; otherwise Kruskal-Wallis).", ""]
    lines += ["## Omnibus tests", "", "| metric | n | recommended | p | eta² | ANOVA p | Welch p | Kruskal p | Levene p | min Shapiro p |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    fmt = lambda v: "" if v is None or (isinstance(v, float) and math.isnan(v)) else (f"{v:.3g}" if isinstance(v, float) else str(v))
    for _, r in anova.iterrows():
        if r.get("note") and pd.isna(r.get("recommended")):
            lines.append(f"| {r['metric']} | {r['n']} | – ({r['note']}) | | | | | | | |")
            continue
        metric = r["metric"] + (f" ({r['note']})" if r.get("note") else "")
        lines.append(f"| {metric} | {r['n']} | {r['recommended']} | {fmt(r['recommended_p'])} | {fmt(r['eta_squared'])} | "
                     f"{fmt(r['anova_p'])} | {fmt(r['welch_p'])} | {fmt(r['kruskal_p'])} | {fmt(r['levene_p'])} | {fmt(r['shapiro_min_p'])} |")
    if len(tukey_table):
        significant = tukey_table[tukey_table["reject"].astype(bool)]
        lines += ["", f"## Tukey HSD: {len(significant)} of {len(tukey_table)} pairs differ", "",
                  "| metric | system a | system b | mean diff (b - a) | adjusted p |", "|---|---|---|---|---|"]
        lines += [f"| {r['metric']} | {r['system_a']} | {r['system_b']} | {fmt(float(r['mean_diff']))} | {fmt(float(r['p_adj']))} |"
                  for _, r in significant.iterrows()]
    if len(paired_table):
        significant = paired_table[paired_table["wilcoxon_p"] < alpha]
        lines += ["", f"## Paired tests on the same sessions: {len(significant)} of {len(paired_table)} pairs differ (Wilcoxon)", "",
                  "| metric | system a | system b | pairs | mean diff (a - b) | Wilcoxon p | paired t p |", "|---|---|---|---|---|---|---|"]
        lines += [f"| {r['metric']} | {r['system_a']} | {r['system_b']} | {r['pairs']} | {fmt(r['mean_diff'])} | {fmt(r['wilcoxon_p'])} | {fmt(r['paired_t_p'])} |"
                  for _, r in significant.iterrows()]
    if len(correlation_table):
        lines += ["", "## Spearman correlation with the judge (95% bootstrap CI)", "",
                  "| metric | judge | n | rho | CI |", "|---|---|---|---|---|"]
        lines += [f"| {r['metric']} | {r['judge']} | {r['n']} | {fmt(r['rho'])} | [{fmt(r['ci_low'])}, {fmt(r['ci_high'])}] |"
                  for _, r in correlation_table.iterrows()]
    return "\n".join(lines) + "\n"
