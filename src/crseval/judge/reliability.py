"""Can the judges' scores be trusted? Agreement between judges and between each judge's samples,
and whether each judge separates the systems.

- Agreement between judges (`judge.panel`): Krippendorff's alpha, interval, over sessions x
  judges, per criterion, on each judge's session score (the mean over its samples), with a
  bootstrap CI over sessions. Interval because that score is what the tables, tests and figures
  use, as a number whose differences mean the same all along the scale (means, CIs, ANOVA); and a
  mean of several samples (3.5) is no category of the 1-5 scale, which the ordinal metric would need.
  A judge that scores every session one point higher than another lowers the alpha: it measures
  agreement, not correlation.
- Agreement between samples: with `judge.samples: k > 1` each session is judged k times with
  different seeds; Krippendorff's alpha (ordinal: each sample is one whole point of the 1-5 scale)
  over sessions x samples, per judge and criterion, with a bootstrap CI over sessions.
  For both, 1 is perfect agreement, 0 agreement at chance; Krippendorff asks for 0.8 to rely on
  data and 0.667 for tentative conclusions. Failed samples are missing values, not scores.
- Discrimination: each judge's ranking of the systems per criterion (tied means joined by " = "),
  the spread of the system means and a Kruskal-Wallis test across systems. When the test does not
  reject at alpha, the report says plainly that the judge does not discriminate between these
  systems on that criterion.
- Self-preference: a judge that is also the model of a system under test may favour replies in
  its own phrasing; the report opens with a warning naming those systems (`judged_by_own_model`).

The judges are read from the columns of the sessions table: the first judge's `judge_<criterion>`
and each panel judge's `judge_<name>_<criterion>` (crseval.judge.judge_columns).
"""

from __future__ import annotations

import json
import math
import warnings

import krippendorff
import numpy as np
import pandas as pd
from scipy import stats as sps

from crseval.judge.judge_columns import CRITERIA, column, panel_judges, samples_column, score_column
from crseval.llm.backends import identities

NAN = math.nan
SCALE = (1, 2, 3, 4, 5)
RELY, TENTATIVE = 0.8, 0.667
TIE = 1e-12  # system means closer than this are tied in a judge's ranking


def judges_of(sessions: pd.DataFrame) -> list[str | None]:
    """The judges whose scores the table holds: None for the first judge, then each panel judge's name."""
    first = [None] if any(score_column(c) in sessions for c in CRITERIA) else []
    return first + panel_judges(sessions.columns)


def judge_label(judge: str | None) -> str:
    """How tables name a judge: by the prefix of its columns (`judge`, `judge_<name>`)."""
    return column("", judge).removesuffix("_")


def sample_matrix(sessions: pd.DataFrame, criterion: str, judge: str | None = None) -> np.ndarray:
    """Samples x sessions, NaN where a sample failed; sessions judged once or never give NaN columns."""
    name = samples_column(criterion, judge)
    if name not in sessions:
        return np.empty((0, 0))
    lists = [json.loads(v) if isinstance(v, str) else [] for v in sessions[name]]
    width = max((len(v) for v in lists), default=0)
    matrix = np.full((width, len(lists)), NAN)
    for j, scores in enumerate(lists):
        for i, score in enumerate(scores):
            if score is not None:
                matrix[i, j] = float(score)
    return matrix


def judge_matrix(sessions: pd.DataFrame, criterion: str) -> np.ndarray:
    """Judges x sessions of each judge's session score (judges_of order), NaN where it has none."""
    names = [score_column(criterion, judge) for judge in judges_of(sessions)]
    rows = [sessions[name].to_numpy(float) for name in names if name in sessions]
    return np.vstack(rows) if rows else np.empty((0, 0))


def krippendorff_alpha(matrix: np.ndarray, level: str) -> float:
    """Krippendorff's alpha at `level` (ordinal on the 1-5 scale, or interval) over coders x units;
    NaN when undefined (fewer than two pairable values, or a single value used throughout: 0/0)."""
    pairable = (~np.isnan(matrix)).sum(axis=0) >= 2 if matrix.size else np.array([], bool)
    data = matrix[:, pairable] if matrix.size else matrix
    if data.shape[0] < 2 or data.shape[1] < 1 or len(np.unique(data[~np.isnan(data)])) < 2:
        return NAN
    domain = SCALE if level == "ordinal" else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(krippendorff.alpha(reliability_data=data, level_of_measurement=level, value_domain=domain))


