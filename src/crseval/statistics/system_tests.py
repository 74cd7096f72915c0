"""Statistical comparison of systems, per metric, under one analysis plan (crseval.statistics.analysis_plan).

Per metric, on the systems with at least `min_sessions` values (the others are left out of every
test of that metric, with the reason; missingness that differs by system is flagged as not missing
at random):
- Omnibus: one-way ANOVA (with eta squared), Welch's ANOVA, Kruskal-Wallis and a permutation test of
  the F statistic are all reported. The `recommended` one follows a stated rule: below
  `small_sample` sessions per system, the permutation test; otherwise ANOVA when the residuals pass
  Shapiro-Wilk and the median-centred Levene test (Brown-Forsythe) finds equal variances, Welch when
  only the residuals pass, Kruskal-Wallis otherwise. A recommended test that is undefined on the data
  (Welch with a system without spread) falls back to the next, with the reason.
- Post-hoc, after the recommended omnibus only: Tukey HSD after ANOVA, Games-Howell after Welch,
  exact (or Monte Carlo) permutation Mann-Whitney tests after Kruskal-Wallis or the permutation test.
- Every pair of systems, independent samples: Welch's t-test with Hedges' g, Mann-Whitney U by exact
  permutation (ties handled) with Cliff's delta; paired tests only when sessions really pair (the
  same session index carries the same seed in every system): paired t with Cohen's d_z, Wilcoxon
  signed-rank by exact sign flips with the matched-pairs rank-biserial correlation.
- Every p-value column is adjusted over its family by the plan's method; every permutation test
  reports the smallest p it could reach, and a comparison that cannot pass its correction at this n
  is `not testable` with the sessions per system that would make it testable.
Differences are a - b everywhere. CSVs keep full precision; only summary.md (crseval.statistics.summary) rounds.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Callable

import numpy as np
import pandas as pd
from scipy import stats as sps
from statsmodels.stats.oneway import anova_oneway

from crseval.statistics import effects, exact, posthoc
from crseval.statistics.analysis_plan import AnalysisPlan

ALPHA = 0.05
EXACT_SPLITS = 200_000  # Mann-Whitney: every split enumerated up to this many (6 vs 6: 924; 9 vs 9: 48,620)
EXACT_FLIPS = 2**16  # Wilcoxon: every sign flip enumerated up to 16 non-zero differences
POSTHOC = {"anova": "Tukey HSD", "welch": "Games-Howell", "kruskal": "Mann-Whitney", "permutation": "Mann-Whitney"}
OMNIBUS = {"anova": "ANOVA", "welch": "Welch ANOVA", "kruskal": "Kruskal-Wallis", "permutation": "permutation F"}


def default_analysis_plan(alpha: float = ALPHA, **changes) -> AnalysisPlan:
    """A plan with the config's defaults (for library use and tests)."""
    values = dict(
        alpha=alpha,
        scope="report",
        method="holm",
        min_sessions=3,
        small_sample=10,
        resamples=10_000,
        permutations=10_000,
        seed=11,
    )
    return AnalysisPlan(**{**values, **changes})


# ------------------------------------------------------------------ which sessions enter the tests


def included(
    frame: pd.DataFrame, metric: str, plan: AnalysisPlan
) -> tuple[dict[str, np.ndarray], dict[str, str], dict]:
    """The values per system that enter the tests of `metric`, the systems left out (system -> reason), and
    the missingness: {"counts": "system missing/total, ...", "not_missing_at_random": bool}."""
    groups, left_out, counts = {}, {}, {}
    for system, rows in frame.groupby("system", sort=True):
        values = rows[metric].to_numpy(dtype=float)
        present = values[~np.isnan(values)]
        counts[system] = (len(values) - len(present), len(values))
        if len(present) >= plan.min_sessions:
            groups[system] = present
        else:
            left_out[system] = f"{len(present)} of {len(values)} sessions have a value (fewer than {plan.min_sessions})"
    shares = {round(missing / total, 12) for missing, total in counts.values() if total}
    missingness = {
        "counts": ", ".join(f"{s} {m}/{t}" for s, (m, t) in counts.items() if m),
        "not_missing_at_random": len(shares) > 1,
    }
    return groups, left_out, missingness


