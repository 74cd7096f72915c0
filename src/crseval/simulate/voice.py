"""A voice learned from real dialogues: people's turns, delexicalised, pooled by act and slot signature.

`learn_voice` reads the user turns of a corpus in any importing format with the project's own rules
(crseval.language.user_acts, the rules user realism applies to both sides), replaces every catalog
value and title with a typed slot and keeps, per act and slot signature, a pool of templates; a turn
that names something the rules cannot type (a film or person outside the catalog) is left out, counted
by reason. The pools are a build artefact (the `learn_voice` rule writes them under results/, with
crseval.corpora.voice_learning), never part of the repository.

Held out by construction: the dialogues are split into `parts` by a hash of their user's id where the
corpus names users, else of the id the importer gives each dialogue (`dialogue_part`); the voice learns
from one part, and user realism measures against the others.

The simulated user (crseval.simulate.user.UserSimulator with a profile whose voice is `learned`) asks
`Voice.options` for the templates of an act and fills their slots with the act's values; it reads every
filled turn back and draws again where the reading differs, so the ground truth stays exact.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

VOICE_FORMAT = 4
FIRST, LATER, LEAVE = "first", "later", "leave"  # where in a dialogue a pool's turns were said


def part_of(dialogue_id: str, parts: int) -> int:
    """The part (1..parts) an id belongs to: a hash of it, the same on every machine."""
    return int.from_bytes(hashlib.sha256(dialogue_id.encode("utf-8")).digest()[:8], "big") % parts + 1


def speaker(record: dict) -> str:
    """Who speaks in an imported dialogue (a session record): its user where the corpus names users (the
    importer keeps `provenance.user_id`), else the dialogue itself (the id the importer gives it)."""
    user = (record.get("provenance") or {}).get("user_id")
    return f"user:{user}" if user is not None else record["session_id"]


def dialogue_part(record: dict, parts: int) -> int:
    """The part of an imported dialogue, by its speaker, so that no person speaks on both sides of the split."""
    return part_of(speaker(record), parts)


@dataclass(frozen=True)
class VoiceTemplate:
    """One delexicalised real turn: `text` with slots ("{genre}", "{title}") and the slots left to right."""

    id: str
    text: str
    slots: tuple[str, ...]  # "field:role" per value, "title" per film, in the order of the text
    said: int = 1  # the people of the corpus who say it (at this place, with this act): how often it is drawn

    @property
    def signature(self) -> tuple[str, ...]:
        return tuple(sorted(self.slots))


def pool_key(position: str, act: str, signature: tuple[str, ...]) -> str:
    return f"{position}|{act}|{','.join(signature)}"


class Voice:
    """The pools of one learned voice (module docstring), with what learning it counted."""

    def __init__(self, pools: dict[str, list[VoiceTemplate]], summary: dict):
        self.pools = pools
        self.summary = summary
        self.version = hashlib.sha256(
            json.dumps(self.as_json(), sort_keys=True, ensure_ascii=False).encode("utf-8")
        ).hexdigest()[:16]

    def options(self, act: str, signature: tuple[str, ...], first: bool = False) -> list[VoiceTemplate]:
        """The templates of `act` with exactly the slot `signature` (sorted), said where the turn is (a
        dialogue's first turn when `first`, a later one otherwise), else, where people said none there, said
        at the other place (a greeting people open with is no reaction to a film while later turns have one)."""
        signature = tuple(sorted(signature))
        here, there = (FIRST, LATER) if first else (LATER, FIRST)
        return self.pools.get(pool_key(here, act, signature)) or self.pools.get(pool_key(there, act, signature), [])

    def retyped(self, act: str, signature: tuple[str, ...], first: bool = False) -> list[VoiceTemplate]:
        """Templates of `act` whose value slots have the roles of `signature` but other fields, each re-typed
        to the fields of `signature` ("any good {genre} films?" for an actor: "any good {actor} films?"): for
        the wishes people seldom word (a writer, a language), where the act's own pool is empty. The
        simulated user reads every filled turn back, so a slot that reads otherwise in its new field is
        drawn again."""
        wanted = sorted(signature)
        if "title" in wanted:
            return []
        roles = sorted(slot.split(":")[1] for slot in wanted)
        found: dict[str, list[VoiceTemplate]] = {FIRST: [], LATER: []}
        for key, templates in self.pools.items():
            position, pool_act, pool_signature = key.split("|")
            have = pool_signature.split(",") if pool_signature else []
            if pool_act != act or position not in found or have == wanted or "title" in have:
                continue
            if sorted(slot.split(":")[1] for slot in have) == roles:
                found[position] += [_retype(template, wanted) for template in templates]
        here, there = (FIRST, LATER) if first else (LATER, FIRST)
        return found[here] or found[there]

    def leave_options(self) -> list[VoiceTemplate]:
        return self.pools.get(pool_key(LEAVE, "", ()), [])

    def said_as(self, field_name: str, value: str) -> dict[str, int]:
        """How people wrote a catalog value (the voice's corpus: {words: turns}), e.g. "sci-fi" for
        science fiction; empty where nobody named it."""
        return self.summary.get("said_as", {}).get(f"{field_name}|{value}", {})

    def asked(self, field_name: str) -> dict[str, int]:
        """How many of the voice's corpus's people ask for each value of a field (as a wish)."""
        return self.summary.get("asked", {}).get(field_name, {})

    @staticmethod
    def draw(rng: np.random.Generator, options: list[VoiceTemplate]) -> VoiceTemplate:
        """A template drawn as often as people said it: "{genre} movies", typed by many, ahead of a phrasing
        one person used."""
        said = np.array([t.said for t in options], dtype=float)
        return options[int(rng.choice(len(options), p=said / said.sum()))]

    @staticmethod
    def spread_order(options: list[VoiceTemplate], seed: int) -> tuple[list[VoiceTemplate], int]:
        """The templates of a pool (any list of them), each as many times as people said it, in an order of
        their own, and where the experiment's sessions enter it: both drawn from `seed` (the experiment's)
        and the templates' ids, so that a pool reads the same way in every session and each shard."""
        ids = sorted(options, key=lambda t: t.id)
        digest = hashlib.sha256("\n".join([str(seed), *(t.id for t in ids)]).encode("utf-8")).digest()
        said = [t for t in ids for _ in range(t.said)]
        order = np.random.default_rng(int.from_bytes(digest[:8], "big")).permutation(len(said))
        return [said[i] for i in order], int.from_bytes(digest[8:16], "big")

    def as_json(self) -> dict:
        return {
            "format": VOICE_FORMAT,
            "summary": self.summary,
            "pools": {
                key: [{"id": t.id, "text": t.text, "slots": list(t.slots), "said": t.said} for t in templates]
                for key, templates in sorted(self.pools.items())
            },
        }

    def write(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.as_json(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")

    @classmethod
    def read(cls, path: str | Path) -> "Voice":
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        if data.get("format") != VOICE_FORMAT:
            raise ValueError(f"{path}: a voice of format {data.get('format')!r}, not {VOICE_FORMAT}; learn it again")
        pools = {
            key: [VoiceTemplate(t["id"], t["text"], tuple(t["slots"]), t["said"]) for t in templates]
            for key, templates in data["pools"].items()
        }
        return cls(pools, data["summary"])


def voice_problems(config: dict):
    """What a learned voice requires beyond the schema: a corpus for every profile that speaks with it and
    for a rewording shown people's turns as examples, and a part to learn from that the split has."""
    # profiles name the voice; the voice needs no profile
    from crseval.simulate.profiles import PROFILES, named_profiles

    simulator = config.get("simulator") if isinstance(config, dict) else None
    if not isinstance(simulator, dict):
        return
    voice = simulator.get("voice") if isinstance(simulator.get("voice"), dict) else {}
    parts, part = voice.get("parts", 2), voice.get("learn_part", 1)
    if isinstance(parts, int) and isinstance(part, int) and part > parts:
        yield f"simulator.voice.learn_part: {part} is not one of the {parts} parts (1 to {parts})"
    if voice.get("corpus"):
        return
    named = [name for _, name in named_profiles(config)]
    learned = sorted({name for name in named if isinstance(name, str) and name in PROFILES and PROFILES[name].learned})
    if learned:
        yield (
            f"simulator.voice.corpus: the {', '.join(learned)} profile speaks with a voice learned from a corpus of "
            "real dialogues; name the corpus (e.g. ../shared/data/crsarena/crs_arena_dial_open.json)"
        )
    paraphrase = simulator.get("paraphrase") if isinstance(simulator.get("paraphrase"), dict) else {}
    examples = paraphrase.get("examples")
    if paraphrase.get("enabled") is True and isinstance(examples, int) and not isinstance(examples, bool) and examples:
        yield (
            f"simulator.voice.corpus: simulator.paraphrase.examples: {examples} shows the rewording model real user "
            "turns from the learned voice; name the corpus it learns from"
        )


def _retype(template: VoiceTemplate, wanted: list[str]) -> VoiceTemplate:
    """`template` with its value slots, left to right, given the fields of `wanted` role by role."""
    by_role: dict[str, list[str]] = {}
    for slot in wanted:
        by_role.setdefault(slot.split(":")[1], []).append(slot)
    slots = [by_role[slot.split(":")[1]].pop(0) for slot in template.slots]
    fields = iter(slot.split(":")[0] for slot in slots)
    text = re.sub(r"\{(\w+)\}", lambda m: "{" + next(fields) + "}", template.text)
    return VoiceTemplate(f"{template.id}~{';'.join(slots)}", text, tuple(slots), template.said)


def spread_position(start: int, session: int, draw: int, size: int) -> int:
    """Where in a pool of `size` templates (in its spread order) the `draw`-th draw of the session with
    index `session` falls, from `start` (a 64-bit offset): a Weyl sequence (golden-ratio steps over
    sessions, silver-ratio steps over a session's draws), so that the experiment's sessions say a pool's
    templates about equally often, whatever the number of sessions, where independent draws would repeat
    some and skip others. Exact integer arithmetic (the steps as 64-bit fractions), the same on every machine."""
    fraction = (start + session * _GOLDEN + draw * _SILVER) % 2**64
    return fraction * size >> 64


_GOLDEN = 11400714819323198485  # (sqrt(5) - 1) / 2 * 2**64: the Weyl step between sessions
_SILVER = 7640891576956012808  # (sqrt(2) - 1) * 2**64: the step between one session's draws
