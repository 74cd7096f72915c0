"""Do the metrics agree with real users? The tables of the `human_agreement` rule.

Inputs are the experiment's tables: sessions (one row per dialogue, with the user's verdict in
`satisfied`), turns (for the reference predictors) and, when the corpus has them, votes.
- `dialogue_table`: per metric, the AUC with which it separates satisfied from frustrated
  dialogues (crseval.checks.agreement), oriented by the metric's declared direction; the same for
  reference predictors that need no metric (words per reply, turns per dialogue); Holm's correction
  over every row; the margin over reply length with a paired bootstrap CI; and one plain verdict per row
  (films offered per reply, once a reference here, is a metric of the `conduct` family);
- `system_table`: per system, the satisfaction rate (Wilson interval), Bradley-Terry strength
  (bootstrap CI over votes) and Elo rating from the votes;
- `ranking_table`: Kendall's tau between each metric's system means and each human ranking, with a
  bootstrap CI (dialogues resampled within each system, votes resampled with their time order kept).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd

from crseval.checks import agreement
from crseval.statistics import column_registry
from crseval.statistics.analysis_plan import adjusted_p_values
from crseval.statistics.intervals import chunks, draw_counts

NAN = math.nan
# Bradley-Terry: one virtual tie of every system against the average system keeps strengths finite
# in bootstrap resamples where a system never wins (crseval.checks.agreement.bradley_terry).
BT_PRIOR = 1.0
LENGTH = "reference: words per reply"
# Reference predictors: what a user's verdict may follow without any metric.
REFERENCES = {
    LENGTH: "mean words per system reply",
    "reference: turns per dialogue": "user-system exchanges in the dialogue",
}


def reference_predictors(sessions: pd.DataFrame, turns: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per dialogue (session_id): the reference predictors of REFERENCES."""
    frame = pd.DataFrame({"session_id": sessions["session_id"]})
    frame[LENGTH] = sessions["response_words"].to_numpy(dtype=float)
    frame["reference: turns per dialogue"] = sessions["turns"].to_numpy(dtype=float)
    return frame


def _oriented(value: float, higher_is_better: bool | None) -> float:
    """The AUC read in the metric's declared direction (lower-is-better metrics flipped)."""
    return 1 - value if higher_is_better is False else value


def _verdict(row: dict, alpha: float) -> tuple[str, str]:
    """(verdict, sentence) of one row after Holm: agrees, disagrees, associated, or no evidence."""
    if math.isnan(row["auc"]):
        return "not measured", f"{row['label']}: not measured ({row['reason']})."
    if not row["p_holm"] < alpha:
        return (
            "no evidence",
            f"{row['label']}: no evidence either way (AUC {row['auc']:.2f}, Holm p {row['p_holm']:.2g}).",
        )
    higher_with_satisfied = row["auc"] > 0.5
    if row["higher_is_better"] is None:
        side = "higher" if higher_with_satisfied else "lower"
        return "associated", f"{row['label']}: {side} in dialogues users were satisfied with (AUC {row['auc']:.2f})."
    if row["oriented_auc"] > 0.5:
        return "agrees", f"{row['label']}: agrees with users (oriented AUC {row['oriented_auc']:.2f})."
    return "disagrees", f"{row['label']}: disagrees with users (oriented AUC {row['oriented_auc']:.2f})."


def _length_margin(values, length, labels, resamples: int, seed: int, level: float = 0.95) -> tuple:
    """|AUC - 0.5| of the metric minus that of reply length, on the dialogues with both, with a paired
    stratified bootstrap CI: above 0 means the metric separates the verdicts better than length."""
    values, length, labels = (np.asarray(a, dtype=float) for a in (values, length, labels))
    keep = ~np.isnan(values) & ~np.isnan(length) & ~np.isnan(labels)
    positive, negative = labels[keep] == 1, labels[keep] == 0
    if not positive.any() or not negative.any():
        return NAN, NAN, NAN

    def margin(metric_pos, metric_neg, length_pos, length_neg):
        return np.abs(agreement.auc_batch(metric_pos, metric_neg) - 0.5) - np.abs(
            agreement.auc_batch(length_pos, length_neg) - 0.5
        )

    v, l_ = values[keep], length[keep]
    point = float(margin(v[positive][None], v[negative][None], l_[positive][None], l_[negative][None])[0])
    if not resamples:
        return point, NAN, NAN
    rng = np.random.default_rng(seed)
    p_index = rng.integers(0, positive.sum(), (resamples, positive.sum()))
    n_index = rng.integers(0, negative.sum(), (resamples, negative.sum()))
    metric_auc = agreement.auc_resampled(v[positive], v[negative], p_index, n_index)
    length_auc = agreement.auc_resampled(l_[positive], l_[negative], p_index, n_index)
    boot = np.abs(metric_auc - 0.5) - np.abs(length_auc - 0.5)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(boot, [tail, 100 - tail])
    return point, float(low), float(high)


