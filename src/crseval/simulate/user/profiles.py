"""User behaviour profiles: how much the simulated user says, how it talks, and when it leaves.

The plan of a session (anchor films, foci, shifts, exclusions) comes from the session seed alone and
is the same under every profile; a profile changes only what the user discloses of it and how it
words what it says. Every profile is the one crseval.simulate.user.simulator.UserSimulator with the settings
below; `explicit` is the thesis user: it names every wish verbatim, announces every shift, restates
the wishes that still hold and never leaves, and a few ways of the thesis user no setting states (it
ignores questions, speaks one full-sentence template a turn) are its `Conduct` there (THESIS).

Disclosure: each gold constraint, when it first arises (the opening focus, a shift's new focus, an
exclusion), is `volunteer` (said when it arises), `on_ask` (said when the system asks about its
field or asks an open question, or unasked after `reveal_after` unsatisfying replies since it arose) or
`hidden` (never said: the user rejects the films that violate it). A shift whose new focus is not
volunteered is implicit: the user says nothing of it and starts rejecting what no longer fits.
Which constraint gets which disclosure is drawn from a stream of the session seed of its own, so
every system meets the same user.

A config may define profiles of its own under `simulator.profiles` (docs/simulation.md, "Defining a
profile"): each starts from a built-in (`based_on`) and sets any of its fields; `resolve_profile` gives
the profile a name stands for, built-in or defined. A defined profile may take some knobs (`fit`) from
the values the learned voice fitted to its corpus (crseval.simulate.user.voice_learning.fitted_knobs): `with_fitted`
sets them and records each with the statistic behind it. A simulate job carries a profile as its
settings (`UserProfile.settings`); `profile_from_settings` turns them back into the profile.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field, fields, replace

from crseval.core.names import NAME_RULE, is_safe_name
from crseval.core.registry import did_you_mean, look_up

DISCLOSURES = ("volunteer", "on_ask", "hidden")
# The settings that are a chance per occasion, and those that count replies.
SHARES = ("restate_focus", "terse", "greeting", "thanks", "why", "reason", "lowercase", "typo", "full_stop")
COUNTS = ("reveal_after", "patience")
# The knobs a profile may take from the learned voice (`fit`); the voice also reports the share of turns with
# a question mark (`question`), which no single knob sets (questions come from the templates and `why`).
FITTABLE = ("greeting", "thanks", "lowercase", "typo", "patience")
WANTS = ("catalog", "people")  # where the opening wish comes from (UserProfile.wants)


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


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
    # Speaks with the voice learned from `simulator.voice.corpus` (crseval.simulate.user.voice): people's turns
    # of the same act, their slots filled with the turn's values; where none fits, `voice` above speaks.
    learned: bool = False
    # What the user wants: "catalog", at the start a value of a film drawn from the whole catalog, and at a
    # shift the next field of `simulator.field_order`; "people", at the start a value drawn as often as the
    # learned voice's corpus asks for it (among the catalog's), then a film with it, and at a shift a field
    # and a value drawn as often as the corpus asks for them (among those a bridge film offers). People ask
    # for science fiction and horror far more than for a catalog's rarest genres, and for genres far more
    # than for directors.
    wants: str = "catalog"
    # The disclosure shares of the constraints on a field, where they differ from `disclosure`.
    field_disclosure: dict[str, tuple[float, float, float]] = field(default_factory=dict)
    # The knobs (of FITTABLE) taken from the learned voice's fitted values by `with_fitted`, and, once taken,
    # each knob's {"value", "statistic", "n"}. Both are left out of settings() while empty.
    fit: tuple[str, ...] = ()
    fitted: dict[str, dict] = field(default_factory=dict)

    def __post_init__(self):
        for shares in (self.disclosure, *self.field_disclosure.values()):
            if len(shares) != 3 or not all(map(_is_number, shares)) or abs(sum(shares) - 1) > 1e-9 or min(shares) < 0:
                raise ValueError(f"profile {self.name}: disclosure shares {shares} must be >= 0 and sum to 1")
        for name in SHARES:
            value = getattr(self, name)
            if not _is_number(value) or not 0 <= value <= 1:
                raise ValueError(f"profile {self.name}: {name} is {value!r}, not a share in [0, 1]")
        for name in COUNTS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"profile {self.name}: {name} is {value!r}, not a whole number >= 0")
        if self.wants not in WANTS:
            raise ValueError(f"profile {self.name}: wants is {self.wants!r}; a profile wants {' or '.join(WANTS)}")
        for knob in self.fit:
            if knob not in FITTABLE:
                why = " (the voice's question share sets no knob)" if knob == "question" else ""
                raise ValueError(
                    f"profile {self.name}: fit names {knob!r}{why}{did_you_mean(knob, list(FITTABLE))}; "
                    f"a profile fits {', '.join(FITTABLE)}"
                )

    @property
    def draws_on_voice(self) -> bool:
        """Whether the user draws on the learned voice within its sessions: its words or its wishes (the knobs it
        fits are set before the sessions, `with_fitted`)."""
        return self.learned or self.wants == "people"

    @property
    def needs_voice(self) -> bool:
        """Whether the profile takes anything from the learned voice: its words, its wishes or knobs."""
        return self.draws_on_voice or bool(self.fit)

    @property
    def is_explicit(self) -> bool:
        return self.name == "explicit"

    def settings(self) -> dict:
        """What the user does under it (not its summary), as simulate jobs and provenance record it."""
        record = asdict(self)
        del record["summary"]
        record["disclosure"] = dict(zip(DISCLOSURES, self.disclosure))
        record["field_disclosure"] = {f: dict(zip(DISCLOSURES, s)) for f, s in self.field_disclosure.items()}
        record["fit"] = list(self.fit)
        for key in ("learned", "fit", "fitted"):  # absent while unset: the settings of before these fields
            if not record[key]:
                del record[key]
        if self.wants == "catalog":
            del record["wants"]
        return record

    def with_fitted(self, fitted: Mapping[str, Mapping]) -> "UserProfile":
        """This profile with each knob of `fit` set to the learned voice's fitted value (the voice summary's
        `fitted`: {knob: {"value", "statistic", "n"}}), each recorded in `fitted` with its statistic and n.
        A ValueError names the knob the voice has no value for."""
        values, record = {}, {}
        for knob in self.fit:
            entry = fitted.get(knob) if isinstance(fitted, Mapping) else None
            value = entry.get("value") if isinstance(entry, Mapping) else None
            if value is None:
                seen = f" ({entry.get('statistic')}, n = {entry.get('n')})" if isinstance(entry, Mapping) else ""
                raise ValueError(
                    f"profile {self.name}: fit takes {knob} from the learned voice, which has no value for it{seen}"
                )
            if knob in COUNTS and isinstance(value, float) and value.is_integer():
                value = int(value)
            values[knob] = value
            record[knob] = {"value": value, "statistic": entry.get("statistic", ""), "n": entry.get("n")}
        return replace(self, **values, fitted=record) if self.fit else self

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
    "turn's own (the rule voice of `realistic` where no real turn fits); it wants what people ask for as "
    "often as they ask for it, and asks about a film offered less often (people do in 6% of their turns)",
    learned=True,
    wants="people",
    why=0.3,
)


PROFILES: dict[str, UserProfile] = {profile.name: profile for profile in (EXPLICIT, IMPLICIT, REALISTIC, LEARNED)}


def user_profile(name: str) -> UserProfile:
    """The built-in profile named `name`; a ValueError naming the known ones (and the closest) otherwise."""
    return look_up(PROFILES, name, "user profile")


# ------------------------------------------------------------------ who needs the learned voice


def paraphrase_examples(paraphrase: Mapping) -> int:
    """The voice's turns the rewording shows as examples (`simulator.paraphrase.examples`), 0 while it is off."""
    return paraphrase.get("examples", 0) if paraphrase.get("enabled") else 0


