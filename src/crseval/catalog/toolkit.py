"""The catalog toolkit a tool-using recommender calls: search the films, read one film, commit recommendations.

Declared once in the OpenAI function format (`TOOLS`), which every tool-calling chat API takes:
- `search_films`: films with the values asked for by field (genre, actor, director, writer, language,
  year), without the values in `exclude`, matching plot `keywords`, the values in `focus` weighing most;
  ranked by the retrieval the built-in agents use (crseval.catalog.retrieval), films the session already
  committed left out; at most `limit` films, each with its id, title, year and a few fields;
- `film_details`: one film's fields and plot, the plot cut to a bound;
- `recommend`: commits the turn's recommendations (film ids) and the message the user reads. Only a
  `recommend` registers a recommendation, and the first one of a turn ends it: any call after it, in the same
  reply of the model or not, is recorded as ignored and never run, so one turn cannot commit twice (nor commit
  and then abstain, which is how a commit protocol is gamed).

Values are matched to the catalog's without regard to case; a value the catalog does not hold is reported
back to the caller (`unknown`), never guessed. Every call is bounded: the size of its arguments, the values
of each field (and of `exclude`, `focus`, the plot keywords `keywords` names), the films one search returns,
the films one commit takes, the length of the message, the calls of a turn, the size of each result handed
back to the model. A call that breaks a bound or the schema, names an unknown tool or
an unknown film, or sends arguments that are not a JSON object is an error: recorded with the reason and
returned to the model as an error result, so that it can correct itself within the turn's bound. Arguments are
read as strict JSON: a key given twice, NaN or Infinity, a number past MAX_NUMBER_DIGITS digits or out of a
double's range, nesting past MAX_ARGUMENT_DEPTH, or a lone UTF-16 surrogate (which no UTF-8 record can hold) is
an error naming it, never a guess at what was meant. Every text handed back, an error's too, fits
`tool_limits.result_chars`.

`ToolTurn` runs one turn's calls and keeps its record (crseval.core.schemas session.schema.yaml, a turn's
`tool_calls`, `committed_titles`, `tool_turn_end` and `tool_calls_unlisted`). The deterministic tool-using
systems and the LLM `tools` agent both go through it, so their records are alike. The record keeps what the
tool_use metrics read whatever the model sends: arguments past RECORD_ARGUMENT_CHARS are kept as an excerpt,
but a search's constraints (at most MAX_CONSTRAINTS) are kept whole beside it, so padding cannot hide a
search; calls dropped at the per-reply bound are counted (`tool_calls_unlisted`), so a flood cannot hide calls.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field

import numpy as np

from crseval.catalog.index import CatalogIndex
from crseval.catalog.retrieval import Retriever
from crseval.core.fields import CONCEPT_FIELDS, KEYWORD_FIELD
from crseval.core.io import strict_json_loads
from crseval.language.tracker import Constraint
from crseval.llm.base import clean_unicode

SEARCH, DETAILS, RECOMMEND = "search_films", "film_details", "recommend"
SEARCH_FIELDS = tuple(f for f in CONCEPT_FIELDS if f != KEYWORD_FIELD)  # genre, actor, director, writer, language, year
MAX_RESULTS = 20
MAX_COMMIT = 10
MAX_MESSAGE_CHARS = 2_000
MAX_PLOT_CHARS = 600
MAX_VALUES = 20  # values per field (and in exclude, focus; plot keywords found in keywords)
# the constraints one search asks for: MAX_VALUES by each field, in `exclude` and among the plot keywords
MAX_CONSTRAINTS = (len(SEARCH_FIELDS) + 2) * MAX_VALUES
RECORD_ARGUMENT_CHARS = 1_000  # arguments larger than this are recorded as an excerpt (a search's constraints whole)
MAX_ARGUMENT_DEPTH = 8  # containers nested in one call's arguments (the tools' own need 2: an object of lists)
MAX_NUMBER_DIGITS = 20  # digits of one integer in the arguments (a film id, a limit, a year)
UNKNOWN_VALUE_CHARS = 80  # of a value the catalog does not hold, as it is reported back and recorded
_VALUES = {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}, "maxItems": MAX_VALUES}]}

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": SEARCH,
            "description": (
                "Search the movie catalog. Give the values the films must have by field, values to leave out, "
                "plot keywords, and the values that matter most right now. Returns the best matching films."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    **{
                        name: {**_VALUES, "description": f"{name} value(s) every film must have"}
                        for name in SEARCH_FIELDS
                    },
                    "exclude": {
                        "type": "array",
                        "items": {"type": "string"},
                        "maxItems": MAX_VALUES,
                        "description": "values the films must not have (any field; 'field:value' names the field)",
                    },
                    "keywords": {"type": "string", "description": "words the plot should be about"},
                    "focus": {
                        "type": "array",
                        "items": {"type": "string"},
                        "maxItems": MAX_VALUES,
                        "description": "the values the user asked for most recently, which weigh most",
                    },
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_RESULTS, "description": "films"},
                },
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": DETAILS,
            "description": "The fields and plot of one film of the catalog, by its id.",
            "parameters": {
                "type": "object",
                "properties": {"id": {"type": "integer", "description": "the film's id"}},
                "required": ["id"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": RECOMMEND,
            "description": (
                "Recommend films to the user: the ids of the films, and the message the user reads. This ends "
                "your turn; only films given here count as recommended."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "film_ids": {
                        "type": "array",
                        "items": {"type": "integer"},
                        "minItems": 1,
                        "maxItems": MAX_COMMIT,
                    },
                    "message": {"type": "string", "maxLength": MAX_MESSAGE_CHARS},
                },
                "required": ["film_ids", "message"],
                "additionalProperties": False,
            },
        },
    },
]
TOOL_NAMES = tuple(tool["function"]["name"] for tool in TOOLS)


@dataclass(frozen=True)
class ToolLimits:
    """The bounds of the toolkit (a system's `tool_limits`, an entry's own: not filled into the config); the
    schema's description of each key states its default (tests/test_toolkit.py holds the two together)."""

    calls_per_turn: int = 8  # tool calls one turn may make; then the turn ends
    argument_chars: int = 10_000  # size of one call's arguments
    result_chars: int = 4_000  # size of one result handed back to the model
    search_results: int = 5  # films a search returns when it gives no `limit`

    @classmethod
    def from_config(cls, section: dict | None) -> ToolLimits:
        return cls(**(section or {}))


