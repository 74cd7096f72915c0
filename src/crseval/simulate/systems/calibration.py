"""Calibration systems: LLM-free CRS agents whose behaviour is known by construction.

A metric that measures adaptation must order these systems as their construction says (the
expected orders are in `crseval.checks.validity`). To behave exactly as designed, every agent here
READS THE SIMULATOR'S GROUND TRUTH (the gold constraints of each user turn), which no system
under test may do: the session runner hands it over only to agents whose class sets
`reads_ground_truth = True`, and only the agents of this module do.

- `oracle`: recommends films that satisfy the current gold constraints (the upper bound);
- `lagging` (`lag: k`): serves the gold constraints of k turns earlier;
- `stubborn`: serves the first turn's constraints for the whole session, ignoring every shift;
- `random`: random catalog films in a fluent sentence, whatever the user asked;
- `parrot`: echoes the user's message, with a film of the first focus;
- `literal`: serves the gold constraints the user has said so far (`user_meta.said`), never asks;
- `flaky` (`reliability: p`): the oracle in a share p of sessions; in the others it recommends only films
  that miss a current wish. Whether a session fails is drawn from the trial's sampling seed, so the
  same user meets it again with a fresh chance: its pass^k must be about p^k (crseval.statistics.trials);
- `asker`: as `literal`, but first asks about the field of each gold constraint the user has not said
  (one question a reply, each constraint once), and recommends when nothing is left to ask;
- `prompt_echo` (`prompt`: a template such as an `llm` system's): the stubborn system with a prompt that
  it echoes. Its prompt is rendered as an `llm` system's is (crseval.simulate.systems.agents.render_prompt) with the
  current gold constraints, as a tracker that follows the user would give them, and its candidates; its
  reply is the prompt's first line that changes with the turn ("(For the recommender. The user now wants:
  genre comedy." of a two-part template) and then the stubborn system's answer. It reports the current gold
  constraints as its state (what its prompt was given), so the scorer renders the same prompt from its
  record. The stubborn system is its twin: the same users, films and answers, without the echo. A metric
  that scores it above its twin credits words copied from the system's own prompt (as small LLMs do: they
  repeat their instructions).

`literal` and `asker` differ only under a user who keeps wishes to itself (a profile other than
`explicit`, crseval.simulate.user.profiles); under `explicit` both serve every gold constraint.

All phrase like the template system ("For genre crime, you could watch Heat (1995).") so that
wording does not differ between them; only what they recommend and restate does.
"""

from __future__ import annotations

import numpy as np

from crseval.catalog.toolkit import MAX_RESULTS, ToolTurn
from crseval.language.tracker import Constraint
from crseval.llm.prompts import PromptTemplate
from crseval.simulate.systems.agent_kind import AgentKind, shared_keys
from crseval.simulate.systems.agents import Agent, AgentSettings, Reply, describe_constraints, prompt_values, with_tools


class CalibrationAgent(Agent):
    """Serves the gold constraints the subclass picks; tracks them as its own state."""

    reads_ground_truth = True  # the session runner passes user_meta only to such agents

    def __init__(self, index, matcher, settings: AgentSettings, seed: int):
        super().__init__(index, matcher, settings, seed)
        self.gold_history: list[list[Constraint]] = []
        self.said_history: list[list[Constraint]] = []  # the gold constraints the user had said, per turn

    def see_ground_truth(self, user_meta: dict) -> None:
        gold = [Constraint(c["field"], c["value"], c["negated"]) for c in user_meta["constraints"]]
        self.gold_history.append(gold)
        said = user_meta.get("said", [True] * len(gold))
        self.said_history.append([c for c, told in zip(gold, said) if told])

    def served(self) -> list[Constraint]:
        """The constraints this agent acts on at the current turn."""
        return self.gold_history[-1]

    def respond(self, turn: int, user_text: str):
        if not self.gold_history:
            raise RuntimeError(
                f"{type(self).__name__} needs the simulator's ground truth; it cannot run on imported logs"
            )
        served = self.served()
        self.tracker.included = {}
        self.tracker.excluded = {}
        for c in served:
            (self.tracker.excluded if c.negated else self.tracker.included).setdefault(c.field, []).append(c.value)
        self.tracker.latest = {(c.field, c.value) for c in served if not c.negated}
        return self._respond_with(turn, user_text, served)

    def _respond_with(self, turn, user_text, served):
        """Only films that satisfy every served constraint (none repeated); a reply that says
        so when the catalog has none left. Through the toolkit (`tools: true`): one search for the served
        constraints, the films found that satisfy them (those rank first), committed."""
        if self.toolkit is not None:
            keep = lambda found: [f for f in found if self._satisfies(f, served)][: self.settings.candidates]  # noqa: E731
            return self.through_tools(turn, user_text, served, served, set(), MAX_RESULTS, keep)
        ranked = self.retriever.rank(served, self.recommended, len(self.index.films), self.rng)
        fitting = [f for f in ranked if self._satisfies(f, served)][: self.settings.candidates]
        return self._reply(turn, user_text, served, fitting)

    def _satisfies(self, film_id: int, served: list[Constraint]) -> bool:
        return all((c.value in self.index.film_values(film_id, c.field)) != c.negated for c in served)

    def _reply(self, turn, user_text, served, candidate_ids):
        text, _ = self.phrase(turn, user_text, served, candidate_ids)
        candidates = [self._title(f) for f in candidate_ids]
        titles = self.matcher.title_recognizer.recognise(text, candidates=candidates, user_text=user_text)
        self.recommended.update(self.index.film_id(t) for t in titles.recommended)
        self.history += [{"role": "user", "content": user_text}, {"role": "assistant", "content": text}]
        return Reply(text, list(served), titles.recommended, titles.mentioned, candidates, None)

    def phrase(self, turn, user_text, tracked, candidate_ids):
        wish = describe_constraints(tracked)
        if not candidate_ids:
            return f"I could not find a film in the catalog for {wish}.", None
        films = " and ".join(self._named(f) for f in candidate_ids[:2])
        return f"For {wish}, you could watch {films}.", None


