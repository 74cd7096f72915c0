"""The user turns compared: one user's turns with the session each belongs to (`UserTurns`), and the simulated
users' turns gathered from session records (`simulated_turns`).

A profile counts each simulated person once: the sessions one seed had with every system say much the same,
and counted all they would put the same words on the simulated side many times.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class UserTurns:
    """The user turns of one user (a profile, a corpus), with the session each belongs to, in the order
    said; for simulated sessions, how each ended (session -> `ending.reason` of its record)."""

    name: str
    texts: list[str]
    sessions: list[str]
    endings: dict[str, str] | None = None

    def __post_init__(self):
        if len(self.texts) != len(self.sessions):
            raise ValueError(f"{self.name}: {len(self.texts)} turns but {len(self.sessions)} session ids")
        if not self.texts:
            raise ValueError(f"{self.name}: no user turns to compare")


def turns_of(records: list[dict], name: str) -> UserTurns:
    """The user turns of session records, with the session each belongs to."""
    return UserTurns(
        name,
        [turn["user_text"] for record in records for turn in record["turns"]],
        [record["session_id"] for record in records for _ in record["turns"]],
    )


def simulated_turns(
    records: Iterable[dict], profiles: dict[str, str]
) -> tuple[dict[str, UserTurns], dict[tuple[str, str], UserTurns]]:
    """The user turns of simulated sessions by user, and by (user, system). A session's user is the
    profile it records, else `profiles[system]` (sessions written before profiles). Where an LLM reworded
    the user's turns (`simulator.paraphrase`), the profile's own user is the rules' wording (the
    template text) and the reworded turns, as the system read them, are a further user
    `<profile> reworded by <model>`: the table then shows what the LLM changes.

    A user counts each simulated person once, as a real corpus holds each person's dialogue once: the
    sessions of one session index (one seed, one plan, one stream of draws) are one person meeting every
    system, and every trial, and they say much the same, so that counting them all would put the same words
    on the simulated side many times over, and a discriminator would learn them in one fold and find them
    in the next. Of a person's sessions the one whose seed and system hash lowest is kept (`_kept_rank`),
    a different system for different people; a record without an index (an imported one) is a person of its
    own. The user as each system met it counts every session."""
    kept: dict[tuple, tuple] = {}  # (user, session index) -> (rank, turns, session id, ending)
    texts, sessions, endings = defaultdict(list), defaultdict(list), defaultdict(dict)
    for record in records:
        profile = record.get("profile") or profiles[record["system"]]
        reason = (record.get("ending") or {}).get("reason")
        spoken = defaultdict(list)
        for turn in record["turns"]:
            paraphrase = (turn.get("user_meta") or {}).get("paraphrase")
            if paraphrase:
                model = (paraphrase.get("llm") or {}).get("model") or "an LLM"
                spoken[profile].append(paraphrase["template_text"])
                spoken[f"{profile} reworded by {model}"].append(turn["user_text"])
            else:
                spoken[profile].append(turn["user_text"])
        for user, said in spoken.items():
            key = (user, record["system"])
            texts[key] += said
            sessions[key] += [record["session_id"]] * len(said)
            if reason:
                endings[key][record["session_id"]] = reason
            person = (user, record.get("session_index", record["session_id"]))
            rank = _kept_rank(record)
            if person not in kept or rank < kept[person][0]:
                kept[person] = (rank, said, record["session_id"], reason)
    for (user, _), (_, said, session_id, reason) in kept.items():  # in the order people were first met
        texts[user] += said
        sessions[user] += [session_id] * len(said)
        if reason:
            endings[user][session_id] = reason
    users = {key: UserTurns(key, texts[key], sessions[key], endings.get(key)) for key in texts if isinstance(key, str)}
    systems = {
        key: UserTurns(f"{key[0]} with {key[1]}", texts[key], sessions[key], endings.get(key))
        for key in texts
        if isinstance(key, tuple)
    }
    return users, systems


def _kept_rank(record: dict) -> bytes:
    """Which of a simulated person's sessions the user's row keeps: the lowest hash of its seed, system and
    trial (the same whatever order the shards are read in)."""
    trial = f"t{record['trial']}" if record.get("trial") else ""
    return hashlib.sha256(f"{record.get('seed')}|{record['system']}|{trial}".encode("utf-8")).digest()
