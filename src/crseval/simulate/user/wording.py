"""How the simulated user says a turn's content in the templates (resources/templates/user.yaml), read back.

The user says exactly what it means: each utterance is checked with the same extractors the CRS tracker and
the metrics use (`ReadBack`), and its concepts (with their role: wish, exclusion, or context for the bridge)
and titles must equal the ones the turn states (`user_meta.stated`, `user_meta.titles`); a wording that reads
differently is re-drawn (other template, other title), and an utterance that cannot be worded faithfully stops
the run with the difference. The thesis user (under THESIS conduct) says a turn in one full-sentence template
of its stage, every other profile in parts, each a sentence, in its voice and style (lower case, a typo).

`Wording` draws from the text stream, which it owns: the wording and the user's reactions to the replies
(crseval.simulate.user.simulator asks it for their chances), both of which depend on what the system says.
"""

from __future__ import annotations

import re

import numpy as np

from crseval.core.fields import display
from crseval.language.concepts import ConceptMatcher
from crseval.language.tracker import Constraint, extract_statements
from crseval.simulate.user.profiles import UserProfile
from crseval.simulate.user.templates import SimulatorTextError, Templates
from crseval.simulate.user.turn_content import Conduct, Reaction, Statement, TurnContent
from crseval.simulate.user.user_plan import UserPlan

MAX_REDRAWS = 40

_A_BEFORE_VOWEL = re.compile(r"\b([Aa]) (?=[aeiouAEIOU])")
# The user's own words a typo may touch: not the cues the trackers read (negations, a fresh start).
_TYPO_WORD = re.compile(r"(?<![{\w'])[a-z]{4,}(?![\w}'])")
_PLACEHOLDER = re.compile(r"(\{\w+\})")
_NO_TYPO = {"nothing", "never", "without", "longer", "except", "instead", "changed", "another", "different"}


def with_article(phrase: str) -> str:
    """'a action movie' -> 'an action movie' (the templates write 'a {value}')."""
    return _A_BEFORE_VOWEL.sub(lambda m: m.group(1) + "n ", phrase)


def joined_parts(parts: list[str]) -> str:
    """A turn's parts as one text: after a sentence, a space; after a part left open, a comma."""
    text = parts[0] if parts else ""
    for part in parts[1:]:
        text += (" " if text[-1:] in ".?!" else ", ") + part
    return text


class ReadBack:
    """An utterance read as the CRS tracker and the metrics read it, and titles written so that they do."""

    def __init__(self, matcher: ConceptMatcher):
        self.matcher = matcher
        self.recognizer = matcher.title_recognizer

    def written_title(self, title: str) -> str:
        """A title as the user writes it: in quotes when it could be read as an ordinary word."""
        return self.recognizer.quoted(title)

    def misread(self, text: str, statements: list[Statement], titles: list[str], candidates: list[str]) -> str:
        """How `text` reads otherwise than it means (`statements`, `titles`); empty where it reads as meant."""
        read = {(m.field, m.value, role) for m, role in extract_statements(self.matcher, text, candidates)}
        meant = {(s.field, s.value, s.role) for s in statements}
        read_titles = set(self.recognizer.recognise(text, candidates=candidates).all)
        problems = []
        if read != meant:
            problems.append(f"concepts read {sorted(read)} but meant {sorted(meant)}")
        if read_titles != set(titles):
            problems.append(f"titles read {sorted(read_titles)} but meant {sorted(titles)}")
        return "; ".join(problems)


