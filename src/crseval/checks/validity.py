"""Metric validity: does a metric order the calibration systems as their construction says?

The expected orders are declared beside the columns they are about, each with its reason: by each
metric family (crseval.metrics.families, `FamilyKind.expectations`) and by the judge
(crseval.judge.judge_columns.EXPECTATIONS), as orders over the calibration roles
(crseval.metrics.expectations: every lagging system present ordered by its lag). An order lists the
systems best first, in the metric's direction as its writer declares it. A metric's measured order
is the order of the systems' mean values; agreement with the expected order is Kendall's tau over
the pairs of systems the construction orders, with a percentile bootstrap CI over sessions
(resampled within each system), and the difference between the best and the worst adapting system
present (oracle and random in a full calibration experiment) is given as Cliff's delta. A metric
passes when tau >= 0.8 and the CI's lower end is above 0, and, where the expectation names a twin (the
prompt echo and the stubborn system), the first system's mean is not better than its twin's. Nothing is
tuned to pass: a failing metric is reported as failing.

One verdict is neither: a column that pools a session's foci (`Expectation.pools_foci`: one value from the
session's foci or replies taken together) cannot see a lag when the user's shifts stay within one field, for a
system k turns late still names values of the session's foci. Under a user profile more than half of whose
shifts keep the focus's field (`WITHIN_FIELD`, measured on the calibration sessions by `field_shifts`), such a
column's failing row of an order that ranks the lagging systems apart reads "cannot see a lag under this user"
(`CANNOT_SEE_LAG`) when, without the lagging systems, the column orders the other systems as built; the row's
`note` says so with the share. Failing otherwise, it fails. A time-aware column is judged as ever.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import pandas as pd

from crseval.judge import judge_columns
from crseval.metrics import families
from crseval.metrics.expectations import (
    ADAPTATION,
    ASKER_OVER_LITERAL,
    ASKER_OVER_LITERAL_REASON,
    CHECKS,
    Expectation,
    expand,
    lag_roles,
    separates_lags,
)
from crseval.statistics.effects import cliffs_delta

DECLARED = (*families.expectations(), *judge_columns.EXPECTATIONS)


def _elicitation_of_adaptation(declared: tuple[Expectation, ...]) -> tuple[Expectation, ...]:
    """Every metric of adaptation is also asked to tell the asker from the literal system: under a user
    who keeps wishes to itself, whether it still measures what the user wants is measured, not assumed
    (metrics that compare a reply with what the user said may not)."""
    own = {e.metric for e in declared if e.check == "elicitation"}
    return tuple(
        Expectation(
            e.column,
            ASKER_OVER_LITERAL,
            ASKER_OVER_LITERAL_REASON,
            "elicitation",
            e.higher_first,
            pools_foci=e.pools_foci,
        )
        for e in declared
        if e.check == "adaptation" and e.metric not in own
    )


# Every row of the validity table: the adaptation checks, then the echo checks, then the elicitation
# checks, each in the order of the families' columns, the judge's last.
EXPECTATIONS: tuple[Expectation, ...] = tuple(
    sorted((*DECLARED, *_elicitation_of_adaptation(DECLARED)), key=lambda e: CHECKS.index(e.check))
)


def order_string(groups: list[str]) -> str:
    """An order as the validity table writes it: groups best first, systems tied within a group by "="
    ("oracle > lag1 > stubborn=random"); `order_ranks` and `restrict_order` read it back."""
    return " > ".join(groups)


def order_ranks(order: str) -> dict[str, float]:
    """System -> rank from an order string such as "oracle > lag1 > stubborn=random": position
    1 is best; systems tied by "=" share the mean of the positions they take (2.5 above)."""
    ranks, position = {}, 1
    for group in order.split(">"):
        systems = [s.strip() for s in group.split("=") if s.strip()]
        for system in systems:
            ranks[system] = position + (len(systems) - 1) / 2
        position += len(systems)
    return ranks


def restrict_order(order: str, systems: set[str]) -> str:
    """The order string with only `systems` kept (empty groups dropped)."""
    groups = ["=".join(s.strip() for s in group.split("=") if s.strip() in systems) for group in order.split(">")]
    return order_string([g for g in groups if g])


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


def best_and_worst(systems) -> tuple[str, str] | None:
    """The first and the last of the adaptation order (oracle, lags by k, stubborn, random) among
    `systems`, or None with fewer than two of them."""
    present = [s for group in expand(ADAPTATION, systems) for s in group.split("=") if s in set(systems)]
    return (present[0], present[-1]) if len(present) >= 2 else None


def assess(frame: pd.DataFrame, expectation: Expectation, resamples: int = 1000, seed: int = 0) -> dict:
    """One row of the validity table for one metric: measured order, tau with CI, effect, verdict.
    The calibration roles are the frame's `system` values."""
    roles = set(frame["system"])
    ranks = expectation.ranks(roles)
    systems = [s for s in ranks if s in roles]
    row = {
        "metric": expectation.metric,
        "check": expectation.check,
        "expected_order": order_string(expectation.expected_order(roles)),
        "reason": expectation.reason,
    }
    # three systems at least, or every one of an order that names fewer (the asker over the literal system)
    if expectation.metric not in frame or len(systems) < min(3, len(ranks)):
        return {**row, **NOT_MEASURED, "verdict": "not measured"}
    if expectation.twin and not set(expectation.twin) <= roles:
        return {
            **row,
            **NOT_MEASURED,
            "verdict": f"not measured (no {' or '.join(sorted(set(expectation.twin) - roles))})",
        }
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
    extremes = best_and_worst(list(values))
    delta = sign * cliffs_delta(values[extremes[0]], values[extremes[1]]) if extremes else np.nan
    verdict = "pass" if tau >= 0.8 and low > 0 and not above_twin(expectation, values, sign) else "fail"
    return {
        **row,
        "measured_order": order_string(measured),
        "tau": tau,
        "tau_ci_low": float(low),
        "tau_ci_high": float(high),
        "oracle_vs_random_cliffs_delta": delta,
        "verdict": verdict,
    }


