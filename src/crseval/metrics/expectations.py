"""What the calibration systems should show on a metric: expected orders over calibration roles.

The calibration systems (crseval.simulate.systems.calibration) are built to adapt more or less to the
user's shifts; their roles (`calibration_roles`) are `oracle`, `lag<k>` (serves the wishes of k
turns earlier), `stubborn`, `random`, `parrot`, and, for a user who keeps wishes to itself, `literal`
(acts on what the user said) and `asker` (asks for what it did not say), and `prompt_echo` (the stubborn
system opening each reply with its own prompt's first line). An expected order lists roles best first, "a=b"
for roles expected to tie, and `LAGS` for every lagging system present, ordered by k (lag1 before
lag2 before lag3 ...), so that one order holds whichever lags an experiment runs. Whoever declares
a column declares what its calibration should show (a metric family's `FamilyKind.expectations`,
the judge's crseval.judge.judge_columns.EXPECTATIONS), each with its reason and whether the column pools
a session's foci without their time (`pools_foci`: then it cannot see a lag under a user whose shifts stay
within one field); crseval.checks.validity tests them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from crseval.core.columns import Column

# Every lagging system present, by its lag k: lag1, lag2, lag3 ...
LAGS = "lag<k>"
_LAG = re.compile(r"lag(\d+)")
# The calibration systems, best to worst adaptation by construction.
ADAPTATION = ("oracle", LAGS, "stubborn", "random")
# With the parrot: it echoes the user's words but recommends films of the first focus whatever the
# user now wants, so it adapts no more than the stubborn system. A metric of adaptation that ranks
# it higher rewards copying the user instead of following them.
ECHO = ("oracle", LAGS, "parrot=stubborn", "random")
ECHO_REASON = (
    "the parrot echoes the user's message but recommends films of the first focus after every shift, as "
    "the stubborn system does: a metric of adaptation must not rank echoing above following the user"
)
# With the prompt echo (crseval.simulate.systems.calibration.PromptEchoAgent): the stubborn system, each reply opened by
# the first line of its own prompt, which names the user's current wishes. It follows the user no better than
# its twin, the stubborn system (the same users, films and answers): it ranks below every system that follows
# the user and must not score above its twin. A metric that ranks it higher credits words the system copied
# from its prompt. Nothing is expected between it, its twin and the random system: a metric that credits no
# copied words may also take from the echo what its answer says in its prompt's words ("for genre drama"), and
# the echo copies the user's wishes as its prompt restates them.
PROMPT_ECHO = ("oracle", LAGS, "stubborn=random=prompt_echo")
PROMPT_ECHO_TWIN = ("prompt_echo", "stubborn")  # (the echoing system, its twin without the echo)
PROMPT_ECHO_REASON = (
    "the prompt echo opens each reply with its prompt's first line, which names the user's current wishes, and "
    "then answers as the stubborn system, its twin, does: a metric of adaptation must rank it below the systems "
    "that follow the user, and not above its twin"
)
# With a user who keeps wishes to itself (a profile other than `explicit`): the oracle knows every wish,
# the asker asks for the ones not said before it recommends, the literal system acts on what was said
# only, the stubborn and the random systems serve no current wish.
ELICITATION = ("oracle", "asker", "literal", "stubborn=random")
ELICITATION_REASON = (
    "when the user keeps wishes to itself, a system that asks for them serves it better than one that acts "
    "only on what was said, and the oracle, which knows every wish, best"
)
ASKING = ("asker", "oracle=literal=stubborn=random")
# The asker and the literal system differ only in that the asker asks: a metric of what the user wants
# must tell them apart (one pair, so its bootstrap CI says whether it does).
ASKER_OVER_LITERAL = ("asker", "literal")
ASKER_OVER_LITERAL_REASON = (
    "the asker and the literal system differ only in that the asker asks for the wishes the user keeps to "
    "itself: a metric of whether the system gives the user what it wants ranks the asker higher; a metric "
    "that compares replies with what the user said may not"
)
# What a row tests: the five adapting systems, those with the parrot, those with the prompt echo, or (under a
# user who keeps wishes to itself) the systems that differ in what they learn of the user's wishes.
CHECKS = ("adaptation", "echo", "prompt_echo", "elicitation")


def lag_roles(roles: Iterable[str]) -> list[str]:
    """The lagging systems' roles among `roles`, by their lag (lag2 before lag10)."""
    lags = {role: int(match[1]) for role in roles if (match := _LAG.fullmatch(role))}
    return sorted(lags, key=lags.get)


