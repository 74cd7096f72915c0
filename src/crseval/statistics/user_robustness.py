"""Do the conclusions depend on the simulated user? The same systems under several user profiles, compared.

An experiment may run each system under several user profiles (config/user_profiles.yaml). A metric's
conclusion is only as general as the user it was measured with: if the best system, or which systems
the tests tell apart, changes with the profile, the conclusion belongs to that user. Systems whose
config entries are identical except for `name` and `profile` are one system met by different users
(`matched_systems`); per metric this module orders them under each profile, measures the agreement
of two profiles' orders by Kendall's tau-b with a percentile bootstrap CI over session indices (sessions
pair across systems and profiles: index i is the same simulated user plan everywhere, so every system
and profile is resampled with the same drawn indices), and compares the best system and the pairs the
experiment's own tests (stats/paired.csv, else pairwise.csv) call different.
"""

from __future__ import annotations

import itertools
import math
import re

import numpy as np
import pandas as pd

from crseval.core.canonical import canonical_json, without_runtime
from crseval.statistics import column_registry
from crseval.statistics.intervals import draw_counts

# The adjusted p-value columns that decide "the tests call this pair different", in order of preference:
# the paired table's Wilcoxon test (sessions pair), else the pairwise table's Mann-Whitney test.
P_COLUMNS = {"wilcoxon_p_adj": "Wilcoxon signed-rank", "mannwhitney_p_adj": "Mann-Whitney"}
CI_LEVEL = 0.95
# Two means closer than this (relative) are a tie: equal sessions summed in another order differ in the last bits.
TIE_TOLERANCE = 1e-12
# Resample rows drawn at once: bounds the counts matrix (rows x session indices) whatever the resamples.
_BLOCK_CELLS = 2_000_000


# ------------------------------------------------------------------ which systems are the same system


def matched_systems(systems: list[dict], profile_of: dict[str, str]) -> dict[str, dict[str, str]]:
    """{label: {profile: system name}} for the config's system entries that are identical except for
    `name` and `profile` (and settings that change speed only), present under two profiles or more:
    those are one system met by different users. A group with two entries under one profile is
    ambiguous (which one pairs with which?) and left out, like a system without a match."""
    groups: dict[str, list[dict]] = {}
    for entry in systems:
        rest = {k: v for k, v in without_runtime(entry).items() if k not in ("name", "profile")}
        groups.setdefault(canonical_json(rest), []).append(entry)
    matched: list[dict[str, str]] = []
    for entries in groups.values():
        by_profile = {profile_of[e["name"]]: e["name"] for e in entries}
        if len(by_profile) == len(entries) and len(by_profile) >= 2:
            matched.append(by_profile)
    labels = [_label(group) for group in matched]
    taken = [label for label in labels if labels.count(label) > 1]  # two groups stripping to one label
    return {
        (" / ".join(group.values()) if label in taken else label): group
        for label, group in zip(labels, matched, strict=True)
    }


def _label(group: dict[str, str]) -> str:
    """The names with their profile word removed when they then agree (`oracle-explicit` -> `oracle`),
    else the names joined by " / "."""
    stripped = {_strip(name, profile) for profile, name in group.items()}
    if len(stripped) == 1 and (label := stripped.pop()):
        return label
    return " / ".join(group.values())


def _strip(name: str, profile: str) -> str:
    """`name` without a `-` or `_` joined `profile` token, wherever it stands."""
    token = re.escape(profile)
    stripped = re.sub(rf"[-_]{token}(?=[-_]|$)", "", name, count=1)
    return stripped if stripped != name else re.sub(rf"^{token}[-_]", "", name, count=1)


def applies(matched: dict[str, dict[str, str]]) -> bool:
    """Whether there is anything to compare: two matched systems at least under two profiles or more."""
    return len(matched) >= 2 and len(_profiles(matched)) >= 2


def _profiles(matched: dict[str, dict[str, str]]) -> list[str]:
    return list(dict.fromkeys(p for group in matched.values() for p in group))


# ------------------------------------------------------------------ orders, tau-b and its bootstrap