def above_twin(expectation: Expectation, values: dict[str, np.ndarray], sign: float) -> bool:
    """Whether the system the expectation pairs with a twin has the better mean of the two (in the metric's
    direction; equal means are not above)."""
    if not expectation.twin:
        return False
    system, twin = expectation.twin
    return sign * float(np.mean(values[system])) > sign * float(np.mean(values[twin]))


def row_seed(seed: int, expectation: Expectation) -> int:
    """The bootstrap seed of one row, from the row's own identity (metric and check), so that a row's CI
    does not move when a family or a row is added, removed or declared in another order."""
    digest = hashlib.sha256(f"{seed}:{expectation.metric}:{expectation.check}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


# A user whose shifts mostly stay within one field: more than this share of its shifts keep the focus's field.
WITHIN_FIELD = Fraction(1, 2)
# The verdict of a row a column cannot show under such a user (neither pass nor fail; crseval.checks.scorecard
# reads rows whose verdict starts with "cannot see" as not run).
CANNOT_SEE_LAG = "cannot see a lag under this user"


@dataclass(frozen=True)
class FieldShifts:
    """A user profile's shifts in its calibration sessions: how many keep the focus's field (genre to genre),
    of how many."""

    within: int = 0
    total: int = 0

    @property
    def share(self) -> float:
        """The share of the shifts that stay within one field (NaN without a shift)."""
        return self.within / self.total if self.total else math.nan

    @property
    def mostly_within(self) -> bool:
        """More than WITHIN_FIELD of the shifts stay within one field (exactly, as fractions)."""
        return self.total > 0 and Fraction(self.within, self.total) > WITHIN_FIELD

    def described(self) -> str:
        """'0.93 of this user's shifts stay within one field (56 of 60)'."""
        return f"{self.share:.2f} of this user's shifts stay within one field ({self.within} of {self.total})"


def field_shifts(records: Iterable[dict]) -> FieldShifts:
    """The shifts (`shift_events`) of session records of one user profile, each once: a shift the same simulated
    user (session seed) makes at the same turn from the same focus to the same focus counts once, whichever
    systems it met; one stays within one field when its `from_focus` and `to_focus` have the same field."""
    shifts = {
        (
            record["seed"],
            event["turn"],
            *(event[end][key] for end in ("from_focus", "to_focus") for key in ("field", "value")),
        )
        for record in records
        for event in record.get("shift_events") or []
    }
    return FieldShifts(sum(1 for shift in shifts if shift[2] == shift[4]), len(shifts))


def field_shifts_by_profile(records: Iterable[dict], profiles: dict[str, str]) -> dict[str, FieldShifts]:
    """Profile -> its FieldShifts, over the records of the systems `profiles` names (system -> profile)."""
    grouped: dict[str, list[dict]] = {profile: [] for profile in profiles.values()}
    for record in records:
        if record["system"] in profiles:
            grouped[profiles[record["system"]]].append(record)
    return {profile: field_shifts(own) for profile, own in grouped.items()}


def judged_for_lag(
    frame: pd.DataFrame, expectation: Expectation, row: dict, shifts: FieldShifts | None, resamples: int, seed: int
) -> dict:
    """`row` (assess's, of `frame` on `expectation`) with its `note`: a failing row of a column that pools a
    session's foci, of an order that ranks lagging systems apart, under a user whose shifts mostly stay within
    one field, is CANNOT_SEE_LAG when the column orders the other systems as built without the lagging ones
    (assessed as any row); it stays failing, with the reason, when it fails without them too."""
    roles = set(frame["system"]) if "system" in frame else set()
    if (
        row["verdict"] != "fail"
        or not expectation.pools_foci
        or shifts is None
        or not shifts.mostly_within
        or not separates_lags(expectation, roles)
    ):
        return {**row, "note": None}
    others = assess(frame[~frame["system"].isin(lag_roles(roles))], expectation, resamples, seed)
    pooled = f"pools a session's foci; {shifts.described()}"
    if others["verdict"] == "fail":
        return {**row, "note": f"{pooled}, but it fails without the lagging systems too (tau {others['tau']:.2f})"}
    if others["verdict"] != "pass":  # too few systems without them: the failure is not shown to be the lag's
        return {**row, "note": f"{pooled}, but without the lagging systems it is {others['verdict']}"}
    return {
        **row,
        "verdict": CANNOT_SEE_LAG,
        "note": f"{pooled}; without the lagging systems it orders the others as built (tau {others['tau']:.2f})",
    }


def validity_table(
    frame: pd.DataFrame,
    resamples: int = 1000,
    seed: int = 0,
    withholds: bool = True,
    shifts: FieldShifts | None = None,
) -> pd.DataFrame:
    """The validity table of one user profile's calibration sessions. `withholds`: whether the user keeps
    wishes to itself (every profile but `explicit`); if not, asking gains nothing and the elicitation
    checks are not measured. `shifts`: the profile's shifts (`field_shifts`); under a user whose shifts mostly
    stay within one field a pooled column's failing row may read CANNOT_SEE_LAG (`judged_for_lag`). Each
    row's `note` says why a row reads so, or why a pooled column's row still fails (else None)."""
    rows = []
    for e in EXPECTATIONS:
        if e.check == "elicitation" and not withholds:
            row = {
                "metric": e.metric,
                "check": e.check,
                "expected_order": order_string(e.expected_order(set())),
                "reason": e.reason,
                **NOT_MEASURED,
                "verdict": "not measured (the user says every wish)",
                "note": None,
            }
            rows.append(row)
            continue
        own_seed = row_seed(seed, e)
        rows.append(judged_for_lag(frame, e, assess(frame, e, resamples, own_seed), shifts, resamples, own_seed))
    return pd.DataFrame(rows)


def validity_by_profile(
    frame: pd.DataFrame,
    profiles: dict[str, str],
    resamples: int = 1000,
    seed: int = 0,
    shifts: dict[str, FieldShifts] | None = None,
) -> pd.DataFrame:
    """The validity table per user profile: `frame` holds calibration sessions with their role as
    `system` and their user profile as `profile`; each profile's systems are checked among themselves.
    `shifts`: profile -> its shifts (`field_shifts_by_profile`), if measured. A profile's table gets the
    `profile` column first."""
    tables = []
    for profile in dict.fromkeys(profiles.values()):
        own = frame[frame["profile"] == profile]
        table = validity_table(
            own.drop(columns="profile"),
            resamples,
            seed,
            withholds=profile != "explicit",
            shifts=(shifts or {}).get(profile),
        )
        tables.append(table.assign(profile=profile)[["profile", *table.columns]])
    return pd.concat(tables, ignore_index=True)


def validity_markdown(
    table: pd.DataFrame, systems: dict[str, dict[str, int]], shifts: dict[str, FieldShifts] | None = None
) -> str:
    """The readable table (rounded; the CSV keeps full precision), a section per user profile.
    `systems`: profile -> calibration role -> sessions; `shifts`: profile -> its shifts, when measured (each
    profile's section then says whether its shifts stay within one field and what that does to the verdicts)."""
    lines = [
        "# Metric validity on the calibration systems",
        "",
        "A metric passes when Kendall's tau between its order and the expected order is at least 0.8 and the "
        "95% bootstrap CI's lower end is above 0. Cliff's delta: oracle over random (1 = every oracle session "
        "scores better).",
        "",
        "Check `adaptation` orders the five systems built to adapt more or less; check `echo` adds the parrot, "
        "which copies the user's words but never follows a shift in what it recommends; check `prompt_echo` adds "
        "the prompt echo, the stubborn system opening each reply with its own prompt's first line (which names "
        "the user's current wishes), and also fails when the echo scores above the stubborn system, its twin; "
        "check `elicitation` "
        "orders the oracle, the asker (asks for the wishes the user keeps to itself), the literal system (acts on "
        "what was said) and the stubborn and random systems, under a user profile that keeps wishes to itself "
        '(docs/simulation.md, "User profiles").',
        "",
        f'Verdict "{CANNOT_SEE_LAG}": a column that pools a session\'s foci (session-level topic adherence, the '
        "replies' clusters, the legacy context retention) cannot tell a system k turns late from the oracle when "
        f"the user's shifts stay within one field; under a user more than {WITHIN_FIELD} of whose shifts do, its "
        "failing row of an order that ranks the lagging systems apart reads so, where without the lagging "
        "systems it orders the others as built, and adaptation is judged on the time-aware columns (per turn, "
        "per segment, per shift).",
    ]
    for profile, own in table.groupby("profile", sort=False):
        counts = systems.get(profile, {})
        lines += [
            "",
            f"## User profile `{profile}`",
            "",
            "Sessions per system: " + ", ".join(f"{s} {n}" for s, n in counts.items()) + ".",
            *(["", _shifts_sentence(shifts[profile])] if shifts and profile in shifts else []),
            "",
            *_rows(own),
        ]
    lines += ["", "## Why these orders", ""]
    reasons = table.drop_duplicates(["metric", "check"])
    lines += [f"- {row.metric} ({row.check}): {row.reason}" for row in reasons.itertuples()]
    return "\n".join(lines) + "\n"


def _shifts_sentence(shifts: FieldShifts) -> str:
    """What a profile's shifts do to the verdicts of the columns that pool a session's foci, in a sentence."""
    if not shifts.total:
        return "No shift of this user was measured: columns that pool a session's foci are judged as every other."
    said = f"Shifts: {shifts.within} of this user's {shifts.total} stay within one field ({shifts.share:.2f})"
    if shifts.mostly_within:
        return (
            f"{said}, more than {WITHIN_FIELD}: a column that pools a session's foci cannot see a lag under this "
            f'user, and its failing rows that need one read "{CANNOT_SEE_LAG}" where it orders the other systems '
            "as built; time-aware columns are judged as ever."
        )
    return f"{said}, at most {WITHIN_FIELD}: columns that pool a session's foci are judged as every other."


def _rows(table: pd.DataFrame) -> list[str]:
    def fmt(x: float) -> str:
        return "n/a" if x != x else f"{x:.2f}"

    lines = [
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
    lines += ["", "Failing metrics: " + (", ".join(failed) if failed else "none") + "."]
    noted = table[table["note"].notna()] if "note" in table else table.iloc[:0]
    if len(noted):
        lines += ["", *(f"- {row.metric} ({row.check}), {row.verdict}: {row.note}." for row in noted.itertuples())]
    return lines
