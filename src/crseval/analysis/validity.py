"""Metric validity: does a metric order the calibration systems as their construction says?

The expected orders live here, in one place, each with its reason; an order lists the systems
best first, in the metric's direction as its family declares it (crseval.analysis.registry). A
metric's measured order is the order of the systems' mean values; agreement with the expected
order is Kendall's tau over the pairs of systems the construction orders, with a percentile
bootstrap CI over sessions (resampled within each system), and the oracle-vs-random difference is
given as Cliff's delta. A metric passes when tau >= 0.8 and the CI's lower end is above 0. Nothing
is tuned to pass: a failing metric is reported as failing.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from crseval.analysis import registry
from crseval.analysis.effects import cliffs_delta

# The calibration systems, best to worst adaptation by construction.
ADAPTATION_ORDER = ("oracle", "lag1", "lag2", "stubborn", "random")
# With the parrot: it echoes the user's words but recommends films of the first focus whatever the
# user now wants, so it adapts no more than the stubborn system. A metric of adaptation that ranks
# it higher rewards copying the user instead of following them.
ECHO_ORDER = ("oracle", "lag1", "lag2", "parrot=stubborn", "random")
ECHO_REASON = (
    "the parrot echoes the user's message but recommends films of the first focus after every shift, as "
    "the stubborn system does: a metric of adaptation must not rank echoing above following the user"
)


@dataclass(frozen=True)
class Expectation:
    metric: str
    order: tuple[str, ...]  # best first; "a=b" for systems expected to tie
    reason: str
    check: str = "adaptation"  # what the row tests: "adaptation" (the five adapting systems) or "echo"
    # Only for a metric without a declared direction (a descriptive statistic): whether the
    # construction predicts higher values for the systems listed first.
    higher_first: bool | None = None

    @property
    def higher_is_better(self) -> bool:
        declared = registry.session_column(self.metric).higher_is_better
        if declared is None and self.higher_first is None:
            raise ValueError(f"validity of {self.metric}: the metric has no direction; say `higher_first`")
        if declared is not None and self.higher_first is not None:
            raise ValueError(f"validity of {self.metric}: its direction is declared by its family, not here")
        return declared if declared is not None else self.higher_first

    def ranks(self) -> dict[str, int]:
        return {system: rank for rank, group in enumerate(self.order, start=1) for system in group.split("=")}


EXPECTATIONS: tuple[Expectation, ...] = (
    Expectation(
        "tas",
        ADAPTATION_ORDER,
        "TAS rewards replies that restate the current wishes: the oracle always does, lag-k does k turns late "
        "(later = fewer turns aligned), stubborn only in the first segment, random never",
    ),
    Expectation("tas_cc", ADAPTATION_ORDER, "concept overlap with the user's turn, as for TAS"),
    Expectation("tas_cr", ADAPTATION_ORDER, "weighted concept similarity with the user's turn, as for TAS"),
    Expectation("tas_segment", ADAPTATION_ORDER, "TAS over the simulator's segments, as for TAS"),
    Expectation(
        "tas_rec",
        ADAPTATION_ORDER,
        "TAS counting only the concepts the recommended films carry: films of the current wishes for the oracle, "
        "of older ones for lag-k and stubborn, of none for random",
    ),
    Expectation(
        "dst_f1",
        ADAPTATION_ORDER,
        "the calibration systems report the constraints they serve: current, k turns old, first, none",
    ),
    Expectation(
        "rec_satisfaction",
        ADAPTATION_ORDER,
        "recommended films satisfy the constraints served: current for the oracle, older ones for the others",
    ),
    Expectation("missing_concepts", ADAPTATION_ORDER, "wished concepts the reply does not name, as for TAS"),
    Expectation(
        "recovery_rate_cosine",
        ("oracle", "lag1", "lag2", "stubborn=random"),
        "within a window longer than two turns the oracle recovers first, lag-k k turns later; stubborn and "
        "random never follow a shift (random matches one by chance only)",
    ),
    Expectation(
        "tas_copying",
        ("oracle=lag1=lag2=stubborn=random", "parrot"),
        "the parrot echoes the user's message (copying is penalised: it ranks last); the others write their own "
        "sentence",
    ),
    Expectation("adherence_f1", ADAPTATION_ORDER, "replies name the current focus values, as for TAS"),
    Expectation(
        "context_adaptation_score",
        ADAPTATION_ORDER,
        "the legacy CAS claims to measure adaptation to topic shifts",
    ),
    Expectation(
        "topic_recovery_rate",
        ADAPTATION_ORDER,
        "the legacy recovery rate claims to measure how often a system follows a detected shift",
    ),
    Expectation(
        "cross_coherence", ADAPTATION_ORDER, "the legacy cross-coherence claims that replies fit the user's turn"
    ),
    Expectation(
        "cluster_silhouette",
        ADAPTATION_ORDER,
        "replies that follow the shifts group by segment (clear clusters); replies k turns late blur the "
        "segments' edges; a stubborn system's replies stay on one topic and random ones on none",
        higher_first=True,
    ),
    Expectation("tas", ECHO_ORDER, ECHO_REASON + " (TAS subtracts gamma x copying for this)", "echo"),
    Expectation("rec_satisfaction", ECHO_ORDER, ECHO_REASON, "echo"),
    Expectation(
        "tas_rec", ECHO_ORDER, ECHO_REASON + " (words echoed from the user count only if its films carry them)", "echo"
    ),
    Expectation("adherence_f1", ECHO_ORDER, ECHO_REASON, "echo"),
    Expectation("context_adaptation_score", ECHO_ORDER, ECHO_REASON, "echo"),
    Expectation("topic_recovery_rate", ECHO_ORDER, ECHO_REASON, "echo"),
    Expectation("cross_coherence", ECHO_ORDER, ECHO_REASON, "echo"),
    Expectation(
        "context_retention",
        ADAPTATION_ORDER,
        "the legacy context retention (similarity of consecutive replies) is weighted into CAS as a merit; "
        "replies that keep the user's current context while following shifts should earn the most, a "
        "system that repeats one topic through every shift should not",
    ),
    Expectation(
        "judge_personalization",
        ADAPTATION_ORDER,
        "personalization is judged as following the user's wishes, changes of mind included",
    ),
    Expectation(
        "judge_coherence",
        ADAPTATION_ORDER,
        "a reply that answers the previous request fits the dialogue; one that answers an older request "
        "or none breaks its thread",
    ),
)


def kendall_tau(expected_rank: list[float], measured: list[float]) -> float:
    """Kendall's tau over the pairs the construction orders: (concordant - discordant) / ordered
    pairs, between expected ranks (1 = best) and measured scores (higher = better). Pairs the
    construction ties ("stubborn=random") do not count; a measured tie counts as neither. With
    no ties this is the usual tau."""
    concordant = discordant = ordered = 0
    for i in range(len(expected_rank)):
        for j in range(i + 1, len(expected_rank)):
            if expected_rank[i] == expected_rank[j]:
                continue
            ordered += 1
            agreement = (expected_rank[j] - expected_rank[i]) * (measured[i] - measured[j])
            concordant += agreement > 0
            discordant += agreement < 0
    return (concordant - discordant) / ordered if ordered else 0.0


NOT_MEASURED = {
    "measured_order": None,
    "tau": np.nan,
    "tau_ci_low": np.nan,
    "tau_ci_high": np.nan,
    "oracle_vs_random_cliffs_delta": np.nan,
}


def assess(frame: pd.DataFrame, expectation: Expectation, resamples: int = 1000, seed: int = 0) -> dict:
    """One row of the validity table for one metric: measured order, tau with CI, effect, verdict."""
    ranks = expectation.ranks()
    systems = [s for s in ranks if s in set(frame["system"])]
    row = {
        "metric": expectation.metric,
        "check": expectation.check,
        "expected_order": " > ".join(expectation.order),
        "reason": expectation.reason,
    }
    if expectation.metric not in frame or len(systems) < 3:
        return {**row, **NOT_MEASURED, "verdict": "not measured"}
    sign = 1.0 if expectation.higher_is_better else -1.0
    values = {s: frame.loc[frame["system"] == s, expectation.metric].to_numpy(float) for s in systems}
    values = {s: v[~np.isnan(v)] for s, v in values.items()}
    if any(len(v) == 0 for v in values.values()):
        return {**row, **NOT_MEASURED, "verdict": "not measured (a system has no value)"}
    expected_rank = [ranks[s] for s in systems]
    means = [sign * float(np.mean(values[s])) for s in systems]
    tau = kendall_tau(expected_rank, means)
    rng = np.random.default_rng(seed)
    boot = [
        kendall_tau(expected_rank, [sign * float(np.mean(rng.choice(values[s], len(values[s])))) for s in systems])
        for _ in range(resamples)
    ]
    low, high = np.percentile(boot, [2.5, 97.5])
    measured = sorted(systems, key=lambda s: -sign * float(np.mean(values[s])))
    delta = sign * cliffs_delta(values["oracle"], values["random"]) if {"oracle", "random"} <= set(values) else np.nan
    verdict = "pass" if tau >= 0.8 and low > 0 else "fail"
    return {
        **row,
        "measured_order": " > ".join(measured),
        "tau": tau,
        "tau_ci_low": float(low),
        "tau_ci_high": float(high),
        "oracle_vs_random_cliffs_delta": delta,
        "verdict": verdict,
    }


def validity_table(frame: pd.DataFrame, resamples: int = 1000, seed: int = 0) -> pd.DataFrame:
    return pd.DataFrame([assess(frame, e, resamples, seed + i) for i, e in enumerate(EXPECTATIONS)])


def validity_markdown(table: pd.DataFrame, systems: dict[str, int]) -> str:
    """The readable table (rounded; the CSV keeps full precision)."""

    def fmt(x: float) -> str:
        return "n/a" if x != x else f"{x:.2f}"

    lines = [
        "# Metric validity on the calibration systems",
        "",
        "Sessions per system: " + ", ".join(f"{s} {n}" for s, n in systems.items()) + ".",
        "",
        "A metric passes when Kendall's tau between its order and the expected order is at least 0.8 and the "
        "95% bootstrap CI's lower end is above 0. Cliff's delta: oracle over random (1 = every oracle session "
        "scores better).",
        "",
        "Check `adaptation` orders the five systems built to adapt more or less; check `echo` adds the parrot, "
        "which copies the user's words but never follows a shift in what it recommends.",
        "",
        "| metric | check | expected order | measured order | tau [95% CI] | Cliff's delta | verdict |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in table.itertuples():
        ci = f"{fmt(row.tau)} [{fmt(row.tau_ci_low)}, {fmt(row.tau_ci_high)}]"
        measured = row.measured_order if isinstance(row.measured_order, str) else "n/a"
        lines.append(
            f"| {row.metric} | {row.check} | {row.expected_order} | {measured} | {ci} | "
            f"{fmt(row.oracle_vs_random_cliffs_delta)} | {row.verdict} |"
        )
    failed = [
        f"{m} ({c})" for m, c in table.loc[table["verdict"] == "fail", ["metric", "check"]].itertuples(index=False)
    ]
    lines += ["", "Failing metrics: " + (", ".join(failed) if failed else "none") + ".", "", "## Why these orders", ""]
    lines += [f"- {row.metric} ({row.check}): {row.reason}" for row in table.itertuples()]
    return "\n".join(lines) + "\n"