def dialogue_table(
    sessions: pd.DataFrame,
    references: pd.DataFrame,
    metrics: dict[str, tuple[str, bool | None]],
    resamples: int,
    seed: int,
    alpha: float,
) -> pd.DataFrame:
    """One row per metric (name -> (label, higher_is_better)) and per reference predictor."""
    labels = sessions["satisfied"].to_numpy(dtype=float)
    length = references[LENGTH].to_numpy(dtype=float)
    rows = []
    columns = [(name, label, direction, "metric", sessions[name]) for name, (label, direction) in metrics.items()]
    columns += [(name, name, None, "reference", references[name]) for name in REFERENCES]
    for offset, (name, label, direction, kind, series) in enumerate(columns):
        values = series.to_numpy(dtype=float)
        row = {"metric": name, "label": label, "kind": kind, "higher_is_better": direction, "reason": ""}
        row |= agreement.auc_with_ci(values, labels, resamples, seed + offset)
        if math.isnan(row["auc"]):
            row["reason"] = "no value in any dialogue" if np.isnan(values).all() else "values for one verdict only"
        row["oriented_auc"] = _oriented(row["auc"], direction)
        low, high = _oriented(row["ci_low"], direction), _oriented(row["ci_high"], direction)
        row["oriented_ci_low"], row["oriented_ci_high"] = min(low, high), max(low, high)
        margin = _length_margin(values, length, labels, resamples, seed + offset) if name != LENGTH else (NAN,) * 3
        row["beyond_length"], row["beyond_length_low"], row["beyond_length_high"] = margin
        rows.append(row)
    table = pd.DataFrame(rows)
    tested = table["p"].notna()
    table["p_holm"] = NAN
    if tested.any():
        table.loc[tested, "p_holm"] = adjusted_p_values(table.loc[tested, "p"], "holm")
    verdicts = [_verdict(row, alpha) for row in table.to_dict("records")]
    table["verdict"] = [v for v, _ in verdicts]
    table["sentence"] = [s for _, s in verdicts]
    table["beats_length"] = table["beyond_length_low"] > 0
    return table


def votes_list(votes: pd.DataFrame) -> list[tuple[str, str, str | None]]:
    """(first, second, winner or None for a tie) in time order (stable: ties keep the file order)."""
    ordered = votes.sort_values("time", kind="stable") if "time" in votes else votes
    return [
        (row.system_a, row.system_b, None if row.winner is None or pd.isna(row.winner) else row.winner)
        for row in ordered.itertuples()
    ]


def system_table(
    sessions: pd.DataFrame, votes: pd.DataFrame | None, resamples: int, seed: int, level: float = 0.95
) -> pd.DataFrame:
    """Per system: dialogues, satisfaction rate with its Wilson interval; with votes, Bradley-Terry
    strength (bootstrap CI over votes), Elo rating and the number of votes it took part in."""
    labelled = sessions.dropna(subset=["satisfied"])
    rows = []
    for system, group in labelled.groupby("system", sort=True):
        satisfied = int(group["satisfied"].sum())
        low, high = agreement.wilson_interval(satisfied, len(group), level)
        rows.append(
            {
                "system": system,
                "dialogues": len(group),
                "satisfied": satisfied,
                "satisfaction_rate": satisfied / len(group),
                "rate_low": low,
                "rate_high": high,
            }
        )
    table = pd.DataFrame(rows)
    if votes is None or not len(votes):
        return table
    pairs = votes_list(votes)
    systems = sorted(set(table["system"]) | {s for a, b, _ in pairs for s in (a, b)})
    strengths = agreement.bradley_terry(pairs, systems, prior=BT_PRIOR)
    elo = agreement.elo_ratings(pairs)
    rng = np.random.default_rng(seed)
    # one draw of len(pairs) votes per resample (one call draws the same integers as one call per resample)
    counts = draw_counts(rng.integers(0, len(pairs), (resamples, len(pairs))), len(pairs))
    boot = agreement.bradley_terry_resamples(pairs, systems, counts, BT_PRIOR)
    tail = (1 - level) / 2 * 100
    limits = np.percentile(boot, [tail, 100 - tail], axis=0) if resamples else np.full((2, len(systems)), NAN)
    extra = pd.DataFrame(
        {
            "system": systems,
            "bt_strength": [strengths[s] for s in systems],
            "bt_low": limits[0],
            "bt_high": limits[1],
            "elo": [elo.get(s, NAN) for s in systems],
            "votes": [sum(s in (a, b) for a, b, _ in pairs) for s in systems],
        }
    )
    return table.merge(extra, on="system", how="outer")