class ToolError(ValueError):
    """A call the toolkit refuses; the message says why and goes back to the model."""


def _listed(value, name: str) -> list[str]:
    if value is None:
        return []
    values = [value] if isinstance(value, (str, int)) and not isinstance(value, bool) else value
    if not isinstance(values, list) or not all(isinstance(v, (str, int)) and not isinstance(v, bool) for v in values):
        raise ToolError(f"{name} must be a string or a list of strings")
    if len(values) > MAX_VALUES:
        raise ToolError(f"{name} holds {len(values)} values; at most {MAX_VALUES}")
    return [str(v).strip() for v in values if str(v).strip()]


def _unknown(name: str, text: str) -> str:
    """A value the catalog does not hold as it is reported: cut, since the model may send any text."""
    return f"{name} {_excerpt(text, UNKNOWN_VALUE_CHARS)}"


class Catalog:
    """Catalog values by lower-cased spelling, per field and over every field (for `exclude` and `focus`)."""

    def __init__(self, index: CatalogIndex):
        self.index = index
        self.by_field = {f: {v.lower(): v for v in index.values(f)} for f in (*SEARCH_FIELDS, KEYWORD_FIELD)}

    def value(self, name: str, text: str) -> str | None:
        return self.by_field[name].get(text.lower())

    def anywhere(self, text: str) -> tuple[str, str] | None:
        """(field, value) of `text`: in the field it names ("director:Fritz Lang"), else in the first field that
        holds it, in the order of SEARCH_FIELDS, then plot keywords."""
        name, sep, rest = text.partition(":")
        if sep and name.strip() in self.by_field:
            value = self.value(name.strip(), rest.strip())
            return (name.strip(), value) if value else None
        for name in (*SEARCH_FIELDS, KEYWORD_FIELD):
            value = self.value(name, text)
            if value is not None:
                return name, value
        return None