def _left_out_text(left_out: dict[str, str]) -> str:
    return "; ".join(f"{system}: {reason}" for system, reason in left_out.items())


# ------------------------------------------------------------------ omnibus


def _finite(value) -> float:
    value = float(value)
    return value if np.isfinite(value) else math.nan


def omnibus(frame: pd.DataFrame, metric: str, plan: AnalysisPlan | None = None) -> dict:
    """The omnibus tests of one metric and the one the plan's rule recommends."""
    plan = plan or default_analysis_plan()
    groups, left_out, missingness = included(frame, metric, plan)
    row = {
        "metric": metric,
        "systems": len(groups),
        "n": int(sum(len(v) for v in groups.values())),
        "min_sessions_per_system": min((len(v) for v in groups.values()), default=0),
        "left_out": _left_out_text(left_out),
        "missing": missingness["counts"],
        "not_missing_at_random": missingness["not_missing_at_random"],
    }
    if len(groups) < 2:
        return {**row, "note": f"fewer than two systems with {plan.min_sessions} or more values: no test"}
    values = np.concatenate(list(groups.values()))
    if np.ptp(values) == 0:
        return {**row, "note": "constant metric (every session has the same value): no test"}
    labels = np.concatenate([[k] * len(v) for k, v in groups.items()])
    residuals = np.concatenate([v - v.mean() for v in groups.values()])
    grand = values.mean()
    ss_between = sum(len(v) * (v.mean() - grand) ** 2 for v in groups.values())
    ss_within = float((residuals**2).sum())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        classic = anova_oneway(values, labels, use_var="equal")
        welch = anova_oneway(values, labels, use_var="unequal")
        levene_p = _finite(sps.levene(*groups.values(), center="median").pvalue)
        spread = len(residuals) >= 3 and np.ptp(residuals) > 0
        shapiro_p = _finite(sps.shapiro(residuals).pvalue) if spread else math.nan
        kruskal_p = _finite(sps.kruskal(*groups.values()).pvalue)
    permutation = exact.permutation_omnibus(
        list(groups.values()), statistic="f", seed=plan.seed, resamples=plan.permutations
    )
    p_values = {
        "anova": _finite(classic.pvalue),
        "welch": _finite(welch.pvalue),
        "kruskal": kruskal_p,
        "permutation": permutation.p,
    }
    recommended, reason = _recommend(row["min_sessions_per_system"], shapiro_p, levene_p, plan)
    fallbacks = {"anova": "welch", "welch": "kruskal", "kruskal": "permutation"}
    notes = []
    while math.isnan(p_values[recommended]) and recommended in fallbacks:
        notes.append(f"{OMNIBUS[recommended]} is undefined on these values (a system without spread)")
        recommended = fallbacks[recommended]
    return {
        **row,
        "anova_f": _finite(classic.statistic),
        "anova_p": p_values["anova"],
        "eta_squared": ss_between / (ss_between + ss_within),
        "levene_median_p": levene_p,
        "residual_shapiro_p": shapiro_p,
        "welch_f": _finite(welch.statistic),
        "welch_p": p_values["welch"],
        "kruskal_p": kruskal_p,
        "permutation_p": permutation.p,
        "permutation_min_p": permutation.min_p,
        "recommended": recommended,
        "recommended_because": "; ".join([reason, *notes]),
        "recommended_p": p_values[recommended],
        "posthoc": POSTHOC[recommended],
        "note": "",
    }


def _recommend(smallest: int, shapiro_p: float, levene_p: float, plan: AnalysisPlan) -> tuple[str, str]:
    if smallest < plan.small_sample:
        return "permutation", f"fewer than {plan.small_sample} sessions per system"
    normal = not math.isnan(shapiro_p) and shapiro_p >= plan.alpha
    equal = not math.isnan(levene_p) and levene_p >= plan.alpha
    if normal and equal:
        return "anova", "normal residuals and equal variances"
    if normal:
        return "welch", "normal residuals, unequal variances (median-centred Levene)"
    return "kruskal", "residuals not normal (Shapiro-Wilk)"


