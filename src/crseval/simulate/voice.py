"""A voice learned from real dialogues: people's turns, delexicalised, pooled by act and slot signature.

`learn_voice` reads the user turns of a corpus in any importing format with the project's own rules
(crseval.language.user_acts, the rules user realism applies to both sides), replaces every catalog
value and title with a typed slot and keeps, per act and slot signature, a pool of templates; a turn
that names something the rules cannot type (a film or person outside the catalog) is left out, counted
by reason. The pools are a build artefact (the `learn_voice` rule writes them under results/, with
crseval.corpora.voice), never part of the repository.

Held out by construction: the dialogues are split into `parts` by a hash of the id the importer gives
each (`part_of`), the voice learns from one part, and user realism measures against the others.

The simulated user (crseval.simulate.user.ProfiledUser with a profile whose voice is `learned`) asks
`Voice.options` for the templates of an act and fills their slots with the act's values; it reads every
filled turn back and draws again where the reading differs, so the ground truth stays exact.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np


VOICE_FORMAT = 1
FIRST, LATER, LEAVE = "first", "later", "leave"  # where in a dialogue a pool's turns were said


def part_of(dialogue_id: str, parts: int) -> int:
    """The part (1..parts) a dialogue belongs to: a hash of its id, the same on every machine."""
    return int.from_bytes(hashlib.sha256(dialogue_id.encode("utf-8")).digest()[:8], "big") % parts + 1


@dataclass(frozen=True)
class VoiceTemplate:
    """One delexicalised real turn: `text` with slots ("{genre}", "{title}") and the slots left to right."""

    id: str
    text: str
    slots: tuple[str, ...]  # "field:role" per value, "title" per film, in the order of the text

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
        """The templates of `act` with exactly the slot `signature` (sorted): said as a dialogue's first
        turn when `first` and there are any, else said anywhere."""
        signature = tuple(sorted(signature))
        if first and (found := self.pools.get(pool_key(FIRST, act, signature))):
            return found
        return self.pools.get(pool_key(FIRST, act, signature), []) + self.pools.get(
            pool_key(LATER, act, signature), []
        )

    def leave_options(self) -> list[VoiceTemplate]:
        return self.pools.get(pool_key(LEAVE, "", ()), [])

    @staticmethod
    def draw(rng: np.random.Generator, options: list[VoiceTemplate]) -> VoiceTemplate:
        return options[int(rng.integers(len(options)))]

    def as_json(self) -> dict:
        return {
            "format": VOICE_FORMAT,
            "summary": self.summary,
            "pools": {
                key: [{"id": t.id, "text": t.text, "slots": list(t.slots)} for t in templates]
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
            key: [VoiceTemplate(t["id"], t["text"], tuple(t["slots"])) for t in templates]
            for key, templates in data["pools"].items()
        }
        return cls(pools, data["summary"])


