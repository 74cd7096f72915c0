"""The rule-based user simulator: preference shifts on purpose, with ground truth.

A session starts from an anchor film and a focus (field, value) of it. Every `shift_every`
turns the focus moves to the next field of `field_order` through a bridge: a value that the
current anchor film shares with a new anchor film, whose value in the new field becomes the
focus. The gold constraints are the new focus plus the earlier wishes the new anchor still
satisfies, so right after a shift the catalog holds a film that meets them all. Between shifts the user
accepts or rejects what the system recommended, asks for more, or (at `contradiction_rate`)
takes back an earlier wish. Every turn carries this state as `user_meta`.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import yaml

from crseval.catalog import CatalogIndex
from crseval.tracker import Constraint

SIMULATOR_FIELDS = ("genre", "actor", "director", "writer", "language", "year")


@dataclass(frozen=True)
class SimulatorSettings:
    shift_every: int = 3
    field_order: tuple[str, ...] = ("genre", "actor", "director", "writer", "language", "year")
    contradiction_rate: float = 0.1
    accept_rate: float = 0.7
    max_bridge_share: float = 0.1

    @classmethod
    def from_config(cls, section: dict) -> "SimulatorSettings":
        return cls(
            shift_every=section["shift_every"],
            field_order=tuple(section["field_order"]),
            contradiction_rate=section["contradiction_rate"],
            accept_rate=section["accept_rate"],
            max_bridge_share=section["max_bridge_share"],
        )

    def is_shift_turn(self, turn: int) -> bool:
        """Turns count from 1; the first shift comes after `shift_every` turns on one focus."""
        return turn > 1 and (turn - 1) % self.shift_every == 0


class Templates:
    """The utterance templates of resources/templates/user.yaml."""

    def __init__(self, data: dict, version: str):
        self.data = data
        self.version = version  # content hash: an edited template file is a new version

    @classmethod
    def load(cls, path: str | Path) -> "Templates":
        text = Path(path).read_text(encoding="utf-8")
        return cls(yaml.safe_load(text), hashlib.sha256(text.encode("utf-8")).hexdigest()[:16])

    def pick(self, rng: np.random.Generator, *keys: str) -> str:
        options = self.data
        for key in keys:
            options = options[key]
        return options[int(rng.integers(len(options)))]


def display(field_name: str, value: str) -> str:
    """How a value is written in text: languages capitalised ("english" -> "English"), the rest
    as the catalog spells it. Matching is case-insensitive, so both read as the same value."""
    return value.title() if field_name == "language" else value


_A_BEFORE_VOWEL = re.compile(r"\b([Aa]) (?=[aeiouAEIOU])")


def with_article(phrase: str) -> str:
    """'a action movie' -> 'an action movie' (the templates write 'a {value}')."""
    return _A_BEFORE_VOWEL.sub(lambda m: m.group(1) + "n ", phrase)


@dataclass
class UserTurn:
    text: str
    meta: dict


@dataclass
class UserSimulator:
    """One simulated user for one session; all randomness comes from `seed`."""

    index: CatalogIndex
    settings: SimulatorSettings
    templates: Templates
    seed: int
    plan_rng: np.random.Generator = field(init=False)  # anchors, foci, shifts, contradictions
    text_rng: np.random.Generator = field(init=False)  # wording and reactions to replies
    anchor: int = field(init=False)
    focus: tuple[str, str] = field(init=False)
    constraints: list[Constraint] = field(init=False)
    liked: list[str] = field(init=False, default_factory=list)
    shift_events: list[dict] = field(init=False, default_factory=list)

    def __post_init__(self):
        # Two streams, so that the plan (what the user wants when) is the same whatever the
        # system answers; only the reactions and the wording depend on the replies.
        plan_seed, text_seed = np.random.SeedSequence(self.seed).spawn(2)
        self.plan_rng = np.random.default_rng(plan_seed)
        self.text_rng = np.random.default_rng(text_seed)
        first_field = self.settings.field_order[0]
        with_values = [f for f in self.index.films["film_id"] if self._values(int(f), first_field)]
        if not with_values:
            raise ValueError(f"no film of the catalog has a {first_field!r} value to start a session from")
        self.anchor = int(with_values[int(self.plan_rng.integers(len(with_values)))])
        values = self._values(self.anchor, first_field)
        self.focus = (first_field, values[int(self.plan_rng.integers(len(values)))])
        self.constraints = [Constraint(*self.focus)]
        self.liked = [self._title(self.anchor)]

    # ------------------------------------------------------------ catalog access

    def _values(self, film_id: int, field_name: str) -> list[str]:
        return self.index.film_values(film_id, field_name)

    def _title(self, film_id: int) -> str:
        return self.index.title(film_id)

    def _concepts(self, film_id: int) -> set[tuple[str, str]]:
        return {(f, v) for f in SIMULATOR_FIELDS for v in self._values(film_id, f)}

    def _satisfies(self, film_id: int, constraints: list[Constraint]) -> bool:
        concepts = self._concepts(film_id)
        return all(((c.field, c.value) in concepts) != c.negated for c in constraints)

    def title_satisfies(self, title: str) -> bool:
        film_id = self.index.film_id(title)
        return film_id is not None and self._satisfies(film_id, self.constraints)

    # ------------------------------------------------------------ text

    def _focus_phrase(self) -> str:
        field_name, value = self.focus
        return with_article(self.templates.pick(self.text_rng, "focus", field_name).format(value=display(field_name, value)))

    # ------------------------------------------------------------ turns

    def turn(self, number: int, last_recommended: list[str]) -> UserTurn:
        """The user's utterance at turn `number` (from 1), reacting to the titles the system
        recommended in its previous reply."""
        shift_event = None
        bridge = None
        if number == 1:
            stage = "open"
            text = self.templates.pick(self.text_rng, "open").format(focus=self._focus_phrase())
        elif self.settings.is_shift_turn(number) and (shift := self._shift()) is not None:
            stage = "shift"
            shift_event, bridge = shift, shift["bridge"]
            text = self.templates.pick(self.text_rng, "shift").format(
                anchor=shift["from_anchor"], bridge=display(bridge["field"], bridge["value"]), focus=self._focus_phrase()
            )
        elif (contradiction := self._maybe_contradict()) is not None:
            stage = "contradict"
            text = self.templates.pick(self.text_rng, "contradict").format(not_focus=contradiction, focus=self._focus_phrase())
        else:
            stage, text = self._react(last_recommended)
        meta = {
            "focus_field": self.focus[0],
            "focus_value": self.focus[1],
            "constraints": [c.as_dict() for c in self.constraints],
            "shift_event": shift_event is not None,
            "bridge": bridge,
            "anchor_title": self._title(self.anchor),
            "stage": stage,
        }
        if shift_event is not None:
            self.shift_events.append({"turn": number, **shift_event})
        return UserTurn(text=text, meta=meta)

    def _react(self, recommended: list[str]) -> tuple[str, str]:
        if not recommended:
            return "no_title", self.templates.pick(self.text_rng, "no_title").format(focus=self._focus_phrase())
        fitting = [t for t in recommended if self.title_satisfies(t)]
        if fitting and self.text_rng.random() < self.settings.accept_rate:
            title = fitting[0]
            if title not in self.liked:
                self.liked.append(title)
            return "accept", self.templates.pick(self.text_rng, "accept").format(title=title, focus=self._focus_phrase())
        if not fitting:
            title = recommended[0]
            return "reject", self.templates.pick(self.text_rng, "reject").format(title=title, focus=self._focus_phrase())
        return "ask", self.templates.pick(self.text_rng, "ask").format(focus=self._focus_phrase())

    def _maybe_contradict(self) -> str | None:
        """Take back an earlier wish other than the focus: it becomes an exclusion."""
        if self.plan_rng.random() >= self.settings.contradiction_rate:
            return None
        others = [c for c in self.constraints if not c.negated and (c.field, c.value) != self.focus]
        if not others:
            return None
        dropped = others[int(self.plan_rng.integers(len(others)))]
        self.constraints = [c for c in self.constraints if c != dropped] + [Constraint(dropped.field, dropped.value, True)]
        return self.templates.pick(self.text_rng, "reject_value", dropped.field).format(value=display(dropped.field, dropped.value))

    def _shift(self) -> dict | None:
        """Move the focus to the next field through a bridge film; None when no film bridges."""
        order = self.settings.field_order
        start = (order.index(self.focus[0]) + 1) % len(order) if self.focus[0] in order else 0
        anchor_concepts = self._concepts(self.anchor)
        for step in range(len(order)):
            new_field = order[(start + step) % len(order)]
            options = []
            for film_id, concepts in self._films_sharing(anchor_concepts):
                values = [v for v in self._values(film_id, new_field) if (new_field, v) != self.focus]
                if values:
                    options.append((film_id, concepts, values))
            # prefer films linked by a distinctive value (a director, a cast member) over
            # films that merely share a value most of the catalog has (english, drama)
            distinctive = [o for o in options if self._share(self._rarest(o[1])) <= self.settings.max_bridge_share]
            options = distinctive or options
            if not options:
                continue
            film_id, shared, values = options[int(self.plan_rng.integers(len(options)))]
            bridge_field, bridge_value = self._rarest(shared)
            new_value = values[int(self.plan_rng.integers(len(values)))]
            event = {
                "from_focus": {"field": self.focus[0], "value": self.focus[1]},
                "to_focus": {"field": new_field, "value": new_value},
                "bridge": {"field": bridge_field, "value": bridge_value},
                "from_anchor": self._title(self.anchor),
                "to_anchor": self._title(film_id),
            }
            kept = [c for c in self.constraints if c.field != new_field and self._satisfies(film_id, [c])]
            self.constraints = kept + [Constraint(new_field, new_value)]
            self.focus = (new_field, new_value)
            self.anchor = film_id
            if event["to_anchor"] not in self.liked:
                self.liked.append(event["to_anchor"])
            return event
        return None

    def _share(self, concept: tuple[str, str]) -> float:
        return len(self.index.films_with(*concept)) / len(self.index.films)

    def _rarest(self, concepts: set[tuple[str, str]]) -> tuple[str, str]:
        return min(concepts, key=lambda c: (self._share(c), c))

    def _films_sharing(self, concepts: set[tuple[str, str]]) -> list[tuple[int, set[tuple[str, str]]]]:
        """Films other than the anchor that share at least one (field, value) with it; the
        share is a value other than the current focus, so the bridge is new information."""
        counts: dict[int, set[tuple[str, str]]] = {}
        for field_name, value in concepts:
            if (field_name, value) == self.focus:
                continue
            for film_id in self.index.films_with(field_name, value):
                if int(film_id) != self.anchor:
                    counts.setdefault(int(film_id), set()).add((field_name, value))
        return sorted(counts.items())