def ordinal_alpha(matrix: np.ndarray) -> float:
    """Krippendorff's alpha, ordinal, on the 1-5 scale: agreement between a judge's samples."""
    return krippendorff_alpha(matrix, "ordinal")


def interval_alpha(matrix: np.ndarray) -> float:
    """Krippendorff's alpha, interval: agreement between judges' session scores."""
    return krippendorff_alpha(matrix, "interval")


def alpha_ci(
    matrix: np.ndarray, resamples: int, seed: int, level: float = 0.95, measure: str = "ordinal"
) -> tuple[float, float]:
    """Percentile bootstrap CI of alpha over sessions (the units); resamples where alpha is undefined are left out."""
    if matrix.size == 0 or matrix.shape[1] < 2:
        return NAN, NAN
    rng = np.random.default_rng(seed)
    draws = [
        krippendorff_alpha(matrix[:, rng.integers(0, matrix.shape[1], matrix.shape[1])], measure)
        for _ in range(resamples)
    ]
    draws = np.array([d for d in draws if not math.isnan(d)])
    if not len(draws):
        return NAN, NAN
    low, high = np.percentile(draws, [(1 - level) / 2 * 100, (1 + level) / 2 * 100])
    return float(low), float(high)


def between_judges(sessions: pd.DataFrame, criterion: str, resamples: int, seed: int) -> dict:
    """Interval alpha between the judges on one criterion, its CI, and the sessions two judges scored."""
    matrix = judge_matrix(sessions, criterion)
    k_alpha = interval_alpha(matrix)
    low, high = alpha_ci(matrix, resamples, seed, measure="interval") if not math.isnan(k_alpha) else (NAN, NAN)
    return {
        "judges": int(matrix.shape[0]),
        "sessions_with_two_judges": int(((~np.isnan(matrix)).sum(axis=0) >= 2).sum()) if matrix.size else 0,
        "between_judges_alpha": k_alpha,
        "between_judges_ci_low": low,
        "between_judges_ci_high": high,
    }


def reliability_table(sessions: pd.DataFrame, alpha: float, resamples: int, seed: int) -> pd.DataFrame:
    """One row per judge and criterion (full precision): agreement between the judge's samples,
    discrimination between systems, and the criterion's agreement between judges (interval alpha,
    the same in every judge's row of the criterion)."""
    between = {c: between_judges(sessions, c, resamples, seed + 100 + i) for i, c in enumerate(CRITERIA)}
    rows = []
    for position, judge in enumerate(judges_of(sessions) or [None]):
        for i, criterion in enumerate(CRITERIA):
            rows.append(
                {
                    "judge": judge_label(judge),
                    "criterion": criterion,
                    **_one_judge(sessions, criterion, judge, alpha, resamples, seed + 1000 * position + i),
                    **between[criterion],
                }
            )
    return pd.DataFrame(rows)


