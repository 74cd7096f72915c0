"""The rule-based user simulator: preference shifts on purpose, with ground truth.

A session starts from an anchor film and a focus (field, value) of it; every `shift_every` turns the focus
moves to another field through a bridge film, and between shifts the user accepts or rejects what the system
recommended, asks for more, or (at `contradiction_rate`) takes back an earlier wish. Every turn carries this
state as `user_meta`. The user says exactly what it means: every utterance is read back with the extractors
the CRS tracker and the metrics use, and re-drawn until it reads as meant.

`UserSimulator` is the one user of every profile (crseval.simulate.user.profiles), put together from parts
that each own a random stream of the session's seed, so that what depends on the system's replies leaves the
rest as it is: the plan (crseval.simulate.user.user_plan: what the user wants, when it shifts, what it has told
and its patience), the wording (crseval.simulate.user.wording: the templates, in the user's style) and the
voicing (crseval.simulate.user.voicing: people's turns of a learned voice). A turn is decided first
(`TurnContent`: its stage, what it states, its reaction to the last reply), then worded: in the learned voice,
in one full-sentence template (the thesis user, under its `Conduct`) or in parts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from crseval.catalog.index import CatalogIndex
from crseval.core.config_checks import schema_defaults
from crseval.language.concepts import ConceptMatcher
from crseval.language.tracker import Constraint
from crseval.simulate.user.profiles import EXPLICIT, UserProfile, user_profile
from crseval.simulate.user.templates import Templates
from crseval.simulate.user.turn_content import Conduct, Reaction, TurnContent, UserTurn, conduct_of
from crseval.simulate.user.user_plan import Disclosure, SimulatorSettings, UserPlan
from crseval.simulate.user.voice import Voice
from crseval.simulate.user.voicing import Voicing
from crseval.simulate.user.wording import ReadBack, Wording

_DEFAULT_PROFILE = schema_defaults("simulator")["profile"]  # the built-in a config that names none gets


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
    plan: UserPlan = field(init=False)  # anchors, foci, shifts, contradictions: the plan's stream
    disclosure: Disclosure = field(init=False)  # which constraint is said when: the disclosures' stream
    wording: Wording = field(init=False)  # wording and reactions to replies: the text stream
    voicing: Voicing = field(init=False)  # the voice's draws: a stream of its own
    seen_titles: set[str] = field(init=False, default_factory=set)  # titles that appeared in the dialogue
    shift_events: list[dict] = field(init=False, default_factory=list)

    def __post_init__(self):
        self.conduct = conduct_of(self.profile)
        # Streams of their own, so that the plan (what the user wants when) is the same whatever the
        # system answers (only the reactions and the wording depend on the replies), and the disclosures
        # and the voice's draws leave the thesis user's two streams as they are.
        plan_seed, text_seed, disclosure_seed, voice_seed = np.random.SeedSequence(self.seed).spawn(4)
        self.plan = UserPlan(self.index, self.settings, self.profile, self.voice, np.random.default_rng(plan_seed))
        self.disclosure = Disclosure(self.plan, self.profile, np.random.default_rng(disclosure_seed))
        read_back = ReadBack(self.matcher)
        text_rng = np.random.default_rng(text_seed)
        self.wording = Wording(self.templates, self.profile, self.conduct, text_rng, read_back, self.plan, self.seed)
        self.voicing = Voicing(self.voice, self.profile, np.random.default_rng(voice_seed), self.spread, read_back)

    @property
    def focus(self) -> tuple[str, str]:
        """The (field, value) the user wants now."""
        return self.plan.focus

    @property
    def liked(self) -> list[str]:
        """The films the user liked: its anchors and the films it took."""
        return self.plan.liked

    def title_satisfies(self, title: str, constraints: list[Constraint] | None = None) -> bool:
        """Whether a catalog film meets `constraints` (the current gold constraints by default)."""
        return self.plan.title_satisfies(title, constraints)

    # ------------------------------------------------------------ the turn

    def turn(
        self,
        number: int,
        last_recommended: list[str],
        last_mentioned: list[str] = (),
        last_unknown: list[str] = (),
        last_asks: frozenset[str] = frozenset(),
        last_case: str | None = None,
    ) -> UserTurn:
        """The user's utterance at turn `number` (from 1), reacting to the titles the system
        recommended in its previous reply; `last_unknown`: the films that reply named outside the
        catalog (the user cannot judge them: it knows the catalog only); `last_asks`: what the reply
        asked the user about (crseval.language.asks); `last_case`: what that reply did (crseval.replies.cases),
        which the learned voice's reactions answer."""
        self.seen_titles.update(last_recommended)
        self.seen_titles.update(last_mentioned)
        asked = last_asks if self.conduct.hears_questions else frozenset()
        wanted_then = list(self.plan.constraints)  # what the user wanted when the system made its last reply
        shift, excluded = self.plan.move(number, self.seen_titles)
        # the opening focus arises at the start
        arisen = list(self.plan.constraints) if number == 1 else self.disclosure.disclose_new()
        self.disclosure.count_reply(number, last_recommended, last_unknown, asked, wanted_then, arisen)
        fitting = [t for t in last_recommended if self.title_satisfies(t)]
        if self.disclosure.out_of_patience:
            content = TurnContent("leave")
        else:
            content = self._content(number, arisen, asked, shift, excluded, last_recommended, fitting, last_unknown)
        text, statements, titles = self._word(content, number, list(last_recommended), last_case)
        implied = self._implied(content.reaction, titles, [t for t in last_recommended if t not in fitting])
        return self._record(number, text, statements, titles, content, shift, excluded, implied)

    def _content(self, number, arisen, asked, shift, excluded, recommended, fitting, unknown) -> TurnContent:
        """What the turn says: the wishes volunteered as they arise, the answers to the reply's question and
        the on-ask wishes given up waiting for one; the plan's move where the user says it; its reaction to
        the reply (none to open, none beside an announced shift, none beside any plan move under THESIS); the
        focus again, as `restate_focus` says; a greeting at the start, thanks for a film it takes."""
        chance = self.wording.chance
        volunteered = [c for c in arisen if self.disclosure.kind[c] == "volunteer"]
        answers = self.disclosure.answers(asked)
        revealed = self.disclosure.revealed()
        tell = list(dict.fromkeys(volunteered + answers + revealed))
        focus = Constraint(*self.focus)
        announced = shift is not None and (self.conduct.plan_alone or focus in volunteered)
        ruled_out = excluded is not None and (self.conduct.plan_alone or excluded in volunteered)
        if number == 1 or announced or (ruled_out and self.conduct.plan_alone):
            reaction = None
        else:
            reaction = self._reaction(recommended, fitting, unknown, asked)
        if reaction and focus in self.disclosure.said and focus not in tell and chance(self.profile.restate_focus):
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
        greeting = number == 1 and chance(self.profile.greeting)
        thanks = reaction is not None and reaction.stage == "accept" and chance(self.profile.thanks)
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

    def _reaction(self, recommended: list[str], fitting: list[str], unknown: list[str], asked: frozenset[str]):
        """The user's reaction to the last reply, or None when the reply only asked something; its chances
        are drawn from the text stream, as they depend on the replies."""
        chance = self.wording.chance
        style = "short" if chance(self.profile.terse) else "plain"
        if not recommended:
            if unknown:  # it cannot tell whether a film it does not know fits, and asks for another
                return Reaction("unknown_title", (f"unknown_{style}",))
            if asked:
                return None
            return Reaction("no_title", (f"no_title_{style}",))
        if fitting:
            take = fitting[0]
            if chance(self.settings.accept_rate, always=self.conduct.draws_every_acceptance):
                return Reaction("accept", (f"accept_{style}",), tuple(fitting), take)
            if chance(self.profile.why):
                return Reaction("why", (f"why_{style}",), (take,))
            return Reaction("ask", (f"more_{style}",))
        wrong = self.plan.violated(recommended[0])
        if wrong is not None and chance(self.profile.reason):
            return Reaction("reject", ("reason", wrong.field))
        return Reaction("reject", (f"reject_{style}",), tuple(recommended))

    def _word(self, content: TurnContent, number: int, candidates: list[str], case: str | None = None):
        """(text, statements, titles) of the turn: in the learned voice where the profile speaks with it and
        a real turn fits, else in the templates (one for the thesis user, parts for the others), each
        wording read back and drawn again until it says exactly `content`."""
        if self.voicing.speaks:
            voiced = self.voicing.word(number, content, self.focus, candidates, case)
            if voiced is not None:
                return voiced
        return self.wording.word(content, number, candidates)

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
        self.plan.liked += [title for title in implied["accepts"] if title not in self.plan.liked]
        told = (Constraint(s.field, s.value, s.role == "exclusion") for s in statements if s.role != "context")
        self.disclosure.said.update(told)
        constraints = self.plan.constraints
        meta = {
            "focus_field": self.focus[0],
            "focus_value": self.focus[1],
            "constraints": [c.as_dict() for c in constraints],
            "disclosure": [self.disclosure.kind[c] for c in constraints],
            "said": [c in self.disclosure.said for c in constraints],
            "revealed": [c.as_dict() for c in content.revealed],
            "shift_event": shift is not None,
            "plan_event": "shift" if shift is not None else "contradiction" if excluded is not None else None,
            "bridge": shift["bridge"] if shift is not None else None,
            "anchor_title": self.plan.title(self.plan.anchor),
            "stage": content.stage,
            "stated": [s.as_dict() for s in statements],
            "titles": titles,
            "cannot_judge": content.stage == "unknown_title",
        }
        if self.voice is not None:
            meta["voice"] = self.voicing.take_record()
        if shift is not None:
            self.shift_events.append({"turn": number, **shift})
        return UserTurn(text=text, meta=meta, implies=implied)


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
    profile = profile or user_profile(_DEFAULT_PROFILE)
    uses_voice = profile.draws_on_voice
    if uses_voice and voice is None:
        raise ValueError(f"the {profile.name} profile needs a learned voice: set simulator.voice.corpus")
    return UserSimulator(index, settings, templates, seed, matcher, profile, voice if uses_voice else None, spread)
