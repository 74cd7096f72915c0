"""Rule-based constraint tracking for the CRS agents (no LLM parses constraints).

Each user turn updates the state: a value named positively replaces that field's earlier
wish ("now a comedy" after "a drama" means comedy); a value named after a negation cue
("not horror", "nothing with X", "no longer", "don't want", "not a big fan of", "I dislike", "non-horror"),
or followed by one ("horror is not my thing"), is excluded instead. A value named
as a point of reference ("X reminds me of Y", "thinking of Y", "via Y") is context, not a wish.
A turn that says the user starts afresh ("I've changed my mind", "a new idea", "let's go
another way") replaces all earlier wishes by the ones it names; exclusions stay. Nothing
inside a film title counts (the concept matcher skips title spans).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from crseval.language.concepts import ConceptMatcher, Mention

NEGATION = re.compile(
    r"(?:\bnot\b|\bno\b|\bnothing\b|\bwithout\b|n't\b|\bnever\b|\banything but\b|\bno more\b|\bno longer\b|\bexcept\b"
    r"|\bnon\b|\bdislike\b|\bhate\b|\bdetest\b|\bnot\W+(?:\w+\W+){0,3}fans?\W+of\b)"  # "not really a big fan of"
    r"(?:\W+\w+){0,3}\W*$",
    re.IGNORECASE,
)
# A negation said after the value: "horror is not my thing", "westerns aren't for me".
NEGATION_AFTER = re.compile(
    r"^\W*(?:(?:movies?|films?)\W+)?(?:is|are|was|were)(?:\s+not|n't)\s+(?:really\s+|quite\s+)?"
    r"(?:my\s+(?:thing|style|taste|genre|cup\s+of\s+tea)|for\s+me)\b",
    re.IGNORECASE,
)
# A value right after one of these is a point of reference, not a wish.
CONTEXT = re.compile(
    r"(?:\breminds?\s+me\s+of|\bthinking\s+of|\bspeaking\s+of|\bvia|\bbecause\s+of|\bas\s+in|\blike\s+in"
    r"|\bthe\s+link\s+is|\bconnected\s+by|\bthrough)(?:\W+\w+){0,2}\W*$",
    re.IGNORECASE,
)
# The user starts afresh: earlier wishes give way to the ones this turn names.
FRESH_START = re.compile(
    r"\b(?:changed?\s+my\s+mind|new\s+idea|another\s+way|something\s+different|start\s+over|different\s+direction)\b",
    re.IGNORECASE,
)
# A clause break ends a negation's reach: "not that one. I want a drama" is positive.
CLAUSE_BREAK = re.compile(r"[.;!?]|(?<!anything )(?<!everything )\bbut\b|\binstead\b", re.IGNORECASE)
# Years the catalog may not hold still state a wish ("something from 1932").
YEAR = re.compile(r"(?<![\w-])(18[89]\d|19\d\d|20\d\d)(?![\w-])")


@dataclass(frozen=True)
class Constraint:
    field: str
    value: str
    negated: bool = False

    def as_dict(self) -> dict:
        return {"field": self.field, "value": self.value, "negated": self.negated}


def _clause_before(text: str, mention: Mention) -> str:
    before = text[max(0, mention.start - 40) : mention.start]
    breaks = list(CLAUSE_BREAK.finditer(before))
    return before[breaks[-1].end() :] if breaks else before


def is_negated(text: str, mention: Mention) -> bool:
    """Whether a negation cue stands within three words before the mention, in the same clause, or the words
    right after it say it is not for the user ("horror is not my thing")."""
    return (
        NEGATION.search(_clause_before(text, mention)) is not None
        or NEGATION_AFTER.search(text[mention.end : mention.end + 60]) is not None
    )


def is_context(text: str, mention: Mention) -> bool:
    """Whether the mention is a point of reference ("reminds me of X"), within the same clause."""
    return CONTEXT.search(_clause_before(text, mention)) is not None


def extract_statements(matcher: ConceptMatcher, text: str, titles=()) -> list[tuple[Mention, str]]:
    """The values a user turn names, left to right, each with its role: "wish", "exclusion"
    (after a negation cue) or "context" (a point of reference). Values inside film titles are
    skipped; years the catalog may not hold still count ("something from 1932")."""
    mentions = matcher.values(text, titles)
    covered = [(m.start, m.end) for m in mentions] + matcher.title_recognizer.spans(text, titles)
    for match in YEAR.finditer(text):
        if not any(start <= match.start() < end for start, end in covered):
            mentions.append(Mention("year", match.group(1), match.start(), match.end()))
    statements = []
    for mention in sorted(mentions, key=lambda m: m.start):
        role = "context" if is_context(text, mention) else "exclusion" if is_negated(text, mention) else "wish"
        statements.append((mention, role))
    return statements


@dataclass
class ConstraintTracker:
    matcher: ConceptMatcher
    included: dict[str, list[str]] = field(default_factory=dict)
    excluded: dict[str, list[str]] = field(default_factory=dict)
    latest: set[tuple[str, str]] = field(default_factory=set)  # wishes stated in the last turn

    def update(self, text: str, titles=()) -> list[Constraint]:
        """Apply one user turn; returns the tracked constraints after it. `titles`: films the
        user may name (the system's recommendations), so their titles are read as titles."""
        positive: dict[str, list[str]] = {}
        if FRESH_START.search(text):
            self.included = {}
        for mention, role in extract_statements(self.matcher, text, titles):
            if role == "context":
                continue
            if role == "exclusion":
                self._exclude(mention.field, mention.value)
            else:
                values = positive.setdefault(mention.field, [])
                if mention.value not in values:
                    values.append(mention.value)
        self.latest = {(f, v) for f, values in positive.items() for v in values}
        for field_name, values in positive.items():
            self.included[field_name] = values
            for value in values:
                if value in self.excluded.get(field_name, []):
                    self.excluded[field_name].remove(value)
        return self.constraints()

    def _exclude(self, field_name: str, value: str) -> None:
        if value in self.included.get(field_name, []):
            self.included[field_name].remove(value)
            if not self.included[field_name]:
                del self.included[field_name]
        excluded = self.excluded.setdefault(field_name, [])
        if value not in excluded:
            excluded.append(value)

    def constraints(self) -> list[Constraint]:
        tracked = [Constraint(f, v) for f in sorted(self.included) for v in self.included[f]]
        tracked += [Constraint(f, v, negated=True) for f in sorted(self.excluded) for v in self.excluded[f]]
        return tracked
