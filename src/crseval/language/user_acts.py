"""What a user turn does, read by rules that apply to simulated and real turns alike.

A turn may greet, thank, be only small talk, take a film, turn one down, ask about one, ask a question,
name catalog values (each as a wish, an exclusion or context, crseval.language.tracker) and name catalog
films. `read_turn` reads all of it and gives the turn one act (the first that applies of take, turn_down,
ask_about, request, small_talk, ask, other), its slot signature (the fields it names, with their roles,
and how many titles) and its delexicalised text: every catalog value and title replaced by a typed slot.
The user realism rule and the learned voice (crseval.simulate.user.voice) read turns with these rules, so
that what the voice learns and what realism measures are the same thing.

A turn that names something the rules cannot type (a film the catalog does not hold, a person's name
that is no catalog value) has `untyped` set to the reason: a voice leaves it out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from crseval.language.concepts import ConceptMatcher
from crseval.language.tracker import extract_statements

# A turn that greets, thanks, or is small talk without a request (lower case, whole words).
GREETING = re.compile(r"^\W*(?:hi|hello|hey|hiya|good (?:morning|afternoon|evening))\b", re.IGNORECASE)
THANKS = re.compile(r"\b(?:thanks|thank you|thx|cheers)\b", re.IGNORECASE)
CHIT_CHAT = re.compile(
    r"^\W*(?:hi|hello|hey|ok(?:ay)?|cool|nice|great|thanks|thank you|bye|goodbye|lol|yes|no|sure)\W*$", re.IGNORECASE
)
# How a turn reacts to the films offered, read the same way on both sides: it takes one, turns one
# down (asking for "another one" is neither), or asks about one. Written for user turns of any source;
# a turn may do none or several.
TAKES = re.compile(
    r"\b(?:i'?ll (?:watch|take|go with|try|check)|i will (?:watch|take|try|check)|sounds? (?:good|great)|"
    r"(?:looks|seems) (?:good|great|interesting)|yes,? (?:that|this) one|perfect|i(?:'m| am) going to watch)\b",
    re.IGNORECASE,
)
TURNS_DOWN = re.compile(
    r"^\W*(?:no|nope|nah)\b|\b(?:not (?:that|this|those|these|really|interested|for me)|don'?t (?:like|want)|"
    r"(?:have|'ve) (?:already )?seen)\b",
    re.IGNORECASE,
)
ASKS_ABOUT = re.compile(
    r"\b(?:what(?:'s| is) (?:it|that|this|\w+(?: \w+){0,4}) about|who (?:is|stars|plays) in|plot|"
    r"is (?:it|that|this) (?:good|scary|funny|worth)|why (?:that|this|those|these|\w+\?)|tell me (?:more )?about)",
    re.IGNORECASE,
)

# The acts, in the order in which the first that applies is the turn's.
ACTS = ("take", "turn_down", "ask_about", "request", "small_talk", "ask", "other")

# Two or more capitalised words in a row that are not a sentence's first: a name (of a person or a film).
_NAME_RUN = re.compile(
    r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z'’.-]+(?:\s+(?:[A-Z][a-z'’.-]+|[A-Z]\.|of|the|and|de|van|von)){1,5}"
)
_NOT_NAMES = {"I", "Hi", "Hello", "Hey", "Ok", "Okay", "Thanks", "Thank", "Yes", "No", "Please", "Can", "Could"}
# "What is X about": X points at something said (it, that one, the first movie), else it names a film; a name
# the rules did not type as a catalog title is one the catalog does not hold, whatever its case.
_WHAT_ABOUT = re.compile(r"\bwhat(?:'s| is) ((?:[\w']+ ){0,5}?[\w']+) about\b", re.IGNORECASE)
_POINTING_WORDS = {
    *"it that this these those they them the a an one ones movie movies film films show shows story plot".split(),
    *"first second third fourth fifth last latest next other another each all both number no nr".split(),
    *"1 2 3 4 5 your my its their new".split(),
}
# A year that names a film ("Heat (1995)") or a film in quotes the catalog does not hold.
_YEAR_IN_BRACKETS = re.compile(r"\(\s*(?:18|19|20)\d\d\s*\)")


@dataclass(frozen=True)
class TurnReading:
    """What one user turn does (module docstring)."""

    text: str
    act: str
    greets: bool
    thanks: bool
    question: bool
    statements: tuple[tuple[str, str, str], ...]  # (field, value, role), left to right
    titles: tuple[str, ...]  # catalog films named, left to right, as the catalog spells them
    template: str  # the text with every value and title replaced by its slot ("{genre}", "{title}")
    untyped: str = ""  # why the turn names something the rules cannot type ("" when it names nothing else)
    said_as: tuple[str, ...] = ()  # the words that name each of `statements`, as the turn writes them

    @property
    def slots(self) -> tuple[str, ...]:
        """The slot signature: `field:role` per value and `title` per film, sorted."""
        return tuple(sorted([f"{f}:{r}" for f, _, r in self.statements] + ["title"] * len(self.titles)))


def act_flags(text: str) -> dict[str, bool]:
    """The yes/no readings of a turn that need no catalog."""
    return {
        "question": "?" in text,
        "greeting": bool(GREETING.search(text)),
        "thanks": bool(THANKS.search(text)),
        "chit_chat": bool(CHIT_CHAT.match(text)),
        "takes": bool(TAKES.search(text)),
        "turns_down": bool(TURNS_DOWN.search(text)),
        "asks_about": bool(ASKS_ABOUT.search(text)),
    }


def act_of(flags: dict[str, bool], names_values: bool) -> str:
    """The turn's one act: the first of ACTS that applies."""
    if flags["takes"]:
        return "take"
    if flags["turns_down"]:
        return "turn_down"
    if flags["asks_about"]:
        return "ask_about"
    if names_values:
        return "request"
    if flags["chit_chat"] or ((flags["thanks"] or flags["greeting"]) and not flags["question"]):
        return "small_talk"
    if flags["question"]:
        return "ask"
    return "other"


