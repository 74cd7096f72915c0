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
from crseval.simulate.systems.agents import Reply


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


REPLY_KEYS = ("recommended", "constraints")  # besides the text
CONSTRAINT_KEYS = ("field", "value", "negated")
CONSTRAINT_FIELDS = (*CONCEPT_FIELDS, KEYWORD_FIELD)


def reply_from_record(data: object, text_key: str = "text", strict: bool = False) -> ExternalReply:
    """An ExternalReply from its JSON form ({<text_key>: str, recommended?, constraints?}), checked the
    same way wherever a reply comes from (an HTTP body, a Python class, the cache). A field of the
    wrong type raises ValueError naming it; `strict` also refuses keys the protocol does not know."""
    if not isinstance(data, dict):
        raise ValueError(f"is a {type(data).__name__} ({data!r:.80}), not an object with a string {text_key!r}")
    if strict:
        unknown = sorted(str(key) for key in data if key not in (text_key, *REPLY_KEYS))
        if unknown:
            raise ValueError(f"has unknown keys {unknown}; allowed: {', '.join((text_key, *REPLY_KEYS))}")
    if not isinstance(data.get(text_key), str):
        found = f"no {text_key!r}" if text_key not in data else f"{text_key!r} of type {type(data[text_key]).__name__}"
        raise ValueError(f"has {found}; it must be a string")
    recommended = data.get("recommended")
    if recommended is not None:
        if not isinstance(recommended, (list, tuple)) or not all(isinstance(t, str) for t in recommended):
            raise ValueError(f"has 'recommended' {recommended!r:.80}; it must be a list of title strings")
        recommended = tuple(recommended)
    constraints = data.get("constraints")
    if constraints is not None:
        if not isinstance(constraints, (list, tuple)):
            raise ValueError(f"has 'constraints' {constraints!r:.80}; it must be a list of {{field, value, negated}}")
        for number, item in enumerate(constraints, 1):
            problem = constraint_problem(item)
            if problem:
                raise ValueError(f"has constraint {number} of 'constraints' {problem}")
        constraints = tuple({key: c[key] for key in CONSTRAINT_KEYS} for c in constraints)
    return ExternalReply(data[text_key], recommended, constraints)


def constraint_problem(item: object) -> str | None:
    """What is wrong with a reported constraint {field, value, negated}, or None."""
    if not isinstance(item, dict):
        return f"{item!r:.80}: a constraint is an object {{field, value, negated}}"
    missing = [key for key in CONSTRAINT_KEYS if key not in item]
    if missing:
        return f"{item!r:.80}: it lacks {', '.join(missing)}"
    if item["field"] not in CONSTRAINT_FIELDS:
        return f"with field {item['field']!r}; the fields are {', '.join(CONSTRAINT_FIELDS)}"
    if not isinstance(item["value"], str):
        return f"with a value that is a {type(item['value']).__name__}, not a string"
    if not isinstance(item["negated"], bool):
        return f"with 'negated' {item['negated']!r}, not true or false"
    return None


class ExternalAgent:
    """An agent for run_session (the `respond(turn, user_text) -> Reply` of crseval.simulate.systems.agents.Agent)
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
        self.sampling_seed = seed  # a repeated trial's own (crseval.simulate.sessions.trial_seed)
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
                "seed": self.sampling_seed,
            }
        )
        if self.cache is not None and (cached := self.cache.get(key)) is not None:
            self.counter.count("cache_hits")
            return cached
        self.counter.count("calls")
        try:
            if not self._started:
                self.system.start(self.session_id, self.sampling_seed)
                self._started = True
            reply = self.system.answer(turn, user_text, list(self.history))
            if not isinstance(reply, ExternalReply):
                raise ExternalSystemError(f"answer() returned {type(reply).__name__}, not an ExternalReply")
            try:
                reply = reply_from_record(
                    {"text": reply.text, "recommended": reply.recommended, "constraints": reply.constraints}
                )
            except ValueError as problem:
                raise ExternalSystemError(f"answer() returned a reply that {problem}") from None
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


def external_agent(runner, seed: int) -> ExternalAgent:
    """The agent of an external kind for one session: one system object per session (a system may keep
    per-session state, and sessions run in threads)."""
    system = runner.kind.make_system(runner.system, runner.client, runner.prompt_file)
    return ExternalAgent(system, runner.ctx.index, runner.ctx.matcher, seed, runner.reply_cache, runner.external)