def needs_learned_voice(profile: UserProfile, paraphrase: Mapping) -> bool:
    """Whether the simulate jobs of a system whose user has `profile` need the learned voice's pools: the profile
    takes anything from the voice (UserProfile.needs_voice), or the rewording (the config's `simulator.paraphrase`)
    shows the voice's turns as examples. The one place that decides it: the workflow's inputs and the runner ask
    here."""
    return profile.needs_voice or paraphrase_examples(paraphrase) > 0


# ------------------------------------------------------------------ profiles a config defines

# The keys of a definition under `simulator.profiles`: the built-in it starts from, and the fields it sets.
DEFINABLE = tuple(f.name for f in fields(UserProfile) if f.name not in ("name", "fitted"))


def resolve_profile(name: str, simulator: Mapping | None = None) -> UserProfile:
    """The profile `name` stands for: a built-in, or one defined under the config's `simulator.profiles`
    (`simulator` is the config's simulator section). A ValueError names the known ones and the closest."""
    defined = (simulator or {}).get("profiles") or {}
    if name in defined:
        return defined_profile(name, defined[name])
    if name in PROFILES:
        return PROFILES[name]
    known = [str(known) for known in (*PROFILES, *defined)]
    raise ValueError(f"unknown user profile {name!r}{did_you_mean(name, known)}; known: {', '.join(known)}")