class Wording:
    """A turn's content worded from the templates, drawn from the text stream `rng`, and read back until
    it says exactly what the turn means. The focus and the wishes it words are the plan's."""

    def __init__(
        self,
        templates: Templates,
        profile: UserProfile,
        conduct: Conduct,
        rng: np.random.Generator,
        read_back: ReadBack,
        plan: UserPlan,
        seed: int,
    ):
        self.templates = templates
        self.profile = profile
        self.conduct = conduct
        self.rng = rng
        self.read_back = read_back
        self.plan = plan
        self.seed = seed  # named where no wording reads back
        self.redraws = 0  # wordings drawn again in this session
        self._style: dict = {}  # lower case and typo of the turn being worded

    def chance(self, share: float, always: bool = False) -> bool:
        """A draw of the text stream only when the share leaves a choice (0 and 1 draw nothing), unless
        `always`."""
        if always:
            return bool(self.rng.random() < share)
        return share >= 1 or (share > 0 and self.rng.random() < share)

    def word(self, content: TurnContent, number: int, candidates: list[str]) -> tuple[str, list[Statement], list[str]]:
        """(text, statements, titles) of turn `number` in the templates: one for the thesis user, parts for the
        others, each wording read back and drawn again until it says exactly `content`."""
        self._style = {}
        if content.stage == "leave":
            compose = lambda: (self._pick("leave"), [], [])  # noqa: E731
        elif self.conduct.one_template:
            compose = self._in_one_template(content)
        else:
            compose = self._in_parts(content)
        return self._say(compose, candidates, number)

    def _in_parts(self, content: TurnContent):
        """compose() -> (text, statements, titles): the turn in parts, each a sentence, in the user's style."""
        focus = Constraint(*self.plan.focus)

        def compose():
            self._style = {"lower": self.chance(self.profile.lowercase), "typo": self.chance(self.profile.typo)}
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
            return joined_parts(parts), statements, titles

        return compose

    def _in_one_template(self, content: TurnContent):
        """compose() -> (text, statements, titles): the thesis user's turn, one full-sentence template of
        the group its stage names (`open`, `shift` with the wishes that still hold, `contradict`, `accept`,
        `reject`, `ask`, `no_title`, `unknown_title`), the focus in every one."""
        focus = [Statement(*self.plan.focus, "wish")]
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
            title = titles[0] if next(tries) == 0 else titles[int(self.rng.integers(len(titles)))]
            text = self._pick(group).format(title=self.read_back.written_title(title), focus=self._focus_phrase())
            return text, focus, [title]

        return compose

    def _announce_kept(self, shift: dict):
        """A shift announced in full, then the earlier wishes that still hold ("keep it ..., as before")."""
        text, statements, titles = self._announce(shift)
        kept = [c for c in self.plan.constraints if not c.negated and (c.field, c.value) != self.plan.focus]
        if kept:
            text += " " + self._pick("keep").format(
                kept=" and ".join(self._phrase("kept", c.field, c.value) for c in kept)
            )
        return text, statements + [Statement(c.field, c.value, "wish") for c in kept], titles

    def _announce(self, shift: dict) -> tuple[str, list[Statement], list[str]]:
        """A shift the user announces: in full (the anchor, the bridge, the new wish) or in short
        ("change of plan: ...")."""
        focus = self.plan.focus
        if self.chance(self.profile.terse):
            phrase = self._wish_phrase(Constraint(*focus), True)
            return self._pick("announce").format(focus=phrase), [Statement(*focus, "wish")], []
        bridge = shift["bridge"]
        text = self._pick("shift_new" if shift["anchor_new"] else "shift").format(
            anchor=self.read_back.written_title(shift["from_anchor"]),
            bridge=self._phrase("bridge", bridge["field"], bridge["value"]),
            focus=self._focus_phrase(),
        )
        statements = [Statement(bridge["field"], bridge["value"], "context"), Statement(*focus, "wish")]
        return text, statements, [shift["from_anchor"]]

    def _reaction_text(self, reaction: Reaction) -> tuple[str, list[str]]:
        """A reaction as a part of a turn, and the film it names (when its template has a title slot)."""
        template = self._pick(*reaction.group)
        if reaction.about is None:
            return template, []
        named = [reaction.about] if "{title}" in template else []
        return template.format(title=self.read_back.written_title(reaction.about)), named

    def _statement_text(self, constraint: Constraint) -> tuple[str, Statement]:
        """One sentence saying one gold constraint, and what it states."""
        terse = self.chance(self.profile.terse)
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
        return phrase if phrase[-1:] in ".?!" or not self.chance(self.profile.full_stop) else phrase + "."

    def _wish_phrase(self, constraint: Constraint, terse: bool) -> str:
        return self._phrase("short" if terse else "focus", constraint.field, constraint.value)

    def _focus_phrase(self) -> str:
        return self._phrase("focus", *self.plan.focus)

    def _phrase(self, group: str, field_name: str, value: str) -> str:
        return with_article(self._pick(group, field_name).format(value=display(field_name, value)))

    def _pick(self, *keys: str) -> str:
        """A template in the profile's voice and the user's style of this turn: in lower case, or with two
        letters swapped."""
        template = self.templates.pick(self.rng, *keys, voice=self.profile.voice)
        if self._style.get("lower"):
            template = "".join(p if p.startswith("{") else p.lower() for p in _PLACEHOLDER.split(template))
        if self._style.get("typo"):
            words = [m for m in _TYPO_WORD.finditer(template) if m.group(0) not in _NO_TYPO]
            if words:
                word = words[int(self.rng.integers(len(words)))]
                at = word.start() + 1 + int(self.rng.integers(len(word.group(0)) - 2))
                template = template[:at] + template[at + 1] + template[at] + template[at + 2 :]
                self._style["typo"] = False  # one typo a turn at most
        return template

    def _say(self, compose, candidates: list[str], number: int) -> tuple[str, list[Statement], list[str]]:
        """Word an utterance with `compose()` -> (text, statements, titles), re-drawing until the
        extractors read back exactly the statements and titles meant."""
        problem = ""
        for _ in range(MAX_REDRAWS):
            text, statements, titles = compose()
            problem = self.read_back.misread(text, statements, titles, candidates)
            if not problem:
                return text, statements, titles
            self.redraws += 1
        raise SimulatorTextError(
            f"session seed {self.seed}, turn {number}: no wording says exactly what the user means; "
            f"last try {text!r}: {problem}"
        )