def expand(order: tuple[str, ...], roles: Iterable[str]) -> tuple[str, ...]:
    """`order` with `LAGS` replaced by the lagging systems among `roles`: in a group of its own, one
    group per lag by k; within a tie ("oracle=lag<k>"), tied members. Groups left empty are dropped."""
    lags = lag_roles(roles)
    expanded: list[str] = []
    for group in order:
        if group == LAGS:
            expanded += lags
            continue
        members = [name for member in group.split("=") for name in (lags if member == LAGS else [member])]
        if members:
            expanded.append("=".join(members))
    return tuple(expanded)


@dataclass(frozen=True)
class Expectation:
    """The expected order of the calibration systems on one column, best first in the column's
    direction as its writer declares it."""

    column: Column
    order: tuple[str, ...]  # calibration roles best first; "a=b" for a tie, LAGS for every lag by k
    reason: str
    check: str = "adaptation"  # "adaptation" (the five adapting systems), "echo" (the parrot too) or "elicitation"
    # Only for a metric without a declared direction (a descriptive statistic): whether the
    # construction predicts higher values for the systems listed first.
    higher_first: bool | None = None
    # (a system, its twin): the first must not score above the second (the prompt echo over the stubborn
    # system); the row is not measured without the first
    twin: tuple[str, str] | None = None
    # Whether the column pools a session's foci (or its replies) without their time: one value from the
    # session's foci or replies taken together (session-level topic adherence, the replies' clusters), where a
    # time-aware column compares each turn or each segment after a shift with what the user wants then (TAS per
    # turn or segment, recovery). A lagging system still names values of the session's foci, so a pooled column
    # cannot see a lag when the user's shifts stay within one field; crseval.checks.validity marks such a
    # failing row instead of failing it. Declared by whoever declares the column, on each of its expectations.
    pools_foci: bool = False

    def __post_init__(self):
        if self.check not in CHECKS:
            raise ValueError(f"validity of {self.column.name}: check {self.check!r} is not one of {CHECKS}")

    @property
    def metric(self) -> str:
        return self.column.name

    @property
    def higher_is_better(self) -> bool:
        declared = self.column.higher_is_better
        if declared is None and self.higher_first is None:
            raise ValueError(f"validity of {self.metric}: the metric has no direction; say `higher_first`")
        if declared is not None and self.higher_first is not None:
            raise ValueError(f"validity of {self.metric}: its direction is declared by its family, not here")
        return declared if declared is not None else self.higher_first

    def expected_order(self, roles: Iterable[str]) -> tuple[str, ...]:
        """The order over the calibration roles `roles` has (lags expanded; roles absent stay listed)."""
        return expand(self.order, roles)

    def ranks(self, roles: Iterable[str]) -> dict[str, int]:
        """Role -> expected rank (1 = best; tied roles share a rank), lags expanded over `roles`."""
        return {
            system: rank
            for rank, group in enumerate(self.expected_order(roles), start=1)
            for system in group.split("=")
        }


def prompt_echo(column: Column, pools_foci: bool = False) -> Expectation:
    """The `prompt_echo` check of a column: the prompt echo below the systems that follow the user, and not
    above its twin."""
    return Expectation(
        column, PROMPT_ECHO, PROMPT_ECHO_REASON, "prompt_echo", twin=PROMPT_ECHO_TWIN, pools_foci=pools_foci
    )


def separates_lags(expectation: Expectation, roles: Iterable[str]) -> bool:
    """Whether the expectation's order ranks the lagging systems among `roles` apart from every other system
    (`LAGS` a group of its own: the adaptation, echo and prompt-echo orders), so that a column must see a lag
    to pass it; False when `roles` holds no lagging system."""
    return bool(lag_roles(roles)) and LAGS in expectation.order


def column_named(columns: tuple[Column, ...], name: str) -> Column:
    """The declaration of `name` among `columns` (a KeyError naming it otherwise)."""
    for column in columns:
        if column.name == name:
            return column
    raise KeyError(f"column {name!r} is not among the declared columns")
