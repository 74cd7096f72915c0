"""Statistical comparison of systems, per metric.

- One-way ANOVA (statsmodels `anova_oneway`, equal variances) with eta squared, and Tukey HSD pairs.
- Assumption checks: Levene (equal variances) and Shapiro-Wilk per system (normality). Welch's
  ANOVA and Kruskal-Wallis are always reported; `recommended` names the omnibus test whose
  assumptions hold (ANOVA if both checks pass at `alpha`, Welch if only normality holds,
  Kruskal-Wallis otherwise). Its p-value is also given adjusted across the family of metrics
  (Benjamini-Hochberg).
- Every pair of systems, independent samples: Welch's t-test with Hedges' g, Mann-Whitney U with
  Cliff's delta, each effect with a bootstrap CI.
- Paired tests, only when sessions really pair (the same session index carries the same seed in
  every system: the same simulated user and plan): paired t with Cohen's d_z, Wilcoxon
  signed-rank with the matched-pairs rank-biserial correlation. Imported logs do not pair.
- Pairwise p-values are reported raw, Holm-adjusted over the pairs of one metric (family-wise
  error per metric) and Benjamini-Hochberg-adjusted over every pair of every metric (false
  discovery rate over the family of metrics).
- Spearman correlations between automated metrics and judge scores, with seeded percentile
  bootstrap 95% confidence intervals (sessions resampled with replacement).
CSVs keep full precision; only summary.md rounds.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Callable

import numpy as np
import pandas as pd
from scipy import stats as sps
from statsmodels.stats.multicomp import pairwise_tukeyhsd
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.oneway import anova_oneway

from crseval.analysis import effects

ALPHA = 0.05


def _groups(frame: pd.DataFrame, metric: str) -> dict[str, np.ndarray]:
    return {system: g[metric].dropna().to_numpy(dtype=float) for system, g in frame.groupby("system", sort=True)}


def omnibus(frame: pd.DataFrame, metric: str, alpha: float = ALPHA) -> dict:
    all_groups = _groups(frame, metric)
    groups = {k: v for k, v in all_groups.items() if len(v) >= 2}
    left_out = sorted(set(all_groups) - set(groups))
    row = {
        "metric": metric,
        "systems": len(groups),
        "n": int(sum(len(v) for v in groups.values())),
        "left_out": ", ".join(left_out),
    }
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
        **row,
        "anova_f": f_value,
        "anova_p": anova_p,
        "eta_squared": ss_between / (ss_between + ss_within),
        "levene_p": levene_p,
        "shapiro_min_p": min(shapiro) if shapiro else math.nan,
        "welch_f": float(welch.statistic),
        "welch_p": float(welch.pvalue),
        "kruskal_p": kruskal_p,
        "recommended": recommended,
        "recommended_p": {"anova": anova_p, "welch": float(welch.pvalue), "kruskal": kruskal_p}[recommended],
        "note": f"left out (fewer than two values): {row['left_out']}" if left_out else "",
    }


def tukey(frame: pd.DataFrame, metric: str, alpha: float = ALPHA) -> pd.DataFrame:
    """Tukey HSD for every pair, at full precision (statsmodels' summary table rounds)."""
    data = frame[["system", metric]].dropna()
    if data["system"].nunique() < 2 or data[metric].nunique() < 2:
        return pd.DataFrame()
    result = pairwise_tukeyhsd(data[metric].to_numpy(dtype=float), data["system"].to_numpy(), alpha=alpha)
    groups = result.groupsunique
    rows = [
        {
            "metric": metric,
            "system_a": groups[i],
            "system_b": groups[j],
            "mean_diff": float(diff),
            "p_adj": float(p),
            "lower": float(low),
            "upper": float(high),
            "reject": bool(reject),
        }
        for (i, j), diff, p, (low, high), reject in zip(
            itertools.combinations(range(len(groups)), 2),
            result.meandiffs,
            result.pvalues,
            result.confint,
            result.reject,
        )
    ]
    return pd.DataFrame(rows)


def pairing(frame: pd.DataFrame) -> tuple[bool, str]:
    """Whether sessions pair across systems, and why: only when every session index carries one
    seed in every system (the same simulated user with the same plan)."""
    if "seed" not in frame or frame["seed"].isna().all():
        return False, (
            "the sessions carry no seed (imported logs): session i of one system and session i of another "
            "are different conversations, so paired tests would pair unrelated sessions"
        )
    seeds = frame.groupby("session_index")["seed"].nunique(dropna=False)
    if frame["seed"].isna().any() or (seeds > 1).any():
        return False, "the same session index has different seeds in different systems, so sessions do not pair"
    return True, "session i has the same seed, simulated user and plan in every system"


def _two_sided(test: Callable, *args) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            p = float(test(*args).pvalue)
        except ValueError:
            return math.nan
    return p


def pairwise(frame: pd.DataFrame, metric: str, resamples: int, seed: int) -> list[dict]:
    """Every pair of systems as independent samples: Welch t with Hedges' g, Mann-Whitney with Cliff's delta."""
    groups = _groups(frame, metric)
    rows = []
    for k, (a, b) in enumerate(itertools.combinations(sorted(groups), 2)):
        x, y = groups[a], groups[b]
        row = {
            "metric": metric,
            "system_a": a,
            "system_b": b,
            "n_a": len(x),
            "n_b": len(y),
            "mean_a": float(x.mean()) if len(x) else math.nan,
            "mean_b": float(y.mean()) if len(y) else math.nan,
        }
        row["mean_diff"] = row["mean_a"] - row["mean_b"]
        spread = len(x) >= 2 and len(y) >= 2 and np.ptp(np.concatenate([x, y])) > 0
        row["welch_t_p"] = _two_sided(lambda u, v: sps.ttest_ind(u, v, equal_var=False), x, y) if spread else math.nan
        row["mannwhitney_p"] = (
            _two_sided(lambda u, v: sps.mannwhitneyu(u, v, alternative="two-sided"), x, y) if spread else math.nan
        )
        g = effects.two_sample(effects.hedges_g_batch, x, y, resamples, seed + 2 * k)
        delta = effects.two_sample(effects.cliffs_delta_batch, x, y, resamples, seed + 2 * k + 1)
        row.update(dict(zip(("hedges_g", "hedges_g_ci_low", "hedges_g_ci_high"), g)))
        row.update(dict(zip(("cliffs_delta", "cliffs_delta_ci_low", "cliffs_delta_ci_high"), delta)))
        rows.append(row)
    return rows


def paired(frame: pd.DataFrame, metric: str, resamples: int = 0, seed: int = 0) -> list[dict]:
    """Each pair of systems on the sessions both have, matched by session index (call only when
    `pairing` says sessions pair): paired t with Cohen's d_z, Wilcoxon with the rank-biserial r."""
    wide = frame.pivot_table(index="session_index", columns="system", values=metric, aggfunc="first")
    rows = []
    for k, (a, b) in enumerate(itertools.combinations(sorted(wide.columns), 2)):
        both = wide[[a, b]].dropna()
        diff = (both[a] - both[b]).to_numpy(dtype=float)
        row = {
            "metric": metric,
            "system_a": a,
            "system_b": b,
            "pairs": len(both),
            "mean_diff": float(diff.mean()) if len(diff) else math.nan,
        }
        row["paired_t_p"] = (
            _two_sided(sps.ttest_rel, both[a], both[b]) if len(diff) >= 2 and np.ptp(diff) > 0 else math.nan
        )
        row["wilcoxon_p"] = (
            _two_sided(sps.wilcoxon, both[a], both[b]) if len(diff) >= 2 and np.any(diff != 0) else math.nan
        )
        dz = effects.paired_sample(effects.cohens_dz_batch, diff, resamples, seed + 2 * k)
        r = effects.paired_sample(effects.rank_biserial_paired_batch, diff, resamples, seed + 2 * k + 1)
        row.update(dict(zip(("cohens_dz", "cohens_dz_ci_low", "cohens_dz_ci_high"), dz)))
        row.update(dict(zip(("rank_biserial", "rank_biserial_ci_low", "rank_biserial_ci_high"), r)))
        rows.append(row)
    return rows


def _adjusted(p: pd.Series, method: str) -> pd.Series:
    out = pd.Series(math.nan, index=p.index)
    known = p.dropna()
    if len(known):
        out[known.index] = multipletests(known.to_numpy(float), method=method)[1]
    return out


def adjust(table: pd.DataFrame, p_columns: list[str]) -> pd.DataFrame:
    """Add `<p>_holm` (over the pairs of each metric) and `<p>_bh` (over every row: the family of
    metrics) beside each raw p-value column; untestable pairs (NaN) are not counted."""
    table = table.copy()
    for column in p_columns:
        if column not in table:
            continue
        position = table.columns.get_loc(column) + 1
        holm = (
            pd.concat([_adjusted(group, "holm") for _, group in table.groupby("metric", sort=False)[column]])
            if len(table)
            else pd.Series(dtype=float)
        )
        table.insert(position, f"{column}_holm", holm.reindex(table.index))
        table.insert(position + 1, f"{column}_bh", _adjusted(table[column], "fdr_bh"))
    return table


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
    low, high = np.percentile(draws, [(1 - level) / 2 * 100, (1 + level) / 2 * 100]) if draws else (math.nan, math.nan)
    return {"n": n, "rho": float(rho), "p": float(p), "ci_low": float(low), "ci_high": float(high)}


def correlations(frame: pd.DataFrame, metrics: list[str], judges: list[str], resamples: int, seed: int) -> pd.DataFrame:
    rows = []
    for i, (metric, judge) in enumerate(itertools.product(metrics, judges)):
        if metric in frame and judge in frame:
            result = spearman_bootstrap(
                frame[metric].to_numpy(float), frame[judge].to_numpy(float), resamples, seed + i
            )
            rows.append({"metric": metric, "judge": judge, **result})
    return pd.DataFrame(rows)


def _fmt(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def _ci(row, name: str) -> str:
    return f"{_fmt(row[name])} [{_fmt(row[name + '_ci_low'])}, {_fmt(row[name + '_ci_high'])}]"


def omnibus_with_adjustment(anova: pd.DataFrame) -> pd.DataFrame:
    """`recommended_p_bh`: the omnibus p-values adjusted over the family of metrics (Benjamini-Hochberg)."""
    if "recommended_p" not in anova:
        return anova
    anova = anova.copy()
    anova.insert(
        anova.columns.get_loc("recommended_p") + 1, "recommended_p_bh", _adjusted(anova["recommended_p"], "fdr_bh")
    )
    return anova


def markdown_summary(
    anova: pd.DataFrame,
    tukey_table: pd.DataFrame,
    pairwise_table: pd.DataFrame,
    paired_table: pd.DataFrame,
    correlation_table: pd.DataFrame,
    paired_reason: str,
    alpha: float = ALPHA,
) -> str:
    """The readable summary (rounded to 3 significant digits; the CSVs keep full precision)."""
    lines = [
        *_summary_header(alpha),
        *_omnibus_section(anova),
        *_tukey_section(tukey_table),
        *_pairwise_section(pairwise_table, anova, alpha),
        *_paired_section(paired_table, paired_reason, alpha),
        *_correlation_section(correlation_table),
    ]
    return "\n".join(lines) + "\n"


def _summary_header(alpha: float) -> list[str]:
    return [
        "# Statistical comparison of systems",
        "",
        f"Significance level {alpha}. Omnibus test per metric: the `recommended` one is the test whose assumptions "
        "hold (ANOVA: normal residuals and equal variances; Welch: normal; otherwise Kruskal-Wallis); its p-value "
        "is also shown adjusted over the metrics (Benjamini-Hochberg, BH). Numbers here are rounded; the CSVs "
        "beside this file keep full precision.",
        "",
    ]


def _omnibus_section(anova: pd.DataFrame) -> list[str]:
    lines = [
        "## Omnibus tests",
        "",
        "| metric | n | recommended | p | p (BH) | eta² | ANOVA p | Welch p | Kruskal p | Levene p | min Shapiro p |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for _, r in anova.iterrows():
        if r.get("note") and pd.isna(r.get("recommended")):
            lines.append(f"| {r['metric']} | {r['n']} | – ({r['note']}) | | | | | | | | |")
            continue
        metric = r["metric"] + (f" ({r['note']})" if r.get("note") else "")
        lines.append(
            f"| {metric} | {r['n']} | {r['recommended']} | {_fmt(r['recommended_p'])} | "
            f"{_fmt(r.get('recommended_p_bh'))} | {_fmt(r['eta_squared'])} | {_fmt(r['anova_p'])} | "
            f"{_fmt(r['welch_p'])} | {_fmt(r['kruskal_p'])} | {_fmt(r['levene_p'])} | {_fmt(r['shapiro_min_p'])} |"
        )
    return lines


def _tukey_section(tukey_table: pd.DataFrame) -> list[str]:
    if not len(tukey_table):
        return []
    significant = tukey_table[tukey_table["reject"].astype(bool)]
    return [
        "",
        f"## Tukey HSD: {len(significant)} of {len(tukey_table)} pairs differ",
        "",
        "| metric | system a | system b | mean diff (b - a) | adjusted p |",
        "|---|---|---|---|---|",
        *(
            f"| {r['metric']} | {r['system_a']} | {r['system_b']} | {_fmt(float(r['mean_diff']))} | "
            f"{_fmt(float(r['p_adj']))} |"
            for _, r in significant.iterrows()
        ),
    ]


def _pairwise_section(pairwise_table: pd.DataFrame, anova: pd.DataFrame, alpha: float) -> list[str]:
    """The pairs that differ by the test the omnibus recommendation implies (rank-based after Kruskal-Wallis)."""
    if not len(pairwise_table):
        return []
    rank_based = (
        set(anova.loc[anova.get("recommended", pd.Series(dtype=object)) == "kruskal", "metric"])
        if "recommended" in anova
        else set()
    )
    shown = []
    for _, r in pairwise_table.iterrows():
        test, effect = ("mannwhitney_p", "cliffs_delta") if r["metric"] in rank_based else ("welch_t_p", "hedges_g")
        if r[f"{test}_holm"] < alpha:
            shown.append((r, test, effect))
    return [
        "",
        f"## Pairwise tests: {len(shown)} of {len(pairwise_table)} pairs differ (Holm over the pairs of a metric)",
        "",
        "Welch's t-test with Hedges' g where the omnibus recommendation is ANOVA or Welch, Mann-Whitney U with "
        "Cliff's delta where it is Kruskal-Wallis; effect of a over b with a 95% bootstrap CI. pairwise.csv "
        "has both tests for every pair, raw, Holm- and BH-adjusted.",
        "",
        "| metric | system a | system b | mean diff (a - b) | test | p | p (Holm) | p (BH) | effect [95% CI] |",
        "|---|---|---|---|---|---|---|---|---|",
        *(
            f"| {r['metric']} | {r['system_a']} | {r['system_b']} | {_fmt(r['mean_diff'])} | "
            f"{'Mann-Whitney' if test == 'mannwhitney_p' else 'Welch t'} | {_fmt(r[test])} | "
            f"{_fmt(r[test + '_holm'])} | "
            f"{_fmt(r[test + '_bh'])} | {effect.replace('_', ' ')} {_ci(r, effect)} |"
            for r, test, effect in shown
        ),
    ]


def _paired_section(paired_table: pd.DataFrame, paired_reason: str, alpha: float) -> list[str]:
    lines = ["", "## Paired tests on the same sessions", ""]
    if not len(paired_table):
        return [*lines, f"Not run: {paired_reason}."]
    significant = paired_table[paired_table["wilcoxon_p_holm"] < alpha]
    return [
        *lines,
        f"Sessions pair: {paired_reason}. {len(significant)} of {len(paired_table)} pairs differ (Wilcoxon, "
        "Holm over the pairs of a metric).",
        "",
        "| metric | system a | system b | pairs | mean diff (a - b) | Wilcoxon p (Holm) | rank-biserial [95% CI] | "
        "paired t p (Holm) | d_z [95% CI] |",
        "|---|---|---|---|---|---|---|---|---|",
        *(
            f"| {r['metric']} | {r['system_a']} | {r['system_b']} | {r['pairs']} | {_fmt(r['mean_diff'])} | "
            f"{_fmt(r['wilcoxon_p_holm'])} | {_ci(r, 'rank_biserial')} | {_fmt(r['paired_t_p_holm'])} | "
            f"{_ci(r, 'cohens_dz')} |"
            for _, r in significant.iterrows()
        ),
    ]


def _correlation_section(correlation_table: pd.DataFrame) -> list[str]:
    if not len(correlation_table):
        return []
    return [
        "",
        "## Spearman correlation with the judge (95% bootstrap CI)",
        "",
        "| metric | judge | n | rho | CI |",
        "|---|---|---|---|---|",
        *(
            f"| {r['metric']} | {r['judge']} | {r['n']} | {_fmt(r['rho'])} | "
            f"[{_fmt(r['ci_low'])}, {_fmt(r['ci_high'])}] |"
            for _, r in correlation_table.iterrows()
        ),
    ]