def argument_constraints(arguments: dict, catalog: Catalog) -> tuple[list[Constraint], set, list[str]]:
    """The constraints a `search_films` call asks for (wanted values by field, keywords as plot keywords, excluded
    values), the (field, value) pairs of its `focus`, and the values the catalog does not hold. ToolError for
    arguments of the wrong shape."""
    if not isinstance(arguments, dict):
        raise ToolError("the arguments must be a JSON object")
    known = {*SEARCH_FIELDS, "exclude", "keywords", "focus", "limit"}
    unknown_keys = sorted(str(key) for key in arguments if key not in known)
    if unknown_keys:
        raise ToolError(f"unknown argument(s) {', '.join(unknown_keys)[:200]}; allowed: {', '.join(sorted(known))}")
    constraints, unknown = [], []
    for name in SEARCH_FIELDS:
        for text in _listed(arguments.get(name), name):
            value = catalog.value(name, text)
            (constraints.append(Constraint(name, value, False)) if value else unknown.append(_unknown(name, text)))
    constraints += _plot_keywords(arguments.get("keywords"), catalog)
    for text in _listed(arguments.get("exclude"), "exclude"):
        found = catalog.anywhere(text)
        (
            constraints.append(Constraint(found[0], found[1], True))
            if found
            else unknown.append(_unknown("exclude", text))
        )
    focus = set()
    for text in _listed(arguments.get("focus"), "focus"):
        found = catalog.anywhere(text)
        if found:
            focus.add(found)
    return list(dict.fromkeys(constraints)), focus, unknown


def _plot_keywords(keywords, catalog: Catalog) -> list[Constraint]:
    """The catalog's plot keywords a `keywords` text names: a comma-separated keyword as it is, else its words.
    At most MAX_VALUES distinct ones, as for every other field, so that a search's constraints stay bounded."""
    if keywords is None:
        return []
    if not isinstance(keywords, str):
        raise ToolError("keywords must be a string")
    found: dict[str, None] = {}
    for chunk in keywords.split(","):
        whole = catalog.value(KEYWORD_FIELD, chunk.strip())
        for word in [chunk.strip()] if whole else re.findall(r"[\w'-]+", chunk):
            value = catalog.value(KEYWORD_FIELD, word)
            if value:
                found[value] = None
    if len(found) > MAX_VALUES:
        raise ToolError(f"keywords name {len(found)} plot keywords of the catalog; at most {MAX_VALUES}")
    return [Constraint(KEYWORD_FIELD, value, False) for value in found]


