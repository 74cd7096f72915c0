"""Put any recommender under test: the interface an external system implements, and the agent
that runs one under the simulated user.

An external system answers the conversation itself; we neither track its constraints nor
retrieve its candidates. We only read its reply the way we read every reply: the catalog films
it names (recommended or mentioned) and the films it names that the catalog does not hold. What
the system reports about itself (the titles it recommends, the constraints it tracks) is kept
as it said it. Replies are cached by the conversation they answer, so a re-run asks nothing twice.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from crseval.catalog.index import CatalogIndex
from crseval.core.canonical import canonical_sha
from crseval.core.fields import CONCEPT_FIELDS, KEYWORD_FIELD
from crseval.core.io import atomic_path
from crseval.language.concepts import ConceptMatcher
from crseval.language.titles import title_key
from crseval.language.tracker import Constraint
from crseval.simulate.agents import Reply

EXTERNAL_AGENTS = ("chat", "http", "python")


@dataclass(frozen=True)
class ExternalReply:
    text: str
    recommended: tuple[str, ...] | None = None  # titles the system says it recommends (optional)
    constraints: tuple[dict, ...] | None = None  # {field, value, negated} it says it tracks (optional)


class ExternalSystemError(RuntimeError):
    """A reply that could not be obtained; the message names system, session and turn. `transient` says whether
    a retry could help (timeouts, 5xx, connection refused) or not (4xx, malformed reply, a class that raises)."""

    def __init__(self, message: str, transient: bool = False):
        super().__init__(message)
        self.transient = transient


class ExternalSystem(Protocol):
    name: str  # the system's config name (for error messages)

    def start(self, session_id: str, seed: int) -> None: ...

    def answer(self, turn: int, user_text: str, history: list[dict]) -> ExternalReply:
        """history: the conversation before this user turn as [{"role": "user"|"assistant", "content": str}]"""
        ...

    def describe(self) -> dict:
        """For provenance.json and the reply cache key: e.g. {"agent": "http", "url": <URL without secrets>,
        "settings": {...}, "transport": {...}} or {"agent": "python", "entry_point": "pkg.mod:Class",
        "package_version": "1.2"}; never a secret. Everything but "transport" (timeouts, retries: how
        the reply is fetched, never what it says) is part of the cache key."""
        ...


class ExternalCalls:
    """Replies asked of external systems and replies found in the cache, over every session of a
    shard (sessions may run in threads)."""

    def __init__(self):
        self.calls = 0
        self.cache_hits = 0
        self._lock = threading.Lock()

    def count(self, counter: str) -> None:
        with self._lock:
            setattr(self, counter, getattr(self, counter) + 1)


class ReplyCache:
    """One JSON file per reply under `<dir>/external/<key[:2]>/<key>.json`, written atomically (as
    the LLM response cache, crseval.llm.cache, whose folder it shares)."""

    def __init__(self, directory: str | Path):
        self.directory = Path(directory) / "external"

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> ExternalReply | None:
        """The cached reply, or None; an unreadable entry is a miss, asked again and overwritten."""
        try:
            data = json.loads(self._path(key).read_text(encoding="utf-8"))
            return reply_from_record(data)
        except FileNotFoundError:
            return None
        except (ValueError, TypeError, KeyError, OSError, RecursionError):
            return None

    def put(self, key: str, reply: ExternalReply) -> None:
        record = {
            "text": reply.text,
            "recommended": None if reply.recommended is None else list(reply.recommended),
            "constraints": None if reply.constraints is None else [dict(c) for c in reply.constraints],
        }
        with atomic_path(self._path(key)) as temporary:
            temporary.write_text(json.dumps(record, ensure_ascii=False), encoding="utf-8")


def reply_from_record(data: dict) -> ExternalReply:
    """An ExternalReply from its JSON form ({text, recommended?, constraints?}), checked: a field of
    the wrong type raises ValueError naming it."""
    if not isinstance(data, dict):
        raise ValueError(f"a reply must be a JSON object, got {type(data).__name__}")
    text = data.get("text")
    if not isinstance(text, str):
        raise ValueError(f"reply 'text' must be a string, got {text!r:.60}")
    recommended = data.get("recommended")
    if recommended is not None:
        if not isinstance(recommended, list) or not all(isinstance(t, str) for t in recommended):
            raise ValueError(f"reply 'recommended' must be a list of titles, got {recommended!r:.80}")
        recommended = tuple(recommended)
    constraints = data.get("constraints")
    if constraints is not None:
        if not isinstance(constraints, list):
            raise ValueError(f"reply 'constraints' must be a list, got {constraints!r:.80}")
        constraints = tuple(check_constraint(c) for c in constraints)
    return ExternalReply(text, recommended, constraints)


TRACKABLE_FIELDS = frozenset(CONCEPT_FIELDS + (KEYWORD_FIELD,))


def check_constraint(item: object) -> dict:
    """A reported constraint as {field, value, negated}; anything else raises ValueError naming it."""
    if not isinstance(item, dict) or not isinstance(item.get("field"), str) or not isinstance(item.get("value"), str):
        raise ValueError(f"a reported constraint needs string 'field' and 'value', got {item!r:.80}")
    if item["field"] not in TRACKABLE_FIELDS:
        raise ValueError(f"reported constraint field {item['field']!r} is not one of {sorted(TRACKABLE_FIELDS)}")
    negated = item.get("negated", False)
    if not isinstance(negated, bool):
        raise ValueError(f"reported constraint 'negated' must be true or false, got {negated!r}")
    return {"field": item["field"], "value": item["value"], "negated": negated}


class ExternalAgent:
    """An agent for run_session (the `respond(turn, user_text) -> Reply` of crseval.simulate.agents.Agent)
    around an ExternalSystem.

    The system is started lazily, before the first reply that is not in the cache: a session
    found whole in the cache asks the system nothing. Every answer gets the whole conversation so
    far, so a system started mid-session can pick it up from `history`.
    """

    def __init__(
        self,
        system: ExternalSystem,
        index: CatalogIndex,
        matcher: ConceptMatcher,
        seed: int,
        cache: ReplyCache | None = None,
        counter: ExternalCalls | None = None,
    ):
        self.system = system
        self.index = index
        self.matcher = matcher
        self.seed = seed
        self.cache = cache
        self.counter = counter or ExternalCalls()
        self.session_id = f"{system.name}/seed{seed}"
        self.history: list[dict] = []
        self.shown: list[str] = []  # catalog films the system put forward so far
        self._started = False

    def begin_session(self, session_id: str) -> None:
        """Names the session in errors and in the system's start()."""
        self.session_id = session_id

    def respond(self, turn: int, user_text: str) -> Reply:
        reply = self._reply(turn, user_text)
        reported = list(reply.recommended or ())
        in_catalog = [t for t in reported if self.index.film_id(t) is not None]
        titles = self.matcher.title_recognizer.recognise(
            reply.text, candidates=in_catalog + self.shown, user_text=user_text
        )
        unknown = list(titles.unknown)
        known_keys = {title_key(t) for t in unknown}
        for title in reported:
            if self.index.film_id(title) is None and title_key(title) not in known_keys:
                unknown.append(title)
                known_keys.add(title_key(title))
        self.shown += [t for t in titles.recommended if t not in self.shown]
        self.history += [{"role": "user", "content": user_text}, {"role": "assistant", "content": reply.text}]
        tracked = [Constraint(c["field"], c["value"], c["negated"]) for c in reply.constraints or ()]
        return Reply(reply.text, tracked, titles.recommended, titles.mentioned, reported, None, unknown)

    def _where(self, turn: int) -> str:
        return f"system {self.system.name!r}, session {self.session_id}, turn {turn}"

    def _reply(self, turn: int, user_text: str) -> ExternalReply:
        key = canonical_sha(
            {
                "system": {k: v for k, v in self.system.describe().items() if k != "transport"},
                "history": self.history,
                "user_text": user_text,
                "turn": turn,
                "seed": self.seed,
            }
        )
        if self.cache is not None and (cached := self.cache.get(key)) is not None:
            self.counter.count("cache_hits")
            return cached
        self.counter.count("calls")
        try:
            if not self._started:
                self.system.start(self.session_id, self.seed)
                self._started = True
            reply = self.system.answer(turn, user_text, list(self.history))
            if not isinstance(reply, ExternalReply):
                raise ExternalSystemError(f"answer() returned {type(reply).__name__}, not an ExternalReply")
            reply = reply_from_record(
                {
                    "text": reply.text,
                    "recommended": None if reply.recommended is None else list(reply.recommended),
                    "constraints": None if reply.constraints is None else list(reply.constraints),
                }
            )
        except ExternalSystemError as error:
            where = self._where(turn)  # named once: a system's own error may already say where
            message = str(error) if str(error).startswith(where) else f"{where}: {error}"
            raise ExternalSystemError(message, error.transient) from error
        except Exception as error:  # a researcher's class may raise anything: name it, it is not transient
            raise ExternalSystemError(f"{self._where(turn)}: {type(error).__name__}: {error}") from error
        if not reply.text.strip():
            raise ExternalSystemError(f"{self._where(turn)}: the reply has no text")
        if self.cache is not None:
            self.cache.put(key, reply)
        return reply
