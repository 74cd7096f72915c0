"""The user turns compared: one user's turns with the session and the person each belongs to, and the case of
the system reply each reacts to (`UserTurns`), and the simulated users' turns gathered from session records
(`gather_simulated`, `simulated_turns`).

A person is who speaks: a simulated person is a profile and a session index (one seed, one plan, one stream of
draws), the same person meeting every system and every trial; a real person is the corpus's user, or the
dialogue where the corpus names no users (crseval.checks.realism_reference). A profile's row counts each
simulated person once: the sessions one seed had with every system say much the same, and counted all they
would put the same words on the simulated side many times. Every session of every person is kept too
(`SimulatedUsers.pooled`), for the volumes of crseval.checks.realism_volumes.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from crseval.replies.cases import catalog_reader, session_reply_cases

# A session record -> the case of the system reply each of its user turns reacts to (one per turn).
ReplyCases = Callable[[dict], list[str]]


@dataclass(frozen=True)
class UserTurns:
    """The user turns of one user (a profile, a corpus), in the order said, with the session and the person
    each belongs to (`people`, by default the session: each session a person of its own) and, where read,
    the case of the system reply each turn reacts to (`replies`, crseval.replies.cases); for simulated
    sessions, how each ended (session -> `ending.reason` of its record)."""

    name: str
    texts: list[str]
    sessions: list[str]
    endings: dict[str, str] | None = None
    people: list[str] | None = None  # filled with `sessions` when not given
    replies: list[str] | None = None

    def __post_init__(self):
        if len(self.texts) != len(self.sessions):
            raise ValueError(f"{self.name}: {len(self.texts)} turns but {len(self.sessions)} session ids")
        if not self.texts:
            raise ValueError(f"{self.name}: no user turns to compare")
        if self.people is None:
            object.__setattr__(self, "people", list(self.sessions))
        if len(self.people) != len(self.texts):
            raise ValueError(f"{self.name}: {len(self.texts)} turns but {len(self.people)} people")
        if self.replies is not None and len(self.replies) != len(self.texts):
            raise ValueError(f"{self.name}: {len(self.texts)} turns but {len(self.replies)} reply cases")


def turns_of(
    records: list[dict],
    name: str,
    person: Callable[[dict], str] | None = None,
    reply_cases: ReplyCases | None = None,
) -> UserTurns:
    """The user turns of session records, with the session each belongs to; with `person` (record -> str),
    the person of each record (else its session); with `reply_cases`, the case of the reply each turn
    reacts to."""
    people = [person(record) if person else record["session_id"] for record in records]
    return UserTurns(
        name,
        [turn["user_text"] for record in records for turn in record["turns"]],
        [record["session_id"] for record in records for _ in record["turns"]],
        people=[who for who, record in zip(people, records) for _ in record["turns"]],
        replies=None if reply_cases is None else [case for record in records for case in _cases(record, reply_cases)],
    )


def _cases(record: dict, reply_cases: ReplyCases) -> list[str]:
    """The reply case of each user turn of a record, one per turn (a ValueError otherwise)."""
    cases = list(reply_cases(record))
    if len(cases) != len(record["turns"]):
        raise ValueError(
            f"session {record['session_id']}: {len(cases)} reply cases for {len(record['turns'])} user turns"
        )
    return cases


def reply_case_reader(matcher) -> ReplyCases:
    """The reply cases of a record's user turns (crseval.replies.cases.session_reply_cases), the system's
    replies recognised with the catalog's `matcher` (a crseval.language.concepts.ConceptMatcher)."""
    recognise = catalog_reader(matcher)
    return lambda record: session_reply_cases(record, recognise)


@dataclass
class _Said:
    """What a user said in one session, while gathering."""

    session_id: str
    person: str
    rank: bytes
    texts: list[str]
    reason: str | None
    cases: list[str] | None


@dataclass(frozen=True)
class SimulatedUsers:
    """The simulated users' turns: each person once (`users`), as each system met them (`systems`, every
    session), and every session of every person (`pooled`), a person's sessions in rounds: first each
    person's session that `users` keeps, then each person's next, and so on."""

    users: dict[str, UserTurns]
    systems: dict[tuple[str, str], UserTurns]
    pooled: dict[str, UserTurns] = field(default_factory=dict)