def _whole(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ToolError(f"{name} must be a whole number, not {json.dumps(value)[:40]}")
    return value


@dataclass
class CallOutcome:
    """One executed call: what the model is told (`result`, JSON text) and what the record keeps."""

    result: dict  # handed back to the model
    summary: dict  # kept in the record
    committed: list[int] | None = None  # the films a recommend committed
    message: str | None = None  # a recommend's message
    constraints: list[Constraint] | None = None  # what a search asked for, as argument_constraints read it


class Toolkit:
    """The toolkit of one session: the catalog, the retrieval and its seeded tie-breaking, the films committed
    so far (never offered again) and every film a search or a details call returned (what the session saw)."""

    def __init__(self, index: CatalogIndex, seed: int, limits: ToolLimits = ToolLimits(), rng=None):
        self.index = index
        self.catalog = Catalog(index)
        self.retriever = Retriever(index)
        self.rng = rng if rng is not None else np.random.default_rng(seed)
        self.limits = limits
        self.committed: set[int] = set()
        self.returned: set[int] = set()

    def _film(self, film_id) -> int:
        film_id = _whole(film_id, "a film id")
        if film_id not in self.index.films.index:
            raise ToolError(f"no film with id {film_id} in the catalog")
        return film_id

    def _card(self, film_id: int) -> dict:
        row = self.index.films.loc[film_id]
        return {
            "id": int(film_id),
            "title": self.index.title(film_id),
            "year": self.index.year(film_id),
            "genre": list(row["genre"][:3]),
            "director": list(row["director"][:2]),
            "actor": list(row["actor"][:3]),
        }

    def search(self, arguments: dict) -> CallOutcome:
        constraints, focus, unknown = argument_constraints(arguments, self.catalog)
        limit = _whole(arguments.get("limit", self.limits.search_results), "limit")
        if not 1 <= limit <= MAX_RESULTS:
            raise ToolError(f"limit must be between 1 and {MAX_RESULTS}")
        films = self.retriever.rank(constraints, self.committed, limit, self.rng, emphasis=focus)
        self.returned.update(films)
        result = {"films": [self._card(f) for f in films], "total": len(films)}
        if unknown:
            result["unknown"] = unknown[:MAX_VALUES]
        summary = {"films": [{"id": f, "title": self.index.title(f)} for f in films], "total": len(films)}
        unknown_part = {"unknown": unknown[:MAX_VALUES]} if unknown else {}
        return CallOutcome(result, summary | unknown_part, constraints=constraints)

    def details(self, arguments: dict) -> CallOutcome:
        if set(arguments) != {"id"}:
            raise ToolError("film_details takes exactly one argument, id")
        film_id = self._film(arguments["id"])
        self.returned.add(film_id)
        row = self.index.films.loc[film_id]
        plot = str(row["plot"] or "")
        result = self._card(film_id) | {
            "genre": list(row["genre"]),
            "director": list(row["director"]),
            "actor": list(row["actor"][:10]),
            "writer": list(row["writer"][:5]),
            "language": list(row["language"]),
            "plot": plot if len(plot) <= MAX_PLOT_CHARS else plot[:MAX_PLOT_CHARS] + "…",
        }
        return CallOutcome(result, {"id": film_id, "title": self.index.title(film_id)})

    def recommend(self, arguments: dict) -> CallOutcome:
        extra = sorted(str(key) for key in arguments if key not in ("film_ids", "message"))
        if extra:
            raise ToolError(f"recommend takes film_ids and message, not {', '.join(extra)[:200]}")
        ids, message = arguments.get("film_ids"), arguments.get("message")
        if not isinstance(ids, list) or not ids:
            raise ToolError("film_ids must be a non-empty list of film ids")
        if len(ids) > MAX_COMMIT:
            raise ToolError(f"film_ids holds {len(ids)} films; at most {MAX_COMMIT} a turn")
        if not isinstance(message, str) or not _visible(message):
            raise ToolError("message must be the text the user reads")
        if len(message) > MAX_MESSAGE_CHARS:
            raise ToolError(f"message holds {len(message)} characters; at most {MAX_MESSAGE_CHARS}")
        films = list(dict.fromkeys(self._film(f) for f in ids))
        self.committed.update(films)
        summary = {"films": [{"id": f, "title": self.index.title(f)} for f in films]}
        return CallOutcome({"committed": [f["title"] for f in summary["films"]]}, summary, films, message.strip())

    def run(self, name: str, arguments: dict) -> CallOutcome:
        if name == SEARCH:
            return self.search(arguments)
        if name == DETAILS:
            return self.details(arguments)
        if name == RECOMMEND:
            return self.recommend(arguments)
        raise ToolError(f"unknown tool {name[:80]!r}; the tools are {', '.join(TOOL_NAMES)}")


def _excerpt(text: str, limit: int = 300) -> str:
    text = clean_unicode(text)
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} characters)"


def _visible(text: str) -> bool:
    """Whether `text` has a character a reader sees: not only spaces, controls and format marks (ZWSP, RLM)."""
    return any(ch.isprintable() and not ch.isspace() for ch in text)


def strict_json(text: str):
    """`text` decoded as strict JSON (crseval.core.io.strict_json_loads: repeated keys, NaN and Infinity,
    out-of-range numbers and integers of more than MAX_NUMBER_DIGITS digits refused); ToolError naming what
    is wrong."""
    try:
        return strict_json_loads(text, max_int_digits=MAX_NUMBER_DIGITS)
    except ValueError as error:
        raise ToolError(f"the arguments are not JSON: {str(error)[:120]}") from None