def omnibus_table(frame: pd.DataFrame, metrics: list[str], plan: AnalysisPlan) -> pd.DataFrame:
    """Every metric's omnibus row, `recommended_p_adj` adjusted over the metrics when the family is the report
    (with one family per metric, a metric's single omnibus p needs no adjustment)."""
    table = pd.DataFrame([omnibus(frame, m, plan) for m in metrics])
    if "recommended_p" not in table:
        return table
    if plan.scope == "report":
        return plan.adjust(table.assign(_all="report"), ["recommended_p"]).drop(columns="_all")
    table.insert(table.columns.get_loc("recommended_p") + 1, "recommended_p_adj", table["recommended_p"])
    return table


# ------------------------------------------------------------------ post-hoc


def posthoc_rows(
    frame: pd.DataFrame, metric: str, recommended: str, plan: AnalysisPlan, pairwise_rows: pd.DataFrame | None = None
) -> pd.DataFrame:
    """The post-hoc comparisons of the recommended omnibus test: Tukey HSD, Games-Howell (both simultaneous over
    the metric's pairs by construction) or permutation Mann-Whitney tests (raw p, adjusted later; taken from
    `pairwise_rows`, the metric's rows of the pairwise table, when given, so both tables show one p per pair)."""
    groups, _, _ = included(frame, metric, plan)
    if recommended in ("anova", "welch"):
        run = posthoc.tukey_hsd if recommended == "anova" else posthoc.games_howell
        table = run(groups, plan.alpha)
        table = table.rename(columns={"p_adj": "p"}).assign(min_p=0.0, method=POSTHOC[recommended])
    else:
        if pairwise_rows is None:
            pairwise_rows = pd.DataFrame(pairwise(frame, metric, plan))
        columns = {
            "system_a": "system_a",
            "system_b": "system_b",
            "n_a": "n_a",
            "n_b": "n_b",
            "mean_diff": "mean_diff",
            "mannwhitney_p": "p",
            "mannwhitney_min_p": "min_p",
            "mannwhitney_method": "method",
        }
        table = (
            pairwise_rows[list(columns)].rename(columns=columns).reset_index(drop=True)
            if len(pairwise_rows)
            else pd.DataFrame()
        )
        if len(table):
            table["method"] = "Mann-Whitney, " + table["method"]
    if not len(table):
        return table
    table.insert(0, "metric", metric)
    table.insert(1, "test", POSTHOC[recommended])
    return table


def posthoc_table(
    frame: pd.DataFrame, omnibus_rows: pd.DataFrame, plan: AnalysisPlan, pairwise_rows: pd.DataFrame | None = None
) -> pd.DataFrame:
    """The post-hoc rows of every metric with a recommended test, adjusted and marked testable (permutation
    Mann-Whitney p taken from the pairwise table when it is given)."""

    def of_metric(metric):
        if pairwise_rows is None or not len(pairwise_rows):
            return None
        return pairwise_rows[pairwise_rows["metric"] == metric]

    parts = [
        posthoc_rows(frame, r["metric"], r["recommended"], plan, of_metric(r["metric"]))
        for r in omnibus_rows.to_dict("records")
        if isinstance(r.get("recommended"), str)
    ]
    table = pd.concat([p for p in parts if len(p)] or [pd.DataFrame()], ignore_index=True)
    if not len(table):
        return table
    simultaneous = table["test"].isin(["Tukey HSD", "Games-Howell"])
    if plan.scope == "metric":
        # Tukey and Games-Howell already hold the family-wise error over the metric's pairs
        table = plan.adjust(table, ["p"])
        table.loc[simultaneous, "p_adj"] = table.loc[simultaneous, "p"]
    else:
        table = plan.adjust(table, ["p"])
    table = _mark_testable(table, "p", "min_p", "mann_whitney", plan)
    table["differs"] = table["p_adj"] < plan.alpha
    return table


# ------------------------------------------------------------------ pairs


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
    return p if np.isfinite(p) else math.nan