def ranking_table(
    sessions: pd.DataFrame,
    metrics: dict[str, tuple[str, bool | None]],
    votes: pd.DataFrame | None,
    resamples: int,
    seed: int,
    level: float = 0.95,
) -> pd.DataFrame:
    """Kendall's tau-b between each metric's system means and each human ranking (satisfaction rate;
    with votes, Bradley-Terry strength and Elo), with percentile bootstrap CIs: dialogues resampled
    within each system, votes resampled and kept in time order."""
    labelled = sessions.dropna(subset=["satisfied"])
    systems = sorted(labelled["system"].unique())
    names = list(metrics)
    groups = [labelled[labelled["system"] == s] for s in systems]
    values = [g[names].to_numpy(dtype=float) for g in groups]
    verdicts = [g["satisfied"].to_numpy(dtype=float) for g in groups]
    pairs = votes_list(votes) if votes is not None and len(votes) else []

    def rankings(samples, vote_sample):
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a metric with no value in a system: NaN mean
            means = np.array([np.nanmean(v[i], axis=0) for v, i in zip(values, samples)])
        human = {"satisfaction rate": np.array([y[i].mean() for y, i in zip(verdicts, samples)])}
        if pairs:
            chosen = [pairs[i] for i in sorted(vote_sample)]
            strengths = agreement.bradley_terry(chosen, systems, prior=BT_PRIOR)
            elo = agreement.elo_ratings(chosen)
            human["Bradley-Terry"] = np.array([strengths.get(s, NAN) for s in systems])
            human["Elo"] = np.array([elo.get(s, NAN) for s in systems])
        return means, human

    full = [np.arange(len(v)) for v in values]
    means, human = rankings(full, range(len(pairs)))
    boot = _resampled_rankings(values, verdicts, systems, pairs, resamples, seed)
    tail = (1 - level) / 2 * 100
    rows = []
    for ranking, target in human.items():
        taus = agreement.kendall_tau_columns(means, target)
        resampled = agreement.kendall_tau_rows(boot["means"], boot[ranking])
        for column, name in enumerate(names):
            defined = resampled[:, column][~np.isnan(resampled[:, column])]
            low, high = np.percentile(defined, [tail, 100 - tail]) if len(defined) else (NAN, NAN)
            tau = float(taus[column])
            flip = metrics[name][1] is False
            rows.append(
                {
                    "metric": name,
                    "label": metrics[name][0],
                    "human_ranking": ranking,
                    "systems": int(np.sum(~np.isnan(means[:, column]) & ~np.isnan(target))),
                    "kendall_tau": tau,
                    "oriented_tau": -tau if flip else tau,
                    "ci_low": float(low),
                    "ci_high": float(high),
                    "oriented_ci_low": float(-high if flip else low),
                    "oriented_ci_high": float(-low if flip else high),
                    "resamples_defined": len(defined),
                }
            )
    return pd.DataFrame(rows)


