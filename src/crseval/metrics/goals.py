"""Goal metrics: did the system get the user what it wants, including what it does not say?

They read the simulated user's ground truth (gold constraints with their disclosure, what was said,
the shifts, what the user took, how the session ended), not only its words, so they keep their
meaning under every user profile (crseval.simulate.user.profiles). A film satisfies a constraint when it
has the value (a wish) or lacks it (an exclusion); films outside the catalog satisfy nothing.

- success: 1 when, after the last shift, the user took a recommended film (`user_implies.accepts`)
  that satisfies every gold constraint of that turn; else 0. Without shifts, any such acceptance.
  NaN when the user reacted to no reply after the last shift (the shift is on the session's last turn
  and the user did not leave): nothing can be seen then, and a 0 would fail every system, the oracle
  too. `success_missing_reason` says why success is NaN (None where it is measured).
- turns_to_success: replies from the last shift (or the opening) to that acceptance (the shift's own
  reply is the first); NaN without success.
- abandoned: 1 when the user left (its profile's patience ended), else 0.
- elicitation_rate: of the replies made while the user kept a wish to itself (a gold wish or exclusion
  not said so far), the share that asked about the field of one (or asked an open question).
- undisclosed_met: of the gold wishes (not exclusions: nearly every film satisfies an exclusion) that
  were not volunteered (`on_ask` or `hidden`), the share that a recommended film satisfied while it
  was gold.
- turns_to_undisclosed: per such wish, the replies from the turn it arose to the first film that
  satisfies it (the reply of that turn is the first); a wish never met counts the replies it stayed
  gold plus one, so that a system that never meets it does not look quick; the mean.
- stale_rate: from the first shift on, the share of recommended films that satisfy a superseded wish
  (an earlier focus no longer among the gold wishes) and not the current focus.
"""

from __future__ import annotations

import math

from crseval.core.columns import Column
from crseval.metrics.basic import safe_mean
from crseval.metrics.expectations import ASKING, ELICITATION, ELICITATION_REASON, LAGS, Expectation, column_named
from crseval.metrics.family import (
    FamilyKind,
    never,
    no_backends,
    no_figure_params,
    no_figures,
    no_problems,
    no_settings,
)

NAN = math.nan
OPEN = "open"
# Why success (and so turns_to_success) is NaN, in the text column `success_missing_reason`.
MISSING_REASON = "success_missing_reason"
NO_TURNS = "the session has no turns"
NO_GROUND_TRUTH = "the session has no simulator ground truth (an imported dialogue)"
ONE_TURN = "the session has one turn: the user reacted to no reply"


def last_shift_on_last_turn(turn: int) -> str:
    """The reason of a session whose last shift is on its last turn (crseval.core.config_checks warns of
    a plan that puts it there)."""
    return f"the last shift is on the last turn ({turn}): the user reacted to no reply after it"


SESSION_COLUMNS = (
    Column(
        "success",
        "session success (the user took a film meeting every wish after the last shift)",
        "0-1",
        True,
        ground_truth=True,
    ),
    Column(
        "turns_to_success", "replies from the last shift to the film the user took", "turns", False, ground_truth=True
    ),
    Column(MISSING_REASON, "why success and turns to success were not measured", "text", dtype="string", metric=False),
    Column("abandoned", "the user left before the last turn", "0-1", False, ground_truth=True),
    Column("elicitation_rate", "replies asking about a wish the user kept to itself", "0-1", True, ground_truth=True),
    Column("undisclosed_met", "wishes not volunteered that a recommended film met", "0-1", True, ground_truth=True),
    Column("turns_to_undisclosed", "replies until a wish not volunteered is met", "turns", False, ground_truth=True),
    Column(
        "stale_rate",
        "recommended films serving a superseded wish, not the current one",
        "0-1",
        False,
        ground_truth=True,
    ),
)


def _key(constraint: dict) -> tuple[str, str, bool]:
    return constraint["field"], constraint["value"], constraint["negated"]


class Films:
    """Which catalog films satisfy which constraint (a title outside the catalog satisfies none)."""

    def __init__(self, index):
        self.index = index
        self._values: dict[tuple[str, str], frozenset[str]] = {}

    def values(self, title: str, field: str) -> frozenset[str]:
        if (title, field) not in self._values:
            film_id = self.index.film_id(title)
            values = self.index.film_values(film_id, field) if film_id is not None else ()
            self._values[title, field] = frozenset(values)
        return self._values[title, field]

    def satisfies(self, title: str, constraint: tuple[str, str, bool]) -> bool:
        if self.index.film_id(title) is None:
            return False
        field, value, negated = constraint
        return (value in self.values(title, field)) != negated


def score_session(record: dict, films: Films) -> dict:
    """The goal metrics of one session (all NaN without the simulator's ground truth)."""
    turns = record["turns"]
    if not turns or not all(t.get("user_meta") for t in turns):
        reason = NO_TURNS if not turns else NO_GROUND_TRUTH
        return {**{column.name: NAN for column in SESSION_COLUMNS if column.metric}, MISSING_REASON: reason}
    shifts = [t["turn"] for t in turns if t["user_meta"]["shift_event"]]
    start = shifts[-1] if shifts else turns[0]["turn"]
    return {
        **_success(record, films, start, bool(shifts)),
        "abandoned": _abandoned(record),
        "elicitation_rate": _elicitation_rate(turns),
        **_undisclosed(turns, films),
        "stale_rate": _stale_rate(turns, films),
    }


