"""What a simulated user's turn says, decided before it is worded, and the conduct that shapes it.

The user (crseval.simulate.user.simulator) decides a turn first (`TurnContent`: its stage, what it states, its
`Reaction` to the last reply), then has it worded (crseval.simulate.user.wording, crseval.simulate.user.voicing);
the wording may not change it. Every concept an utterance names is a `Statement` the read-back checks, and the
turn comes back as a `UserTurn` with its ground truth. The `Conduct` of the thesis user (the built-in `explicit`
profile) differs from every other profile's in a few ways no field of a profile states.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from crseval.language.tracker import Constraint
from crseval.simulate.user.profiles import UserProfile


@dataclass
class UserTurn:
    """A turn as the user says it: its text, its ground truth, and what it implies of the last reply."""

    text: str
    meta: dict  # the plan and what the utterance states (`user_meta`)
    implies: dict = field(default_factory=lambda: {"accepts": [], "rejects": []})  # its reaction to the last reply


@dataclass(frozen=True)
class Statement:
    """A concept an utterance names, and as what: a wish, an exclusion, or context (a bridge)."""

    field: str
    value: str
    role: str  # "wish", "exclusion" or "context"

    def as_dict(self) -> dict:
        return {"field": self.field, "value": self.value, "role": self.role}


@dataclass(frozen=True)
class Conduct:
    """How a user puts its turn together, besides what its profile's shares say. The thesis user (the
    built-in `explicit` profile) has ways no field of a profile states; every other profile, one defined
    as `based_on: explicit` too, has the other ways. Both are the one turn of UserSimulator."""

    hears_questions: bool  # answers what a reply asks (the thesis user says what it wants whatever it is asked)
    plan_alone: bool  # a shift or a contradiction is always said, as the whole turn: no reaction beside it
    rejects_unsaid: bool  # the films that miss are turned down whatever the turn says, not only by a rejection
    draws_every_acceptance: bool  # the accept_rate draw is made for every fitting reply, at a rate of 0 or 1 too
    one_template: bool  # a turn is one full-sentence template chosen by its stage, the focus in it; else parts


THESIS = Conduct(
    hears_questions=False, plan_alone=True, rejects_unsaid=False, draws_every_acceptance=True, one_template=True
)
PROFILED = Conduct(
    hears_questions=True, plan_alone=False, rejects_unsaid=True, draws_every_acceptance=False, one_template=False
)


def conduct_of(profile: UserProfile) -> Conduct:
    """The thesis user's conduct for the built-in `explicit` profile, the other for every other profile."""
    return THESIS if profile.is_explicit else PROFILED


class Reaction(NamedTuple):
    """The user's reaction to the last reply: its stage, the template group a turn of parts words it with
    (in short or in full sentences as the profile talks), the films its title slot may name (the one it is
    about first; the thesis user names another where a wording is drawn again) and the film it takes."""

    stage: str
    group: tuple[str, ...]
    films: tuple[str, ...] = ()
    take: str | None = None

    @property
    def about(self) -> str | None:
        return self.films[0] if self.films else None


@dataclass
class TurnContent:
    """What a turn says, decided before it is worded (the wording may not change it)."""

    stage: str
    tell: list[Constraint] = field(default_factory=list)  # the wishes and exclusions it states
    reaction: Reaction | None = None
    shift: dict | None = None  # the shift it announces
    ruled_out: Constraint | None = None  # the exclusion a contradiction says
    revealed: list[Constraint] = field(default_factory=list)  # on-ask wishes said unasked (meta `revealed`)
    greeting: bool = False
    opening_quiet: bool = False  # an opening that says no wish
    no_preference: bool = False  # asked about a field it says nothing of
    thanks: bool = False