def _one_judge(
    sessions: pd.DataFrame, criterion: str, judge: str | None, alpha: float, resamples: int, seed: int
) -> dict:
    """Agreement between a judge's samples and its discrimination between systems, on one criterion."""
    name = score_column(criterion, judge)
    matrix = sample_matrix(sessions, criterion, judge)
    k_alpha = ordinal_alpha(matrix)
    low, high = alpha_ci(matrix, resamples, seed) if not math.isnan(k_alpha) else (NAN, NAN)
    groups = (
        {s: g[name].dropna().to_numpy(float) for s, g in sessions.groupby("system", sort=True)}
        if name in sessions
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
    return {
        "samples": int(matrix.shape[0]),
        "sessions_with_two_samples": int(((~np.isnan(matrix)).sum(axis=0) >= 2).sum()) if matrix.size else 0,
        "krippendorff_alpha": k_alpha,
        "alpha_ci_low": low,
        "alpha_ci_high": high,
        "systems": len(groups),
        "judge_ranking": ranking(means),
        "system_means": json.dumps(means, sort_keys=True),
        "mean_spread": (max(means.values()) - min(means.values())) if means else NAN,
        "kruskal_p": kruskal_p,
        "discriminates": bool(kruskal_p < alpha),
    }


def ranking(means: dict[str, float]) -> str:
    """Systems from the highest mean down, "a = b > c": means within TIE of the previous one are tied
    (listed by name), so that a tie does not read as an order."""
    ordered = sorted(means, key=lambda s: (-means[s], s))
    groups: list[list[str]] = []
    for system in ordered:
        if groups and abs(means[groups[-1][-1]] - means[system]) <= TIE:
            groups[-1].append(system)
        else:
            groups.append([system])
    return " > ".join(" = ".join(sorted(group)) for group in groups)


def judge_backends(judge_settings: dict) -> list[dict]:
    """The backends of the `judge` config section: the first judge's, then each panel judge's."""
    return [judge_settings["backend"], *(entry["backend"] for entry in judge_settings.get("panel", []))]


def judged_by_own_model(judge_backends: list[dict], systems: list[dict]) -> dict[str, list[str]]:
    """Each judge model (by its backend's `model`) that is also the model of systems under test, with
    those systems' names in config order; systems without an LLM backend are never the judge."""
    found: dict[str, list[str]] = {}
    for judge in judge_backends:
        judge_identities = identities(judge)
        for system in systems:
            backend = system.get("backend")
            if backend and judge_identities & identities(backend):
                names = found.setdefault(judge["model"], [])
                if system["name"] not in names:
                    names.append(system["name"])
    return found


def self_judging_warning(judge: str, systems: list[str]) -> str:
    """The warning line for a judge that scores its own model's replies."""
    which = f"systems under test {', '.join(systems)}" if len(systems) > 1 else f"system under test {systems[0]}"
    return f"The judge {judge} is also the model of the {which}: its scores of them may favour its own phrasing."


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


def between_judges_statement(row: dict) -> str:
    k = row["between_judges_alpha"]
    if row["judges"] < 2:
        return "agreement between judges not measured: one judge (add judges under judge.panel)"
    if math.isnan(k):
        return "agreement undefined: no session has two judges' scores, or every score is the same"
    level = (
        "reliable (>= 0.8)"
        if k >= RELY
        else "tentative only (0.667-0.8)"
        if k >= TENTATIVE
        else "not reliable (< 0.667): the judges disagree on the same sessions"
    )
    return (
        f"alpha {k:.2f} [{row['between_judges_ci_low']:.2f}, {row['between_judges_ci_high']:.2f}] over "
        f"{row['sessions_with_two_judges']} sessions: {level}"
    )


def reliability_markdown(table: pd.DataFrame, alpha: float, own_model: dict[str, list[str]] | None = None) -> str:
    """judge_reliability.md; `own_model` (judged_by_own_model) puts a warning line first for each judge
    that is also the model of systems under test."""
    records = table.to_dict("records")
    judges = list(dict.fromkeys(r["judge"] for r in records))
    panel = len(judges) > 1
    lines = []
    for judge, systems in (own_model or {}).items():
        if systems:
            lines += [self_judging_warning(judge, systems), ""]
    lines += ["# Judge reliability", ""]
    if panel:
        lines += [
            "## Agreement between judges",
            "",
            f"Judges {', '.join(f'`{j}`' for j in judges)}, named by the prefix of their columns "
            "(`judge_<criterion>`, `judge_<name>_<criterion>`). Krippendorff's alpha, interval, between their session "
            "scores (each judge's mean over its samples), 95% bootstrap CI over sessions.",
            "",
            "| criterion | agreement |",
            "|---|---|",
            *(f"| {r['criterion']} | {between_judges_statement(r)} |" for r in records if r["judge"] == judges[0]),
            "",
            "## Each judge",
            "",
        ]
    lines += [
        "Agreement between the judge's repeated samples of the same session (Krippendorff's alpha, ordinal, 95% "
        "bootstrap CI over sessions) and whether its scores separate the systems (Kruskal-Wallis across systems). "
        "Rounded here; judge_reliability.csv keeps full precision.",
        "",
        ("| judge " if panel else "") + "| criterion | samples | agreement | judge's ranking | discrimination |",
        ("|---" if panel else "") + "|---|---|---|---|---|",
    ]
    for row in records:
        lines.append(
            (f"| `{row['judge']}` " if panel else "")
            + f"| {row['criterion']} | {row['samples']} | {agreement_statement(row)} | {row['judge_ranking']} | "
            f"{discrimination_statement(row, alpha)} |"
        )
    lines.append("")
    for judge in judges:
        silent = [r["criterion"] for r in records if r["judge"] == judge and not r["discriminates"]]
        who = f"Judge `{judge}`" if panel else "The judge"
        lines.append(
            f"{who} does not discriminate between the systems on: " + ", ".join(silent) + ". Its scores on "
            "these criteria should not be used to rank the systems."
            if silent
            else f"{who}'s scores differ between systems on every criterion."
        )
    return "\n".join(lines) + "\n"
