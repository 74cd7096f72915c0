"""A simulated user's turn said in its learned voice: people's real turns, their slots filled, read back.

A profile that speaks with the voice learned from real dialogues (crseval.simulate.user.voice) words a turn with
a real turn of the act it does, the turn's values and film in its slots, where one fits and reads back as meant
(crseval.simulate.user.wording.ReadBack); else the rules word it (crseval.simulate.user.wording). `Voicing` draws
from the voice's stream, which it owns, so that the voice's draws leave the other streams as they are; each
turn's record says how it was voiced (`user_meta.voice`).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace

import numpy as np

from crseval.core.fields import display
from crseval.language.tracker import Constraint
from crseval.language.user_acts import ACTS
from crseval.replies.cases import FAILURES
from crseval.replies.complaints import complains
from crseval.simulate.user.profiles import UserProfile
from crseval.simulate.user.turn_content import Statement, TurnContent
from crseval.simulate.user.user_plan import weighted_draw
from crseval.simulate.user.voice import Voice, VoiceTemplate, spread_position, visible_text
from crseval.simulate.user.wording import ReadBack, joined_parts

VOICE_DRAWS = 12  # templates drawn for one way of wording a turn before the next way (or the rules)
THIN_POOL = 20  # templates of an act and its value slots below which other fields' templates, re-typed, join them
KEYED_RESOLUTION = 10  # a reaction's template counts, scaled to people's acts after a reply, in tenths
WELL_SUPPLIED = 3  # templates said after a failure that a reaction to it is drawn from alone (fitting_reply)
# The act of a real turn that words each reaction of the profile.
_VOICE_ACTS = {
    "accept": ("take", "small_talk", "ask_about", "ask", "other"),  # people seldom say they take a film: they ask on
    "why": ("ask_about",),
    "ask": ("ask", "other"),
    "reject": ("turn_down", "other", "ask"),
    "unknown_title": ("ask", "other"),
    "no_title": ("ask", "other"),
}
# The word a value describes when it follows the value's slot ("{genre} movies"): the value stays singular.
_FILM_NOUN_AFTER = re.compile(r"\s+(?:movie|film|flick)s?\b", re.IGNORECASE)
_NO_PREFERENCE_ACTS = ("other", "small_talk")  # asked about a field it says nothing of
_VAGUE_ACTS = ("ask", "small_talk", "other")  # an opening that says nothing of what the user wants


def fitting_reply(templates: list[VoiceTemplate], case: str | None) -> list[VoiceTemplate]:
    """The templates that may answer a reply of `case` (crseval.replies.cases). After a failure (FAILURES),
    people's turns said after such a failure where there are WELL_SUPPLIED of them, complaints included; after
    any other reply, every turn that is no complaint: a complaint people made about a failure answers that
    failure only, never a film of the catalog (`case` None: no reply read, no complaint). Only failures narrow
    the pool: the turns people said after a film, a question or an answer are as many ways to react to one,
    and narrowed to the turns said after the same case a pool says its few turns again and again (word AUC
    0.85 narrowed, 0.75 not, docs/simulation.md)."""
    fitting = [t for t in templates if not t.complaint or (case in FAILURES and case in t.after)]
    if case not in FAILURES:
        return fitting
    same = [t for t in fitting if case in t.after]
    return same if len(same) >= WELL_SUPPLIED else fitting


def keyed_on_the_reply(templates: list[VoiceTemplate], people_acts: dict[str, int]) -> list[VoiceTemplate]:
    """`templates` drawn so that each act comes as often as people answered the same case of reply with it
    (`people_acts`: act -> turns, Voice.acts_after): a template's count is scaled by its act's share among
    people's answers over its share of the templates' counts, in whole numbers (KEYED_RESOLUTION). People
    answer a film with a question or a request more often than their turns overall do; unscaled, every act
    would come as often after a film as after anything. An act people never answered the case with keeps a
    count of 1 in KEYED_RESOLUTION: still there, seldom drawn. Unchanged where people answered none of the
    templates' acts, or the templates are of one act."""
    act_of = {t.id: _act_of(t) for t in templates}
    counts = Counter()
    for t in templates:
        counts[act_of[t.id]] += t.said
    answered = {act: people_acts.get(act, 0) for act in counts}
    people = sum(answered.values())
    if len(counts) < 2 or not people:
        return templates
    total = sum(counts.values())
    return [
        replace(
            t,
            said=max(1, t.said * answered[act_of[t.id]] * total * KEYED_RESOLUTION // (counts[act_of[t.id]] * people)),
        )
        for t in templates
    ]


def _act_of(template: VoiceTemplate) -> str:
    """The act of the pool a template was learned in ("later|ask|#3": ask); "" for a leaving turn's."""
    return template.id.split("|")[1] if template.id.count("|") >= 2 else ""


def _slot(constraint: Constraint) -> str:
    return f"{constraint.field}:{'exclusion' if constraint.negated else 'wish'}"


class Voicing:
    """The learned voice of a user, if any, and the templates it said in this session; draws from the voice's
    stream `rng`. `spread`: where the session stands among the experiment's (its index, the experiment's seed),
    to spread the template draws over the sessions (Voice.spread_order); None draws them independently."""

    def __init__(
        self,
        voice: Voice | None,
        profile: UserProfile,
        rng: np.random.Generator,
        spread: tuple[int, int] | None,
        read_back: ReadBack,
    ):
        self.voice = voice
        self.profile = profile
        self.rng = rng
        self.spread = spread
        self.read_back = read_back
        self.record: dict = {}  # how the turn being worded was voiced
        self.case: str | None = None  # what the reply it answers did (crseval.replies.cases)
        self._used: set[str] = set()  # the templates said in this session
        self._spread_draws: dict = {}  # pool (its templates' ids and counts) -> its draws so far
        self._parts_used: set[str] = set()  # the openers and tails said in this session (voice_parts)
        self._first = False  # whether the turn being worded opens the dialogue

    @property
    def speaks(self) -> bool:
        """Whether the learned voice words the turns (a profile may take only its wishes from it)."""
        return self.voice is not None and self.profile.learned

    def word(
        self, number: int, content: TurnContent, focus: tuple[str, str], candidates: list[str], case: str | None = None
    ):
        """(text, statements, titles) of turn `number` in the voice, or None: the rules word the turn. `case`: what
        the system's last reply did (crseval.replies.cases), which the turn reacts to (`fitting_reply`)."""
        told = self.told(content, focus)
        self.case, self._first = case, number == 1
        people_acts = self.voice.acts_after(case) if case else {}
        ways = [
            [(title, keyed_on_the_reply(fitting_reply(t, case), people_acts)) for title, t in way]
            for way in self.ways(number, content, told)
        ]
        return self.voiced(ways, candidates, told, case)

    def take_record(self) -> dict:
        """How the last turn was voiced (`user_meta.voice`), forgotten for the next turn."""
        record = self.record or {"voice": "rules", "templates": [], "redraws": 0, "fallback": ""}
        if self.case is not None:
            record = {**record, "after": self.case}
        self.record, self.case = {}, None
        return record

    @staticmethod
    def told(content: TurnContent, focus: tuple[str, str]) -> list[Constraint]:
        """The wishes and exclusions the voice says: the focus first where the turn announces a shift."""
        if content.stage == "leave":
            return []
        focus = Constraint(*focus)
        return ([focus] if content.shift else []) + [c for c in content.tell if not (content.shift and c == focus)]

    def ways(self, number: int, content: TurnContent, told: list[Constraint]) -> list[list[tuple]]:
        """The turn as the voice realises it: ways to word it, each a list of parts (the film to fill the
        part's title slot, its templates); the first way with templates for every part is taken. A reaction
        is worded by any real turn of the acts that react so (_VOICE_ACTS); a turn that also says wishes
        (`told`) is one real turn that does both, else the wishes alone, as people restate what they want
        rather than say no or yes, else the two joined. A user who leaves says a frustrated user's last turn."""
        if content.stage == "leave":
            return [[(None, self.voice.leave_options())]]
        first = number == 1
        reaction = content.reaction
        about = reaction.about if reaction else None
        acts = _VOICE_ACTS[reaction.stage] if reaction else ()
        wishes = tuple(sorted(_slot(c) for c in told))

        def options(act_names: tuple, signature: tuple, title=None) -> list[VoiceTemplate]:
            found = self._widened(
                [t for name in act_names for t in self.voice.options(name, signature, first)],
                act_names,
                signature,
                first,
            )
            if title:
                found += [t for name in act_names for t in self.voice.options(name, (*signature, "title"), first)]
            return found

        said = []
        if told:
            said.append((None, options(("request",), wishes)))
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
            singles = [options(("request",), (_slot(c),)) for c in told]
            ways.append([(None, templates) for templates in singles] + said[1:])
        return ways

    def _widened(self, own: list[VoiceTemplate], act_names: tuple, signature: tuple, first: bool):
        """The templates that say `signature` with one of `act_names`: the acts' own, joined by those of other
        fields re-typed (Voice.retyped) where the own are fewer than THIN_POOL: a wish or an exclusion people
        seldom word (a year, a language, "not a {genre}") said in the few ways they did would be said in every
        session alike, the same words a discriminator learns at once."""
        if not signature or len(own) >= THIN_POOL:
            return own
        have = {t.id for t in own}
        return own + [t for name in act_names for t in self.voice.retyped(name, signature, first) if t.id not in have]

    def voiced(self, ways: list[list[tuple]], candidates: list[str], told: list[Constraint], case: str | None = None):
        """(text, statements, titles) worded by the voice, each draw read back (another is drawn where it
        reads otherwise); None where no template fits or no draw reads back: the rules word the turn."""
        record = {"voice": "rules", "templates": [], "redraws": 0, "fallback": "no template of the act"}
        # ways of fewer real turns first (two turns joined read as two people), and among those, ways whose
        # every part has a pool of THIN_POOL templates or more: the few real turns of a thin pool, taken wherever
        # they fit, would be said in session after session (a pool of four said 150 times in 9,500 turns)
        ways = sorted(ways, key=lambda way: (len(way), any(len(templates) < THIN_POOL for _, templates in way)))
        for way in ways:
            if not way or any(not templates for _, templates in way):
                continue
            for _ in range(VOICE_DRAWS):
                drawn = [(title, self._draw_template(templates)) for title, templates in way]
                parts_used = set(self._parts_used)
                worded = self.fill([(title, self._composed(t, parts_used)) for title, t in drawn], told)
                if worded is not None and not self.read_back.misread(*worded, candidates) and self._answers(worded[0]):
                    self._used.update(t.id for _, t in drawn)
                    self._parts_used = parts_used
                    self.record = {
                        "voice": "learned",
                        "templates": [t.id for _, t in drawn],
                        "redraws": record["redraws"],
                        "fallback": "",
                    }
                    return worded
                record["redraws"] += 1
            record["fallback"] = "no draw read back as meant"
        self.record = record
        return None

    def _answers(self, text: str) -> bool:
        """Whether `text` may answer the reply it follows: a complaint (crseval.replies.complaints) answers a
        failure only, never a film of the catalog, a question or a dialogue's start, whatever parts said it."""
        return self.case in FAILURES or not complains(text)

    def _composed(self, template: VoiceTemplate, used: set[str]) -> VoiceTemplate:
        """`template` with its opener and tail drawn from the turns other people said with its act
        (crseval.simulate.user.voice_parts); a leaving turn stays whole."""
        act = _act_of(template)
        if act not in ACTS:
            return template
        return replace(template, text=self.voice.parts.compose(template.text, act, self._first, self.rng, used))

    def _draw_template(self, templates: list[VoiceTemplate]) -> VoiceTemplate:
        """A template the user has not said in this session yet, while there is one (people do not repeat
        themselves word for word). Spread over the experiment's sessions where the session knows its place
        (`spread`): a real turn is said about as often as any other of its pool, where independent draws
        would say some in many sessions and others in none."""
        if self.spread is None:
            fresh = [t for t in templates if t.id not in self._used]
            return Voice.draw(self.rng, fresh or templates)
        session, experiment_seed = self.spread
        key = tuple((t.id, t.said) for t in templates)  # a pool keyed on the reply weighs its templates anew
        if key not in self._spread_draws:
            self._spread_draws[key] = [*Voice.spread_order(templates, experiment_seed), 0]
        order, start, draws = self._spread_draws[key]
        for step in range(len(order)):  # the next fresh template along the pool's order
            chosen = order[(spread_position(start, session, draws, len(order)) + step) % len(order)]
            if chosen.id not in self._used:
                break
        self._spread_draws[key][2] = draws + 1
        return chosen

    def _said_as(self, constraint: Constraint, singular: bool = False) -> str:
        """A value in words people wrote it with, as often as they did (the catalog's spelling where nobody
        wrote it twice the same way); the read-back checks it still names the value. `singular`: after "a"
        or "an", or before the word "movie" or "film" it describes, not a plural people wrote ("comedies" where
        the catalog says "comedy": "a comedies", "comedies movies"). People's words are their
        visible text, as the voice's templates are (`fill`)."""
        catalog = display(constraint.field, constraint.value)
        forms = self.voice.said_as(constraint.field, constraint.value)
        if singular and not catalog.endswith("s"):
            forms = {words: n for words, n in forms.items() if not words.endswith("s")}
        if not forms:
            return catalog
        words = sorted(forms)
        weights = np.array([forms[w] for w in words], dtype=float)
        return visible_text(words[weighted_draw(self.rng, weights)])

    def fill(self, drawn: list[tuple], told: list[Constraint]):
        """(text, statements, titles): the drawn templates (each with the film for its title slot) with their
        slots filled: the turn's values `told` (wishes, then exclusions, as the slots' roles ask) and the film
        a reaction is about; None where a slot has no value to take, or a value of `told` no slot. The voice's
        words are their visible text (crseval.simulate.user.voice.visible_text), so that the read-back reads
        what a reader sees: no hidden character keeps a value from it."""
        told = list(told)
        texts, statements, titles = [], [], []
        for title, template in drawn:
            pieces = re.split(r"(\{\w+\})", visible_text(template.text))
            slots = iter(template.slots)
            text = ""
            for at, piece in enumerate(pieces):
                if not (piece.startswith("{") and piece.endswith("}")):
                    text += piece
                    continue
                slot = next(slots, None)
                if slot is None:  # a mark a hidden character made (a voice not read from a file)
                    return None
                if slot == "title":
                    if title is None:
                        return None
                    text += self.read_back.written_title(title)
                    titles.append(title)
                    continue
                match = next((c for c in told if _slot(c) == slot), None)
                if match is None:
                    return None
                told.remove(match)
                article = re.search(r"(?:^|\s)([Aa]n?) $", text)
                describes = _FILM_NOUN_AFTER.match(pieces[at + 1]) is not None  # a slot is never the last piece
                value = self._said_as(match, singular=article is not None or describes)
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
        return joined_parts(texts), statements, titles