def tau_b(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's tau-b between the last axes of `x` and `y` (resamples x systems): (concordant - discordant)
    / sqrt((pairs - ties in x)(pairs - ties in y)), all rows at once by broadcasting the signs of the
    differences. NaN where a side is constant (no untied pair) or holds a NaN."""
    i, j = np.triu_indices(x.shape[-1], 1)
    sx, sy = _signs(x[..., i], x[..., j]), _signs(y[..., i], y[..., j])
    with np.errstate(invalid="ignore", divide="ignore"):
        untied = np.sqrt(np.count_nonzero(sx, axis=-1) * np.count_nonzero(sy, axis=-1).astype(float))
        tau = np.sum(sx * sy, axis=-1) / untied
    return np.where(untied > 0, tau, np.nan)


def _signs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """sign(a - b), 0 for means equal up to rounding (sessions summed in another order), NaN where one is NaN."""
    sign = np.sign(a - b)
    return np.where(np.isclose(a, b, rtol=TIE_TOLERANCE, atol=0.0), 0.0, sign)


def _value_matrix(sessions: pd.DataFrame, columns: list[str], metrics: list[str]) -> tuple[np.ndarray, int]:
    """Values (session indices x (metric, system) columns, NaN where missing) and the number of indices."""
    frame = sessions[sessions["system"].isin(columns)]
    indices = np.sort(frame["session_index"].unique())
    wide = frame.pivot_table(index="session_index", columns="system", values=metrics, aggfunc="mean", dropna=False)
    wide = wide.reindex(index=indices, columns=pd.MultiIndex.from_product([metrics, columns]))
    return wide.to_numpy(float), len(indices)


def _means(values: np.ndarray) -> np.ndarray:
    """NaN-aware column means; NaN for a column without any value."""
    known = ~np.isnan(values)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(known, values, 0.0).sum(axis=0) / known.sum(axis=0)


def bootstrap_means(values: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """Resampled NaN-aware means (resamples x columns): each resample draws session indices with
    replacement, the same draw for every column (the sessions pair), as a counts matrix
    (intervals.draw_counts) times the values. A column whose drawn sessions all lack a value is NaN."""
    n = values.shape[0]
    known = ~np.isnan(values)
    filled = np.where(known, values, 0.0)
    rng = np.random.default_rng(seed)
    block = max(1, _BLOCK_CELLS // max(n, 1))
    out = np.empty((resamples, values.shape[1]))
    for start in range(0, resamples, block):
        rows = min(block, resamples - start)
        counts = draw_counts(rng.integers(0, n, size=(rows, n)), n).astype(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[start : start + rows] = (counts @ filled) / (counts @ known)
    return out


def _best(means: pd.Series, higher: bool | None) -> str:
    """The best system by mean in the metric's direction (ties joined by " = "), or why there is none."""
    known = means.dropna()
    if higher is None:
        return "no direction"
    if known.empty:
        return "no values"
    top = known.max() if higher else known.min()
    tied = np.isclose(known.to_numpy(float), top, rtol=TIE_TOLERANCE, atol=0.0)
    return " = ".join(sorted(known.index[tied]))


def _ranks(means: pd.Series, higher: bool | None) -> pd.Series:
    """1 = best (highest mean where the metric has no direction), ties sharing the smaller rank."""
    rounded = means.map(lambda v: float(f"{v:.12g}") if np.isfinite(v) else np.nan)
    return rounded.rank(method="min", ascending=higher is False)


# ------------------------------------------------------------------ the pairs the tests call different


def _p_column(pairs_table: pd.DataFrame | None) -> str | None:
    if pairs_table is None:
        return None
    return next((c for c in P_COLUMNS if c in pairs_table and len(pairs_table)), None)


def _differing(pairs_table: pd.DataFrame, column: str, alpha: float) -> dict[tuple[str, str, str], tuple[str, str]]:
    """(metric, system, system) in both orders -> (higher, lower) by mean, for the pairs the tests call different
    (adjusted p < alpha)."""
    rows = pairs_table[pairs_table[column] < alpha]
    found = {}
    for metric, a, b, diff in rows[["metric", "system_a", "system_b", "mean_diff"]].itertuples(index=False):
        if diff == 0 or not np.isfinite(diff):
            continue
        order = (a, b) if diff > 0 else (b, a)
        found[(metric, a, b)] = found[(metric, b, a)] = order
    return found


def _pairs_under(differ: dict, metric: str, names: dict[str, str]) -> list[str]:
    """The pairs of matched systems (label -> system name under one profile) the tests call different,
    as "x>y" in labels, x the higher mean."""
    label_of = {name: label for label, name in names.items()}
    found = []
    for a, b in itertools.combinations(sorted(names), 2):
        order = differ.get((metric, names[a], names[b]))
        if order:
            found.append(f"{label_of[order[0]]}>{label_of[order[1]]}")
    return found


# ------------------------------------------------------------------ the tables


def robustness_table(
    sessions: pd.DataFrame,
    matched: dict[str, dict[str, str]],
    metrics: list[str],
    resamples: int,
    seed: int,
    alpha: float,
    pairs_table: pd.DataFrame | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per metric and pair of profiles: tau-b with its CI, best systems, pairs that differ under one
    profile only, whether the conclusion changes; per metric, profile and matched system: mean and rank).
    `pairs_table` is the experiment's paired table (or, when sessions do not pair, its pairwise table)."""
    profiles = _profiles(matched)
    metrics = [m for m in metrics if m in sessions]
    columns = [name for group in matched.values() for name in group.values()]
    values, n = _value_matrix(sessions, columns, metrics)
    point = _means(values)
    boot = bootstrap_means(values, resamples, seed) if n else np.empty((0, values.shape[1]))
    position = {(m, c): k for k, (m, c) in enumerate(itertools.product(metrics, columns))}
    column = _p_column(pairs_table)
    differ = _differing(pairs_table, column, alpha) if column else {}
    test = P_COLUMNS.get(column, "")
    order_rows, pair_rows = [], []
    for metric in metrics:
        higher = column_registry.direction(metric)
        means = {
            p: pd.Series({label: point[position[(metric, g[p])]] for label, g in matched.items() if p in g})
            for p in profiles
        }
        for p in profiles:
            ranks = _ranks(means[p], higher)
            for label, mean in means[p].items():
                order_rows.append(
                    {
                        "metric": metric,
                        "profile": p,
                        "system": label,
                        "system_name": matched[label][p],
                        "mean": mean,
                        "rank": ranks[label],
                        "direction": {True: "higher", False: "lower", None: "none"}[higher],
                    }
                )
        for a, b in itertools.combinations(profiles, 2):
            shared = [label for label, g in matched.items() if a in g and b in g]
            pair_rows.append(
                _profile_pair(metric, a, b, shared, matched, means, boot, position, higher, differ, test, column)
            )
    return pd.DataFrame(pair_rows, columns=PAIR_COLUMNS), pd.DataFrame(order_rows, columns=ORDER_COLUMNS)


PAIR_COLUMNS = [
    "metric",
    "profile_a",
    "profile_b",
    "systems",
    "tau",
    "ci_low",
    "ci_high",
    "undefined_resamples",
    "tau_note",
    "best_a",
    "best_b",
    "best_changes",
    "pairs_test",
    "pairs_only_a",
    "pairs_only_b",
    "conclusion_changes",
]
ORDER_COLUMNS = ["metric", "profile", "system", "system_name", "mean", "rank", "direction"]


def _profile_pair(metric, a, b, shared, matched, means, boot, position, higher, differ, test, column) -> dict:
    """One row of the robustness table: profiles a and b on one metric, over the systems matched under both."""
    mean_a, mean_b = means[a][shared], means[b][shared]
    row = {"metric": metric, "profile_a": a, "profile_b": b, "systems": len(shared)}
    row.update(_tau_with_ci(mean_a, mean_b, shared, matched, metric, a, b, boot, position))
    best_a, best_b = _best(mean_a, higher), _best(mean_b, higher)
    best_changes = None if higher is None or "no values" in (best_a, best_b) else best_a != best_b
    row.update({"best_a": best_a, "best_b": best_b, "best_changes": best_changes, "pairs_test": test})
    if column:
        under_a = _pairs_under(differ, metric, {label: matched[label][a] for label in shared})
        under_b = _pairs_under(differ, metric, {label: matched[label][b] for label in shared})
        only_a = [pair for pair in under_a if pair not in under_b]
        only_b = [pair for pair in under_b if pair not in under_a]
        row.update({"pairs_only_a": "; ".join(only_a), "pairs_only_b": "; ".join(only_b)})
        pairs_change = bool(only_a or only_b)
    else:
        row.update({"pairs_only_a": None, "pairs_only_b": None, "pairs_test": "none (no pair was tested)"})
        pairs_change = None
    row["conclusion_changes"] = bool(best_changes) or bool(pairs_change)
    return row


def _tau_with_ci(mean_a, mean_b, shared, matched, metric, a, b, boot, position) -> dict:
    """tau-b between the two profiles' means of the shared systems, its percentile bootstrap CI, and why it
    is missing when it is."""
    defined = [label for label in shared if np.isfinite(mean_a[label]) and np.isfinite(mean_b[label])]
    empty = {"tau": math.nan, "ci_low": math.nan, "ci_high": math.nan, "undefined_resamples": 0}
    if len(defined) < 2:
        return {**empty, "tau_note": f"{len(defined)} matched system(s) with a mean under both profiles: no pairs"}
    x, y = mean_a[defined].to_numpy(float), mean_b[defined].to_numpy(float)
    tau = float(tau_b(x, y))
    if not np.isfinite(tau):
        constant = " and ".join(p for p, v in ((a, x), (b, y)) if np.all(v == v[0]))
        return {**empty, "tau_note": f"undefined: every matched system has the same mean under {constant}"}
    boot_a = boot[:, [position[(metric, matched[label][a])] for label in defined]]
    boot_b = boot[:, [position[(metric, matched[label][b])] for label in defined]]
    taus = tau_b(boot_a, boot_b)
    finite = taus[np.isfinite(taus)]
    tail = 100 * (1 - CI_LEVEL) / 2
    low, high = np.percentile(finite, [tail, 100 - tail]) if len(finite) else (math.nan, math.nan)
    undefined = len(taus) - len(finite)
    note = f"{undefined} resamples without a tau (a constant side or no value) left out" if undefined else ""
    return {
        "tau": tau,
        "ci_low": float(low),
        "ci_high": float(high),
        "undefined_resamples": undefined,
        "tau_note": note,
    }


# ------------------------------------------------------------------ for a reader


def _fmt(value) -> str:
    if value is None or (isinstance(value, float) and not np.isfinite(value)):
        return "–"
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def _bests(orders: pd.DataFrame, metric: str) -> dict[str, str]:
    """Profile -> the best matched system on `metric` under it (all its matched systems), or why none."""
    rows = orders[orders["metric"] == metric]
    higher = column_registry.direction(metric)
    return {p: _best(group.set_index("system")["mean"], higher) for p, group in rows.groupby("profile", sort=False)}


def _changed_metrics(pairs: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(pairs.loc[pairs["conclusion_changes"].astype(bool), "metric"]))


def _best_phrase(bests: dict[str, str]) -> str:
    """ "x under every profile", or "x under a but y under b and c"."""
    by_best: dict[str, list[str]] = {}
    for profile, best in bests.items():
        by_best.setdefault(best, []).append(profile)
    if len(by_best) == 1:
        return f"{next(iter(by_best))} under every profile"
    parts = [f"{best} under {' and '.join(profiles)}" for best, profiles in by_best.items()]
    return f"{parts[0]} but {', '.join(parts[1:])}"


def robustness_sentence(
    pairs: pd.DataFrame, orders: pd.DataFrame, headline: tuple[str, ...] = ("tas", "success")
) -> str:
    """One sentence for stats/summary.md: how many metrics' conclusions change with the user, and for
    `tas` and `success` (those computed) whether the best system changes."""
    profiles = list(dict.fromkeys(orders["profile"]))
    metrics = list(dict.fromkeys(pairs["metric"]))
    directed = [m for m in metrics if column_registry.direction(m) is not None]
    best_changes = [m for m in directed if pairs.loc[pairs["metric"] == m, "best_changes"].eq(True).any()]
    sentence = (
        f"Under the {len(profiles)} user profiles ({', '.join(profiles)}), the conclusion changes for "
        f"{len(_changed_metrics(pairs))} of {len(metrics)} metrics (the best system for {len(best_changes)} of the "
        f"{len(directed)} with a direction; stats/user_robustness.md)"
    )
    named = [m for m in headline if m in metrics and column_registry.direction(m) is not None]
    phrases = [f"on {m} {'is ' * (k == 0)}{_best_phrase(_bests(orders, m))}" for k, m in enumerate(named)]
    if phrases:
        sentence += "; the best system " + ", and ".join(phrases)
    return sentence + "."


def robustness_markdown(
    pairs: pd.DataFrame,
    orders: pd.DataFrame,
    matched: dict[str, dict[str, str]],
    ignored: list[str],
    alpha: float,
    resamples: int,
) -> str:
    """stats/user_robustness.md: what is compared and how, the metrics whose conclusion changes with the
    user, then per metric the order under each profile and the agreement between profiles."""
    profiles = _profiles(matched)
    test = next((t for t in pairs["pairs_test"] if t), "no test") if len(pairs) else "no test"
    lines = [
        "# Do the conclusions depend on the simulated user?",
        "",
        f"The same {len(matched)} systems ({', '.join(matched)}: config entries identical except for `name` and "
        f"`profile`) met {len(profiles)} user profiles ({', '.join(profiles)}). Per metric, each system's mean under "
        "each profile and its rank (1 = best in the metric's declared direction; by highest mean where it has "
        "none). Two profiles' orders are compared by Kendall's tau-b between the systems' means (1: the same "
        f"order; ties counted as tau-b does), with a {CI_LEVEL:.0%} percentile bootstrap CI over session indices "
        f"({resamples:,} resamples; session i is the same simulated user plan under every system and profile, so "
        "every mean is resampled with the same drawn indices). The conclusion changes between two profiles when "
        f"the best system differs, or when a pair of systems the experiment's own tests ({test}, adjusted p < "
        f"{alpha}) tell apart in one direction under one profile is not told apart, or the other way, under the "
        "other (`x>y`: x has the higher mean). user_robustness.csv and user_robustness_orders.csv keep full "
        "precision.",
    ]
    if ignored:
        lines += [
            "",
            f"Not compared (no identical entry under another profile, or two under one): {', '.join(ignored)}.",
        ]
    changed = _changed_metrics(pairs)
    lines += ["", "## Metrics whose conclusion changes with the user", ""]
    lines += [f"- {_headline(pairs, orders, m)}" for m in changed] or ["None: every metric concludes alike."]
    for metric in dict.fromkeys(pairs["metric"]):
        lines += _metric_section(metric, pairs[pairs["metric"] == metric], orders[orders["metric"] == metric])
    return "\n".join(lines) + "\n"


def _headline(pairs: pd.DataFrame, orders: pd.DataFrame, metric: str) -> str:
    rows = pairs[pairs["metric"] == metric]
    reasons = []
    if rows["best_changes"].eq(True).any():
        reasons.append("best system " + _best_phrase(_bests(orders, metric)))
    moved = [
        f"{r.profile_a} vs {r.profile_b}: {_count(r.pairs_only_a)} + {_count(r.pairs_only_b)}"
        for r in rows.itertuples()
        if r.pairs_only_a or r.pairs_only_b
    ]
    if moved:
        reasons.append("pairs told apart under one profile only (" + "; ".join(moved) + ")")
    return f"**{metric}**: " + "; ".join(reasons)


def _count(pairs_text) -> int:
    return len(pairs_text.split("; ")) if pairs_text else 0


def _metric_section(metric: str, pairs: pd.DataFrame, orders: pd.DataFrame) -> list[str]:
    higher = column_registry.direction(metric)
    said = {True: "higher is better", False: "lower is better", None: "no direction: ranked by highest mean"}[higher]
    profiles = list(dict.fromkeys(orders["profile"]))
    first = orders[orders["profile"] == profiles[0]].sort_values(["rank", "system"])
    systems = list(dict.fromkeys([*first["system"], *orders["system"]]))
    cell = {
        (r.system, r.profile): f"{_fmt(r.mean)} ({_fmt(r.rank) if np.isfinite(r.rank) else '–'})"
        for r in orders.itertuples()
    }
    lines = [
        "",
        f"## {metric} ({said})",
        "",
        "| system | " + " | ".join(f"{p}: mean (rank)" for p in profiles) + " |",
        "|---|" + "---|" * len(profiles),
        *(f"| {s} | " + " | ".join(cell.get((s, p), "–") for p in profiles) + " |" for s in systems),
        "",
        "| profiles | tau-b [95% CI] | best | pairs told apart under the first only | under the second only |",
        "|---|---|---|---|---|",
    ]
    for r in pairs.itertuples():
        tau = f"{_fmt(r.tau)} [{_fmt(r.ci_low)}, {_fmt(r.ci_high)}]" if np.isfinite(r.tau) else r.tau_note
        best = r.best_a if higher is None else f"{r.best_a} / {r.best_b}" + (" (changes)" if r.best_changes else "")
        lines.append(
            f"| {r.profile_a} vs {r.profile_b} | {tau} | {best} | {r.pairs_only_a or '–'} | {r.pairs_only_b or '–'} |"
        )
    return lines