def _shape_problem(value) -> str | None:
    """What makes decoded arguments unusable beyond their syntax: nesting past MAX_ARGUMENT_DEPTH, or a lone
    surrogate in a key or string (walked without recursion, so any depth is safe to check)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)) and depth > MAX_ARGUMENT_DEPTH:
            return f"the arguments nest too deep: more than {MAX_ARGUMENT_DEPTH} levels"
        if isinstance(item, dict):
            stack.extend((key, depth) for key in item)
            stack.extend((member, depth + 1) for member in item.values())
        elif isinstance(item, list):
            stack.extend((member, depth + 1) for member in item)
        elif isinstance(item, str) and clean_unicode(item) != item:
            return "the arguments are not valid text: a lone UTF-16 surrogate"
    return None


@dataclass
class ToolTurn:
    """One turn's tool calls against a session's toolkit: runs each call in order, keeps the record, and says
    when the turn is over (a commit, the call bound)."""

    toolkit: Toolkit
    calls: list[dict] = field(default_factory=list)
    unlisted: int = 0  # calls the model asked for past the per-reply bound: counted, neither run nor listed
    committed: list[int] | None = None
    message: str | None = None
    end: str | None = None  # "recommend", "bound", or set by the caller: "message", "error"

    @property
    def over(self) -> bool:
        return self.end is not None

    def call(self, step: int, name, arguments) -> str:
        """Run one call (`arguments`: the JSON text the model sent, or an object); the result for the model
        (JSON text within `result_chars`). After the turn's commit, or past the call bound, the call is
        recorded and not run."""
        name = clean_unicode(str(name)[:200])
        started = time.perf_counter()
        limit = self.toolkit.limits.result_chars
        record = {"step": step, "name": name, "arguments": None, "status": "error", "result": None, "error": None}
        try:
            if self.committed is not None or self.end == "bound":
                record["arguments_text"] = _excerpt(arguments if isinstance(arguments, str) else _shown(arguments))
                record["status"] = "ignored"
                record["error"] = (
                    "after the turn's recommend: not run" if self.committed is not None else "past the call bound"
                )
                raise _Recorded()
            parsed = self._arguments(arguments, record)
            shown = json.dumps(parsed, ensure_ascii=False)
            if len(shown) <= RECORD_ARGUMENT_CHARS:
                record["arguments"] = parsed
            else:  # the record keeps an excerpt of large arguments, never the whole
                record["arguments_text"] = _excerpt(shown)
            outcome = self.toolkit.run(name, parsed)
            record["status"], record["result"] = "ok", outcome.summary
            if record["arguments"] is None and outcome.constraints is not None:
                # what the metrics read of a search stays whole however its arguments were padded
                record["constraints"] = [c.as_dict() for c in outcome.constraints]
            if outcome.committed is not None:
                self.committed, self.message, self.end = outcome.committed, outcome.message, "recommend"
            text = json.dumps(outcome.result, ensure_ascii=False)
            if len(text) > limit:
                text = json.dumps(_trimmed(outcome.result, limit), ensure_ascii=False)
        except ToolError as error:
            record["error"] = clean_unicode(str(error)[:500])
            text = _error_text(record["error"], limit)
        except _Recorded:
            text = _error_text(record["error"], limit)
        record["latency_s"] = round(time.perf_counter() - started, 6)
        self.calls.append(record)
        if (
            self.end is None
            and sum(1 for c in self.calls if c["status"] != "ignored") >= self.toolkit.limits.calls_per_turn
        ):
            self.end = "bound"
        return text

    def _arguments(self, arguments, record: dict) -> dict:
        """The call's arguments as a JSON object, read strictly (strict_json, _shape_problem) whether they came
        as text or as an object, so both ways are held to the same rules."""
        if isinstance(arguments, dict):
            text = _shown(arguments)
        elif isinstance(arguments, str):
            text = arguments
        else:
            record["arguments_text"] = _excerpt(repr(arguments)[:1_000])
            raise ToolError("the arguments must be a JSON object")
        if len(text) > self.toolkit.limits.argument_chars:
            record["arguments_text"] = _excerpt(text)
            raise ToolError(
                f"the arguments hold {len(text):,} characters; at most {self.toolkit.limits.argument_chars:,}"
            )
        try:
            parsed = strict_json(text) if text.strip() else {}
            problem = _shape_problem(parsed)
            if problem:
                raise ToolError(problem)
        except ToolError:
            record["arguments_text"] = _excerpt(text)
            raise
        if not isinstance(parsed, dict):
            record["arguments_text"] = _excerpt(text)
            raise ToolError("the arguments must be a JSON object")
        return parsed

    def count_unlisted(self, calls: int) -> None:
        """Count `calls` the model asked for that were dropped at the per-reply bound (crseval.llm.base): never
        run nor listed, but counted, so that a flood of calls cannot shrink the turn's count of them."""
        self.unlisted += calls

    def record(self) -> dict:
        """What a turn record keeps of the turn's tool use (`tool_calls`, `tool_turn_end`, `committed_titles`,
        `tool_calls_unlisted` when calls were dropped at the per-reply bound)."""
        record = {"tool_calls": self.calls, "tool_turn_end": self.end or "message"}
        if self.unlisted:
            record["tool_calls_unlisted"] = self.unlisted
        return record | ({"committed_titles": self.titles()} if self.committed is not None else {})

    def titles(self) -> list[str] | None:
        """The committed films' titles, or None when the turn committed nothing."""
        return None if self.committed is None else [self.toolkit.index.title(f) for f in self.committed]