def read_turn(text: str, matcher: ConceptMatcher) -> TurnReading:
    """Every reading of a user turn (module docstring)."""
    recognised = matcher.title_recognizer.recognise(text, by_user=True)
    references = sorted(recognised.references, key=lambda r: r.start)
    statements = extract_statements(matcher, text, [r.title for r in references])
    spans = [(r.start, r.end, "title") for r in references]
    spans += [(m.start, m.end, m.field) for m, _ in statements]
    spans.sort()
    pieces, at = [], 0
    for start, end, slot in spans:
        if start < at:  # overlapping readings: the turn cannot be typed unambiguously
            return _reading(text, statements, references, text, "overlapping readings")
        pieces += [text[at:start], "{" + slot + "}"]
        at = end
    pieces.append(text[at:])
    template = "".join(pieces)
    return _reading(text, statements, references, template, _untyped(text, template, recognised.unknown))


def _reading(text, statements, references, template, untyped) -> TurnReading:
    flags = act_flags(text)
    named = tuple((m.field, m.value, role) for m, role in statements)
    act = act_of(flags, any(role != "context" for _, _, role in named))
    return TurnReading(
        text=text,
        act=act,
        greets=flags["greeting"],
        thanks=flags["thanks"],
        question=flags["question"],
        statements=named,
        titles=tuple(r.title for r in references),
        template=template,
        untyped=untyped,
        said_as=tuple(text[m.start : m.end] for m, _ in statements),
    )


def _untyped(text: str, template: str, unknown_titles: list[str]) -> str:
    """Why a turn names something outside the catalog, read on its delexicalised text; "" if it does not."""
    if unknown_titles:
        return "a film the catalog does not hold"
    if _YEAR_IN_BRACKETS.search(template):
        return "a film the catalog does not hold"
    stripped = re.sub(r"\{\w+\}", "", template)
    for match in _NAME_RUN.finditer(stripped):
        words = [w for w in match.group(0).split() if w[:1].isupper()]
        if len(words) >= 2 and not set(words) <= _NOT_NAMES:
            return "a name the catalog does not hold"
    if re.search(r"[\"“][^\"”]{2,}[\"”]", stripped):
        return "a quoted name the catalog does not hold"
    for match in _WHAT_ABOUT.finditer(stripped):
        if set(match.group(1).lower().split()) - _POINTING_WORDS:
            return "a film asked about by a name the catalog does not hold"
    return ""
