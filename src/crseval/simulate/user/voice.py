"""A voice learned from real dialogues: people's turns, delexicalised, pooled by act and slot signature.

`learn_voice` reads the user turns of a corpus in any importing format with the project's own rules
(crseval.language.user_acts, the rules user realism applies to both sides), replaces every catalog
value and title with a typed slot and keeps, per act and slot signature, a pool of templates; a turn
that names something the rules cannot type (a film or person outside the catalog) is left out, counted
by reason. The pools are a build artefact (the `learn_voice` rule writes them under results/, with
crseval.simulate.user.voice_learning), never part of the repository.

Held out by construction: the dialogues are split into `parts` by a hash of their user's id where the
corpus names users, else of the id the importer gives each dialogue (`dialogue_part`); the voice learns
from one part, and user realism measures against the others.

The simulated user (crseval.simulate.user.simulator.UserSimulator with a profile whose voice is `learned`) asks
`Voice.options` for the templates of an act and fills their slots with the act's values; it reads every
filled turn back and draws again where the reading differs, so the ground truth stays exact.

A voice read back from its file (`Voice.read`) comes from outside the program (results/ can be edited,
truncated, or left by another version): it is checked whole before it is used, and refused with a
VoiceError naming the file, the place in it and what is wrong. A template holds text and `{field}` slot
marks only, one per slot, of known fields and roles: no other brace (`{0.__class__}`, `{x!r}`,
`{:>999999}`), so that no template can be anything but words, however it is filled.

Text is read as people see it (`visible_text`): learning reads each turn's visible text, the reader refuses a
template or a spelling whose text is not its own visible text, and the simulated user fills the visible text
of a template, so that a hidden character ("co\\u200bmedy") can neither hide a value from the rules nor show a
reader one they did not read. One draw combines the pools of several acts (Voice.spread_order lists each
template as often as people said it): the reader bounds the worst such combination (MAX_DRAW_SAID), so that no
voice it accepts can ask one draw for more memory than a corpus's people could fill.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import unicodedata
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from crseval.core.fields import CONCEPT_FIELDS, KEYWORD_FIELD
from crseval.core.io import UnreadableFile, json_type, read_regular_file, shown, strict_json_loads
from crseval.language.concepts import FIELD_CUES
from crseval.language.user_acts import ACTS
from crseval.replies.cases import REPLY_CASES, START
from crseval.simulate.user.voice_parts import PartPools, PartPoolsError

VOICE_FORMAT = 5
FIRST, LATER, LEAVE = "first", "later", "leave"  # where in a dialogue a pool's turns were said
SLOT_FIELDS = (*CONCEPT_FIELDS, KEYWORD_FIELD)  # the fields a slot may name ("{genre}")
SLOT_ROLES = ("wish", "exclusion", "context")  # what a value says of the user's wishes (crseval.language.tracker)
# A person's turn is a few hundred characters: learning leaves longer turns out, reading refuses longer templates.
MAX_TEMPLATE_CHARS = 2_000
# A voice file is read whole; one learned from the largest corpus an import reads (64 MiB) stays far below this.
MAX_VOICE_BYTES = 256 << 20
# The templates of a pool are ordered with each repeated as often as people said it (Voice.spread_order):
# a pool's said counts add up to at most the people of a corpus, never to more than this.
MAX_POOL_SAID = 10_000_000
# One draw combines pools (_draw_problem says which): their said counts together stay within the same bound.
MAX_DRAW_SAID = 10_000_000
# What a reader never sees: format characters (zero-width spaces and joiners, bidi marks, soft hyphens, tags),
# controls, and lone surrogates (no text at all; UTF-8 cannot write them).
_HIDDEN_CATEGORIES = frozenset({"Cf", "Cc", "Cs"})
_MARK = re.compile(r"\{(\w+)\}")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class VoiceError(ValueError):
    """A learned voice's file that cannot be used; the message names the file, where in it and what is wrong."""


def visible_text(text: str) -> str:
    """`text` as a reader sees it, the one reading learning, the voice file and the simulated user share:
    format, control and lone surrogate characters removed (a whitespace control, a tab or a line break, is a
    space), Unicode NFKC (fullwidth and other compatibility forms are their plain letters), runs of spaces
    one space, none at either end. "co\\u200bmedy" is "comedy", as a reader and a system that normalises
    read it; the rules read the same words."""
    kept = "".join(c for c in text if c.isspace() or unicodedata.category(c) not in _HIDDEN_CATEGORIES)
    return " ".join(unicodedata.normalize("NFKC", kept).split())


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
    after: tuple[str, ...] = ()  # the cases of the replies people said it after (crseval.replies.cases), sorted
    complaint: bool = False  # it complains about a failure of the reply (crseval.replies.complaints)

    @property
    def signature(self) -> tuple[str, ...]:
        return tuple(sorted(self.slots))