def pairwise(frame: pd.DataFrame, metric: str, plan: AnalysisPlan | None = None, seed: int | None = None) -> list[dict]:
    """Every pair of included systems as independent samples: Welch t with Hedges' g, Mann-Whitney by exact
    permutation with Cliff's delta."""
    plan = plan or default_analysis_plan()
    seed = plan.seed if seed is None else seed
    groups, _, _ = included(frame, metric, plan)
    rows = []
    for k, (a, b) in enumerate(itertools.combinations(sorted(groups), 2)):
        x, y = groups[a], groups[b]
        row = {
            "metric": metric,
            "system_a": a,
            "system_b": b,
            "n_a": len(x),
            "n_b": len(y),
            "mean_a": float(x.mean()),
            "mean_b": float(y.mean()),
        }
        row["mean_diff"] = row["mean_a"] - row["mean_b"]
        spread = np.ptp(np.concatenate([x, y])) > 0
        row["welch_t_p"] = _two_sided(lambda u, v: sps.ttest_ind(u, v, equal_var=False), x, y) if spread else math.nan
        row.update(_mann_whitney(x, y, seed + 2 * k, plan))
        g = effects.two_sample_counted(effects.hedges_g_batch, x, y, plan.resamples, seed + 2 * k)
        delta = effects.two_sample_counted(effects.cliffs_delta_batch, x, y, plan.resamples, seed + 2 * k + 1)
        row.update(_effect_columns("hedges_g", g))
        row.update(_effect_columns("cliffs_delta", delta))
        rows.append(row)
    return rows


def paired(frame: pd.DataFrame, metric: str, plan: AnalysisPlan | None = None, seed: int | None = None) -> list[dict]:
    """Each pair of included systems on the sessions both have, matched by session index (call only when
    `pairing` says sessions pair): paired t with Cohen's d_z, Wilcoxon by exact sign flips with the
    rank-biserial r."""
    plan = plan or default_analysis_plan()
    seed = plan.seed if seed is None else seed
    groups, _, _ = included(frame, metric, plan)
    wide = frame[frame["system"].isin(groups)].pivot_table(
        index="session_index", columns="system", values=metric, aggfunc="first"
    )
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
        row.update(_wilcoxon(diff, seed + 2 * k, plan))
        dz = effects.paired_sample_counted(effects.cohens_dz_batch, diff, plan.resamples, seed + 2 * k)
        r = effects.paired_sample_counted(effects.rank_biserial_paired_batch, diff, plan.resamples, seed + 2 * k + 1)
        row.update(_effect_columns("cohens_dz", dz))
        row.update(_effect_columns("rank_biserial", r))
        rows.append(row)
    return rows


def _mann_whitney(x: np.ndarray, y: np.ndarray, seed: int, plan: AnalysisPlan) -> dict:
    """Exact permutation Mann-Whitney up to EXACT_SPLITS splits; beyond, where a Monte Carlo p could not go below
    1 / (resamples + 1) and so could not pass a correction over hundreds of pairs, the tie-corrected normal
    approximation, which is accurate at such sizes (its smallest p is that of the most extreme split)."""
    if exact.comb_up_to(len(x) + len(y), len(x), EXACT_SPLITS) <= EXACT_SPLITS or np.ptp(np.concatenate([x, y])) == 0:
        test = exact.mann_whitney(x, y, seed=seed, resamples=plan.permutations, max_enumeration=EXACT_SPLITS)
        return {"mannwhitney_p": test.p, "mannwhitney_min_p": test.min_p, "mannwhitney_method": test.method}
    p = _two_sided(lambda u, v: sps.mannwhitneyu(u, v, alternative="two-sided", method="asymptotic"), x, y)
    return {
        "mannwhitney_p": p,
        "mannwhitney_min_p": exact.smallest_mann_whitney_p(x, y),
        "mannwhitney_method": f"normal approximation with tie correction (more than {EXACT_SPLITS:,} splits)",
    }


