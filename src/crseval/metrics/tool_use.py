"""Tool use: how a recommender that calls the catalog toolkit (crseval.catalog.toolkit) searches and commits.

A tool-using system's turn records its calls (`tool_calls`: name, arguments, status ok / error / ignored, a
summary of the result), how the turn ended (`tool_turn_end`), what it committed (`committed_titles`) and how
many calls its model asked for past the per-reply bound (`tool_calls_unlisted`: counted, neither run nor
listed). The records of other systems have none of these keys: every column here is NaN (missing) for a
session none of whose turns has `tool_calls`. A tool-using session that made no call at all has 0 calls (and
NaN rates).

- search_precision, search_recall, search_f1: the constraints a turn's searches asked for against the wishes
  the user had said by then. Per turn with at least one successful `search_films` whose constraints the record
  keeps (SearchReader): asked = the union over those searches of the (field, value, negated) constraints its
  arguments become (`argument_constraints`, the executor's own reading: wanted values by field, plot keywords,
  exclusions; `focus` only weighs and `limit` only counts, so neither is a constraint), read again from the
  arguments when the record keeps them whole, else from the `constraints` the toolkit keeps beside their
  excerpt, so that padding arguments past the record's bound cannot hide a search; said = the turn's gold
  constraints (`user_meta.constraints`) the user has said so far (`user_meta.said`; all of them without
  `said`). Precision |asked & said| / |asked|, recall |asked & said| / |said|, F1 their harmonic mean (0 when
  both are 0). A turn with neither (no said wish, nothing asked) is skipped. A turn with one side empty has F1
  0 and the share over the empty side is not measured: a search that asks nothing while the user said wishes
  has recall 0 and no precision; one that asks for constraints while the user said none has precision 0 and
  no recall (there was nothing to recall: a 0 there would fault the oracle, which searches for every gold
  wish, under a user who keeps them to itself). Each session value is the mean over the turns that have it;
  NaN without such a turn (a system that never searches, a session without the simulator's ground truth).
- stale_search_rate: of the successful searches made at or after the session's first shift
  (`shift_events[*].turn`), the share that ask, positively, for a focus the user moved away from and not for
  the current one. At a turn, the current focus is the `to_focus` of the last shift at or before it; the
  superseded foci are the `from_focus` of those shifts, without the current focus and without the wishes the
  user still holds then (a positive gold constraint of the turn: after a shift that narrows "crime" to "crime
  with Al Pacino", asking for crime is not stale; missing Al Pacino shows in search recall). As
  crseval.metrics.goals' `stale_rate`, for searches instead of films. NaN without shifts or without a search
  after the first.
- unreadable_search_rate: of the successful searches, the share whose record keeps neither the arguments whole
  nor their `constraints` (a session written by hand or by another program). Such searches are left out of
  the search fidelity and stale shares and counted here instead, so that a score resting on few readable
  searches shows as such. NaN without a successful search.
- invalid_call_rate: calls with status "error" over the calls that were run (ok or error; an ignored call, made
  after the turn's recommend or past the call bound, is never run). NaN without a call run.
- unsearched_commit_rate: of the films the session committed (each film of each successful `recommend`), the
  share that no successful `search_films` or `film_details` of the session had returned before the commit
  (earlier in the turn or in an earlier turn; films are told apart by catalog id). NaN without a commit.
- calls_per_turn: calls (every status, the unlisted ones too) per turn of the session.
- tool_calls, tool_errors, tool_ignored, tool_bound_turns: counts of the session's calls (the unlisted ones
  too), of those with status error and ignored (the unlisted ones too: never run), and of the turns that ended
  at the call bound (`tool_turn_end` "bound"); not metrics (bookkeeping the findings page reports).

Per turn (turns.parquet): `search_f1` as above (NaN for a turn not scored) and `tool_error_kinds`, the turn's
distinct error kinds in order of first appearance, as a JSON list of strings (a kind: an error's text up to its
first ":", at most 60 characters; "" when the turn has no error; missing for a turn of a system without tools).
A JSON list, not a joined string: a kind may hold any character, the model's own words among them.

The tool fields are read as the session schema states them (a turn's `tool_calls`: objects with a string name,
a status of ok / error / ignored, arguments and a result that are objects or null, an error that is text or
null, `constraints`, where recorded, a list of at most MAX_CONSTRAINTS constraints; a result's films and film
by whole-number catalog id; `tool_turn_end` one of its four values; `tool_calls_unlisted` a whole number >= 1).
A record that breaks that shape (a shard edited by hand, or written by another program) is a ToolRecordError
naming the session, the turn and the field: counting a call that is not one, or comparing a film id "3" with
3, would give numbers that describe nothing that happened.
"""