def pool_key(position: str, act: str, signature: tuple[str, ...]) -> str:
    return f"{position}|{act}|{','.join(signature)}"


class Voice:
    """The pools of one learned voice (module docstring), with what learning it counted."""

    def __init__(self, pools: dict[str, list[VoiceTemplate]], summary: dict, parts: PartPools | None = None):
        self.pools = pools
        self.summary = summary
        self.parts = parts if parts is not None else PartPools({})  # openers and tails by act (voice_parts)
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
                found[position] += [t for t in (_retype(template, wanted) for template in templates) if t]
        here, there = (FIRST, LATER) if first else (LATER, FIRST)
        return found[here] or found[there]

    def leave_options(self) -> list[VoiceTemplate]:
        return self.pools.get(pool_key(LEAVE, "", ()), [])

    def said_as(self, field_name: str, value: str) -> dict[str, int]:
        """How people wrote a catalog value (the voice's corpus: {words: turns}), e.g. "sci-fi" for
        science fiction; empty where nobody named it."""
        return self.summary.get("said_as", {}).get(f"{field_name}|{value}", {})

    def acts_after(self, case: str) -> dict[str, int]:
        """How often the voice's people answered a reply of `case` (crseval.replies.cases) with each act, their
        later turns counted their corpus's weight; empty for a voice learned before this was counted."""
        return self.summary.get("acts_after", {}).get(case, {})

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
        said = np.repeat(np.arange(len(ids)), [t.said for t in ids])  # each template's place, as often as said
        order = np.random.default_rng(int.from_bytes(digest[:8], "big")).permutation(len(said))
        return [ids[i] for i in said[order].tolist()], int.from_bytes(digest[8:16], "big")

    def as_json(self) -> dict:
        return {
            "format": VOICE_FORMAT,
            "summary": self.summary,
            "parts": self.parts.as_json(),
            "pools": {
                key: [
                    {
                        "id": t.id,
                        "text": t.text,
                        "slots": list(t.slots),
                        "said": t.said,
                        "after": list(t.after),
                        "complaint": t.complaint,
                    }
                    for t in templates
                ]
                for key, templates in sorted(self.pools.items())
            },
        }

    def write(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.as_json(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")

    @classmethod
    def read(cls, path: str | Path) -> "Voice":
        """The voice of the file `path` wrote (`write`), checked whole: VoiceError naming the file, the place
        in it and what is wrong, for a file that is no voice of this VOICE_FORMAT or holds a template that
        could be anything but words with slot marks (module docstring)."""
        data = _voice_json(Path(path))
        if data.get("format") != VOICE_FORMAT:
            found = shown(data.get("format"))
            raise VoiceError(f"{path}: a voice of format {found}, not {VOICE_FORMAT}; learn it again")
        for key in ("pools", "summary"):
            if not isinstance(data.get(key), dict):
                raise VoiceError(f"{path}: '{key}' must be an object, found {json_type(data.get(key))}; learn it again")
        pools, ids = {}, set()
        for key, templates in data["pools"].items():
            where = f"{path}: pool {shown(key)}"
            if (problem := _pool_problem(key, templates)) is not None:
                raise VoiceError(f"{where}: {problem}; learn it again")
            for position, item in enumerate(templates):
                if (problem := _template_problem(key, item, ids)) is not None:
                    raise VoiceError(f"{where}, template {position}: {problem}; learn it again")
                ids.add(item["id"])
            pools[key] = [
                VoiceTemplate(t["id"], t["text"], tuple(t["slots"]), t["said"], tuple(t["after"]), t["complaint"])
                for t in templates
            ]
        if (problem := _draw_problem(pools)) is not None:
            raise VoiceError(f"{path}: {problem}; learn it again")
        if (problem := _summary_problem(data["summary"])) is not None:
            raise VoiceError(f"{path}: summary: {problem}; learn it again")
        try:
            parts = PartPools.from_json(data.get("parts"))
        except PartPoolsError as error:
            raise VoiceError(f"{path}: parts: {error}; learn it again") from None
        return cls(pools, data["summary"], parts)


def _voice_json(path: Path) -> dict:
    """The JSON object of a voice file: a regular file of at most MAX_VOICE_BYTES, UTF-8, JSON as the
    standard writes it (no NaN, no key twice), valid Unicode; VoiceError naming the file otherwise."""
    try:
        raw = read_regular_file(path, MAX_VOICE_BYTES)
    except OSError as error:
        raise VoiceError(f"{path}: cannot be read: {error}") from None
    except UnreadableFile as refused:
        if refused.reason != "too large":
            raise VoiceError(f"{path}: {refused}; learn the voice again") from None
        if refused.size is None:
            raise VoiceError(f"{path}: grew over the {MAX_VOICE_BYTES:,} bytes a voice may hold while it was read")
        raise VoiceError(
            f"{path}: {refused.size:,} bytes, over the {MAX_VOICE_BYTES:,} bytes a voice may hold "
            "(crseval.simulate.user.voice.MAX_VOICE_BYTES); learn it again"
        ) from None
    try:
        data = strict_json_loads(raw.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise VoiceError(f"{path}: not UTF-8 text (byte {error.start + 1}: {error.reason}); learn it again") from None
    except ValueError as error:  # no JSON, or no strict JSON (crseval.core.io.strict_json_loads)
        raise VoiceError(f"{path}: not readable as JSON ({error}): cut off or corrupt; learn it again") from None
    if not isinstance(data, dict):
        raise VoiceError(f"{path}: not a voice: expected a JSON object, found {json_type(data)}; learn it again")
    if _LONE_SURROGATE.search(json.dumps(data, ensure_ascii=False)):
        raise VoiceError(f"{path}: holds text that is not valid Unicode (a lone surrogate escape); learn it again")
    return data


def _pool_problem(key: str, templates: object) -> str | None:
    """What keeps `key` and `templates` from being a pool `learn_voice` writes (`pool_key`), or None."""
    parts = key.split("|")
    if len(parts) != 3:
        return "a pool's key is 'where|act|slots'"
    position, act, signature = parts
    if position == LEAVE:
        if act or signature:
            return "the pool a user leaves with has no act and no slots"
    elif position not in (FIRST, LATER):
        return f"where a turn was said must be {FIRST}, {LATER} or {LEAVE}, not {shown(position)}"
    elif act not in ACTS:
        return f"unknown act {shown(act)} (the acts: {', '.join(ACTS)})"
    if not isinstance(templates, list) or not templates:
        found = "an empty list" if templates == [] else json_type(templates)
        return f"expected a list of one or more templates, found {found}"
    said = sum(t["said"] for t in templates if isinstance(t, dict) and _count(t.get("said")))
    if said > MAX_POOL_SAID:
        return f"its templates are said {said:,} times, more than the {MAX_POOL_SAID:,} a pool holds"
    return None


def _template_problem(key: str, item: object, ids: set) -> str | None:
    """What keeps `item` from being a template of the pool `key` (a dialogue's words and one `{field}` mark
    per slot, nothing a formatter would read as a field, conversion or format spec), or None."""
    if not isinstance(item, dict) or not {"id", "text", "slots", "said", "after", "complaint"} <= item.keys():
        return "expected an object with id, text, slots, said, after and complaint"
    template_id, text, slots, said = item["id"], item["text"], item["slots"], item["said"]
    after, complaint = item["after"], item["complaint"]
    if not isinstance(after, list) or not all(isinstance(c, str) and c in (START, *REPLY_CASES) for c in after):
        return f"after must be a list of reply cases ({START}, {', '.join(REPLY_CASES)}), found {shown(after)}"
    if after != sorted(set(after)):
        return f"after must list each reply case once, sorted, found {shown(after)}"
    if not isinstance(complaint, bool):
        return f"complaint must be true or false, found {shown(complaint)}"
    if not isinstance(template_id, str) or not 0 < len(template_id) <= MAX_TEMPLATE_CHARS:
        return f"id must be a non-empty string, found {shown(template_id)}"
    if template_id in ids:
        return f"id {shown(template_id)} is given to an earlier template too"
    if not isinstance(text, str) or not text.strip():
        return f"text must be a non-empty string, found {shown(text)}"
    if len(text) > MAX_TEMPLATE_CHARS:
        return f"text of {len(text):,} characters, over the {MAX_TEMPLATE_CHARS:,} a template may hold"
    if (unseen := _unseen(text)) is not None:
        return f"text {shown(text)} {unseen}"
    if not isinstance(slots, list) or not all(isinstance(slot, str) and _known_slot(slot) for slot in slots):
        known = f"fields {', '.join(SLOT_FIELDS)}; roles {', '.join(SLOT_ROLES)}"
        return f"slots must be a list of 'title' or 'field:role' ({known}), found {shown(slots)}"
    if not _count(said):
        return f"said must be a whole number of people (1 or more), found {shown(said)}"
    if "{" in _MARK.sub("", text) or "}" in _MARK.sub("", text):
        return f"text {shown(text)} holds a brace that is no slot mark: a template holds '{{field}}' marks only"
    marks = _MARK.findall(text)
    if marks != [slot.split(":")[0] for slot in slots]:
        return f"text's slot marks {marks} are not its slots {slots}, one for one"
    signature = ",".join(sorted(slots))
    if key.split("|")[2] != signature:
        return f"slots {slots} are not the pool's ({shown(key.split('|')[2])})"
    return None


def _unseen(text: str) -> str | None:
    """What of `text` a reader sees otherwise than the rules would read it (it is not its own visible_text),
    named by character; None where it is."""
    if visible_text(text) == text:
        return None
    for character in text:
        name = f"U+{ord(character):04X} ({unicodedata.name(character, 'unnamed')})"
        if not character.isspace() and unicodedata.category(character) in _HIDDEN_CATEGORIES:
            return f"holds {name}, a character no reader sees"
        if unicodedata.normalize("NFKC", character) != character:
            return f"holds {name}, a compatibility form of {unicodedata.normalize('NFKC', character)!r}"
    if text != " ".join(text.split()):
        return "has spaces a reader does not see apart (at either end, doubled, or other than a space)"
    return "is not in Unicode's NFKC form (a letter and a mark that one character writes)"


def _draw_problem(pools: dict[str, list[VoiceTemplate]]) -> str | None:
    """What keeps one draw from the pools within MAX_DRAW_SAID, or None. A draw combines, at one place (a
    dialogue's first turn or a later one, each act's own where it has none there), the pools of several acts
    with one slot signature and the same with a film (the acts a user reacts with, crseval.simulate.user.voicing), or
    the pools of one act whose slots have the same roles in any fields (Voice.retyped). The worst of them is
    within the pools of one set of roles, every act's and field's, each at the place where it is said most:
    that sum is bounded. A user who leaves draws from the leaving pool alone, bounded as every pool."""
    widest: dict[tuple[str, ...], dict[str, dict[str, int]]] = {}  # roles -> act -> signature -> said
    for key, templates in pools.items():
        position, act, signature = key.split("|")
        if position == LEAVE:
            continue
        roles = tuple(sorted(slot.split(":")[1] for slot in signature.split(",") if slot and slot != "title"))
        by_signature = widest.setdefault(roles, {}).setdefault(act, {})
        by_signature[signature] = max(by_signature.get(signature, 0), sum(t.said for t in templates))
    for roles, acts in sorted(widest.items()):
        said = sum(sum(by_signature.values()) for by_signature in acts.values())
        if said > MAX_DRAW_SAID:
            return (
                f"one draw may combine the pools of the acts {', '.join(sorted(acts))} (slots of the roles "
                f"{', '.join(roles) or 'none'}, with or without a film): their templates are said {said:,} times "
                f"together, more than the {MAX_DRAW_SAID:,} one draw may build "
                "(crseval.simulate.user.voice.MAX_DRAW_SAID)"
            )
    return None


def _known_slot(slot: str) -> bool:
    field_name, _, role = slot.partition(":")
    return slot == "title" or (field_name in SLOT_FIELDS and role in SLOT_ROLES)


def _count(value: object) -> bool:
    """A whole number of people or turns, 1 or more."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _summary_problem(summary: dict) -> str | None:
    """What keeps the parts of a voice's summary the simulated user reads (`fitted`, `said_as`, `asked`,
    `acts_after`) from being used, or None; its other parts are only shown to people."""
    fitted = summary.get("fitted", {})
    if not isinstance(fitted, dict):
        return f"'fitted' must be an object, found {json_type(fitted)}"
    for knob, entry in fitted.items():
        value = entry.get("value") if isinstance(entry, dict) else None
        number = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        whole = number and float(value).is_integer()
        if not isinstance(entry, dict) or not (value is None or (number and value >= 0)):
            return f"fitted.{knob} must be an object whose value is a number >= 0 or null, found {shown(entry)}"
        if value is not None and (not whole if knob == "patience" else value > 1):
            wanted = "a whole number of turns" if knob == "patience" else "a share in [0, 1]"
            return f"fitted.{knob}: {shown(value)} is not {wanted}"
    for part, inner in (("said_as", "words"), ("asked", "value"), ("acts_after", "act")):
        table = summary.get(part, {})
        if not isinstance(table, dict):
            return f"{part!r} must be an object, found {json_type(table)}"
        for name, counts in table.items():
            if not isinstance(counts, dict):
                return f"{part}.{shown(name)} must be an object, found {json_type(counts)}"
            for words, count in counts.items():
                if not words.strip() or len(words) > MAX_TEMPLATE_CHARS or not _count(count):
                    return (
                        f"{part}.{shown(name)}: each {inner} (1 to {MAX_TEMPLATE_CHARS:,} characters) needs a "
                        f"count of 1 or more, found {shown(words)}: {shown(count)}"
                    )
                if part == "said_as" and (unseen := _unseen(words)) is not None:  # words the user says
                    return f"{part}.{shown(name)}: the words {shown(words)} {unseen}"
    return None


def voice_problems(config: dict):
    """What a learned voice requires beyond the schema: a corpus for every profile that speaks with it and
    for a rewording shown people's turns as examples, and a part to learn from that the split has."""
    # profiles name the voice; the voice needs no profile
    from crseval.simulate.user.profiles import PROFILES, named_profiles

    simulator = config.get("simulator") if isinstance(config, dict) else None
    if not isinstance(simulator, dict):
        return
    voice = simulator.get("voice") if isinstance(simulator.get("voice"), dict) else {}
    parts, part = voice.get("parts", 2), voice.get("learn_part", 1)
    if isinstance(parts, int) and isinstance(part, int) and part > parts:
        yield f"simulator.voice.learn_part: {part} is not one of the {parts} parts (1 to {parts})"
    names = [c.get("name") for c in voice.get("mix") or [] if isinstance(c, dict)]
    for name in sorted({n for n in names if names.count(n) > 1}, key=str):
        yield f"simulator.voice.mix: the name {name!r} is given to two corpora; each corpus's people are counted by it"
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


# The words right before a slot that bind it to a field (the tracker's FIELD_CUES and the verbs people put
# before a name, an article between allowed): "it does not have to star {actor}" re-typed to rule out a genre
# would read "it does not have to star comedy". Wider than the tracker's cue patterns (concepts._FIELD_CUE_BEFORE),
# which read a value in place: a template's slot may follow an article ("with the {actor}") or a verb.
_BOUND_BEFORE = {
    field: re.compile(r"\b(?:" + "|".join(re.escape(cue) for cue in cues) + r")\s+(?:(?:the|a|an)\s+)?$", re.I)
    for field, cues in {
        "actor": (*FIELD_CUES["actor"], "star", "stars", "starred", "played", "plays", "acted", "acting"),
        "director": (*FIELD_CUES["director"], "by", "directs"),
        "writer": (*FIELD_CUES["writer"], "by", "wrote"),
        "language": (*FIELD_CUES["language"], "spoken in"),
        "year": (*FIELD_CUES["year"], "after", "before", "since"),
    }.items()
}


def _retype(template: VoiceTemplate, wanted: list[str]) -> VoiceTemplate | None:
    """`template` with its value slots, left to right, given the fields of `wanted` role by role; None where
    the words before a re-typed slot bind it to another field than its new one (_BOUND_BEFORE)."""
    by_role: dict[str, list[str]] = {}
    for slot in wanted:
        by_role.setdefault(slot.split(":")[1], []).append(slot)
    slots = [by_role[slot.split(":")[1]].pop(0) for slot in template.slots]
    pieces = re.split(r"\{\w+\}", template.text)
    for before, old, new in zip(pieces, template.slots, slots):
        new_field = new.split(":")[0]
        if old.split(":")[0] == new_field:
            continue
        bound_to = {field for field, cue in _BOUND_BEFORE.items() if cue.search(before)}
        if bound_to and new_field not in bound_to:
            return None
    fields = iter(slot.split(":")[0] for slot in slots)
    text = re.sub(r"\{(\w+)\}", lambda m: "{" + next(fields) + "}", template.text)
    return replace(template, id=f"{template.id}~{';'.join(slots)}", text=text, slots=tuple(slots))


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
