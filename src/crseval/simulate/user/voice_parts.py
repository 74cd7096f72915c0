"""A learned turn's wording composed below the sentence: one person's core, other people's opener and tail.

The learned voice (crseval.simulate.user.voice) words a turn with a whole real turn. Drawn often enough, a
finite set of whole sentences gives the simulated user away. Here a turn is three parts: an optional
opener ("ok so,"), a core that holds every slot ("any good {genre} films?") and an optional tail
("thanks!"); the simulated user keeps a real turn's core and draws its opener and tail from the turns
other people said with the same act.

The cut (`split_template`). A template is cut into clauses after a sentence end (a run of ".", "!" or "?")
and after a comma, each followed by a space, and after a dash between spaces (" - ", " -- "); the
whitespace after a cut is the gap between two clauses, and each mark stays with the clause it ends. A
"." after a known abbreviation ("Mr.", "Dr.", "vs.") or after one letter (an initial) is no cut. A clause
is a part when it holds no brace (so no slot mark), 1 to 4 words (runs of non-spaces with a letter or
digit) and at most MAX_PART_CHARS characters. The opener is the first clause when it is a part and not
the whole turn; the tail is the last clause when it is a part and not all that is left after the opener;
the core is the rest, never empty where the text is not (a turn that cannot be cut is all core).
`TemplateParts.joined()` gives the text back exactly.

The join (`PartPools.compose`). An opener or a tail is joined only to a core of the act it was said with
in a real turn: the act and the part are a pair the corpus shows. A part that holds a question mark is
never joined to a turn that already holds one (a core and an opener that both ask read as two
questions), and a part that greets (crseval.language.user_acts.GREETING) only to a dialogue's first turn
and never to a core that greets. Each part is there with the share of the act's turns that had one,
counted at the same place (a dialogue's first turn, or a later one; the act's share over both where it
has no turn at that place), and drawn as often as people said it (each person once). No part is said twice
in a session (the words of the parts said, lower case, in the caller's `used`), nor where the turn already
says its words ("thanks" after a core that thanks): where every part that fits was said, the turn has none.

Joining keeps the core's words: the comma or dash that tied it to its own tail goes with that tail; a tail
follows a sentence end after a space, else after ", "; after an opener that ends with a comma or a dash a
capitalised first word of the core is lower-cased, and a core whose own capitalised opener is left off
starts with a capital.

The pools are a build artefact learned from a corpus, so a file of them comes from outside the program:
`PartPools.from_json` checks it whole and refuses it with a PartPoolsError naming what is wrong.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from crseval.core.io import shown as _shown
from crseval.language.user_acts import ACTS, GREETING

PARTS_FORMAT = 1
MAX_PART_WORDS = 4  # an opener or a tail is a few words ("oh, ok,", "thanks a lot!"), not a sentence of content
MAX_PART_CHARS = 100  # four words of a person; a longer clause stays in the core
MAX_PARTS = 100_000  # distinct openers (or tails) of one act: far above a corpus's people
MAX_COUNT = 10_000_000  # people or turns of one act: the bound of a voice's pools (voice.MAX_POOL_SAID)
PLACES = ("first", "later")  # a dialogue's first turn, a later one
_SIDES = ("openers", "tails")
_SHARES = {"openers": "with_opener", "tails": "with_tail"}

# After a cut mark, the whitespace that is the gap, and then more text.
_CUT = re.compile(r"(?:[.!?]+|,|\s[-\u2013\u2014]{1,2})(\s+)(?=\S)")
_ABBREVIATIONS = frozenset({"mr", "mrs", "ms", "dr", "st", "vs", "jr", "sr", "etc", "e.g", "i.e", "prof"})
_WORD = re.compile(r"\S*\w\S*")
_JOINING_MARK = re.compile(r"\s*(?:,|\s[-\u2013\u2014]{1,2})$")
_HIDDEN_CATEGORIES = frozenset({"Cf", "Cc", "Cs"})


class PartPoolsError(ValueError):
    """Part pools that cannot be used; the message names where in them and what is wrong."""


@dataclass(frozen=True)
class TemplateParts:
    """A template cut into opener, core and tail (module docstring), with the whitespace between them."""

    opener: str
    opener_gap: str
    core: str
    tail_gap: str
    tail: str

    def joined(self) -> str:
        return self.opener + self.opener_gap + self.core + self.tail_gap + self.tail


def split_template(text: str) -> TemplateParts:
    """`text` cut into its opener, core and tail by the rule of the module docstring."""
    clauses = _clauses(text)
    opener = len(clauses) > 1 and _is_part(text[slice(*clauses[0])])
    rest = clauses[1:] if opener else clauses
    tail = len(rest) > 1 and _is_part(text[slice(*rest[-1])])
    core_start = rest[0][0] if opener else 0
    core_end = rest[-2][1] if tail else len(text)
    return TemplateParts(
        opener=text[: clauses[0][1]] if opener else "",
        opener_gap=text[clauses[0][1] : core_start] if opener else "",
        core=text[core_start:core_end],
        tail_gap=text[core_end : rest[-1][0]] if tail else "",
        tail=text[rest[-1][0] :] if tail else "",
    )


def _clauses(text: str) -> list[tuple[int, int]]:
    """(start, end) of each clause of `text`, left to right; the gaps between them are whitespace."""
    bounds, start = [], 0
    for cut in _CUT.finditer(text):
        if cut.group(0).startswith(".") and _before_is_abbreviation(text, cut.start()):
            continue
        bounds.append((start, cut.start(1)))
        start = cut.end(1)
    bounds.append((start, len(text)))
    return bounds


def _before_is_abbreviation(text: str, at: int) -> bool:
    """Whether the word that ends at `at` (before a ".") is an abbreviation or an initial."""
    word = re.search(r"(\w+(?:\.\w+)*)$", text[:at])
    return word is not None and (len(word.group(1)) == 1 or word.group(1).lower() in _ABBREVIATIONS)


def _is_part(clause: str) -> bool:
    """Whether a clause may be an opener or a tail: no brace, 1 to MAX_PART_WORDS words, short."""
    words = len(_WORD.findall(clause))
    return "{" not in clause and "}" not in clause and 1 <= words <= MAX_PART_WORDS and len(clause) <= MAX_PART_CHARS


def part_words(part: str) -> str:
    """What says a part twice: its words, lower case ("Thanks!" and "thanks," are one part)."""
    return " ".join(re.findall(r"\w+", part.lower()))


@dataclass(frozen=True)
class ActParts:
    """What one act's turns show of openers and tails: turns per place, those with an opener or a tail,
    and each opener and tail with the number of people who said it."""

    turns: dict[str, int]
    with_opener: dict[str, int]
    with_tail: dict[str, int]
    openers: dict[str, int]
    tails: dict[str, int]

    def share(self, side: str, first: bool) -> float:
        """The share of the act's turns with an opener (`side` "openers") or a tail, at the place of the turn,
        else over both places; 0 for an act with no turn."""
        having = self.with_opener if side == "openers" else self.with_tail
        place = PLACES[0] if first else PLACES[1]
        if self.turns[place]:
            return having[place] / self.turns[place]
        total = sum(self.turns.values())
        return sum(having.values()) / total if total else 0.0

    def as_json(self) -> dict:
        return {
            "turns": dict(self.turns),
            "with_opener": dict(self.with_opener),
            "with_tail": dict(self.with_tail),
            "openers": dict(sorted(self.openers.items())),
            "tails": dict(sorted(self.tails.items())),
        }


class PartPools:
    """Openers and tails by the act they were said with (module docstring)."""

    def __init__(self, acts: dict[str, ActParts]):
        self.acts = acts

    @classmethod
    def learn(cls, items: Iterable[tuple[str, str, str, bool]]) -> PartPools:
        """The pools of real turns, each (act, template, person, first): the template cut (split_template),
        its opener and tail kept by act with the people who said them, each person once, and the act's
        turns counted at their place. PartPoolsError for an act that is not one of ACTS or a template that
        is not the visible text a voice holds."""
        turns = {act: dict.fromkeys(PLACES, 0) for act in ACTS}
        having = {act: {side: dict.fromkeys(PLACES, 0) for side in _SIDES} for act in ACTS}
        people: dict[str, dict[str, dict[str, set]]] = {act: {side: {} for side in _SIDES} for act in ACTS}
        for position, (act, template, person, first) in enumerate(items):
            if act not in ACTS:
                raise PartPoolsError(f"turn {position}: unknown act {act!r} (the acts: {', '.join(ACTS)})")
            if (unseen := _unseen(template)) is not None:
                raise PartPoolsError(f"turn {position}: the template {unseen}")
            place = PLACES[0] if first else PLACES[1]
            parts = split_template(template)
            turns[act][place] += 1
            for side, part in (("openers", parts.opener), ("tails", parts.tail)):
                if part:
                    having[act][side][place] += 1
                    people[act][side].setdefault(part, set()).add(person)
        return cls(
            {
                act: ActParts(
                    turns=turns[act],
                    with_opener=having[act]["openers"],
                    with_tail=having[act]["tails"],
                    openers={part: len(who) for part, who in people[act]["openers"].items()},
                    tails={part: len(who) for part, who in people[act]["tails"].items()},
                )
                for act in ACTS
                if sum(turns[act].values())
            }
        )

    def compose(self, core_template: str, act: str, first: bool, rng: np.random.Generator, used: set[str]) -> str:
        """`core_template`'s core with an opener and a tail drawn for `act` (module docstring): each there
        with the act's share at the turn's place (`first`: a dialogue's first turn), drawn as often as people
        said it, none said in the session yet (`used`, to which the parts drawn are added: pass a copy to draw
        without keeping them). The same text for the same state of `rng`."""
        if act not in ACTS:
            raise PartPoolsError(f"unknown act {act!r} (the acts: {', '.join(ACTS)})")
        parts = split_template(core_template)
        core = _JOINING_MARK.sub("", parts.core) if parts.tail else parts.core
        pools = self.acts.get(act)
        opener = self._draw(pools, "openers", core, first, rng, used) if pools else ""
        tail = self._draw(pools, "tails", f"{opener} {core}", first, rng, used) if pools else ""
        core = _fit_case(core, opener, parts.opener)
        if tail:
            core += " " if not (core[-1:].isalnum() or core.endswith("}")) else ", "
        return (opener + " " if opener else "") + core + tail

    @staticmethod
    def _draw(pools: ActParts, side: str, said: str, first: bool, rng: np.random.Generator, used: set[str]) -> str:
        """One opener or tail (`side`) for a turn that says `said` so far, or "" (module docstring)."""
        if rng.random() >= pools.share(side, first):
            return ""
        fitting = [
            (part, people)
            for part, people in sorted(getattr(pools, side).items())
            if part_words(part) not in used
            and f" {part_words(part)} " not in f" {part_words(said)} "
            and not ("?" in part and "?" in said)
            and not (GREETING.search(part) and (not first or GREETING.search(said)))
        ]
        if not fitting:
            return ""
        weights = np.array([people for _, people in fitting], dtype=float)
        part = fitting[int(rng.choice(len(fitting), p=weights / weights.sum()))][0]
        used.add(part_words(part))
        return part

    def variety(self, act: str) -> int:
        """The (opener, tail) pairs `act` may be said with, none counting as one of each: how many ways
        one core can be worded, before the question, greeting and session rules."""
        pools = self.acts.get(act)
        return (len(pools.openers) + 1) * (len(pools.tails) + 1) if pools else 1

    def as_json(self) -> dict:
        return {"format": PARTS_FORMAT, "acts": {act: pools.as_json() for act, pools in sorted(self.acts.items())}}

    @classmethod
    def from_json(cls, data: object) -> PartPools:
        """The pools `as_json` wrote, checked whole: PartPoolsError naming the place and what is wrong."""
        if not isinstance(data, dict) or set(data) != {"format", "acts"}:
            raise PartPoolsError(f"expected an object with 'format' and 'acts', found {_shown(data)}")
        if data["format"] != PARTS_FORMAT or isinstance(data["format"], bool):
            raise PartPoolsError(f"format: {_shown(data['format'])}, not {PARTS_FORMAT}; learn the pools again")
        if not isinstance(data["acts"], dict):
            raise PartPoolsError(f"acts: expected an object, found {_shown(data['acts'])}")
        acts = {}
        for act, entry in data["acts"].items():
            if act not in ACTS:
                raise PartPoolsError(f"acts: unknown act {_shown(act)} (the acts: {', '.join(ACTS)})")
            if (problem := _act_problem(entry)) is not None:
                raise PartPoolsError(f"acts.{act}.{problem}")
            acts[act] = ActParts(**{key: dict(value) for key, value in entry.items()})
        return cls(acts)


def _act_problem(entry: object) -> str | None:
    """What keeps `entry` from being one act's pools as `ActParts.as_json` writes them (its place, then the
    problem), or None."""
    keys = ("turns", "with_opener", "with_tail", *_SIDES)
    if not isinstance(entry, dict) or set(entry) != set(keys):
        return f"{keys[0]}: expected an object with {', '.join(keys)}, found {_shown(entry)}"
    for key in keys[:3]:
        counts = entry[key]
        if not isinstance(counts, dict) or set(counts) != set(PLACES):
            return f"{key}: expected an object with {' and '.join(PLACES)}, found {_shown(counts)}"
        for place, count in counts.items():
            if not _count(count, 0):
                return f"{key}.{place}: expected a whole number from 0 to {MAX_COUNT:,}, found {_shown(count)}"
            if key != "turns" and count > entry["turns"][place]:
                return f"{key}.{place}: {count} turns, more than the act's {entry['turns'][place]} turns there"
    for side in _SIDES:
        parts, having = entry[side], sum(entry[_SHARES[side]].values())
        if not isinstance(parts, dict) or len(parts) > MAX_PARTS:
            return f"{side}: expected an object of at most {MAX_PARTS:,} parts, found {_shown(parts)}"
        if bool(parts) != bool(having):
            return f"{side}: {len(parts)} parts for {having} turns that have one; learn the pools again"
        for part, people in parts.items():
            if (problem := _part_problem(part)) is not None:
                return f"{side}[{_shown(part)}]: {problem}"
            if not _count(people, 1) or people > having:
                return f"{side}[{_shown(part)}]: expected a number of people from 1 to {having}, found {_shown(people)}"
    return None


def _part_problem(part: str) -> str | None:
    """What keeps `part` from being an opener or a tail `split_template` cuts, or None."""
    if "{" in part or "}" in part:
        return "holds a brace: a part holds no slot and nothing a formatter reads"
    if (unseen := _unseen(part)) is not None:
        return unseen
    if not _is_part(part):
        return f"not 1 to {MAX_PART_WORDS} words of at most {MAX_PART_CHARS} characters"
    return None


def _unseen(text: str) -> str | None:
    """What of `text` a reader would not see as the voice writes it (crseval.simulate.user.voice.visible_text:
    no format or control character, NFKC, single spaces, none at either end), or None."""
    for character in text:
        if unicodedata.category(character) in _HIDDEN_CATEGORIES:
            return f"holds U+{ord(character):04X}, a character no reader sees"
    if unicodedata.normalize("NFKC", text) != text:
        return "is not in Unicode's NFKC form"
    if text != " ".join(text.split()):
        return "has spaces a reader does not see apart (at either end, doubled, or other than a space)"
    return None


def _fit_case(core: str, opener: str, own_opener: str) -> str:
    """`core` capitalised to follow `opener` (lower case after a comma or a dash, unless "I"), or, without
    one, to start the turn as its own capitalised opener did."""
    if opener and re.search(r"(?:,|[-\u2013\u2014])$", opener) and re.match(r"[A-Z][a-z]", core):
        return core[0].lower() + core[1:]
    if not opener and own_opener[:1].isupper() and re.match(r"[a-z]", core):
        return core[0].upper() + core[1:]
    return core


def _count(value: object, least: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and least <= value <= MAX_COUNT