def _wilcoxon(diff: np.ndarray, seed: int, plan: AnalysisPlan) -> dict:
    """Exact sign-flip Wilcoxon up to EXACT_FLIPS flips; beyond, the normal approximation (as for Mann-Whitney)."""
    nonzero = diff[diff != 0]
    if 2 ** len(nonzero) <= EXACT_FLIPS:
        test = exact.wilcoxon_signed_rank(diff, seed=seed, resamples=plan.permutations, max_enumeration=EXACT_FLIPS)
        return {"wilcoxon_p": test.p, "wilcoxon_min_p": test.min_p, "wilcoxon_method": test.method}
    p = _two_sided(lambda d: sps.wilcoxon(d, zero_method="wilcox", method="approx"), nonzero)
    return {
        "wilcoxon_p": p,
        "wilcoxon_min_p": exact.min_p_wilcoxon(len(nonzero)),
        "wilcoxon_method": f"normal approximation with tie correction (more than {EXACT_FLIPS:,} sign flips)",
    }


def _effect_columns(name: str, effect: effects.Effect) -> dict:
    """An effect, its CI and the bootstrap resamples where it was undefined (left out of the CI)."""
    return {
        name: effect.estimate,
        f"{name}_ci_low": effect.ci_low,
        f"{name}_ci_high": effect.ci_high,
        f"{name}_undefined_resamples": effect.undefined,
    }


def _untied_min_p(table: pd.DataFrame, kind: str) -> list[float]:
    """Per row, the smallest p of the test at its n without ties."""
    if kind == "wilcoxon":
        return [exact.min_p_wilcoxon(int(n)) if n >= 1 else math.nan for n in table["pairs"]]
    return [
        exact.min_p_mann_whitney(int(a), int(b)) if a >= 1 and b >= 1 else math.nan
        for a, b in zip(table["n_a"], table["n_b"])
    ]


def _mark_testable(
    table: pd.DataFrame, p_column: str, min_p_column: str, kind: str, plan: AnalysisPlan
) -> pd.DataFrame:
    """`<p>_testable`: whether the comparison's smallest reachable p could pass its family's correction, and
    `<p>_sessions_to_test`: per system (or pairs) the sessions that would make a permutation test testable."""
    table = table.copy()
    sizes = plan.family_sizes(table, p_column)
    # a test that is undefined on the values (no spread at all) is neither testable nor not: it has no p
    testable = [
        None if not np.isfinite(m) or not np.isfinite(p) else plan.reachable(m, n)
        for m, p, n in zip(table[min_p_column], table[p_column], sizes)
    ]
    # sessions that would make it testable: known when ties do not limit the smallest p (else more distinct values
    # are needed, not only more sessions)
    untied = _untied_min_p(table, kind)
    needed = [
        float(exact.sessions_to_reach(plan.threshold(n), kind)) if ok is False and m <= u * (1 + 1e-9) else math.nan
        for ok, n, m, u in zip(testable, sizes, table[min_p_column], untied)
    ]
    prefix = p_column.removesuffix("_p") if p_column != "p" else ""
    name = f"{prefix}_testable" if prefix else "testable"
    table[name] = testable
    table[f"{prefix}_sessions_to_test" if prefix else "sessions_to_test"] = needed
    return table


def pairwise_table(frame: pd.DataFrame, metrics: list[str], plan: AnalysisPlan) -> pd.DataFrame:
    rows = [row for i, m in enumerate(metrics) for row in pairwise(frame, m, plan, plan.seed + 1000 * i)]
    table = plan.adjust(pd.DataFrame(rows), ["welch_t_p", "mannwhitney_p"])
    if len(table):
        table = _mark_testable(table, "mannwhitney_p", "mannwhitney_min_p", "mann_whitney", plan)
    return table


def paired_table(frame: pd.DataFrame, metrics: list[str], plan: AnalysisPlan) -> pd.DataFrame:
    rows = [row for i, m in enumerate(metrics) for row in paired(frame, m, plan, plan.seed + 1000 * i + 500)]
    table = plan.adjust(pd.DataFrame(rows), ["paired_t_p", "wilcoxon_p"])
    if len(table):
        table = _mark_testable(table, "wilcoxon_p", "wilcoxon_min_p", "wilcoxon", plan)
    return table
