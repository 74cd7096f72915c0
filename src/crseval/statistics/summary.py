"""stats/summary.md: the tables of crseval.statistics.system_tests as Markdown for a reader, rounded to three
significant digits (the CSVs beside it keep full precision), opening on the analysis plan."""

from __future__ import annotations

import math

import pandas as pd

from crseval.statistics.analysis_plan import AnalysisPlan
from crseval.statistics.system_tests import EXACT_FLIPS, EXACT_SPLITS, OMNIBUS


def _fmt(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def _ci(row, name: str) -> str:
    return f"{_fmt(row[name])} [{_fmt(row[name + '_ci_low'])}, {_fmt(row[name + '_ci_high'])}]"


def markdown_summary(
    anova: pd.DataFrame,
    posthoc_rows: pd.DataFrame,
    pairwise_rows: pd.DataFrame,
    paired_rows: pd.DataFrame,
    correlation_rows: pd.DataFrame,
    paired_reason: str,
    plan: AnalysisPlan,
    robustness_sentence: str = "",
    trials_sentence: str = "",
) -> str:
    """The readable summary (rounded to 3 significant digits; the CSVs keep full precision).
    `robustness_sentence` (crseval.statistics.user_robustness), when the same systems met several user
    profiles, follows the plan: whether the conclusions hold for another user belongs before them;
    `trials_sentence` (crseval.statistics.trials), with repeated trials, says the tests run on users' means."""
    lines = [
        "# Statistical comparison of systems",
        "",
        plan.describe(),
        "",
        *([trials_sentence, ""] if trials_sentence else []),
        *([robustness_sentence, ""] if robustness_sentence else []),
        "Numbers here are rounded; the CSVs beside this file keep full precision.",
        *_omnibus_section(anova),
        *_excluded_section(anova),
        *_posthoc_section(posthoc_rows, plan),
        *_pairwise_section(pairwise_rows, plan),
        *_paired_section(paired_rows, paired_reason, plan),
        *_correlation_section(correlation_rows, plan),
    ]
    return "\n".join(lines) + "\n"


def _omnibus_section(anova: pd.DataFrame) -> list[str]:
    lines = [
        "",
        "## Omnibus tests",
        "",
        "The recommended test follows the rule above; every other test is shown for reference. Levene is the "
        "median-centred (Brown-Forsythe) variant; Shapiro-Wilk tests the residuals (values minus their system's mean).",
        "",
        "| metric | n | recommended (why) | p | p (adjusted) | eta² | ANOVA p | Welch p | Kruskal p | permutation p "
        "(smallest reachable) | Levene p | Shapiro p (residuals) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for _, r in anova.iterrows():
        if pd.isna(r.get("recommended")):
            lines.append(f"| {r['metric']} | {r['n']} | – ({r['note']}) | | | | | | | | | |")
            continue
        lines.append(
            f"| {r['metric']} | {r['n']} | {OMNIBUS[r['recommended']]} ({r['recommended_because']}) | "
            f"{_fmt(r['recommended_p'])} | {_fmt(r.get('recommended_p_adj'))} | {_fmt(r['eta_squared'])} | "
            f"{_fmt(r['anova_p'])} | {_fmt(r['welch_p'])} | {_fmt(r['kruskal_p'])} | {_fmt(r['permutation_p'])} "
            f"({_fmt(r['permutation_min_p'])}) | {_fmt(r['levene_median_p'])} | {_fmt(r['residual_shapiro_p'])} |"
        )
    return lines


def _excluded_section(anova: pd.DataFrame) -> list[str]:
    """Systems left out of a metric's tests, and metrics whose missingness differs by system."""
    left_out = anova[anova["left_out"].astype(str).str.len() > 0] if "left_out" in anova else anova.iloc[:0]
    flagged = anova[anova["not_missing_at_random"].astype(bool)] if "not_missing_at_random" in anova else anova.iloc[:0]
    if not len(left_out) and not len(flagged):
        return []
    lines = ["", "## Missing values", ""]
    lines += [f"- {r['metric']}: left out of every test: {r['left_out']}." for _, r in left_out.iterrows()]
    lines += [
        f"- {r['metric']}: missing values differ by system ({r['missing']}): not missing at random, so the "
        "systems are compared on different kinds of sessions."
        for _, r in flagged.iterrows()
    ]
    return lines


def _posthoc_section(table: pd.DataFrame, plan: AnalysisPlan) -> list[str]:
    if not len(table):
        return []
    differ = table[table["differs"]]
    untestable = table[table["testable"].eq(False)]
    lines = [
        "",
        f"## Post-hoc comparisons: {len(differ)} of {len(table)} pairs differ, {len(untestable)} not testable at "
        "this n",
        "",
        "After the recommended omnibus test only (Tukey HSD after ANOVA, Games-Howell after Welch, permutation "
        "Mann-Whitney otherwise). A pair that is not testable cannot reach the corrected level whatever the data; "
        "it is not evidence of no difference.",
        "",
        "| metric | test | system a | system b | mean diff (a - b) | p | p (adjusted) |",
        "|---|---|---|---|---|---|---|",
        *(
            f"| {r['metric']} | {r['test']} | {r['system_a']} | {r['system_b']} | {_fmt(float(r['mean_diff']))} | "
            f"{_fmt(float(r['p']))} | {_fmt(float(r['p_adj']))} |"
            for _, r in differ.iterrows()
        ),
    ]
    return lines + _untestable_lines(untestable, "sessions_to_test", "sessions per system")


def _untestable_lines(untestable: pd.DataFrame, needed: str, unit: str) -> list[str]:
    if not len(untestable):
        return []
    by_metric = untestable.groupby("metric", sort=False)[needed].agg(lambda x: x.max() if x.notna().all() else math.nan)

    def why(metric, n):
        if isinstance(n, float) and math.isnan(n):
            return f"{metric} (ties limit the smallest p: more distinct values are needed, not only more sessions)"
        return f"{metric} ({_count(n)} {unit} would make it testable)"

    return ["", "Not testable at this n: " + "; ".join(why(m, n) for m, n in by_metric.items()) + "."]


def _count(value) -> str:
    return "?" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{int(value)}"


def _pairwise_section(table: pd.DataFrame, plan: AnalysisPlan) -> list[str]:
    if not len(table):
        return []
    welch = int((table["welch_t_p_adj"] < plan.alpha).sum())
    mann = int((table["mannwhitney_p_adj"] < plan.alpha).sum())
    untestable = int(table["mannwhitney_testable"].eq(False).sum())
    return [
        "",
        "## Every pair (pairwise.csv)",
        "",
        f"Welch's t-test: {welch} of {len(table)} pairs differ after adjustment; Mann-Whitney (exact permutation, "
        f"normal approximation beyond {EXACT_SPLITS:,} splits): {mann} "
        f"differ, {untestable} not testable at this n. Each with its effect (Hedges' g, Cliff's delta; a over b) "
        "and a bootstrap CI. The headline comparisons are the post-hoc ones above.",
    ]


def _paired_section(table: pd.DataFrame, paired_reason: str, plan: AnalysisPlan) -> list[str]:
    lines = ["", "## Paired tests on the same sessions", ""]
    if not len(table):
        return [*lines, f"Not run: {paired_reason}."]
    differ = table[table["wilcoxon_p_adj"] < plan.alpha]
    t_differ = int((table["paired_t_p_adj"] < plan.alpha).sum())
    untestable = table[table["wilcoxon_testable"].eq(False)]
    lines += [
        f"Sessions pair: {paired_reason}. Wilcoxon signed-rank (exact sign flips up to {EXACT_FLIPS.bit_length() - 1}"
        f" differences, else the normal approximation): {len(differ)} of {len(table)} "
        f"pairs differ, {len(untestable)} not testable at this n; paired t-test: {t_differ} differ.",
        "",
        "| metric | system a | system b | pairs | mean diff (a - b) | Wilcoxon p (adjusted) | rank-biserial [95% CI] | "
        "paired t p (adjusted) | d_z [95% CI] |",
        "|---|---|---|---|---|---|---|---|---|",
        *(
            f"| {r['metric']} | {r['system_a']} | {r['system_b']} | {r['pairs']} | {_fmt(r['mean_diff'])} | "
            f"{_fmt(r['wilcoxon_p_adj'])} | {_ci(r, 'rank_biserial')} | {_fmt(r['paired_t_p_adj'])} | "
            f"{_ci(r, 'cohens_dz')} |"
            for _, r in differ.iterrows()
        ),
    ]
    return lines + _untestable_lines(untestable, "wilcoxon_sessions_to_test", "pairs")


def _correlation_section(table: pd.DataFrame, plan: AnalysisPlan) -> list[str]:
    if not len(table):
        return []
    return [
        "",
        "## Spearman correlation with the judge",
        "",
        "Pooled over all sessions, and within systems (partial on system: between-system differences removed). "
        "95% bootstrap CIs; p adjusted by the plan.",
        "",
        "| metric | judge | n | rho [CI] | p (adjusted) | within systems [CI] | p (adjusted) |",
        "|---|---|---|---|---|---|---|",
        *(
            f"| {r['metric']} | {r['judge']} | {r['n']} | {_fmt(r['rho'])} [{_fmt(r['ci_low'])}, "
            f"{_fmt(r['ci_high'])}] | {_fmt(r.get('p_adj'))} | {_fmt(r.get('rho_within'))} "
            f"[{_fmt(r.get('rho_within_ci_low'))}, {_fmt(r.get('rho_within_ci_high'))}] | "
            f"{_fmt(r.get('p_within_adj'))} |"
            for _, r in table.iterrows()
        ),
    ]
