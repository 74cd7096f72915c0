"""Rule-based constraint tracking for the CRS agents (no LLM parses constraints).

Each user turn updates the state: a value named positively replaces that field's earlier
wish ("now a comedy" after "a drama" means comedy); a value named after a negation cue
("not horror", "nothing with X", "no longer", "don't want") is excluded instead. Film titles
are recorded as mentions, not constraints.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from crseval.concepts import ConceptMatcher, Mention

NEGATION = re.compile(
    r"(?:\bnot\b|\bno\b|\bnothing\b|\bwithout\b|n't\b|\bnever\b|\banything but\b|\bno more\b|\bno longer\b|\bexcept\b)"
    r"(?:\W+\w+){0,3}\W*$",
    re.IGNORECASE,
)
# A clause break ends a negation's reach: "not that one. I want a drama" is positive.
CLAUSE_BREAK = re.compile(r"[.;!?]|\bbut\b|\binstead\b", re.IGNORECASE)
# Years the catalog may not hold still state a wish ("something from 1932").
YEAR = re.compile(r"(?<![\w-])(18[89]\d|19\d\d|20\d\d)(?![\w-])")


@dataclass(frozen=True)
class Constraint:
    field: str
    value: str
    negated: bool = False

    def as_dict(self) -> dict:
        return {"field": self.field, "value": self.value, "negated": self.negated}


def is_negated(text: str, mention: Mention) -> bool:
    """Whether a negation cue stands within three words before the mention, in the same clause."""
    before = text[max(0, mention.start - 40):mention.start]
    breaks = list(CLAUSE_BREAK.finditer(before))
    if breaks:
        before = before[breaks[-1].end():]
    return NEGATION.search(before) is not None


@dataclass
class ConstraintTracker:
    matcher: ConceptMatcher
    included: dict[str, list[str]] = field(default_factory=dict)
    excluded: dict[str, list[str]] = field(default_factory=dict)
    latest: set[tuple[str, str]] = field(default_factory=set)  # wishes stated in the last turn

    def update(self, text: str) -> list[Constraint]:
        """Apply one user turn; returns the tracked constraints after it."""
        positive: dict[str, list[str]] = {}
        mentions = self.matcher.values(text)
        covered = [(m.start, m.end) for m in mentions]
        for match in YEAR.finditer(text):
            if not any(start <= match.start() < end for start, end in covered):
                mentions.append(Mention("year", match.group(1), match.start(), match.end()))
        for mention in sorted(mentions, key=lambda m: m.start):
            if is_negated(text, mention):
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