class OracleAgent(CalibrationAgent):
    """Serves the current gold constraints: the best a system can do."""


class FlakyAgent(OracleAgent):
    """The oracle with probability `reliability` per session, else a system that never serves every wish.

    The draw uses the sampling seed (a repeated trial's own, crseval.simulate.sessions.trial_seed), and is
    made at the first reply, after the session runner has set it."""

    def __init__(self, index, matcher, settings, seed, reliability: float):
        super().__init__(index, matcher, settings, seed)
        if not 0 <= reliability <= 1:
            raise ValueError(f"reliability must be in [0, 1], got {reliability}")
        self.reliability = reliability
        self.fails: bool | None = None

    def _respond_with(self, turn, user_text, served):
        if self.fails is None:
            self.fails = bool(np.random.default_rng([self.sampling_seed, 0xF1A]).random() >= self.reliability)
        if not self.fails:
            return super()._respond_with(turn, user_text, served)
        ranked = self.retriever.rank(served, self.recommended, len(self.index.films), self.rng)
        missing = [f for f in ranked if not self._satisfies(f, served)][: self.settings.candidates]
        return self._reply(turn, user_text, served, missing)


class LaggingAgent(CalibrationAgent):
    """Serves the gold constraints of `lag` turns earlier (the first turn's while fewer exist)."""

    def __init__(self, index, matcher, settings, seed, lag: int):
        super().__init__(index, matcher, settings, seed)
        if lag < 1:
            raise ValueError(f"lag must be at least 1, got {lag}")
        self.lag = lag

    def served(self):
        return self.gold_history[max(0, len(self.gold_history) - 1 - self.lag)]


class StubbornAgent(CalibrationAgent):
    """Serves the first turn's constraints forever: it ignores every shift."""

    def served(self):
        return self.gold_history[0]


class PromptEchoAgent(StubbornAgent):
    """The stubborn system with a prompt: its reply is its prompt's first line that changes with the turn (of
    the turn part, when the template has one), rendered with the current gold constraints, then the stubborn
    system's answer. It reports the current gold constraints as its
    state (what the prompt was given)."""

    def __init__(self, index, matcher, settings, seed, prompt: PromptTemplate):
        super().__init__(index, matcher, settings, seed)
        self.prompt = prompt

    def respond(self, turn: int, user_text: str):
        reply = super().respond(turn, user_text)
        reply.tracked = list(self.gold_history[-1])
        return reply

    def phrase(self, turn, user_text, tracked, candidate_ids):
        answer, _ = super().phrase(turn, user_text, tracked, candidate_ids)
        values = prompt_values(self.index, self.matcher.title_recognizer, self.gold_history[-1], candidate_ids)
        # the first line that changes with the turn: a two-part template's turn part (crseval.llm.prompts)
        prompt = self.prompt.render_turn(**values) if self.prompt.has_turn_part else self.prompt.render(**values)
        return f"{prompt.splitlines()[0].strip()} {answer}", None


class RandomAgent(CalibrationAgent):
    """Random catalog films in a fluent sentence; restates nothing the user asked. Through the toolkit it commits
    them without a search: films no search returned."""

    def _respond_with(self, turn, user_text, served):
        pool = np.setdiff1d(self.index.films["film_id"].to_numpy(), np.fromiter(self.recommended, dtype=np.int64))
        picks = [int(f) for f in self.rng.choice(pool, size=min(2, len(pool)), replace=False)]
        if self.toolkit is not None:
            text, _ = self.phrase(turn, user_text, [], picks)
            return self.commit(ToolTurn(self.toolkit), 1, turn, user_text, text, [], picks, None)
        return self._reply(turn, user_text, [], picks)

    def phrase(self, turn, user_text, tracked, candidate_ids):
        return f"You could watch {' and '.join(self._named(f) for f in candidate_ids)}.", None