def _success(record: dict, films: Films, start: int, shifted: bool) -> dict:
    """The user's reaction at turn t judges the reply of turn t - 1: the first acceptance after the
    last shift's reply of a film that meets every gold constraint of turn t. Not measured (NaN, with
    the reason) when the user reacted to no reply after `start`: `start` is the last turn and the user
    did not leave (leaving is a reaction: the session ends with no film taken)."""
    turns = record["turns"]
    for turn in turns:
        if turn["turn"] <= start:
            continue
        gold = [_key(c) for c in turn["user_meta"]["constraints"]]
        taken = (turn.get("user_implies") or {}).get("accepts", [])
        if any(all(films.satisfies(title, c) for c in gold) for title in taken):
            return {"success": 1.0, "turns_to_success": float(turn["turn"] - start), MISSING_REASON: None}
    if start == turns[-1]["turn"] and (record.get("ending") or {}).get("reason") != "abandoned":
        reason = last_shift_on_last_turn(start) if shifted else ONE_TURN
        return {"success": NAN, "turns_to_success": NAN, MISSING_REASON: reason}
    return {"success": 0.0, "turns_to_success": NAN, MISSING_REASON: None}


def _abandoned(record: dict) -> float:
    ending = record.get("ending")
    return NAN if ending is None else float(ending["reason"] == "abandoned")


def _withheld(meta: dict) -> list[tuple[str, str, bool]]:
    """The gold constraints of a turn the user has not said so far."""
    return [_key(c) for c, said in zip(meta["constraints"], meta.get("said", [])) if not said]


def _elicitation_rate(turns: list[dict]) -> float:
    """Replies made while some gold constraint was unsaid (after the user's turn); those that ask
    about its field or ask an open question."""
    asked = opportunities = 0
    for turn in turns:
        withheld = _withheld(turn["user_meta"])
        if not withheld or "system_asks" not in turn:
            continue
        opportunities += 1
        asks = set(turn["system_asks"])
        asked += OPEN in asks or any(field in asks for field, _, _ in withheld)
    return asked / opportunities if opportunities else NAN


def _undisclosed(turns: list[dict], films: Films) -> dict:
    """Wishes not volunteered: the share met by a recommended film while gold, and how soon."""
    gold_replies: dict[tuple[str, str, bool], int] = {}  # replies made while the wish was gold, until met
    met: set[tuple[str, str, bool]] = set()
    for turn in turns:
        meta = turn["user_meta"]
        for constraint, disclosure in zip(meta["constraints"], meta.get("disclosure", [])):
            key = _key(constraint)
            if key[2] or disclosure == "volunteer" or key in met:
                continue
            gold_replies[key] = gold_replies.get(key, 0) + 1
            if any(films.satisfies(title, key) for title in turn["recommended_titles"]):
                met.add(key)
    if not gold_replies:
        return {"undisclosed_met": NAN, "turns_to_undisclosed": NAN}
    return {
        "undisclosed_met": len(met) / len(gold_replies),
        "turns_to_undisclosed": safe_mean(n if key in met else n + 1 for key, n in gold_replies.items()),
    }


def _stale_rate(turns: list[dict], films: Films) -> float:
    superseded: set[tuple[str, str, bool]] = set()
    focus_before = None
    stale = recommended = 0
    for turn in turns:
        meta = turn["user_meta"]
        focus = (meta["focus_field"], meta["focus_value"], False)
        if meta["shift_event"] and focus_before is not None:
            superseded.add(focus_before)
        focus_before = focus
        if not superseded:
            continue
        wishes = {_key(c) for c in meta["constraints"]}
        old = superseded - wishes
        for title in turn["recommended_titles"]:
            recommended += 1
            stale += any(films.satisfies(title, w) for w in old) and not films.satisfies(title, focus)
    return stale / recommended if recommended else NAN


class GoalsFamily:
    """Success, abandonment, elicitation and stale preferences against the simulator's ground truth
    (registered as `goals`)."""

    name = "goals"
    session_columns = SESSION_COLUMNS
    turn_columns = ()

    def __init__(self, context):
        self.films = Films(context.index)

    def score_shard(self, records: list[dict]) -> list[tuple[dict, list[dict]]]:
        return [(score_session(record, self.films), []) for record in records]


def _column(name: str) -> Column:
    return column_named(SESSION_COLUMNS, name)


KIND = FamilyKind(
    name="goals",
    summary="session success, abandonment, elicitation of unsaid wishes and stale preferences (ground truth)",
    scorer=GoalsFamily,
    parse_settings=dict,  # no settings
    backends=no_backends,
    embedding_users=no_settings,
    reads_lda=never,
    checks=no_problems,
    # stale_rate is time-aware (`pools_foci` False): each recommended film against the wishes of its own turn.
    # No adaptation order for success: a lagging system succeeds only if the session has more turns after
    # its last shift than the lag, so its place depends on the schedule, not on its construction alone.
    expectations=(
        Expectation(
            _column("stale_rate"),
            ("oracle", LAGS, "stubborn"),
            "the oracle never serves a superseded wish, a lagging system serves one for k turns after each shift, "
            "the stubborn system serves the first wish all session",
        ),
        Expectation(_column("success"), ELICITATION, ELICITATION_REASON, "elicitation"),
        Expectation(_column("turns_to_undisclosed"), ELICITATION, ELICITATION_REASON, "elicitation"),
        Expectation(
            _column("elicitation_rate"),
            ASKING,
            "only the asker asks about the wishes the user keeps to itself; the others never ask",
            "elicitation",
        ),
    ),
    headline=("success", "stale_rate"),
    figures=no_figures,
    scatter_columns=no_settings,
    distribution_columns=(),
    figure_params=no_figure_params,
)
