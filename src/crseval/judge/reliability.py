"""Can the judge's scores be trusted? Agreement between its samples, and whether it separates systems.

- Agreement: with `judge.samples: k > 1` each session is judged k times with different seeds;
  Krippendorff's alpha (ordinal, `krippendorff` package) over sessions x samples, per criterion,
  with a bootstrap CI over sessions. 1 is perfect agreement, 0 agreement at chance; Krippendorff
  asks for 0.8 to rely on data and 0.667 for tentative conclusions. Failed samples are missing
  values, not scores.
- Discrimination: the judge's ranking of the systems per criterion, the spread of the system means
  and a Kruskal-Wallis test across systems. When the test does not reject at alpha, the report
  says plainly that the judge does not discriminate between these systems on that criterion.
"""

from __future__ import annotations

import json
import math
import warnings

import krippendorff
import numpy as np
import pandas as pd
from scipy import stats as sps

from crseval.judge.columns import CRITERIA, samples_column, score_column

NAN = math.nan
SCALE = (1, 2, 3, 4, 5)
RELY, TENTATIVE = 0.8, 0.667


def sample_matrix(sessions: pd.DataFrame, criterion: str) -> np.ndarray:
    """Samples x sessions, NaN where a sample failed; sessions judged once or never give NaN columns."""
    column = samples_column(criterion)
    if column not in sessions:
        return np.empty((0, 0))
    lists = [json.loads(v) if isinstance(v, str) else [] for v in sessions[column]]
    width = max((len(v) for v in lists), default=0)
    matrix = np.full((width, len(lists)), NAN)
    for j, scores in enumerate(lists):
        for i, score in enumerate(scores):
            if score is not None:
                matrix[i, j] = float(score)
    return matrix


def ordinal_alpha(matrix: np.ndarray) -> float:
    """Krippendorff's alpha, ordinal, on the 1-5 scale; NaN when undefined (fewer than two
    pairable values, or a single value used throughout: alpha is 0/0 then)."""
    pairable = (~np.isnan(matrix)).sum(axis=0) >= 2 if matrix.size else np.array([], bool)
    data = matrix[:, pairable] if matrix.size else matrix
    if data.shape[0] < 2 or data.shape[1] < 1 or len(np.unique(data[~np.isnan(data)])) < 2:
        return NAN
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal", value_domain=SCALE))


def alpha_ci(matrix: np.ndarray, resamples: int, seed: int, level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap CI of alpha over sessions (the units); resamples where alpha is undefined are left out."""
    if matrix.size == 0 or matrix.shape[1] < 2:
        return NAN, NAN
    rng = np.random.default_rng(seed)
    draws = [ordinal_alpha(matrix[:, rng.integers(0, matrix.shape[1], matrix.shape[1])]) for _ in range(resamples)]
    draws = np.array([d for d in draws if not math.isnan(d)])
    if not len(draws):
        return NAN, NAN
    low, high = np.percentile(draws, [(1 - level) / 2 * 100, (1 + level) / 2 * 100])
    return float(low), float(high)


def reliability_table(sessions: pd.DataFrame, alpha: float, resamples: int, seed: int) -> pd.DataFrame:
    """One row per criterion: agreement between samples and discrimination between systems (full precision)."""
    rows = []
    for i, criterion in enumerate(CRITERIA):
        column = score_column(criterion)
        matrix = sample_matrix(sessions, criterion)
        k_alpha = ordinal_alpha(matrix)
        low, high = alpha_ci(matrix, resamples, seed + i) if not math.isnan(k_alpha) else (NAN, NAN)
        groups = (
            {s: g[column].dropna().to_numpy(float) for s, g in sessions.groupby("system", sort=True)}
            if column in sessions
            else {}
        )
        groups = {s: v for s, v in groups.items() if len(v)}
        means = {s: float(v.mean()) for s, v in groups.items()}
        values = np.concatenate(list(groups.values())) if groups else np.array([])
        if len(groups) >= 2 and len(values) and np.ptp(values) > 0:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                kruskal_p = float(sps.kruskal(*groups.values()).pvalue)
        else:
            kruskal_p = NAN
        rows.append(
            {
                "criterion": criterion,
                "samples": int(matrix.shape[0]),
                "sessions_with_two_samples": int(((~np.isnan(matrix)).sum(axis=0) >= 2).sum()) if matrix.size else 0,
                "krippendorff_alpha": k_alpha,
                "alpha_ci_low": low,
                "alpha_ci_high": high,
                "systems": len(groups),
                "judge_ranking": " > ".join(sorted(means, key=lambda s: -means[s])),
                "system_means": json.dumps(means, sort_keys=True),
                "mean_spread": (max(means.values()) - min(means.values())) if means else NAN,
                "kruskal_p": kruskal_p,
                "discriminates": bool(kruskal_p < alpha),
            }
        )
    return pd.DataFrame(rows)


def agreement_statement(row: dict) -> str:
    k = row["krippendorff_alpha"]
    if row["samples"] < 2:
        return "agreement not measured: the judge ran one sample per session (set judge.samples >= 2)"
    if math.isnan(k):
        return "agreement undefined: no session has two valid samples, or every sample gave the same score"
    level = (
        "reliable (>= 0.8)"
        if k >= RELY
        else "tentative only (0.667-0.8)"
        if k >= TENTATIVE
        else "not reliable (< 0.667): repeated judgements of the same session disagree"
    )
    return f"alpha {k:.2f} [{row['alpha_ci_low']:.2f}, {row['alpha_ci_high']:.2f}]: {level}"


def discrimination_statement(row: dict, alpha: float) -> str:
    if row["systems"] < 2:
        return "fewer than two systems with scores"
    means = json.loads(row["system_means"])
    span = f"system means {min(means.values()):.2f}-{max(means.values()):.2f} on the 1-5 scale"
    if math.isnan(row["kruskal_p"]):
        return f"the judge does not discriminate between these systems: it gave every session the same score ({span})"
    if not row["discriminates"]:
        return (
            f"the judge does not discriminate between these systems (Kruskal-Wallis p = {row['kruskal_p']:.3g} "
            f">= {alpha}; {span})"
        )
    return f"scores differ between systems (Kruskal-Wallis p = {row['kruskal_p']:.3g}; {span})"


def reliability_markdown(table: pd.DataFrame, alpha: float) -> str:
    lines = [
        "# Judge reliability",
        "",
        "Agreement between the judge's repeated samples of the same session (Krippendorff's alpha, ordinal, 95% "
        "bootstrap CI over sessions) and whether its scores separate the systems (Kruskal-Wallis across systems). "
        "Rounded here; judge_reliability.csv keeps full precision.",
        "",
        "| criterion | samples | agreement | judge's ranking | discrimination |",
        "|---|---|---|---|---|",
    ]
    for row in table.to_dict("records"):
        lines.append(
            f"| {row['criterion']} | {row['samples']} | {agreement_statement(row)} | {row['judge_ranking']} | "
            f"{discrimination_statement(row, alpha)} |"
        )
    silent = [r["criterion"] for r in table.to_dict("records") if not r["discriminates"]]
    lines += [
        "",
        (
            "The judge does not discriminate between the systems on: " + ", ".join(silent) + ". Its scores on "
            "these criteria should not be used to rank the systems."
            if silent
            else "The judge's scores differ between systems on every criterion."
        ),
    ]
    return "\n".join(lines) + "\n"