class _Recorded(Exception):
    """A call recorded without being run (after the commit, past the bound)."""


def _shown(arguments) -> str:
    """Arguments given as an object, as JSON text; an object JSON cannot write (a cycle, a set, nesting past
    the interpreter's depth) as text that the strict reading then refuses."""
    try:
        return json.dumps(arguments, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return f"(not JSON) {repr(arguments)[:200]}"


def _error_text(error: str, limit: int) -> str:
    """An error result for the model, cut to fit `limit` characters of JSON (ASCII, as error results always
    were: the tool messages of cached runs keep their text)."""
    text = json.dumps({"error": error})
    while len(text) > limit and len(error) > 1:
        error = error[: max(0, len(error) - (len(text) - limit) - 1)] + "…"
        text = json.dumps({"error": error})
    return text


def _size(value) -> int:
    return len(json.dumps(value, ensure_ascii=False))


def _trimmed(result: dict, limit: int) -> dict:
    """A result cut to fit `limit` characters of JSON (any limit the config allows), marked `cut`: the plot
    shortened, the unknown values kept to half the room, films dropped from the end (as id and title only when
    not one whole card fits), then (a result still too large) its last fields dropped."""
    result = dict(result) | {"cut": True}
    if "plot" in result:
        room = limit - _size(result | {"plot": ""})
        result["plot"] = str(result["plot"])[: max(0, room - 8)]  # JSON escapes may take more; checked below
    unknown = list(result.get("unknown", []))
    while unknown and _size(unknown) > limit // 2:
        unknown.pop()
    if "unknown" in result:
        result["unknown"] = unknown
    if "films" in result:
        result["films"] = _fitting(result, limit)
    for key in reversed([key for key in result if key not in ("cut", "id", "title")]):
        if _size(result) <= limit:
            break
        del result[key]
    while _size(result) > limit and result.get("title"):  # only a catalog title this long is left
        result["title"] = str(result["title"])[: max(0, len(result["title"]) - (_size(result) - limit) - 1)]
    return result


def _fitting(result: dict, limit: int) -> list[dict]:
    """The most films from the start of `result["films"]` that fit `limit` with the rest of `result`: whole
    cards, else id and title only."""
    for films in (list(result["films"]), [{"id": f.get("id"), "title": f.get("title")} for f in result["films"]]):
        while films and _size(result | {"films": films}) > limit:
            films.pop()
        if films:
            return films
    return []
