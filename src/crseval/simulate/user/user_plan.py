"""What the simulated user wants, and when that shifts: the plan, and what of it the user has told.

A session starts from an anchor film and a focus (field, value) of it. Every `shift_every` turns the focus
moves to the next field of `field_order` through a bridge: a value that the current anchor film shares with a
new anchor film, whose value in the new field becomes the focus. The gold constraints are the new focus plus
the earlier wishes the new anchor still satisfies, so right after a shift the catalog holds a film that meets
them all. Between shifts the user may (at `contradiction_rate`) take back an earlier wish.

Two parts, each with a random stream of its own, so that the plan is the same whatever the system answers and
whatever the profile says of it: `UserPlan` (anchors, foci, shifts, contradictions: the plan's stream) and
`Disclosure` (when each wish is said, the replies the user waited through, its patience: the disclosures'
stream). Under `wants: people` the plan's values are drawn as often as the learned voice's corpus asks for them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from crseval.catalog.index import CatalogIndex
from crseval.core.config_checks import schema_defaults
from crseval.core.fields import CONCEPT_FIELDS
from crseval.language.asks import OPEN
from crseval.language.text import lemma
from crseval.language.tracker import Constraint
from crseval.simulate.user.profiles import UserProfile
from crseval.simulate.user.voice import Voice

_DEFAULTS = schema_defaults("simulator")


@dataclass(frozen=True)
class SimulatorSettings:
    """The plan's knobs of the `simulator` section of the config; defaults from the schema. The user's profile
    is none of them: a system's own or a defined one is no built-in's name, so make_user is given it resolved."""

    shift_every: int = _DEFAULTS["shift_every"]
    field_order: tuple[str, ...] = tuple(_DEFAULTS["field_order"])
    contradiction_rate: float = _DEFAULTS["contradiction_rate"]
    accept_rate: float = _DEFAULTS["accept_rate"]
    max_bridge_share: float = _DEFAULTS["max_bridge_share"]

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


def weighted_draw(rng: np.random.Generator, weights: np.ndarray) -> int:
    """An index drawn as often as its weight says (people's counts)."""
    return int(rng.choice(len(weights), p=weights / weights.sum()))


class UserPlan:
    """What the user wants and when that shifts, drawn from the plan's stream `rng` alone: the opening film and
    focus, the shifts through bridge films, the contradictions, and the films the user liked on the way."""

    def __init__(
        self,
        index: CatalogIndex,
        settings: SimulatorSettings,
        profile: UserProfile,
        voice: Voice | None,
        rng: np.random.Generator,
    ):
        self.index = index
        self.settings = settings
        self.profile = profile
        self.voice = voice  # what people ask for, under `wants: people`
        self.rng = rng
        # plot keywords are wishes (and bridges) only when the field order asks for them
        self.fields = CONCEPT_FIELDS + tuple(f for f in settings.field_order if f not in CONCEPT_FIELDS)
        first_field = settings.field_order[0]
        self.anchor, value = self._opening(first_field)
        self.focus: tuple[str, str] = (first_field, value)
        self.constraints: list[Constraint] = [Constraint(*self.focus)]
        self.liked: list[str] = [self.title(self.anchor)]

    # ------------------------------------------------------------ the opening

    def _opening(self, first_field: str) -> tuple[int, str]:
        """The film the user starts from and the value of `first_field` it wants (the plan's stream): a film
        drawn from those with such a value, then one of its values; under `wants: people`, the value drawn
        as often as the voice's corpus asks for it (among the values the catalog's films have), then a film
        with it."""
        if self.profile.wants == "people":
            return self._opening_people_ask_for(first_field)
        with_values = [f for f in self.index.films["film_id"] if self.film_values(int(f), first_field)]
        if not with_values:
            raise ValueError(f"no film of the catalog has a {first_field!r} value to start a session from")
        anchor = int(with_values[int(self.rng.integers(len(with_values)))])
        values = self.film_values(anchor, first_field)
        return anchor, values[int(self.rng.integers(len(values)))]

    def _opening_people_ask_for(self, first_field: str) -> tuple[int, str]:
        asked = self.voice.asked(first_field) if self.voice is not None else {}
        films: dict[str, list[int]] = {}
        for film_id in self.index.films["film_id"]:
            for value in self.film_values(int(film_id), first_field):
                if asked.get(value):
                    films.setdefault(value, []).append(int(film_id))
        if not films:
            raise ValueError(
                f"profile {self.profile.name} wants what people ask for, and the voice's corpus asks for no "
                f"{first_field} a catalog film has"
            )
        values = sorted(films)
        weights = np.array([asked[v] for v in values], dtype=float)
        value = values[weighted_draw(self.rng, weights)]
        return films[value][int(self.rng.integers(len(films[value])))], value

    # ------------------------------------------------------------ the plan's moves

    def move(self, number: int, seen_titles: set[str]) -> tuple[dict | None, Constraint | None]:
        """The plan's move at turn `number` (the plan's stream alone, so it moves alike under every profile):
        a shift every `shift_every` turns where a film bridges, else perhaps a contradiction. `seen_titles`:
        the titles of the dialogue so far (a shift from an anchor not among them says the film is new)."""
        if number == 1:
            return None, None
        if self.settings.is_shift_turn(number) and (shift := self.shift()) is not None:
            shift["anchor_new"] = shift["from_anchor"] not in seen_titles  # the wording then says it is new
            return shift, None
        return None, self.maybe_contradict()

    def maybe_contradict(self) -> Constraint | None:
        """At `contradiction_rate` of ordinary turns the user rules something out: an earlier
        wish other than the focus when it has one (taken back), else a value of the focus field
        its anchor film does not have (so the anchor still fits). Plan stream only."""
        if self.rng.random() >= self.settings.contradiction_rate:
            return None
        others = [c for c in self.constraints if not c.negated and (c.field, c.value) != self.focus]
        if others:
            dropped = others[int(self.rng.integers(len(others)))]
            self.constraints = [c for c in self.constraints if c != dropped]
        else:
            dropped = self._foreign_value(self.focus[0])
            if dropped is None:
                return None
        excluded = Constraint(dropped.field, dropped.value, True)
        if excluded not in self.constraints:
            self.constraints = self.constraints + [excluded]
        return excluded

    def _foreign_value(self, field_name: str) -> Constraint | None:
        """A value of `field_name` that the anchor does not have and the user does not exclude yet."""
        own = set(self.film_values(self.anchor, field_name))
        taken = {c.value for c in self.constraints if c.field == field_name}
        values = [
            v
            for v in self.index.values(field_name)
            if v not in own and v not in taken and self._speakable(field_name, v)
        ]
        if not values:
            return None
        return Constraint(field_name, self._pick_value(field_name, values))

    def shift(self) -> dict | None:
        """Move the focus to the next field through a bridge film; None when no film bridges.
        The bridge is a value the old and new anchor share other than the old focus and the new
        focus; the new anchor has no excluded value, so the gold constraints stay satisfiable."""
        anchor_concepts = self._concepts(self.anchor)
        exclusions = [c for c in self.constraints if c.negated]
        excluded = {(c.field, c.value) for c in exclusions}
        for new_field in self._shift_fields():
            options = []
            for film_id, shared in self._films_sharing(anchor_concepts):
                if exclusions and not self._satisfies(film_id, exclusions):
                    continue
                for value in self.film_values(film_id, new_field):
                    if (
                        (new_field, value) == self.focus
                        or (new_field, value) in excluded
                        or not self._speakable(new_field, value)
                    ):
                        continue
                    bridges = shared - {(new_field, value)}
                    if bridges:
                        options.append((film_id, bridges, value))
            # prefer films linked by a distinctive value (a director, a cast member) over
            # films that merely share a value most of the catalog has (english, drama)
            distinctive = [o for o in options if self._share(self._rarest(o[1])) <= self.settings.max_bridge_share]
            options = distinctive or options
            if not options:
                continue
            film_id, shared, new_value = self._pick_value(new_field, options, lambda option: option[2])
            bridge_field, bridge_value = self._rarest(shared)
            event = {
                "from_focus": {"field": self.focus[0], "value": self.focus[1]},
                "to_focus": {"field": new_field, "value": new_value},
                "bridge": {"field": bridge_field, "value": bridge_value},
                "from_anchor": self.title(self.anchor),
                "to_anchor": self.title(film_id),
            }
            kept = [
                c for c in self.constraints if c.negated or (c.field != new_field and self._satisfies(film_id, [c]))
            ]
            self.constraints = kept + [Constraint(new_field, new_value)]
            self.focus = (new_field, new_value)
            self.anchor = film_id
            if event["to_anchor"] not in self.liked:
                self.liked.append(event["to_anchor"])
            return event
        return None

    def _shift_fields(self) -> list[str]:
        """The fields a shift tries, in order: the next of `field_order` after the focus's, and on round. Under
        `wants: people`, first the fields people ask for, in an order drawn as often as they ask for each (the
        plan's stream): a shift moves mostly to another genre where people ask mostly for genres."""
        order = self.settings.field_order
        start = (order.index(self.focus[0]) + 1) % len(order) if self.focus[0] in order else 0
        in_turn = [order[(start + step) % len(order)] for step in range(len(order))]
        if self.profile.wants != "people":
            return in_turn
        asked = {f: sum(self.voice.asked(f).values()) for f in order}
        wanted, drawn = [f for f in order if asked[f] > 0], []
        while wanted:  # drawn one by one, each as often as people ask for it
            weights = np.array([asked[f] for f in wanted], dtype=float)
            drawn.append(wanted.pop(weighted_draw(self.rng, weights)))
        return drawn + [f for f in in_turn if f not in drawn]

    def _pick_value(self, field_name: str, options: list, value_of: Callable = lambda option: option):
        """One of `options` drawn from the plan's stream: a value of `field_name` the user names next (a
        shift's (film, bridges, value), whose value `value_of` reads, or a value it rules out). Under `wants:
        people`, a value drawn as often as people ask for it, however many options offer it (a genre most films
        have, drama, would otherwise come as often as films offer it), then one of its options alike (any
        option alike where people ask for none)."""
        if self.profile.wants == "people":
            asked = self.voice.asked(field_name)
            offered = Counter(value_of(option) for option in options)
            weights = np.array(
                [asked.get(value_of(option), 0) / offered[value_of(option)] for option in options], dtype=float
            )
            if weights.sum():
                return options[weighted_draw(self.rng, weights)]
        return options[int(self.rng.integers(len(options)))]

    def _speakable(self, field_name: str, value: str) -> bool:
        """Whether a plot keyword can be said so that it reads back as itself: not spelled like
        a value of another field ("supernatural" is a genre too) and its own lemma ("killing"
        reads as "kill"). Values of the other fields always can."""
        if field_name != "plot_keyword":
            return True
        return value not in self.index.spelled_elsewhere(field_name) and lemma(value) == value

    def _share(self, concept: tuple[str, str]) -> float:
        return self.index.share(*concept)

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

    # ------------------------------------------------------------ the catalog, as the plan reads it

    def film_values(self, film_id: int, field_name: str) -> list[str]:
        """The values of `field_name` a catalog film has."""
        return self.index.film_values(film_id, field_name)

    def title(self, film_id: int) -> str:
        return self.index.title(film_id)

    def _concepts(self, film_id: int) -> set[tuple[str, str]]:
        return {(f, v) for f in self.fields for v in self.film_values(film_id, f)}

    def _satisfies(self, film_id: int, constraints: list[Constraint]) -> bool:
        concepts = self._concepts(film_id)
        return all(((c.field, c.value) in concepts) != c.negated for c in constraints)

    def title_satisfies(self, title: str, constraints: list[Constraint] | None = None) -> bool:
        """Whether a catalog film meets `constraints` (the current gold constraints by default)."""
        film_id = self.index.film_id(title)
        return film_id is not None and self._satisfies(
            film_id, self.constraints if constraints is None else constraints
        )

    def violated(self, title: str) -> Constraint | None:
        """The first gold constraint the film does not meet."""
        film_id = self.index.film_id(title)
        if film_id is None:
            return None
        return next((c for c in self.constraints if not self._satisfies(film_id, [c])), None)


class Disclosure:
    """What of the plan the user has told and waits to tell, from the disclosures' stream `rng` alone: each
    gold constraint's disclosure (volunteered, said on ask, or hidden) drawn as it arises, the constraints
    said so far, and the unsatisfying replies the user waited through (its patience, and the wait of each
    wish it holds back until asked)."""

    def __init__(self, plan: UserPlan, profile: UserProfile, rng: np.random.Generator):
        self.plan = plan
        self.profile = profile
        self.rng = rng
        self.kind: dict[Constraint, str] = {}  # of every gold constraint so far
        self.said: set[Constraint] = set()  # the gold constraints the user has stated
        self.misses = 0  # unsatisfying replies in a row
        self.waiting: dict[Constraint, int] = {}  # constraint -> unsatisfying replies since it arose
        self.disclose_new()

    def disclose_new(self) -> list[Constraint]:
        """Give each gold constraint that has just arisen its disclosure; returns them."""
        new = [c for c in self.plan.constraints if c not in self.kind]
        for constraint in new:
            self.kind[constraint] = self.profile.disclose(self.rng.random(), constraint.field)
        return new

    def count_reply(self, number, recommended, unknown, asked, wanted_then, arisen) -> None:
        """Count the last reply against what the user wanted when it was made (a shift does not turn the
        reply before it into a miss): a fitting film resets the user's patience and every wish's wait; a
        reply that names films, none fitting, or names none and asks nothing, uses them up; a reply that
        only asks is neither. A wish that arose this turn waits only for the replies after it."""
        if number > 1 and any(self.plan.title_satisfies(t, wanted_then) for t in recommended):
            self.misses = 0
            self.waiting = {c: 0 for c in self.plan.constraints}
        elif number > 1 and (recommended or unknown or not asked):
            self.misses += 1
            self.waiting = {c: self.waiting.get(c, 0) + 1 for c in self.plan.constraints if c not in arisen}
        self.waiting.update({c: 0 for c in arisen})

    @property
    def out_of_patience(self) -> bool:
        """Whether the user leaves: `patience` unsatisfying replies in a row (never at a patience of 0)."""
        return bool(self.profile.patience) and self.misses >= self.profile.patience

    def revealed(self) -> list[Constraint]:
        """The `on_ask` wishes not said yet that waited `reveal_after` unsatisfying replies: said unasked."""
        if not self.profile.reveal_after:
            return []
        return [
            c
            for c in self.plan.constraints
            if self.kind[c] == "on_ask" and c not in self.said and self.waiting.get(c, 0) >= self.profile.reveal_after
        ]

    def answers(self, asked: frozenset[str]) -> list[Constraint]:
        """What the user says to a question: the wishes it does not hide on the fields asked about (said
        before or not), or to an open question those it has not said yet. An exclusion it has said already is
        not listed again beside a wish on the same field: asked "what genre?" once more, people say the genre
        they want, not every genre they ruled out before ("not a comedy, not a horror, not a sci-fi")."""
        if not asked:
            return []
        shown = [c for c in self.plan.constraints if self.kind[c] != "hidden"]
        on_fields = [c for c in shown if c.field in asked]
        wished = {c.field for c in on_fields if not c.negated}
        answers = [c for c in on_fields if not (c.negated and c in self.said and c.field in wished)]
        if OPEN in asked:
            answers += [c for c in shown if c not in self.said]
        return list(dict.fromkeys(answers))