def gather_simulated(
    records: Iterable[dict], profiles: dict[str, str], reply_cases: ReplyCases | None = None
) -> SimulatedUsers:
    """The user turns of simulated sessions by user, by (user, system), and pooled by user. A session's
    user is the profile it records, else `profiles[system]` (sessions written before profiles). Where an
    LLM reworded the user's turns (`simulator.paraphrase`), the profile's own user is the rules' wording (the
    template text) and the reworded turns, as the system read them, are a further user
    `<profile> reworded by <model>`: the table then shows what the LLM changes.

    A user counts each simulated person once, as a real corpus holds each person's dialogue once: the
    sessions of one session index are one person (`<profile>#<index>`) meeting every system, and every
    trial, and they say much the same, so that counting them all would put the same words on the simulated
    side many times over. Of a person's sessions the one whose seed and system hash lowest is kept
    (`_kept_rank`), a different system for different people; a record without an index (an imported one)
    is a person of its own. The user as each system met it counts every session; `reply_cases` (record ->
    one case per user turn) adds the case of the reply each turn reacts to."""
    said: dict[str, dict[str, list[_Said]]] = defaultdict(dict)  # user -> person -> sessions, first met first
    systems: dict[tuple[str, str], list[_Said]] = defaultdict(list)
    for record in records:
        profile = record.get("profile") or profiles[record["system"]]
        reason = (record.get("ending") or {}).get("reason")
        cases = _cases(record, reply_cases) if reply_cases is not None else None
        person = f"{profile}#{record.get('session_index', record['session_id'])}"
        rank = _kept_rank(record)
        for user, spoken in _spoken(record, profile).items():
            texts = [text for _, text in spoken]
            own = None if cases is None else [cases[turn] for turn, _ in spoken]
            session = _Said(record["session_id"], person, rank, texts, reason, own)
            systems[(user, record["system"])].append(session)
            said[user].setdefault(person, []).append(session)
    users, pooled = {}, {}
    for user, people in said.items():
        ranked = [sorted(sessions, key=lambda s: s.rank) for sessions in people.values()]
        users[user] = _user_turns(user, [sessions[0] for sessions in ranked])
        rounds = max(len(sessions) for sessions in ranked)
        pooled[user] = _user_turns(user, [s[r] for r in range(rounds) for s in ranked if len(s) > r])
    by_system = {key: _user_turns(f"{key[0]} with {key[1]}", sessions) for key, sessions in systems.items()}
    return SimulatedUsers(users, by_system, pooled)


def simulated_turns(
    records: Iterable[dict], profiles: dict[str, str], reply_cases: ReplyCases | None = None
) -> tuple[dict[str, UserTurns], dict[tuple[str, str], UserTurns]]:
    """The user turns of simulated sessions by user (each person once) and by (user, system)
    (`gather_simulated`, without the pooled sessions)."""
    gathered = gather_simulated(records, profiles, reply_cases)
    return gathered.users, gathered.systems


def _spoken(record: dict, profile: str) -> dict[str, list[tuple[int, str]]]:
    """The turns each user of a record said, with their place in the record: the profile's, and the
    reworded ones as a user of their own."""
    spoken = defaultdict(list)
    for place, turn in enumerate(record["turns"]):
        paraphrase = (turn.get("user_meta") or {}).get("paraphrase")
        if paraphrase:
            model = (paraphrase.get("llm") or {}).get("model") or "an LLM"
            spoken[profile].append((place, paraphrase["template_text"]))
            spoken[f"{profile} reworded by {model}"].append((place, turn["user_text"]))
        else:
            spoken[profile].append((place, turn["user_text"]))
    return spoken


def _user_turns(name: str, sessions: list[_Said]) -> UserTurns:
    """One UserTurns of sessions, in the order given."""
    endings = {s.session_id: s.reason for s in sessions if s.reason}
    cases = None if any(s.cases is None for s in sessions) else [c for s in sessions for c in s.cases]
    return UserTurns(
        name,
        [text for s in sessions for text in s.texts],
        [s.session_id for s in sessions for _ in s.texts],
        endings or None,
        people=[s.person for s in sessions for _ in s.texts],
        replies=cases,
    )


def _kept_rank(record: dict) -> bytes:
    """Which of a simulated person's sessions the user's row keeps: the lowest hash of its seed, system and
    trial (the same whatever order the shards are read in)."""
    trial = f"t{record['trial']}" if record.get("trial") else ""
    return hashlib.sha256(f"{record.get('seed')}|{record['system']}|{trial}".encode("utf-8")).digest()
