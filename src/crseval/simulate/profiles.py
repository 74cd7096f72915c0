"""User behaviour profiles: how much the simulated user says, how it talks, and when it leaves.

The plan of a session (anchor films, foci, shifts, exclusions) comes from the session seed alone and
is the same under every profile; a profile changes only what the user discloses of it and how it
words what it says. `explicit` is the thesis user (crseval.simulate.user.UserSimulator): it names
every wish verbatim, announces every shift, restates the wishes that still hold and never leaves;
its settings below describe it, its code is the thesis user's. The other profiles are
crseval.simulate.user.ProfiledUser with the settings below.

Disclosure: each gold constraint, when it first arises (the opening focus, a shift's new focus, an
exclusion), is `volunteer` (said when it arises), `on_ask` (said when the system asks about its
field or asks an open question, or unasked after `reveal_after` unsatisfying replies since it arose) or
`hidden` (never said: the user rejects the films that violate it). A shift whose new focus is not
volunteered is implicit: the user says nothing of it and starts rejecting what no longer fits.
Which constraint gets which disclosure is drawn from a stream of the session seed of its own, so
every system meets the same user.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

from crseval.core.registry import look_up

DISCLOSURES = ("volunteer", "on_ask", "hidden")


@dataclass(frozen=True)
class UserProfile:
    """A user's behaviour; every share is a chance per occasion, drawn from the session's seed."""

    name: str
    summary: str
    # Shares of `volunteer`, `on_ask` and `hidden` among the gold constraints as they arise.
    disclosure: tuple[float, float, float]
    # Unsatisfying replies since an `on_ask` constraint arose (a satisfying reply starts the count again)
    # after which it is said unasked (0: only when asked).
    reveal_after: int
    restate_focus: float  # a reaction repeats the current wish (when it has been said)
    terse: float  # a part of a turn is worded with the short templates ("something with X", "not that one")
    greeting: float  # the first turn starts with a greeting
    thanks: float  # an acceptance thanks the system
    why: float  # the user asks about a fitting film ("why that one?") instead of taking it
    reason: float  # a rejection says which field is wrong ("wrong director"), never the value
    lowercase: float  # the user's own words in a turn are in lower case (titles and values keep theirs)
    typo: float  # one of the user's own words in a turn has two letters swapped
    patience: int  # unsatisfying replies in a row after which the user leaves (0: never)
    # The wording: "" for the template groups of resources/templates/user.yaml, else the name of a
    # group under its `voices` whose templates replace those of the same name (the others stay).
    voice: str = ""
    full_stop: float = 1.0  # a sentence the template leaves open is closed with a full stop
    # Speaks with the voice learned from `simulator.voice.corpus` (crseval.simulate.voice): people's turns
    # of the same act, their slots filled with the turn's values; where none fits, `voice` above speaks.
    learned: bool = False
    # The disclosure shares of the constraints on a field, where they differ from `disclosure`.
    field_disclosure: dict[str, tuple[float, float, float]] = field(default_factory=dict)

    def __post_init__(self):
        for shares in (self.disclosure, *self.field_disclosure.values()):
            if abs(sum(shares) - 1) > 1e-9 or min(shares) < 0:
                raise ValueError(f"profile {self.name}: disclosure shares {shares} must be >= 0 and sum to 1")

    @property
    def is_explicit(self) -> bool:
        return self.name == "explicit"

    def settings(self) -> dict:
        """What the user does under it (not its summary), as simulate jobs and provenance record it."""
        record = asdict(self)
        del record["summary"]
        record["disclosure"] = dict(zip(DISCLOSURES, self.disclosure))
        record["field_disclosure"] = {f: dict(zip(DISCLOSURES, s)) for f, s in self.field_disclosure.items()}
        return record

    def disclose(self, draw: float, field_name: str = "") -> str:
        """The disclosure a uniform draw in [0, 1) gives to a constraint on `field_name`."""
        volunteer, on_ask, _ = self.field_disclosure.get(field_name, self.disclosure)
        return "volunteer" if draw < volunteer else "on_ask" if draw < volunteer + on_ask else "hidden"


EXPLICIT = UserProfile(
    "explicit",
    "the thesis user: every wish said verbatim in full sentences, every shift announced with the wishes "
    "that still hold, never leaves",
    disclosure=(1.0, 0.0, 0.0),
    reveal_after=0,
    restate_focus=1.0,
    terse=0.0,
    greeting=0.0,
    thanks=0.0,
    why=0.0,
    reason=0.0,
    lowercase=0.0,
    typo=0.0,
    patience=0,
)

IMPLICIT = UserProfile(
    "implicit",
    "full sentences, but most wishes are said only when asked and some never; most shifts are not "
    "announced; never leaves",
    disclosure=(0.3, 0.5, 0.2),
    reveal_after=2,
    restate_focus=0.5,
    terse=0.0,
    greeting=0.0,
    thanks=0.0,
    why=0.0,
    reason=0.5,
    lowercase=0.0,
    typo=0.0,
    patience=0,
)

REALISTIC = UserProfile(
    "realistic",
    "short casual turns in the words people type to a chatbot (greetings, 'what is it about?', lower "
    "case, a sentence left open, a typo now and then); wishes said as in `implicit`, a little more often "
    "unasked, people's names and other details seldom; leaves after three unsatisfying replies in a row",
    disclosure=(0.45, 0.4, 0.15),
    reveal_after=2,
    restate_focus=0.5,
    terse=0.5,
    greeting=0.42,
    thanks=0.05,
    why=0.8,
    reason=0.15,
    lowercase=0.25,
    typo=0.05,
    patience=3,
    voice="casual",
    full_stop=0.15,
    field_disclosure={
        field_name: (0.15, 0.5, 0.35)
        for field_name in ("actor", "director", "writer", "language", "year", "plot_keyword")
    },
)


LEARNED = replace(
    REALISTIC,
    name="learned",
    summary="the `realistic` user's behaviour in people's words: each turn a real user's turn of the same act "
    "from the voice learned from `simulator.voice.corpus`, its catalog values and titles replaced by the "
    "turn's own (the rule voice of `realistic` where no real turn fits)",
    learned=True,
)


PROFILES: dict[str, UserProfile] = {profile.name: profile for profile in (EXPLICIT, IMPLICIT, REALISTIC, LEARNED)}


def user_profile(name: str) -> UserProfile:
    """The profile named `name`; a ValueError naming the known ones (and the closest) otherwise."""
    return look_up(PROFILES, name, "user profile")