def defined_profile(name: str, definition: Mapping) -> UserProfile:
    """The profile a config defines as `name`: the built-in `based_on` with the fields the definition sets
    (a field given replaces the built-in's whole; `disclosure` and each `field_disclosure` are
    {volunteer, on_ask, hidden})."""
    if not is_safe_name(name):
        raise ValueError(f"profile {name!r}: a profile's name must be {NAME_RULE}")
    if name in PROFILES:
        raise ValueError(f"profile {name}: a built-in profile's name; give the profile you define another name")
    unknown = [key for key in definition if key != "based_on" and key not in DEFINABLE]
    if unknown:
        hint = did_you_mean(unknown[0], ["based_on", *DEFINABLE])
        raise ValueError(f"profile {name}: no field {unknown[0]!r}{hint}; a profile sets {', '.join(DEFINABLE)}")
    if "based_on" not in definition:
        raise ValueError(f"profile {name}: based_on names the built-in it starts from ({', '.join(PROFILES)})")
    base = look_up(PROFILES, definition["based_on"], f"user profile for profile {name} to be based on")
    changes = {key: value for key, value in definition.items() if key != "based_on"}
    if "disclosure" in changes:
        changes["disclosure"] = _shares(changes["disclosure"], name, "disclosure")
    if "field_disclosure" in changes:
        changes["field_disclosure"] = {
            f: _shares(shares, name, f"field_disclosure.{f}") for f, shares in changes["field_disclosure"].items()
        }
    if "fit" in changes:
        changes["fit"] = tuple(changes["fit"])
    changes.setdefault("summary", f"defined in the config: `{base.name}` with {', '.join(changes) or 'nothing'} set")
    return replace(base, name=name, fitted={}, **changes)


def profile_from_settings(settings: Mapping, summary: str = "") -> UserProfile:
    """The profile whose settings() are `settings` (as a simulate job and provenance record them, JSON or
    not): the inverse of UserProfile.settings. settings() leave the summary out: pass it if it matters."""
    known = [f.name for f in fields(UserProfile) if f.name != "summary"]
    unknown = [key for key in settings if key not in known]
    if unknown:
        raise ValueError(f"profile settings: no field {unknown[0]!r}; a profile has {', '.join(known)}")
    values = dict(settings)
    name = values.get("name", "?")
    values["disclosure"] = _shares(values.get("disclosure"), name, "disclosure")
    values["field_disclosure"] = {
        f: _shares(shares, name, f"field_disclosure.{f}")
        for f, shares in (values.get("field_disclosure") or {}).items()
    }
    values["fit"] = tuple(values.get("fit") or ())
    values["fitted"] = {knob: dict(entry) for knob, entry in (values.get("fitted") or {}).items()}
    return UserProfile(summary=summary, **values)


def named_profiles(config: dict) -> list[tuple[str, object]]:
    """(key, value) of every `profile` the config names, as written: `simulator.profile` and each system's
    own. The checks read them all, a profile no system meets included (which one a system meets is
    crseval.simulate.systems.kinds.ResolvedSystem's to say); values of the wrong shape are left to the schema."""
    simulator = config.get("simulator") if isinstance(config, dict) else None
    if not isinstance(simulator, dict):
        return []
    systems = config.get("systems") if isinstance(config.get("systems"), list) else []
    own = [(f"systems[{i}].profile", s.get("profile")) for i, s in enumerate(systems) if isinstance(s, dict)]
    return [("simulator.profile", simulator.get("profile")), *own]


