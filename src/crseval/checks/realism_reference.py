"""The real side of the user realism check: the user turns of a reference corpus of real dialogues, held out
from the learned voice by construction, and bounded in size.

When the learned voice (crseval.simulate.user.voice) learned from the reference itself, the real side is the
dialogues of the other parts, and the voice's part is a further row, real users against real users (the
floor). A reference that shares dialogues with the voice's part in another file is headed "not held out"
(`load_reference`). A reference of more than `MAX_REFERENCE_BYTES` bytes or `MAX_REFERENCE_DIALOGUES`
dialogues is refused (`ReferenceTooLarge`) before it is measured.

A real person is the corpus's user where it names users, else the dialogue (crseval.simulate.user.voice.speaker),
named after the corpus file (`real_person`) so that the people of two corpora never merge.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from crseval.checks.realism_discriminators import side_rng
from crseval.checks.realism_turns import ReplyCases, UserTurns, turns_of
from crseval.core.io import sha256_file
from crseval.simulate.user import voice_learning
from crseval.simulate.user.voice import dialogue_part, speaker

# The largest reference measured against (load_reference): bytes of its file, checked before it is read,
# and dialogues, checked once read, before anything is measured. The importer's reading of the file, the
# real side's turns, their readings and per-session sums are held in memory, and the pooled volume's features
# of every real turn (crseval.checks.realism_volumes), about 28 bytes per byte of the file: at 10,000
# resamples an invented reference of 50,000 dialogues and 60 MB peaks at 1.7 GB (in about 10 minutes on one
# core), one of 120 dialogues against 23,040 simulated turns at 0.4 GB (benchmarks/bench_user_realism.py).
# Take a sample of a larger corpus's dialogues.
MAX_REFERENCE_BYTES = 64 << 20
MAX_REFERENCE_DIALOGUES = 50_000

# The real users of the voice's part of the reference, measured as a user against the other parts.
FLOOR = "real users (the voice's part)"
# The same turns dealt out to other people of the part (`dealt_to_others`), measured at every volume beside it.
DEALT = "real turns dealt to others (the voice's part)"


class ReferenceTooLarge(ValueError):
    """A realism reference over MAX_REFERENCE_BYTES or MAX_REFERENCE_DIALOGUES."""


def real_person(corpus: str) -> Callable[[dict], str]:
    """Who speaks in a dialogue of `corpus` (its file name): `<corpus>:` and the dialogue's speaker, its user
    where the corpus names users, else the dialogue itself."""
    return lambda record: f"{corpus}:{speaker(record)}"


def reference_turns(
    path: str | Path,
    import_format: str,
    keep: Callable[[dict], bool] | None = None,
    name: str = "real users",
    reply_cases: ReplyCases | None = None,
) -> UserTurns:
    """The user turns of a corpus of real dialogues in an importing format (crseval.corpora.formats), as
    the importer reads them: the turns it pairs with a system reply, each with its person (`real_person`)
    and, with `reply_cases`, the case of the reply it reacts to; with `keep` (session record -> bool), of
    the dialogues it keeps only. ReferenceTooLarge for a corpus over MAX_REFERENCE_BYTES or
    MAX_REFERENCE_DIALOGUES."""
    records = [r for r in _reference_dialogues(path, import_format) if keep is None or keep(r)]
    return turns_of(records, name, real_person(Path(path).name), reply_cases)


def _reference_dialogues(path: str | Path, import_format: str) -> list[dict]:
    """The dialogues of a reference as the importer reads them, refused (ReferenceTooLarge) over
    MAX_REFERENCE_BYTES before the file is read, or over MAX_REFERENCE_DIALOGUES once read."""
    size = Path(path).stat().st_size
    if size > MAX_REFERENCE_BYTES:
        raise ReferenceTooLarge(
            f"realism reference {path}: {size:,} bytes, over the {MAX_REFERENCE_BYTES:,} bytes the user_realism "
            "rule reads (crseval.checks.user_realism.MAX_REFERENCE_BYTES); name a sample of its dialogues"
        )
    records = voice_learning.corpus_dialogues(path, import_format)
    if len(records) > MAX_REFERENCE_DIALOGUES:
        raise ReferenceTooLarge(
            f"realism reference {path}: {len(records):,} dialogues, over the {MAX_REFERENCE_DIALOGUES:,} the "
            "user_realism rule measures against (crseval.checks.user_realism.MAX_REFERENCE_DIALOGUES); name a "
            "sample of its dialogues"
        )
    return records


@dataclass(frozen=True)
class Reference:
    """The real side of the comparison and how it stands to the learned voice's corpus."""

    real: UserTurns
    floor: UserTurns | None = None  # the voice's part of the same corpus, measured as a user
    held_out: str = ""  # which dialogues the real side is, when it is held out from the voice
    shared: int = 0  # dialogues of the reference the voice learned from, when it is not held out
    voice_part: str = ""  # the voice's part, for the report
    # held out: dialogues of the real side by a user (the importer's user id) who also speaks in the voice's
    # part, and dialogues whose user turns are word for word those of a dialogue of the voice's part
    same_users: int = 0
    echoed: int = 0