def _resampled_rankings(
    values: list[np.ndarray], verdicts: list[np.ndarray], systems: list[str], pairs: list, resamples: int, seed: int
) -> dict[str, np.ndarray]:
    """The bootstrap of ranking_table: each system's dialogues resampled within it and the votes resampled
    (time order kept), `resamples` times. Returns "means" (resamples x systems x metrics) and per human
    ranking its resampled values (resamples x systems). The draws are taken resample by resample, as they
    always were; the statistics of all resamples are then computed at once (block by block for the means)."""
    rng = np.random.default_rng(seed)
    samples = [np.empty((resamples, len(v)), np.intp) for v in values]
    vote_draws = np.empty((resamples, len(pairs)), np.intp)
    for row in range(resamples):
        for drawn, v in zip(samples, values):
            drawn[row] = rng.integers(0, len(v), len(v))
        if pairs:
            vote_draws[row] = rng.integers(0, len(pairs), len(pairs))
    metrics = values[0].shape[1] if values else 0
    means = np.empty((resamples, len(values), metrics))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a metric with no value in a system: NaN mean
        for position, (v, drawn) in enumerate(zip(values, samples)):
            first = 0
            for rows in chunks(resamples, max(v.size, 1)):
                means[first : first + rows, position] = np.nanmean(v[drawn[first : first + rows]], axis=1)
                first += rows
    boot = {"means": means}
    boot["satisfaction rate"] = np.stack([y[drawn].mean(axis=1) for y, drawn in zip(verdicts, samples)], axis=1)
    if pairs:
        counts = draw_counts(vote_draws, len(pairs))
        boot["Bradley-Terry"] = agreement.bradley_terry_resamples(pairs, systems, counts, BT_PRIOR)
        elo = np.full((resamples, len(systems)), NAN)
        for row, drawn in enumerate(np.sort(vote_draws, axis=1)):
            ratings = agreement.elo_ratings([pairs[i] for i in drawn])
            elo[row] = [ratings.get(s, NAN) for s in systems]
        boot["Elo"] = elo
    return boot


def _number(value, digits: int = 2) -> str:
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{digits}f}"


def markdown(dialogues: pd.DataFrame, systems: pd.DataFrame, rankings: pd.DataFrame, alpha: float) -> str:
    """stats/human_agreement.md: the verdicts first, then the three tables."""
    labelled = int(systems["dialogues"].sum()) if len(systems) else 0
    satisfied = int(systems["satisfied"].sum()) if len(systems) else 0
    lines = [
        "# Agreement with real users",
        "",
        f"{labelled} dialogues with the user's verdict ({satisfied} satisfied, {labelled - satisfied} frustrated) "
        f"from {len(systems)} systems.",
        "",
        "**Per dialogue.** AUC: the probability that a dialogue the user was satisfied with scores higher than one "
        "they were frustrated with (0.5: no separation; ties count half). *Oriented* AUC reads it in the metric's "
        "declared direction (lower-is-better metrics flipped), so above 0.5 means the metric agrees with users. "
        "CIs: percentile bootstrap with dialogues resampled within each verdict. p: two-sided Mann-Whitney, "
        f"Holm-adjusted over every row of the table; verdicts at alpha = {alpha}. Metrics without a declared "
        "direction can only be *associated* with the verdict. *Beyond length*: |AUC - 0.5| minus that of words "
        "per reply, with a paired bootstrap CI; a metric whose CI does not lie above 0 separates the verdicts no "
        "better than reply length does.",
        "",
        "## Verdicts",
        "",
    ]
    order = dialogues.assign(strength=(dialogues["auc"] - 0.5).abs()).sort_values(
        ["kind", "strength"], ascending=[True, False]
    )
    lines += [f"- {sentence}" for sentence in order["sentence"]]
    lines += _per_dialogue(order)
    lines += _per_system(systems)
    lines += _system_rankings(rankings)
    return "\n".join(lines) + "\n"