class ParrotAgent(CalibrationAgent):
    """Echoes the user's message, then names one film of the first focus."""

    def served(self):
        first = [c for c in self.gold_history[0] if not c.negated]
        return first[:1]

    def phrase(self, turn, user_text, tracked, candidate_ids):
        film = f" {self._named(candidate_ids[0])}." if candidate_ids else ""
        return f"{user_text}{film}", None


class LiteralAgent(CalibrationAgent):
    """Serves what the user has said of its wishes (still gold), and never asks for more."""

    def served(self):
        return self.said_history[-1]


# One question per field, each read by crseval.language.asks as asking about that field.
QUESTIONS = {
    "genre": "What genre would you like?",
    "actor": "Any actor in mind?",
    "director": "Which director do you like?",
    "writer": "Is there a writer you like?",
    "language": "Which language should the film be in?",
    "year": "From which year or decade?",
    "plot_keyword": "What should the story be about?",
}


class AskerAgent(LiteralAgent):
    """Asks about the field of each gold constraint the user has not said, one a reply and each once,
    then serves what the user has said."""

    def __init__(self, index, matcher, settings, seed):
        super().__init__(index, matcher, settings, seed)
        self.asked_about: set[Constraint] = set()

    def respond(self, turn: int, user_text: str):
        if not self.gold_history:
            return super().respond(turn, user_text)
        said = set(self.said_history[-1])
        unasked = [c for c in self.gold_history[-1] if c not in said and c not in self.asked_about]
        if not unasked:
            return super().respond(turn, user_text)
        field = unasked[0].field
        self.asked_about.update(c for c in unasked if c.field == field)
        text = QUESTIONS[field]
        self.history += [{"role": "user", "content": user_text}, {"role": "assistant", "content": text}]
        return Reply(text, list(self.said_history[-1]), [], [], [], None)


# The calibration systems that can search and commit through the catalog toolkit (`tools: true`).
TOOL_KEYS = shared_keys("tools", "tool_limits")


def _kind(name: str, cls: type[CalibrationAgent], summary: str, tools: bool = False) -> AgentKind:
    def make(runner, seed):
        return with_tools(cls(runner.ctx.index, runner.tracker, runner.agent_settings, seed), runner.system)

    return AgentKind(
        name,
        summary + (" (with `tools: true`, through the catalog toolkit)" if tools else ""),
        make_agent=make,
        calibration_role=lambda entry: name,
        optional_keys=TOOL_KEYS if tools else {},
    )


def _flaky_agent(runner, seed: int) -> FlakyAgent:
    return FlakyAgent(
        runner.ctx.index, runner.tracker, runner.agent_settings, seed, float(runner.system["reliability"])
    )


def _prompt_echo_agent(runner, seed: int) -> PromptEchoAgent:
    return PromptEchoAgent(runner.ctx.index, runner.tracker, runner.agent_settings, seed, runner.prompt)


def _lagging_agent(runner, seed: int) -> LaggingAgent:
    agent = LaggingAgent(runner.ctx.index, runner.tracker, runner.agent_settings, seed, int(runner.system["lag"]))
    return with_tools(agent, runner.system)


KINDS = (
    _kind("oracle", OracleAgent, "calibration: serves the current gold constraints (the upper bound)", tools=True),
    AgentKind(
        "lagging",
        "calibration: serves the gold constraints of `lag` turns earlier (with `tools: true`, through the catalog "
        "toolkit)",
        make_agent=_lagging_agent,
        calibration_role=lambda entry: f"lag{entry['lag']}",
        required_keys={
            "lag": {"type": "integer", "minimum": 1, "description": "how many turns late it serves the user's wishes"}
        },
        optional_keys=TOOL_KEYS,
    ),
    AgentKind(
        "flaky",
        "calibration: the oracle in a share `reliability` of sessions, drawn anew in every trial",
        make_agent=_flaky_agent,
        calibration_role=lambda entry: "flaky",
        required_keys={
            "reliability": {
                "type": "number",
                "minimum": 0,
                "maximum": 1,
                "description": "`flaky`: the chance that a session (each trial anew) gets the oracle; the others get "
                "films that miss a current wish",
            }
        },
    ),
    _kind("stubborn", StubbornAgent, "calibration: serves the first turn's constraints all session", tools=True),
    _kind("random", RandomAgent, "calibration: random catalog films in a fluent sentence", tools=True),
    _kind("parrot", ParrotAgent, "calibration: echoes the user's message, with a film of the first focus"),
    _kind("literal", LiteralAgent, "calibration: serves the wishes the user has said, never asks"),
    _kind("asker", AskerAgent, "calibration: asks about each wish the user has not said, then serves what it said"),
    AgentKind(
        "prompt_echo",
        "calibration: the stubborn system, opening each reply with the first line of its `prompt`, which names "
        "the current wishes",
        make_agent=_prompt_echo_agent,
        prompt_key="prompt",
        calibration_role=lambda entry: "prompt_echo",
        required_keys=shared_keys("prompt"),
    ),
)