def load_reference(
    path: str | Path,
    import_format: str,
    voice: dict | None = None,
    voice_corpus: str | Path | None = None,
    reply_cases: ReplyCases | None = None,
) -> Reference:
    """The real users to measure against, held out from the learned voice by construction.

    Without a voice corpus: every dialogue of the reference. When the voice learned from the reference
    itself (the same file by sha256, read in the same format): the dialogues outside the voice's part
    (crseval.simulate.user.voice.dialogue_part: by user where the corpus names users; `voice` holding `parts` and
    `learn_part`), and the voice's part as `floor`. When the voice learned from another file: every
    dialogue, and `shared` counts those the voice's part holds too (the same id, or the same user turns
    in the same order), for the report to head its table "not held out".

    Each turn has its person (`real_person`) and, with `reply_cases` (record -> one case per user turn),
    the case of the reply it reacts to. A reference over MAX_REFERENCE_BYTES is refused (ReferenceTooLarge)
    before it is read, one over MAX_REFERENCE_DIALOGUES before anything is measured."""

    records = _reference_dialogues(path, import_format)
    person = real_person(Path(path).name)

    def turns(chosen: list[dict], name: str) -> UserTurns:
        return turns_of(chosen, name, person, reply_cases)

    if not voice_corpus:
        return Reference(turns(records, "real users"))
    voice = voice or {}
    # the schema's defaults (simulator.voice)
    parts, learn_part = voice.get("parts", 2), voice.get("learn_part", 1)
    voice_format = voice.get("format", "crsarena")
    voice_part = f"part {learn_part} of {parts} of {Path(voice_corpus).name}"

    def in_part(record: dict) -> bool:
        return dialogue_part(record, parts) == learn_part

    if voice_format == import_format and sha256_file(path) == sha256_file(voice_corpus):
        others = [part for part in range(1, parts + 1) if part != learn_part]
        learned = [record for record in records if in_part(record)]
        users, said = {_user(r) for r in learned} - {None}, {_said(r) for r in learned} - {()}
        held = [record for record in records if not in_part(record)]
        return Reference(
            turns(held, "real users"),
            floor=turns(learned, FLOOR),
            held_out=f"the dialogues of {_parts(others)} of {parts}, held out from the voice, which learned "
            f"from part {learn_part}",
            voice_part=voice_part,
            same_users=sum(_user(r) in users for r in held),
            echoed=sum(_said(r) in said for r in held),
        )
    learned = [record for record in voice_learning.corpus_dialogues(voice_corpus, voice_format) if in_part(record)]
    ids, said = {r["session_id"] for r in learned}, {_said(r) for r in learned} - {()}
    shared = sum(r["session_id"] in ids or _said(r) in said for r in records)
    return Reference(turns(records, "real users"), shared=shared, voice_part=voice_part)


def dealt_to_others(floor: UserTurns, seed: int) -> UserTurns:
    """The floor's turns dealt out at random to its own sessions (a seeded permutation): every session keeps its
    person and its number of turns, each turn its words and the reply it followed, but whose turn it is, is
    drawn. A voice that words any simulated person's turns with any real person's turns does this at best:
    each turn said once, by someone who never said it. The gap between this and the floor is what a
    discriminator grouped by person learns from one person's words spoken by others (a way of writing seen in
    one fold comes back, said by another person, in the next); the gap between a learned user and this, what
    the voice adds."""
    order = side_rng(seed, 4).permutation(len(floor.texts))  # a Generator of its own, apart from the sides'
    return UserTurns(
        DEALT,
        [floor.texts[i] for i in order],
        list(floor.sessions),
        people=list(floor.people),
        replies=None if floor.replies is None else [floor.replies[i] for i in order],
    )


def _user(record: dict) -> str | None:
    """The id of the dialogue's user, where the importer keeps one."""
    return (record.get("provenance") or {}).get("user_id")


def _said(record: dict) -> tuple[str, ...]:
    """A dialogue's user turns, spaces normalised: two files hold the same dialogue if they say the same."""
    return tuple(" ".join(turn["user_text"].split()) for turn in record["turns"])


def _parts(parts: list[int]) -> str:
    """How parts read in the report: part 2; parts 2 and 3; parts 2, 3 and 4."""
    if len(parts) == 1:
        return f"part {parts[0]}"
    return "parts " + ", ".join(str(p) for p in parts[:-1]) + f" and {parts[-1]}"