from __future__ import annotations

import json
import math

from crseval.catalog.toolkit import (
    DETAILS,
    MAX_CONSTRAINTS,
    RECOMMEND,
    SEARCH,
    SEARCH_FIELDS,
    Catalog,
    ToolError,
    argument_constraints,
)
from crseval.core.columns import Column
from crseval.core.fields import KEYWORD_FIELD
from crseval.metrics.basic import safe_mean
from crseval.metrics.expectations import LAGS, Expectation, column_named
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
KIND_LENGTH = 60  # characters of an error kind (as the findings page reads them)
Key = tuple[str, str, bool]  # (field, value, negated)

SEARCH_F1 = Column("search_f1", "search F1 against the user's said wishes", "0-1", True, ground_truth=True)
SESSION_COLUMNS = (
    Column(
        "search_precision",
        "search precision (asked constraints the user said)",
        "0-1",
        True,
        ground_truth=True,
    ),
    Column("search_recall", "search recall (said wishes the searches asked for)", "0-1", True, ground_truth=True),
    SEARCH_F1,
    Column(
        "stale_search_rate",
        "searches after a shift asking for a superseded focus, not the current one",
        "0-1",
        False,
        ground_truth=True,
    ),
    Column(
        "unreadable_search_rate",
        "successful searches whose constraints the record does not keep, of all successful searches",
        "0-1",
        False,
    ),
    Column("invalid_call_rate", "tool calls refused as errors, of those run", "0-1", False),
    Column("unsearched_commit_rate", "committed films no earlier search or details call returned", "0-1", False),
    Column("calls_per_turn", "tool calls per turn", "calls"),
    Column("tool_calls", "tool calls", "count", metric=False),
    Column("tool_errors", "tool calls with status error", "count", metric=False),
    Column("tool_ignored", "tool calls ignored (after the turn's recommend or past the bound)", "count", metric=False),
    Column("tool_bound_turns", "turns ended at the tool call bound", "count", metric=False),
)
TURN_COLUMNS = (
    SEARCH_F1,
    Column("tool_error_kinds", "the turn's tool error kinds (JSON list)", "text", dtype="string", metric=False),
)
SESSION_NAMES = tuple(column.name for column in SESSION_COLUMNS)


STATUSES = ("ok", "error", "ignored")
TURN_ENDS = ("recommend", "message", "bound", "error")
CONSTRAINT_FIELDS = (*SEARCH_FIELDS, KEYWORD_FIELD)


class ToolRecordError(ValueError):
    """A session record whose tool fields break the session schema's shape; the message names where."""


def _shown(value) -> str:
    """A recorded value as an error message shows it: its JSON kind and, for text and numbers, the value, cut."""
    if value is None:
        return "null"
    if isinstance(value, (list, dict)):
        return f"{'a list' if isinstance(value, list) else 'an object'} of {len(value)}"
    kind = "a boolean" if isinstance(value, bool) else "text" if isinstance(value, str) else "the number"
    return f"{kind} {json.dumps(value, ensure_ascii=True, default=repr)[:60]}"