def config_problems(config: dict) -> Iterator[str]:
    """What user profiles require beyond the schema: defined profiles whose names are safe and none of the
    built-ins', whose disclosure shares sum to 1, and that take fitted knobs or the learned voice only with
    `simulator.voice.corpus`; and every `profile` naming a built-in or defined profile. Values of the wrong
    shape are left to the schema."""
    simulator = config.get("simulator") if isinstance(config, dict) else None
    if not isinstance(simulator, dict):
        return
    defined = simulator.get("profiles") if isinstance(simulator.get("profiles"), dict) else {}
    named = named_profiles(config)
    used = {name for _, name in named if isinstance(name, str)}
    voice = simulator.get("voice") if isinstance(simulator.get("voice"), dict) else {}
    schema = _definition_validator() if defined else None
    for name, definition in defined.items():
        where = f"simulator.profiles.{name}"
        if not isinstance(name, str):
            yield f"simulator.profiles: {name!r} is not a name (a profile's name is text: quote it)"
            continue
        if name in PROFILES:
            yield (
                f"simulator.profiles: {name!r} is a built-in profile ({', '.join(PROFILES)}); give the profile you "
                "define another name (based_on starts it from a built-in)"
            )
            continue
        if not is_safe_name(name):
            continue  # the schema reports it (its propertyNames)
        if not isinstance(definition, dict):
            continue  # the schema reports it
        sums = list(_disclosure_sums(where, definition, schema))
        yield from sums
        if sums or not schema.is_valid(definition):
            continue
        try:
            profile = defined_profile(name, definition)
        except ValueError as error:
            yield f"{where}: {error}"
            continue
        if name in used and not voice.get("corpus"):
            needs = (
                "speaks with the voice"
                if profile.learned
                else "wants what people ask for in the voice's corpus"
                if profile.wants == "people"
                else f"takes {', '.join(profile.fit)} from the voice"
            )
            if profile.needs_voice:
                yield (
                    f"{where}{'' if profile.learned else '.wants' if profile.wants == 'people' else '.fit'}: "
                    f"profile {name} {needs} learned from "
                    "simulator.voice.corpus, which is not set; name the corpus (e.g. "
                    "../shared/data/crsarena/crs_arena_dial_open.json)"
                )
    known = [*PROFILES, *(name for name in defined if is_safe_name(name) and name not in PROFILES)]
    for path, name in named:
        if isinstance(name, str) and name not in known:
            yield f"{path}: unknown user profile {name!r}{did_you_mean(name, known)}; known: {', '.join(known)}"


def _disclosure_sums(where: str, definition: dict, schema) -> Iterator[str]:
    """A problem for each disclosure of `definition` whose shares do not sum to 1 (when the schema takes it)."""
    disclosure = schema.evolve(schema=schema.schema["properties"]["disclosure"])
    by_field = definition.get("field_disclosure")
    shares = {"disclosure": definition.get("disclosure")}
    shares |= {f"field_disclosure.{f}": s for f, s in by_field.items()} if isinstance(by_field, dict) else {}
    for key, given in shares.items():
        if given is not None and disclosure.is_valid(given) and abs(sum(given.values()) - 1) > 1e-9:
            parts = " + ".join(f"{d} {given[d]:g}" for d in DISCLOSURES)
            yield f"{where}.{key}: {parts} = {sum(given.values()):g}; the three shares of a disclosure sum to 1"


def _definition_validator():
    """The schema of one definition under `simulator.profiles`: what it refuses, the schema reports."""
    from crseval.core.config_checks import ConfigValidator, load_schema  # built only for defined profiles

    simulator = load_schema()["properties"]["simulator"]["properties"]
    return ConfigValidator(simulator["profiles"]["additionalProperties"])


def _shares(given, name: str, key: str) -> tuple[float, float, float]:
    """{volunteer, on_ask, hidden} (or the three in that order) as a tuple; a ValueError otherwise."""
    if isinstance(given, Mapping) and set(given) == set(DISCLOSURES):
        return tuple(given[d] for d in DISCLOSURES)
    if isinstance(given, (list, tuple)) and len(given) == 3:
        return tuple(given)
    raise ValueError(f"profile {name}: {key} is {given!r}, not the shares {{{', '.join(DISCLOSURES)}}}")