def _per_dialogue(order: pd.DataFrame) -> list[str]:
    """The dialogue table, strongest separation first within each kind of metric."""
    lines = [
        "",
        "## Per dialogue",
        "",
        "| metric | kind | n (sat./frus.) | AUC [95% CI] | oriented AUC | Holm p | verdict | beyond length [95% CI] |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in order.to_dict("records"):
        lines.append(
            f"| {row['label']} | {row['kind']} | {row['n_satisfied']}/{row['n_frustrated']} | "
            f"{_number(row['auc'])} [{_number(row['ci_low'])}, {_number(row['ci_high'])}] | "
            f"{_number(row['oriented_auc'])} | {_number(row['p_holm'], 3)} | {row['verdict']} | "
            f"{_number(row['beyond_length'])} [{_number(row['beyond_length_low'])}, "
            f"{_number(row['beyond_length_high'])}] |"
        )
    return lines


def _per_system(systems: pd.DataFrame) -> list[str]:
    """The system table: satisfaction rates and, with votes, Bradley-Terry strengths and Elo."""
    lines = ["", "## Per system", ""]
    voted = "bt_strength" in systems
    header = "| system | dialogues | satisfied | rate [95% Wilson] |" + (
        " Bradley-Terry [95% CI] | Elo | votes |" if voted else ""
    )
    lines += [header, "|---|---|---|---|" + ("---|---|---|" if voted else "")]
    for row in systems.sort_values("satisfaction_rate", ascending=False).to_dict("records"):
        line = (
            f"| {row['system']} | {row['dialogues']:.0f} | {row['satisfied']:.0f} | "
            f"{_number(row['satisfaction_rate'])} [{_number(row['rate_low'])}, {_number(row['rate_high'])}] |"
        )
        if voted:
            line += (
                f" {_number(row['bt_strength'])} [{_number(row['bt_low'])}, {_number(row['bt_high'])}] |"
                f" {_number(row['elo'], 0)} | {row['votes']:.0f} |"
            )
        lines.append(line)
    if voted:
        lines += [
            "",
            f"Bradley-Terry log-strengths (mean 0; ties count half a win each way; one virtual tie of every system "
            f"against the average system, prior {BT_PRIOR:g}); CI: percentile bootstrap over votes. Elo: start 1000, "
            "K = 16, votes in time order (the settings of CRSArena-Dial's authors).",
        ]
    return lines


def _system_rankings(rankings: pd.DataFrame) -> list[str]:
    """Each metric's ranking of the systems against each human ranking (Kendall's tau)."""
    lines = [
        "",
        "## System rankings",
        "",
        "Kendall's tau-b between each metric's system means and each human ranking (oriented: in the metric's "
        "declared direction); CI: percentile bootstrap, dialogues resampled within each system and votes resampled. "
        "With few systems a tau CI is wide: read it before the point value.",
        "",
        "| metric | human ranking | systems | oriented tau [95% CI] |",
        "|---|---|---|---|",
    ]
    for row in rankings.sort_values(["human_ranking", "oriented_tau"], ascending=[True, False]).to_dict("records"):
        lines.append(
            f"| {row['label']} | {row['human_ranking']} | {row['systems']} | {_number(row['oriented_tau'])} "
            f"[{_number(row['oriented_ci_low'])}, {_number(row['oriented_ci_high'])}] |"
        )
    return lines


def _metric_columns(sessions: pd.DataFrame) -> dict:
    """The table's columns the registry declares as metrics (named, or by pattern as a panel judge's), in
    the registry's order, then the table's."""
    names = [*(n for n in column_registry.SESSION_COLUMNS if n in sessions), *sessions.columns]
    columns = {
        n: column_registry.SESSION_COLUMNS[n] for n in dict.fromkeys(names) if n in column_registry.SESSION_COLUMNS
    }
    return {n: c for n, c in columns.items() if c.metric}


def session_metrics(sessions: pd.DataFrame) -> dict[str, tuple[str, bool | None]]:
    """Every numeric session metric of the registry with a value in some dialogue, the judges' and panel
    judges' scores and G-Eval scores included: name -> (label, declared direction). Metrics without any
    value (e.g. those needing simulator ground truth) are left out here and listed by `unmeasured`."""
    return {
        name: (column.label, column.higher_is_better)
        for name, column in _metric_columns(sessions).items()
        if sessions[name].notna().any()
    }


def unmeasured(sessions: pd.DataFrame) -> list[str]:
    """Registry metrics in the table without a single value (not applicable to these dialogues)."""
    return [n for n in _metric_columns(sessions) if sessions[n].isna().all()]


def agree(
    sessions: pd.DataFrame,
    turns: pd.DataFrame,
    votes: pd.DataFrame | None,
    settings: dict,
    verdict: str = "satisfied",
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The dialogue, system and ranking tables for `settings` (the `stats` config: alpha, seed,
    bootstrap_resamples), against the binary verdict column `verdict` (1 the better verdict: the user
    satisfied, a recommendation accepted), read as the tables' `satisfied`."""
    resamples, seed, alpha = settings["bootstrap_resamples"], settings["seed"], settings["alpha"]
    sessions = sessions.assign(satisfied=sessions[verdict])
    labelled = sessions[sessions["satisfied"].notna()].reset_index(drop=True)
    metrics = session_metrics(labelled)
    dialogues = dialogue_table(labelled, reference_predictors(labelled, turns), metrics, resamples, seed, alpha)
    systems = system_table(labelled, votes, resamples, seed)
    rankings = ranking_table(labelled, metrics, votes, resamples, seed)
    return dialogues, systems, rankings