def _film_id(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def call_problem(call) -> str | None:
    """What makes one recorded tool call unreadable (relative to the call: "status is ..."), or None."""
    if not isinstance(call, dict):
        return f"is {_shown(call)}, not an object"
    for key, kinds, wanted in (
        ("name", (str,), "text"),
        ("arguments", (dict, type(None)), "an object or null"),
        ("result", (dict, type(None)), "an object or null"),
        ("error", (str, type(None)), "text or null"),
    ):
        if not isinstance(call.get(key), kinds):
            return f"{key} is {'missing' if key not in call else _shown(call[key])}, not {wanted}"
    if call.get("status") not in STATUSES:
        return f"status is {_shown(call.get('status'))}, not one of {', '.join(STATUSES)}"
    result = call["result"] or {}
    if "films" in result:
        films = result["films"]
        if not isinstance(films, list):
            return f"result.films is {_shown(films)}, not a list"
        for index, film in enumerate(films):
            if not isinstance(film, dict) or not _film_id(film.get("id")):
                shown = _shown(film.get("id")) if isinstance(film, dict) else _shown(film)
                return f"result.films[{index}] has id {shown}, not a whole number"
    elif "id" in result and not _film_id(result["id"]):
        return f"result.id is {_shown(result['id'])}, not a whole number"
    return _constraints_problem(call["constraints"]) if "constraints" in call else None


def _constraints_problem(constraints) -> str | None:
    """What makes a call's recorded `constraints` unreadable: not a list of at most MAX_CONSTRAINTS
    {field, value, negated} constraints (the session schema's `constraint`)."""
    if not isinstance(constraints, list):
        return f"constraints is {_shown(constraints)}, not a list"
    if len(constraints) > MAX_CONSTRAINTS:
        return f"constraints holds {len(constraints)}; at most {MAX_CONSTRAINTS}"
    for index, constraint in enumerate(constraints):
        if not (
            isinstance(constraint, dict)
            and set(constraint) == {"field", "value", "negated"}
            and constraint["field"] in CONSTRAINT_FIELDS
            and isinstance(constraint["value"], str)
            and constraint["value"]
            and isinstance(constraint["negated"], bool)
        ):
            return f"constraints[{index}] is {_shown(constraint)}, not a constraint (field, value, negated)"
    return None


def _whole_count(value) -> bool:
    return _film_id(value) and value >= 1


def check_tool_fields(record: dict) -> None:
    """Raise ToolRecordError naming the session, turn and field where the record's tool fields cannot be read
    (the module docstring); the first such place, as crseval.core.session_records names a schema break."""
    session = record.get("session_id") if isinstance(record, dict) else None
    turns = record.get("turns") if isinstance(record, dict) else record
    if not isinstance(turns, list):
        raise ToolRecordError(f"session {session}: turns is {_shown(turns)}, not a list")
    for position, turn in enumerate(turns):
        if not isinstance(turn, dict):
            raise ToolRecordError(f"session {session}: turns[{position}] is {_shown(turn)}, not an object")
        where = f"session {session}, turn {turn.get('turn', position)}"
        if "tool_calls" in turn and not isinstance(turn["tool_calls"], list):
            raise ToolRecordError(f"{where}: tool_calls is {_shown(turn['tool_calls'])}, not a list")
        if "tool_turn_end" in turn and turn["tool_turn_end"] not in TURN_ENDS:
            shown = _shown(turn["tool_turn_end"])
            raise ToolRecordError(f"{where}: tool_turn_end is {shown}, not one of {', '.join(TURN_ENDS)}")
        if "tool_calls_unlisted" in turn and not _whole_count(turn["tool_calls_unlisted"]):
            shown = _shown(turn["tool_calls_unlisted"])
            raise ToolRecordError(f"{where}: tool_calls_unlisted is {shown}, not a whole number >= 1")
        for index, call in enumerate(turn.get("tool_calls") or []):
            problem = call_problem(call)
            if problem:
                raise ToolRecordError(f"{where}: tool_calls[{index}] {problem}")


def error_kind(text) -> str:
    """An error's kind: its text up to the first ":", stripped, at most KIND_LENGTH characters."""
    return str(text).split(":", 1)[0].strip()[:KIND_LENGTH]


def _key(constraint) -> Key:
    if isinstance(constraint, dict):
        return constraint["field"], constraint["value"], bool(constraint["negated"])
    return constraint.field, constraint.value, bool(constraint.negated)


def _concept(focus: dict) -> Key:
    return focus["field"], focus["value"], False


def prf(asked: set, said: set) -> tuple[float, float, float] | None:
    """Precision, recall and F1 of `asked` against `said`; None when both are empty (nothing to score). With one
    side empty, the share over the empty side is NaN (not measured) and F1 is 0."""
    if not asked and not said:
        return None
    hits = len(asked & said)
    precision = hits / len(asked) if asked else NAN
    recall = hits / len(said) if said else NAN
    if not asked or not said:
        return precision, recall, 0.0
    f1 = 2 * precision * recall / (precision + recall) if hits else 0.0
    return precision, recall, f1


def said_wishes(meta: dict) -> set[Key]:
    """The gold constraints of a turn the user has said so far (all of them when the record has no `said`)."""
    constraints = meta.get("constraints") or []
    said = meta.get("said")
    if said is None:
        return {_key(c) for c in constraints}
    return {_key(c) for c, told in zip(constraints, said) if told}


def _calls(turn: dict) -> list[dict]:
    return turn.get("tool_calls") or []  # each an object (check_tool_fields)


def _unlisted(turn: dict) -> int:
    """The turn's calls past the per-reply bound: counted in the record, never listed (check_tool_fields)."""
    return turn.get("tool_calls_unlisted", 0)


def _ok(call: dict, name: str) -> bool:
    return call.get("name") == name and call.get("status") == "ok"


def _result_ids(call: dict) -> list:
    """The catalog ids a successful call's result summary names (the films of a search or a commit, the film of
    a details call)."""
    result = call.get("result") or {}
    if "films" in result:
        return [film.get("id") for film in result["films"] if isinstance(film, dict)]
    return [result["id"]] if "id" in result else []


class SearchReader:
    """The constraints of a recorded `search_films` call, read as the executor read them."""

    def __init__(self, catalog: Catalog):
        self.catalog = catalog

    def __call__(self, call: dict) -> set[Key] | None:
        """The (field, value, negated) constraints the call asked for: its arguments read again when the record
        keeps them, else the constraints it keeps beside an excerpt of large ones; None (unreadable) when it
        keeps neither or the arguments cannot be read."""
        arguments = call.get("arguments")
        if isinstance(arguments, dict):
            try:
                return {_key(c) for c in argument_constraints(arguments, self.catalog)[0]}
            except ToolError:
                return None
        if "constraints" in call:  # of the shape check_tool_fields holds it to
            return {_key(c) for c in call["constraints"]}
        return None


def has_tools(record: dict) -> bool:
    """Whether the session is a tool-using system's: one of its turns records `tool_calls`."""
    return any(isinstance(turn, dict) and "tool_calls" in turn for turn in record.get("turns") or [])


def score_session(record: dict, read_search: SearchReader) -> tuple[dict, list[dict]]:
    """The session's columns and each turn's (all NaN, the kinds missing, for a session without tool calls);
    ToolRecordError for tool fields that cannot be read (check_tool_fields)."""
    check_tool_fields(record)
    turns = record.get("turns") or []
    if not has_tools(record):
        return dict.fromkeys(SESSION_NAMES, NAN), [{"search_f1": NAN, "tool_error_kinds": None} for _ in turns]
    calls = [c for t in turns for c in _calls(t)]
    statuses = [c.get("status") for c in calls]
    run = statuses.count("ok") + statuses.count("error")
    unlisted = sum(_unlisted(t) for t in turns)  # never run: ignored, as calls past the turn's bound are
    searches = [read_search(c) for c in calls if _ok(c, SEARCH)]
    fidelity, per_turn = _fidelity(turns, read_search)
    session = {
        "search_precision": safe_mean(s[0] for s in fidelity),
        "search_recall": safe_mean(s[1] for s in fidelity),
        "search_f1": safe_mean(s[2] for s in fidelity),
        "stale_search_rate": _stale_search_rate(record, read_search),
        "unreadable_search_rate": searches.count(None) / len(searches) if searches else NAN,
        "invalid_call_rate": statuses.count("error") / run if run else NAN,
        "unsearched_commit_rate": _unsearched_commit_rate(turns),
        "calls_per_turn": (len(calls) + unlisted) / len(turns) if turns else NAN,
        "tool_calls": float(len(calls) + unlisted),
        "tool_errors": float(statuses.count("error")),
        "tool_ignored": float(statuses.count("ignored") + unlisted),
        "tool_bound_turns": float(sum(1 for t in turns if t.get("tool_turn_end") == "bound")),
    }
    kinds = [_error_kinds(t) for t in turns]
    return session, [{"search_f1": f1, "tool_error_kinds": k} for f1, k in zip(per_turn, kinds)]


def _fidelity(turns: list[dict], read_search: SearchReader) -> tuple[list[tuple[float, float, float]], list[float]]:
    """(precision, recall, F1) of every turn scored, and each turn's F1 (NaN where not scored)."""
    scored, per_turn = [], []
    for turn in turns:
        meta = turn.get("user_meta")
        searches = [read_search(c) for c in _calls(turn) if _ok(c, SEARCH)]
        searches = [s for s in searches if s is not None]
        value = prf(set().union(*searches), said_wishes(meta)) if searches and meta else None
        if value is not None:
            scored.append(value)
        per_turn.append(value[2] if value is not None else NAN)
    return scored, per_turn


def _stale_search_rate(record: dict, read_search: SearchReader) -> float:
    shifts = sorted(
        (s for s in record.get("shift_events") or [] if isinstance(s, dict) and "turn" in s), key=lambda s: s["turn"]
    )
    if not shifts:
        return NAN
    stale = searched = 0
    for turn in record["turns"]:
        before = [s for s in shifts if s["turn"] <= turn["turn"]]
        if not before:
            continue
        current = _concept(before[-1]["to_focus"])
        meta = turn.get("user_meta") or {}
        wishes = {_key(c) for c in meta.get("constraints") or [] if not c["negated"]}
        superseded = {_concept(s["from_focus"]) for s in before} - {current} - wishes
        for call in _calls(turn):
            asked = read_search(call) if _ok(call, SEARCH) else None
            if asked is None:
                continue
            searched += 1
            stale += bool(asked & superseded) and current not in asked
    return stale / searched if searched else NAN


def _unsearched_commit_rate(turns: list[dict]) -> float:
    returned: set = set()
    committed = unsearched = 0
    for turn in turns:
        for call in _calls(turn):
            if _ok(call, SEARCH) or _ok(call, DETAILS):
                returned.update(_result_ids(call))
            elif _ok(call, RECOMMEND):
                films = _result_ids(call)
                committed += len(films)
                unsearched += sum(1 for film in films if film not in returned)
    return unsearched / committed if committed else NAN


def _error_kinds(turn: dict) -> str | None:
    """The turn's distinct error kinds as a JSON list ("" without an error); None for a turn without tools."""
    if "tool_calls" not in turn:
        return None
    kinds = list(dict.fromkeys(error_kind(c.get("error")) for c in _calls(turn) if c.get("status") == "error"))
    return json.dumps(kinds, ensure_ascii=False) if kinds else ""


class ToolUseFamily:
    """Search fidelity, stale searches, invalid calls and unsearched commits of tool-using systems (registered as
    `tool_use`); NaN for systems without tool calls."""

    name = "tool_use"
    session_columns = SESSION_COLUMNS
    turn_columns = TURN_COLUMNS

    def __init__(self, context):
        self.read_search = SearchReader(Catalog(context.index))

    def score_shard(self, records: list[dict]) -> list[tuple[dict, list[dict]]]:
        return [score_session(record, self.read_search) for record in records]


def _column(name: str) -> Column:
    return column_named(SESSION_COLUMNS, name)


# The calibration systems through the toolkit (`tools: true`) search once a turn for the constraints they serve
# (crseval.simulate.systems.calibration): the oracle the current gold constraints, lag<k> those of k turns earlier, the
# stubborn system the first turn's; the random system commits random films without any search. Its search
# columns are NaN, and the validity check does not measure an order in which a system has no value, so the
# search orders leave it out.
#
# No order on search precision and F1: the calibration systems search for every gold wish, the ones the user
# keeps to itself too, so against the wishes said their precision depends on how much the user withholds at the
# turn each one serves, not on how closely it follows the user. Under `explicit` (every wish said) the oracle
# scores 1 and the adaptation order holds; under `realistic` it does not (80 sessions of 8 turns: F1 oracle
# 0.27, lag2 0.24, stubborn 0.22, lag1 0.21). Nor on stale searches beyond the oracle: when the segments
# between shifts are shorter than the lag, a lagging system asks for a superseded focus as often as the
# stubborn system, or more (the stubborn system's first focus is often still wished after a shift that narrows
# it): stale searches under `explicit`, lag2 0.87, stubborn 0.84.
SEARCHERS = ("oracle", LAGS, "stubborn")
EXPECTATIONS = (
    Expectation(
        _column("search_recall"),
        SEARCHERS,
        "each searches once a turn for every gold wish of the turn it serves: the oracle for the current ones, "
        "which hold every wish the user has said (recall 1 under every profile), a lagging system for those of "
        "k turns earlier, the stubborn system for the first turn's (the random system makes no search)",
    ),
    Expectation(
        _column("stale_search_rate"),
        ("oracle", f"{LAGS}=stubborn"),
        "the oracle never asks for a superseded focus (0); a lagging system asks for the old focus for k turns "
        "after each shift, the stubborn system for the first focus while it is superseded",
    ),
    Expectation(
        _column("unsearched_commit_rate"),
        (f"oracle={LAGS}=stubborn", "random"),
        "the oracle, lagging and stubborn systems commit films their turn's search returned (0); the random system "
        "commits random films without any search (1)",
    ),
)

KIND = FamilyKind(
    name="tool_use",
    summary="tool use of systems that call the catalog toolkit: search fidelity, stale searches, invalid calls",
    scorer=ToolUseFamily,
    parse_settings=dict,  # no settings
    backends=no_backends,
    embedding_users=no_settings,
    reads_lda=never,
    checks=no_problems,
    expectations=EXPECTATIONS,
    headline=(),  # not selected by default: none of its metrics is among `stats.metrics`' default
    figures=no_figures,
    scatter_columns=no_settings,
    distribution_columns=(),
    figure_params=no_figure_params,
)
