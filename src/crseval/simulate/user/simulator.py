"""The rule-based user simulator: preference shifts on purpose, with ground truth.

A session starts from an anchor film and a focus (field, value) of it. Every `shift_every`
turns the focus moves to the next field of `field_order` through a bridge: a value that the
current anchor film shares with a new anchor film, whose value in the new field becomes the
focus. The gold constraints are the new focus plus the earlier wishes the new anchor still
satisfies, so right after a shift the catalog holds a film that meets them all. Between shifts the user
accepts or rejects what the system recommended, asks for more, or (at `contradiction_rate`)
takes back an earlier wish. Every turn carries this state as `user_meta`.

The user says exactly what it means: each utterance is checked with the same extractors the
CRS tracker and the metrics use, and its concepts (with their role: wish, exclusion, or
context for the bridge) and titles must equal the ones the simulator intends (`user_meta.stated`,
`user_meta.titles`); a wording that reads differently is re-drawn (other template, other
title), and an utterance that cannot be worded faithfully stops the run with the difference.

Every user profile (crseval.simulate.user.profiles) is the one UserSimulator: the profile's shares decide what
the user says of the plan and how, and its `Conduct` the few ways of the thesis user (`explicit`) no
field of a profile states. A turn is decided first (`TurnContent`: its stage, what it states, its
reaction to the last reply), then worded: in the learned voice, in one full-sentence template (the
thesis user) or in parts.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np
import yaml

from crseval.catalog.index import CatalogIndex
from crseval.core.config_checks import schema_defaults
from crseval.core.experiment import imports_sessions
from crseval.core.fields import CONCEPT_FIELDS, display
from crseval.language.asks import OPEN
from crseval.language.concepts import ConceptMatcher
from crseval.language.text import lemma
from crseval.language.tracker import Constraint, extract_statements
from crseval.simulate.user.profiles import EXPLICIT, UserProfile, resolve_profile, user_profile
from crseval.simulate.user.voice import Voice, VoiceTemplate, spread_position, visible_text

MAX_REDRAWS = 40


class SimulatorTextError(RuntimeError):
    """No wording of an utterance says exactly what the simulated user means."""


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


class Templates:
    """The utterance templates of resources/templates/user.yaml."""

    def __init__(self, data: dict, version: str):
        self.data = data
        self.version = version  # content hash: an edited template file is a new version

    @classmethod
    def load(cls, path: str | Path) -> "Templates":
        text = Path(path).read_text(encoding="utf-8")
        return cls(yaml.safe_load(text), hashlib.sha256(text.encode("utf-8")).hexdigest()[:16])

    def pick(self, rng: np.random.Generator, *keys: str, voice: str = "") -> str:
        """One template of the group `keys`, drawn with `rng`: the voice's own group when the voice
        has one (`voices.<voice>` in the file), else the common one. A group the file lacks (the config
        check names it first: template_problems) is a SimulatorTextError naming it."""
        options = self.data.get("voices", {}).get(voice, {}) if voice else {}
        if not _has_group(options, keys):
            options = self.data
        for key in keys:
            options = options.get(key) if isinstance(options, dict) else None
        if not _is_group(options):
            found = "none" if options is None else f"{type(options).__name__} {options!r:.60}"
            raise SimulatorTextError(
                f"the user templates (version {self.version}) have no group {'.'.join(keys)!r} (a list of templates; "
                f"found {found}); add it as in resources/templates/user.yaml"
            )
        return options[int(rng.integers(len(options)))]


def _has_group(data: dict, keys: tuple[str, ...]) -> bool:
    for key in keys:
        if not isinstance(data, dict) or key not in data:
            return False
        data = data[key]
    return True


def _is_group(options) -> bool:
    """A group of templates: a list of one or more texts."""
    return isinstance(options, list) and bool(options) and all(isinstance(t, str) for t in options)


# ------------------------------------------------------------------ the template groups each user speaks

# The groups the thesis user (the built-in `explicit` profile: one template a turn) draws from; those keyed by a
# field (`focus.genre`) are drawn for every field of `simulator.field_order`, and `bridge` for every concept field
# and those of the order.
_EXPLICIT_GROUPS = ("open", "accept", "reject", "ask", "no_title", "unknown_title", "shift", "shift_new", "contradict")
_EXPLICIT_FIELD_GROUPS = ("focus", "kept", "reject_value")
_EXPLICIT_KEEP = "keep"  # the wishes that still hold after a shift


def spoken_groups(profile: UserProfile, field_order: tuple[str, ...]) -> list[tuple[str, ...]]:
    """The template groups (Templates.pick's keys) the user of `profile` may draw from in a session whose
    foci move through `field_order`: the groups its code picks, less those a share of 0 never reaches (a
    profile with `greeting: 0` never greets; one with `patience: 0` never leaves; `terse: 0` never speaks
    the short templates, `terse: 1` only those)."""
    fields = tuple(dict.fromkeys(field_order))
    bridges = tuple(dict.fromkeys(CONCEPT_FIELDS + fields))
    if conduct_of(profile).one_template:
        groups = [(g,) for g in (*_EXPLICIT_GROUPS, _EXPLICIT_KEEP)]
        groups += [(g, f) for g in _EXPLICIT_FIELD_GROUPS for f in fields]
        return groups + [("bridge", f) for f in bridges]
    # a turn of parts: a reaction in short (terse) or in full sentences, each of its parts as the profile talks
    styles = [style for style, spoken in (("short", profile.terse > 0), ("plain", profile.terse < 1)) if spoken]
    groups = [("no_preference",)]
    groups += [(g,) for g, spoken in (("greeting", profile.greeting > 0), ("thanks", profile.thanks > 0)) if spoken]
    groups += [("leave",)] if profile.patience else []
    always_volunteers = all(shares[0] >= 1 for shares in (profile.disclosure, *profile.field_disclosure.values()))
    groups += [] if always_volunteers else [("open_vague",)]  # an opening that says no wish
    reactions = ("accept", "more", "reject", "unknown", "no_title") + (("why",) if profile.why > 0 else ())
    groups += [(f"{reaction}_{style}",) for reaction in reactions for style in styles]
    groups += [("reason", f) for f in fields] if profile.reason > 0 else []
    if profile.terse > 0:  # a wish, an exclusion and an announced shift in short
        groups += [("announce",)] + [(g, f) for g in ("short", "exclude_short") for f in fields]
    if profile.terse < 1:  # ... and in full sentences
        groups += [("wish",), ("shift",), ("shift_new",)] + [(g, f) for g in ("focus", "reject_value") for f in fields]
        groups += [("bridge", f) for f in bridges]
    return groups


def template_problems(config: dict, locate: Callable[[str], str | Path]) -> Iterator[str]:
    """The config check of `simulator.templates` against every profile the systems meet (built-in or defined
    under `simulator.profiles`; crseval.simulate.user.profiles): the voice a profile speaks in is a group under
    `voices` (without it the user would speak the full-sentence templates), and every group the profile
    draws from (spoken_groups) is in the file, a list of texts, so that no session stops on a missing one.
    The file is read where `locate` (path -> where the workflow reads it: crseval.planning.input_path) says;
    one that does not exist is left to the check of the inputs, values of the wrong shape to the schema."""
    simulator = config.get("simulator") if isinstance(config, dict) else None
    if not isinstance(simulator, dict) or imports_sessions(config):
        return
    path = simulator.get("templates")
    if not isinstance(path, str) or not path:
        return
    read = Path(locate(path))
    if not read.is_file():
        return  # crseval.planning.check_inputs names the missing file
    where = f"simulator.templates: {path}"
    try:
        data = yaml.safe_load(read.read_text(encoding="utf-8"))
    except (OSError, UnicodeError, yaml.YAMLError) as error:
        yield f"{where} cannot be read as YAML: {error}"
        return
    if not isinstance(data, dict):
        yield f"{where} holds a {type(data).__name__}, not groups of templates (as resources/templates/user.yaml)"
        return
    order = simulator.get("field_order")
    field_order = tuple(f for f in order if isinstance(f, str)) if isinstance(order, list) else ()
    systems = config.get("systems") if isinstance(config.get("systems"), list) else []
    named = [("simulator.profile", simulator.get("profile"))]
    named += [(f"systems[{i}].profile", s.get("profile")) for i, s in enumerate(systems) if isinstance(s, dict)]
    users: dict[str, list[str]] = {}  # profile name -> the keys that name it
    for key, name in named:
        if isinstance(name, str):
            users.setdefault(name, []).append(key)
    voices = data.get("voices") if isinstance(data.get("voices"), dict) else {}
    for name, keys in users.items():
        try:
            profile = resolve_profile(name, simulator)
        except (ValueError, TypeError, AttributeError):
            continue  # crseval.simulate.user.profiles.config_problems names it
        who = f"profile {name} ({', '.join(keys)})"
        voice = voices.get(profile.voice, {}) if profile.voice else {}
        if profile.voice and profile.voice not in voices:
            found = f"has the voices {', '.join(map(str, voices))}" if voices else "has no voices"
            yield (
                f"{where}: {who} speaks in the voice {profile.voice!r}, and the file {found}: its user would speak "
                f"the full-sentence templates; add voices.{profile.voice} as in resources/templates/user.yaml"
            )
        elif not isinstance(voice, dict):
            yield f"{where}: voices.{profile.voice}, the voice {who} speaks in, is not a mapping of template groups"
            voice = {}
        missing, wrong = [], []
        for group in spoken_groups(profile, field_order):
            own = _has_group(voice, group)  # Templates.pick draws from the voice's group where it has one
            options = voice if own else data
            for key in group:
                options = options.get(key) if isinstance(options, dict) else None
            if options is None:
                missing.append(".".join(group))
            elif not _is_group(options):
                wrong.append(f"voices.{profile.voice}.{'.'.join(group)}" if own else ".".join(group))
        if missing:
            yield (
                f"{where}: {who} speaks from groups the file does not have: {', '.join(missing)}; add them as in "
                "resources/templates/user.yaml"
            )
        if wrong:
            yield f"{where}: {who} speaks from groups that are not lists of one or more texts: {', '.join(wrong)}"


_A_BEFORE_VOWEL = re.compile(r"\b([Aa]) (?=[aeiouAEIOU])")


def with_article(phrase: str) -> str:
    """'a action movie' -> 'an action movie' (the templates write 'a {value}')."""
    return _A_BEFORE_VOWEL.sub(lambda m: m.group(1) + "n ", phrase)


@dataclass
class UserTurn:
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


# The user's own words a typo may touch: not the cues the trackers read (negations, a fresh start).
_TYPO_WORD = re.compile(r"(?<![{\w'])[a-z]{4,}(?![\w}'])")
_PLACEHOLDER = re.compile(r"(\{\w+\})")
_NO_TYPO = {"nothing", "never", "without", "longer", "except", "instead", "changed", "another", "different"}


@dataclass
class UserSimulator:
    """One simulated user of `profile` for one session; all randomness comes from `seed`.

    Every profile follows the same plan of its seed; the profile decides what the user says of it. A turn
    is made of parts, each a sentence: a greeting, a reaction to the last reply (accept, ask why, ask for
    more, reject, with or without the wrong field), the wishes it says now (volunteered as they arise,
    answers to the system's question, or `on_ask` wishes it gives up waiting to be asked for), "no
    preference" for a field it was asked about and says nothing of, and thanks; or, for the thesis user
    (`explicit`, under THESIS conduct), one full-sentence template that says the focus every turn."""

    index: CatalogIndex
    settings: SimulatorSettings
    templates: Templates
    seed: int
    matcher: ConceptMatcher
    profile: UserProfile = EXPLICIT
    voice: Voice | None = None  # the learned voice the profile speaks with (crseval.simulate.user.voice), if any
    # where the session stands among the experiment's (its index, the experiment's seed): the voice's
    # template draws are spread over the sessions (Voice.spread_order); None draws them independently
    spread: tuple[int, int] | None = None
    conduct: Conduct = field(init=False)
    plan_rng: np.random.Generator = field(init=False)  # anchors, foci, shifts, contradictions
    text_rng: np.random.Generator = field(init=False)  # wording and reactions to replies
    disclosure_rng: np.random.Generator = field(init=False)  # which constraint is said when: the plan's
    voice_rng: np.random.Generator = field(init=False)  # the voice's draws: a stream of its own
    anchor: int = field(init=False)
    focus: tuple[str, str] = field(init=False)
    constraints: list[Constraint] = field(init=False)
    liked: list[str] = field(init=False, default_factory=list)
    seen_titles: set[str] = field(init=False, default_factory=set)  # titles that appeared in the dialogue
    shift_events: list[dict] = field(init=False, default_factory=list)
    redraws: int = field(init=False, default=0)
    disclosure: dict[Constraint, str] = field(init=False, default_factory=dict)  # of every gold constraint so far
    said: set[Constraint] = field(init=False, default_factory=set)  # the gold constraints the user has stated
    misses: int = field(init=False, default=0)  # unsatisfying replies in a row
    waiting: dict = field(init=False, default_factory=dict)  # constraint -> unsatisfying replies since it arose
    _style: dict = field(init=False, default_factory=dict)  # lower case and typo of the turn being worded
    _voice_record: dict = field(init=False, default_factory=dict)  # how the turn being worded was voiced
    _told: list = field(init=False, default_factory=list)  # the constraints the turn being voiced says
    _voice_used: set = field(init=False, default_factory=set)  # the templates said in this session
    _spread_draws: dict = field(init=False, default_factory=dict)  # pool (template ids) -> its draws so far

    def __post_init__(self):
        self.conduct = conduct_of(self.profile)
        # Streams of their own, so that the plan (what the user wants when) is the same whatever the
        # system answers (only the reactions and the wording depend on the replies), and the disclosures
        # and the voice's draws leave the thesis user's two streams as they are.
        plan_seed, text_seed, disclosure_seed, voice_seed = np.random.SeedSequence(self.seed).spawn(4)
        self.plan_rng = np.random.default_rng(plan_seed)
        self.text_rng = np.random.default_rng(text_seed)
        self.disclosure_rng = np.random.default_rng(disclosure_seed)
        self.voice_rng = np.random.default_rng(voice_seed)
        self.recognizer = self.matcher.title_recognizer
        # plot keywords are wishes (and bridges) only when the field order asks for them
        self.fields = CONCEPT_FIELDS + tuple(f for f in self.settings.field_order if f not in CONCEPT_FIELDS)
        first_field = self.settings.field_order[0]
        self.anchor, value = self._opening(first_field)
        self.focus = (first_field, value)
        self.constraints = [Constraint(*self.focus)]
        self.liked = [self._title(self.anchor)]
        self._disclose_new()

    # ------------------------------------------------------------ the plan

    def _opening(self, first_field: str) -> tuple[int, str]:
        """The film the user starts from and the value of `first_field` it wants (the plan's stream): a film
        drawn from those with such a value, then one of its values; under `wants: people`, the value drawn
        as often as the voice's corpus asks for it (among the values the catalog's films have), then a film
        with it."""
        if self.profile.wants == "people":
            return self._opening_people_ask_for(first_field)
        with_values = [f for f in self.index.films["film_id"] if self._values(int(f), first_field)]
        if not with_values:
            raise ValueError(f"no film of the catalog has a {first_field!r} value to start a session from")
        anchor = int(with_values[int(self.plan_rng.integers(len(with_values)))])
        values = self._values(anchor, first_field)
        return anchor, values[int(self.plan_rng.integers(len(values)))]

    def _opening_people_ask_for(self, first_field: str) -> tuple[int, str]:
        asked = self.voice.asked(first_field) if self.voice is not None else {}
        films: dict[str, list[int]] = {}
        for film_id in self.index.films["film_id"]:
            for value in self._values(int(film_id), first_field):
                if asked.get(value):
                    films.setdefault(value, []).append(int(film_id))
        if not films:
            raise ValueError(
                f"profile {self.profile.name} wants what people ask for, and the voice's corpus asks for no "
                f"{first_field} a catalog film has"
            )
        values = sorted(films)
        weights = np.array([asked[v] for v in values], dtype=float)
        value = values[_weighted(self.plan_rng, weights)]
        return films[value][int(self.plan_rng.integers(len(films[value])))], value

    def _maybe_contradict(self) -> Constraint | None:
        """At `contradiction_rate` of ordinary turns the user rules something out: an earlier
        wish other than the focus when it has one (taken back), else a value of the focus field
        its anchor film does not have (so the anchor still fits). Plan stream only."""
        if self.plan_rng.random() >= self.settings.contradiction_rate:
            return None
        others = [c for c in self.constraints if not c.negated and (c.field, c.value) != self.focus]
        if others:
            dropped = others[int(self.plan_rng.integers(len(others)))]
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
        own = set(self._values(self.anchor, field_name))
        taken = {c.value for c in self.constraints if c.field == field_name}
        values = [
            v
            for v in self.index.values(field_name)
            if v not in own and v not in taken and self._speakable(field_name, v)
        ]
        if not values:
            return None
        return Constraint(field_name, self._pick_value(field_name, values))

    def _shift(self) -> dict | None:
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
                for value in self._values(film_id, new_field):
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
                "from_anchor": self._title(self.anchor),
                "to_anchor": self._title(film_id),
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
            drawn.append(wanted.pop(_weighted(self.plan_rng, weights)))
        return drawn + [f for f in in_turn if f not in drawn]

    def _pick_value(self, field_name: str, options: list, value_of: Callable = lambda option: option):
        """One of `options` drawn from the plan's stream: a value of `field_name` the user names next (a
        shift's (film, bridges, value), whose value `value_of` reads, or a value it rules out). Under `wants:
        people`, a value drawn as often as people ask for it (any option alike where they ask for none)."""
        if self.profile.wants == "people":
            asked = self.voice.asked(field_name)
            weights = np.array([asked.get(value_of(option), 0) for option in options], dtype=float)
            if weights.sum():
                return options[_weighted(self.plan_rng, weights)]
        return options[int(self.plan_rng.integers(len(options)))]

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

    # ------------------------------------------------------------ catalog access

    def _values(self, film_id: int, field_name: str) -> list[str]:
        return self.index.film_values(film_id, field_name)

    def _title(self, film_id: int) -> str:
        return self.index.title(film_id)

    def _concepts(self, film_id: int) -> set[tuple[str, str]]:
        return {(f, v) for f in self.fields for v in self._values(film_id, f)}

    def _satisfies(self, film_id: int, constraints: list[Constraint]) -> bool:
        concepts = self._concepts(film_id)
        return all(((c.field, c.value) in concepts) != c.negated for c in constraints)

    def title_satisfies(self, title: str, constraints: list[Constraint] | None = None) -> bool:
        """Whether a catalog film meets `constraints` (the current gold constraints by default)."""
        film_id = self.index.film_id(title)
        return film_id is not None and self._satisfies(
            film_id, self.constraints if constraints is None else constraints
        )

    # ------------------------------------------------------------ the turn

    def turn(
        self,
        number: int,
        last_recommended: list[str],
        last_mentioned: list[str] = (),
        last_unknown: list[str] = (),
        last_asks: frozenset[str] = frozenset(),
    ) -> UserTurn:
        """The user's utterance at turn `number` (from 1), reacting to the titles the system
        recommended in its previous reply; `last_unknown`: the films that reply named outside the
        catalog (the user cannot judge them: it knows the catalog only); `last_asks`: what the reply
        asked the user about (crseval.language.asks)."""
        self.seen_titles.update(last_recommended)
        self.seen_titles.update(last_mentioned)
        self._style = {}
        asked = last_asks if self.conduct.hears_questions else frozenset()
        wanted_then = list(self.constraints)  # what the user wanted when the system made its last reply
        shift, excluded = self._move_plan(number)
        arisen = list(self.constraints) if number == 1 else self._disclose_new()  # the opening focus: at the start
        self._count_reply(number, last_recommended, last_unknown, asked, wanted_then, arisen)
        fitting = [t for t in last_recommended if self.title_satisfies(t)]
        if self._out_of_patience:
            content = TurnContent("leave")
        else:
            content = self._content(number, arisen, asked, shift, excluded, last_recommended, fitting, last_unknown)
        text, statements, titles = self._word(content, number, list(last_recommended))
        implied = self._implied(content.reaction, titles, [t for t in last_recommended if t not in fitting])
        return self._record(number, text, statements, titles, content, shift, excluded, implied)

    def _move_plan(self, number: int) -> tuple[dict | None, Constraint | None]:
        """The plan's move at turn `number` (the plan's stream alone, so it moves alike under every profile):
        a shift every `shift_every` turns where a film bridges, else perhaps a contradiction."""
        if number == 1:
            return None, None
        if self.settings.is_shift_turn(number) and (shift := self._shift()) is not None:
            shift["anchor_new"] = shift["from_anchor"] not in self.seen_titles  # the wording then says it is new
            return shift, None
        return None, self._maybe_contradict()

    def _content(self, number, arisen, asked, shift, excluded, recommended, fitting, unknown) -> TurnContent:
        """What the turn says: the wishes volunteered as they arise, the answers to the reply's question and
        the on-ask wishes given up waiting for one; the plan's move where the user says it; its reaction to
        the reply (none to open, none beside an announced shift, none beside any plan move under THESIS); the
        focus again, as `restate_focus` says; a greeting at the start, thanks for a film it takes."""
        volunteered = [c for c in arisen if self.disclosure[c] == "volunteer"]
        answers = self._answers(asked)
        revealed = self._revealed()
        tell = list(dict.fromkeys(volunteered + answers + revealed))
        focus = Constraint(*self.focus)
        announced = shift is not None and (self.conduct.plan_alone or focus in volunteered)
        ruled_out = excluded is not None and (self.conduct.plan_alone or excluded in volunteered)
        if number == 1 or announced or (ruled_out and self.conduct.plan_alone):
            reaction = None
        else:
            reaction = self._reaction(recommended, fitting, unknown, asked)
        if reaction and focus in self.said and focus not in tell and self._chance(self.profile.restate_focus):
            tell.append(focus)
        if number == 1:
            stage = "open"
        elif announced:
            stage = "shift"
        elif ruled_out:
            stage = "contradict"
        elif answers or not (revealed or reaction):
            stage = "answer"  # to a question (or "no preference")
        else:
            stage = "reveal" if revealed else reaction.stage
        greeting = number == 1 and self._chance(self.profile.greeting)
        thanks = reaction is not None and reaction.stage == "accept" and self._chance(self.profile.thanks)
        return TurnContent(
            stage,
            tell,
            reaction,
            shift=shift if announced else None,
            ruled_out=excluded if ruled_out else None,
            revealed=[c for c in revealed if c not in answers],
            greeting=greeting,
            opening_quiet=number == 1 and not tell,
            no_preference=bool(asked) and not answers,
            thanks=thanks,
        )

    def _implied(self, reaction: Reaction | None, titles: list[str], missed: list[str]) -> dict:
        """What the turn implies of the last reply's films: the film it takes (the one its words name, else
        the one it meant), or the ones that missed, turned down (said or not, unless under THESIS)."""
        if reaction is not None and reaction.stage == "accept":
            return {"accepts": [titles[0] if titles else reaction.take], "rejects": []}
        rejects = self.conduct.rejects_unsaid or (reaction is not None and reaction.stage == "reject")
        return {"accepts": [], "rejects": missed if rejects else []}

    def _record(self, number, text, statements, titles, content, shift, excluded, implied) -> UserTurn:
        """The turn with its ground truth (`user_meta`), and the user's memory of it."""
        self.seen_titles.update(titles)
        self.liked += [title for title in implied["accepts"] if title not in self.liked]
        self.said.update(Constraint(s.field, s.value, s.role == "exclusion") for s in statements if s.role != "context")
        meta = {
            "focus_field": self.focus[0],
            "focus_value": self.focus[1],
            "constraints": [c.as_dict() for c in self.constraints],
            "disclosure": [self.disclosure[c] for c in self.constraints],
            "said": [c in self.said for c in self.constraints],
            "revealed": [c.as_dict() for c in content.revealed],
            "shift_event": shift is not None,
            "plan_event": "shift" if shift is not None else "contradiction" if excluded is not None else None,
            "bridge": shift["bridge"] if shift is not None else None,
            "anchor_title": self._title(self.anchor),
            "stage": content.stage,
            "stated": [s.as_dict() for s in statements],
            "titles": titles,
            "cannot_judge": content.stage == "unknown_title",
        }
        if self.voice is not None:
            meta["voice"] = self._voice_record or {"voice": "rules", "templates": [], "redraws": 0, "fallback": ""}
            self._voice_record = {}
        if shift is not None:
            self.shift_events.append({"turn": number, **shift})
        return UserTurn(text=text, meta=meta, implies=implied)

    # ------------------------------------------------------------ what the user says

    def _disclose_new(self) -> list[Constraint]:
        """Give each gold constraint that has just arisen its disclosure; returns them."""
        new = [c for c in self.constraints if c not in self.disclosure]
        for constraint in new:
            self.disclosure[constraint] = self.profile.disclose(self.disclosure_rng.random(), constraint.field)
        return new

    def _count_reply(self, number, recommended, unknown, asked, wanted_then, arisen) -> None:
        """Count the last reply against what the user wanted when it was made (a shift does not turn the
        reply before it into a miss): a fitting film resets the user's patience and every wish's wait; a
        reply that names films, none fitting, or names none and asks nothing, uses them up; a reply that
        only asks is neither. A wish that arose this turn waits only for the replies after it."""
        if number > 1 and any(self.title_satisfies(t, wanted_then) for t in recommended):
            self.misses = 0
            self.waiting = {c: 0 for c in self.constraints}
        elif number > 1 and (recommended or unknown or not asked):
            self.misses += 1
            self.waiting = {c: self.waiting.get(c, 0) + 1 for c in self.constraints if c not in arisen}
        self.waiting.update({c: 0 for c in arisen})

    @property
    def _out_of_patience(self) -> bool:
        """Whether the user leaves: `patience` unsatisfying replies in a row (never at a patience of 0)."""
        return bool(self.profile.patience) and self.misses >= self.profile.patience

    def _revealed(self) -> list[Constraint]:
        """The `on_ask` wishes not said yet that waited `reveal_after` unsatisfying replies: said unasked."""
        if not self.profile.reveal_after:
            return []
        return [
            c
            for c in self.constraints
            if self.disclosure[c] == "on_ask"
            and c not in self.said
            and self.waiting.get(c, 0) >= self.profile.reveal_after
        ]

    def _answers(self, asked: frozenset[str]) -> list[Constraint]:
        """What the user says to a question: the wishes it does not hide on the fields asked about
        (said before or not), or to an open question those it has not said yet."""
        if not asked:
            return []
        shown = [c for c in self.constraints if self.disclosure[c] != "hidden"]
        answers = [c for c in shown if c.field in asked]
        if OPEN in asked:
            answers += [c for c in shown if c not in self.said]
        return list(dict.fromkeys(answers))

    def _reaction(self, recommended: list[str], fitting: list[str], unknown: list[str], asked: frozenset[str]):
        """The user's reaction to the last reply, or None when the reply only asked something."""
        style = "short" if self._chance(self.profile.terse) else "plain"
        if not recommended:
            if unknown:  # it cannot tell whether a film it does not know fits, and asks for another
                return Reaction("unknown_title", (f"unknown_{style}",))
            if asked:
                return None
            return Reaction("no_title", (f"no_title_{style}",))
        if fitting:
            take = fitting[0]
            if self._chance(self.settings.accept_rate, always=self.conduct.draws_every_acceptance):
                return Reaction("accept", (f"accept_{style}",), tuple(fitting), take)
            if self._chance(self.profile.why):
                return Reaction("why", (f"why_{style}",), (take,))
            return Reaction("ask", (f"more_{style}",))
        wrong = self._violated(recommended[0])
        if wrong is not None and self._chance(self.profile.reason):
            return Reaction("reject", ("reason", wrong.field))
        return Reaction("reject", (f"reject_{style}",), tuple(recommended))

    def _violated(self, title: str) -> Constraint | None:
        """The first gold constraint the film does not meet."""
        film_id = self.index.film_id(title)
        if film_id is None:
            return None
        return next((c for c in self.constraints if not self._satisfies(film_id, [c])), None)

    def _chance(self, share: float, always: bool = False) -> bool:
        """A draw of the text stream only when the share leaves a choice (0 and 1 draw nothing), unless
        `always`."""
        if always:
            return bool(self.text_rng.random() < share)
        return share >= 1 or (share > 0 and self.text_rng.random() < share)

    # ------------------------------------------------------------ wording

    def _word(self, content: TurnContent, number: int, candidates: list[str]):
        """(text, statements, titles) of the turn: in the learned voice where the profile speaks with it and
        a real turn fits, else in the templates (one for the thesis user, parts for the others), each
        wording read back and drawn again until it says exactly `content`."""
        if self._speaks:
            voiced = self._voiced(self._voice_plan(number, content), candidates)
            if voiced is not None:
                return voiced
        if content.stage == "leave":
            compose = lambda: (self._pick("leave"), [], [])  # noqa: E731
        elif self.conduct.one_template:
            compose = self._in_one_template(content)
        else:
            compose = self._in_parts(content)
        return self._say(compose, candidates, number)

    def _in_parts(self, content: TurnContent):
        """compose() -> (text, statements, titles): the turn in parts, each a sentence, in the user's style."""
        focus = Constraint(*self.focus)

        def compose():
            self._style = {"lower": self._chance(self.profile.lowercase), "typo": self._chance(self.profile.typo)}
            parts, statements, titles = [], [], []
            if content.greeting:
                parts.append(self._pick("greeting"))
            if content.opening_quiet:
                parts.append(self._pick("open_vague"))
            if content.reaction:
                text, named = self._reaction_text(content.reaction)
                parts.append(text)
                titles += named
            if content.shift:
                text, said, named = self._announce(content.shift)
                parts.append(text)
                statements += said
                titles += named
            for constraint in content.tell:
                if content.shift and constraint == focus:
                    continue
                text, statement = self._statement_text(constraint)
                parts.append(text)
                statements.append(statement)
            if content.no_preference:
                parts.append(self._pick("no_preference"))
            if content.thanks:
                parts.append(self._pick("thanks"))
            if not self._style["lower"]:
                # a part starts a sentence at the start of the turn or after one that ended
                parts = [
                    part[:1].upper() + part[1:] if i == 0 or parts[i - 1][-1:] in ".?!" else part
                    for i, part in enumerate(parts)
                ]
            return _joined(parts), statements, titles

        return compose

    def _in_one_template(self, content: TurnContent):
        """compose() -> (text, statements, titles): the thesis user's turn, one full-sentence template of
        the group its stage names (`open`, `shift` with the wishes that still hold, `contradict`, `accept`,
        `reject`, `ask`, `no_title`, `unknown_title`), the focus in every one."""
        focus = [Statement(*self.focus, "wish")]
        if content.shift:
            return lambda: self._announce_kept(content.shift)
        if content.ruled_out:
            excluded = content.ruled_out
            return lambda: (
                self._pick("contradict").format(
                    not_focus=self._pick("reject_value", excluded.field).format(
                        value=display(excluded.field, excluded.value)
                    ),
                    focus=self._focus_phrase(),
                ),
                [Statement(excluded.field, excluded.value, "exclusion"), *focus],
                [],
            )
        if content.stage in ("accept", "reject"):
            return self._title_reaction(content.stage, content.reaction.films, focus)
        return lambda: (self._pick(content.stage).format(focus=self._focus_phrase()), focus, [])

    def _title_reaction(self, group: str, titles: tuple[str, ...], focus: list[Statement]):
        """The first title on the first try; another one of `titles` when a wording is re-drawn."""
        tries = iter(range(10**9))

        def compose():
            title = titles[0] if next(tries) == 0 else titles[int(self.text_rng.integers(len(titles)))]
            text = self._pick(group).format(title=self._film(title), focus=self._focus_phrase())
            return text, focus, [title]

        return compose

    def _announce_kept(self, shift: dict):
        """A shift announced in full, then the earlier wishes that still hold ("keep it ..., as before")."""
        text, statements, titles = self._announce(shift)
        kept = [c for c in self.constraints if not c.negated and (c.field, c.value) != self.focus]
        if kept:
            text += " " + self._pick("keep").format(
                kept=" and ".join(self._phrase("kept", c.field, c.value) for c in kept)
            )
        return text, statements + [Statement(c.field, c.value, "wish") for c in kept], titles

    def _announce(self, shift: dict) -> tuple[str, list[Statement], list[str]]:
        """A shift the user announces: in full (the anchor, the bridge, the new wish) or in short
        ("change of plan: ...")."""
        if self._chance(self.profile.terse):
            phrase = self._wish_phrase(Constraint(*self.focus), True)
            return self._pick("announce").format(focus=phrase), [Statement(*self.focus, "wish")], []
        bridge = shift["bridge"]
        text = self._pick("shift_new" if shift["anchor_new"] else "shift").format(
            anchor=self._film(shift["from_anchor"]),
            bridge=self._phrase("bridge", bridge["field"], bridge["value"]),
            focus=self._focus_phrase(),
        )
        statements = [Statement(bridge["field"], bridge["value"], "context"), Statement(*self.focus, "wish")]
        return text, statements, [shift["from_anchor"]]

    def _reaction_text(self, reaction: Reaction) -> tuple[str, list[str]]:
        """A reaction as a part of a turn, and the film it names (when its template has a title slot)."""
        template = self._pick(*reaction.group)
        if reaction.about is None:
            return template, []
        return template.format(title=self._film(reaction.about)), [reaction.about] if "{title}" in template else []

    def _statement_text(self, constraint: Constraint) -> tuple[str, Statement]:
        """One sentence saying one gold constraint, and what it states."""
        terse = self._chance(self.profile.terse)
        value = display(constraint.field, constraint.value)
        if constraint.negated:
            group = "exclude_short" if terse else "reject_value"
            text = self._pick(group, constraint.field).format(value=value)
            return self._sentence(text), Statement(constraint.field, constraint.value, "exclusion")
        phrase = self._wish_phrase(constraint, terse)
        text = self._sentence(phrase) if terse else self._pick("wish").format(focus=phrase)
        return text, Statement(constraint.field, constraint.value, "wish")

    def _sentence(self, phrase: str) -> str:
        """A phrase as a sentence of its own: closed with a full stop as the profile does (the turn's
        composer capitalises it where a sentence starts)."""
        return phrase if phrase[-1:] in ".?!" or not self._chance(self.profile.full_stop) else phrase + "."

    def _wish_phrase(self, constraint: Constraint, terse: bool) -> str:
        return self._phrase("short" if terse else "focus", constraint.field, constraint.value)

    def _focus_phrase(self) -> str:
        return self._phrase("focus", *self.focus)

    def _phrase(self, group: str, field_name: str, value: str) -> str:
        return with_article(self._pick(group, field_name).format(value=display(field_name, value)))

    def _pick(self, *keys: str) -> str:
        """A template in the profile's voice and the user's style of this turn: in lower case, or with two
        letters swapped."""
        template = self.templates.pick(self.text_rng, *keys, voice=self.profile.voice)
        if self._style.get("lower"):
            template = "".join(p if p.startswith("{") else p.lower() for p in _PLACEHOLDER.split(template))
        if self._style.get("typo"):
            words = [m for m in _TYPO_WORD.finditer(template) if m.group(0) not in _NO_TYPO]
            if words:
                word = words[int(self.text_rng.integers(len(words)))]
                at = word.start() + 1 + int(self.text_rng.integers(len(word.group(0)) - 2))
                template = template[:at] + template[at + 1] + template[at] + template[at + 2 :]
                self._style["typo"] = False  # one typo a turn at most
        return template

    def _film(self, title: str) -> str:
        """A title as the user writes it: in quotes when it could be read as an ordinary word."""
        return self.recognizer.quoted(title)

    def _say(self, compose, candidates: list[str], number: int) -> tuple[str, list[Statement], list[str]]:
        """Word an utterance with `compose()` -> (text, statements, titles), re-drawing until the
        extractors read back exactly the statements and titles meant."""
        problem = ""
        for _ in range(MAX_REDRAWS):
            text, statements, titles = compose()
            problem = self._misread(text, statements, titles, candidates)
            if not problem:
                return text, statements, titles
            self.redraws += 1
        raise SimulatorTextError(
            f"session seed {self.seed}, turn {number}: no wording says exactly what the user means; "
            f"last try {text!r}: {problem}"
        )

    def _misread(self, text: str, statements: list[Statement], titles: list[str], candidates: list[str]) -> str:
        read = {(m.field, m.value, role) for m, role in extract_statements(self.matcher, text, candidates)}
        meant = {(s.field, s.value, s.role) for s in statements}
        read_titles = set(self.recognizer.recognise(text, candidates=candidates).all)
        problems = []
        if read != meant:
            problems.append(f"concepts read {sorted(read)} but meant {sorted(meant)}")
        if read_titles != set(titles):
            problems.append(f"titles read {sorted(read_titles)} but meant {sorted(titles)}")
        return "; ".join(problems)

    # ------------------------------------------------------------ the learned voice

    @property
    def _speaks(self) -> bool:
        """Whether the learned voice words the turns (a profile may take only its wishes from it)."""
        return self.voice is not None and self.profile.learned

    def _voice_plan(self, number: int, content: TurnContent) -> list[list[tuple]]:
        """The turn as the voice realises it: ways to word it, each a list of parts (the film to fill the
        part's title slot, its templates); the first way with templates for every part is taken. A reaction
        is worded by any real turn of the acts that react so (_VOICE_ACTS); a turn that also says wishes
        is one real turn that does both, else the wishes alone, as people restate what they want rather than
        say no or yes, else the two joined. A user who leaves says a frustrated user's last turn."""
        if content.stage == "leave":
            self._told = []
            return [[(None, self.voice.leave_options())]]
        focus = Constraint(*self.focus)
        told = ([focus] if content.shift else []) + [c for c in content.tell if not (content.shift and c == focus)]
        self._told = told
        first = number == 1
        reaction = content.reaction
        about = reaction.about if reaction else None
        acts = _VOICE_ACTS[reaction.stage] if reaction else ()
        wishes = tuple(sorted(_slot(c) for c in told))

        def options(act_names: tuple, signature: tuple, title=None) -> list[VoiceTemplate]:
            found = [t for name in act_names for t in self.voice.options(name, signature, first)]
            if title:
                found += [t for name in act_names for t in self.voice.options(name, (*signature, "title"), first)]
            return found

        said = []
        if told:
            said.append((None, options(("request",), wishes) or self.voice.retyped("request", wishes, first)))
        if content.no_preference:
            said.append((None, options(_NO_PREFERENCE_ACTS, ())))
        if content.opening_quiet:
            said.append((None, options(_VAGUE_ACTS, ())))
        ways = []
        if reaction and told:
            ways.append([(about, options(acts, wishes, about))] + said[1:])
            ways.append(said)
        if reaction:
            ways.append([(about, options(acts, (), about))] + said)
        else:
            ways.append(said)
        if len(told) > 1:  # each wish in a real turn of its own, joined
            singles = [
                options(("request",), (_slot(c),)) or self.voice.retyped("request", (_slot(c),), first) for c in told
            ]
            ways.append([(None, templates) for templates in singles] + said[1:])
        return ways

    def _voiced(self, ways: list[list[tuple]], candidates: list[str]):
        """(text, statements, titles) worded by the voice, each draw read back (another is drawn where it
        reads otherwise); None where no template fits or no draw reads back: the rules word the turn."""
        record = {"voice": "rules", "templates": [], "redraws": 0, "fallback": "no template of the act"}
        # ways of fewer real turns first (two turns joined read as two people), and among those, ways whose
        # every part has a pool of some size: the one or two real turns of a rare pool, taken wherever they
        # fit, would be said in session after session
        ways = sorted(ways, key=lambda way: (len(way), any(len(templates) < WELL_SUPPLIED for _, templates in way)))
        for way in ways:
            if not way or any(not templates for _, templates in way):
                continue
            for _ in range(VOICE_DRAWS):
                drawn = [(title, self._draw_template(templates)) for title, templates in way]
                worded = self._fill(drawn)
                if worded is not None and not self._misread(*worded, candidates):
                    self._voice_used.update(t.id for _, t in drawn)
                    self._voice_record = {
                        "voice": "learned",
                        "templates": [t.id for _, t in drawn],
                        "redraws": record["redraws"],
                        "fallback": "",
                    }
                    return worded
                record["redraws"] += 1
            record["fallback"] = "no draw read back as meant"
        self._voice_record = record
        return None

    def _draw_template(self, templates: list[VoiceTemplate]) -> VoiceTemplate:
        """A template the user has not said in this session yet, while there is one (people do not repeat
        themselves word for word). Spread over the experiment's sessions where the session knows its place
        (`spread`): a real turn is said about as often as any other of its pool, where independent draws
        would say some in many sessions and others in none."""
        if self.spread is None:
            fresh = [t for t in templates if t.id not in self._voice_used]
            return Voice.draw(self.voice_rng, fresh or templates)
        session, experiment_seed = self.spread
        key = tuple(t.id for t in templates)
        if key not in self._spread_draws:
            self._spread_draws[key] = [*Voice.spread_order(templates, experiment_seed), 0]
        order, start, draws = self._spread_draws[key]
        for step in range(len(order)):  # the next fresh template along the pool's order
            chosen = order[(spread_position(start, session, draws, len(order)) + step) % len(order)]
            if chosen.id not in self._voice_used:
                break
        self._spread_draws[key][2] = draws + 1
        return chosen

    def _said_as(self, constraint: Constraint, singular: bool = False) -> str:
        """A value in words people wrote it with, as often as they did (the catalog's spelling where nobody
        wrote it twice the same way); the read-back checks it still names the value. `singular`: after "a"
        or "an", not a plural people wrote ("comedies" where the catalog says "comedy"). People's words are their
        visible text, as the voice's templates are (`_fill`)."""
        catalog = display(constraint.field, constraint.value)
        forms = self.voice.said_as(constraint.field, constraint.value)
        if singular and not catalog.endswith("s"):
            forms = {words: n for words, n in forms.items() if not words.endswith("s")}
        if not forms:
            return catalog
        words = sorted(forms)
        weights = np.array([forms[w] for w in words], dtype=float)
        return visible_text(words[_weighted(self.voice_rng, weights)])

    def _fill(self, drawn: list[tuple]):
        """The drawn templates with their slots filled: the turn's values (wishes, then exclusions, as the
        slots' roles ask) and the film a reaction is about; None where a slot has no value to take. The
        voice's words are their visible text (crseval.simulate.user.voice.visible_text), so that the read-back
        reads what a reader sees: no hidden character keeps a value from it."""
        told = list(self._told)
        texts, statements, titles = [], [], []
        for title, template in drawn:
            pieces = re.split(r"(\{\w+\})", visible_text(template.text))
            slots = iter(template.slots)
            text = ""
            for piece in pieces:
                if not (piece.startswith("{") and piece.endswith("}")):
                    text += piece
                    continue
                slot = next(slots, None)
                if slot is None:  # a mark a hidden character made (a voice not read from a file)
                    return None
                if slot == "title":
                    if title is None:
                        return None
                    text += self._film(title)
                    titles.append(title)
                    continue
                match = next((c for c in told if _slot(c) == slot), None)
                if match is None:
                    return None
                told.remove(match)
                article = re.search(r"(?:^|\s)([Aa]n?) $", text)
                value = self._said_as(match, singular=article is not None)
                if article:  # "a" or "an" as the value's first letter asks
                    wanted = article.group(1)[0] + ("n" if value[:1].lower() in "aeiou" else "")
                    text = text[: article.start(1)] + wanted + " "
                text += value
                statements.append(Statement(match.field, match.value, "exclusion" if match.negated else "wish"))
            if next(slots, None) is not None:  # a mark a hidden character hid
                return None
            texts.append(text)
        if told:
            return None
        return _joined(texts), statements, titles


VOICE_DRAWS = 12  # templates drawn for one way of wording a turn before the next way (or the rules)
WELL_SUPPLIED = 3  # templates a pool needs before its way of wording a turn goes ahead of the others
# The act of a real turn that words each reaction of the profile.
_VOICE_ACTS = {
    "accept": ("take", "small_talk", "ask_about", "ask", "other"),  # people seldom say they take a film: they ask on
    "why": ("ask_about",),
    "ask": ("ask", "other"),
    "reject": ("turn_down", "other", "ask"),
    "unknown_title": ("ask", "other"),
    "no_title": ("ask", "other"),
}
_NO_PREFERENCE_ACTS = ("other", "small_talk")  # asked about a field it says nothing of
_VAGUE_ACTS = ("ask", "small_talk", "other")  # an opening that says nothing of what the user wants


def _weighted(rng: np.random.Generator, weights: np.ndarray) -> int:
    """An index drawn as often as its weight says (people's counts)."""
    return int(rng.choice(len(weights), p=weights / weights.sum()))


def _slot(constraint: Constraint) -> str:
    return f"{constraint.field}:{'exclusion' if constraint.negated else 'wish'}"


def _joined(parts: list[str]) -> str:
    """A turn's parts as one text: after a sentence, a space; after a part left open, a comma."""
    text = parts[0] if parts else ""
    for part in parts[1:]:
        text += (" " if text[-1:] in ".?!" else ", ") + part
    return text


def make_user(
    index,
    settings: SimulatorSettings,
    templates: Templates,
    seed: int,
    matcher,
    voice: Voice | None = None,
    profile: UserProfile | None = None,
    spread: tuple[int, int] | None = None,
) -> UserSimulator:
    """The simulated user of `profile` (resolved by the caller) for one session; without one, the built-in the
    schema's default `simulator.profile` names, as a config that names none gets. `voice`: the learned voice,
    which a profile that speaks with it or wants what people ask for needs (the others are given none); `spread`
    (the session's index, the experiment's seed) spreads its template draws over the experiment's sessions."""
    profile = profile or user_profile(_DEFAULTS["profile"])
    uses_voice = profile.learned or profile.wants == "people"
    if uses_voice and voice is None:
        raise ValueError(f"the {profile.name} profile needs a learned voice: set simulator.voice.corpus")
    return UserSimulator(index, settings, templates, seed, matcher, profile, voice if uses_voice else None, spread)
