"""The systems under test: a template CRS and an LLM CRS over the same tracking and retrieval.

Both track constraints with rules and retrieve candidates from the catalog; they differ only in
how the reply is phrased, so the template agent is the baseline an LLM is compared with. The
LLM agent's prompt either lists the candidates (grounded) or not (ungrounded ablation).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import numpy as np

from crseval.catalog.index import CatalogIndex
from crseval.catalog.retrieval import Retriever
from crseval.catalog.toolkit import RECOMMEND, SEARCH, Toolkit, ToolLimits, ToolTurn
from crseval.core.config_checks import schema_defaults
from crseval.core.fields import KEYWORD_FIELD, display
from crseval.language.concepts import ConceptMatcher
from crseval.language.titles import TitleRecognizer
from crseval.language.tracker import Constraint, ConstraintTracker
from crseval.llm import LLMClient, LLMRequest
from crseval.llm.prompts import PromptTemplate
from crseval.simulate.systems.agent_kind import AgentKind, shared_keys

FIELD_PHRASES = {
    "genre": "genre {value}",
    "actor": "starring {value}",
    "director": "directed by {value}",
    "writer": "written by {value}",
    "language": "in {value}",
    "year": "from {value}",
    "plot_keyword": "about {value}",
}


def describe_constraints(constraints: list[Constraint]) -> str:
    wanted = [FIELD_PHRASES[c.field].format(value=display(c.field, c.value)) for c in constraints if not c.negated]
    unwanted = [FIELD_PHRASES[c.field].format(value=display(c.field, c.value)) for c in constraints if c.negated]
    text = "; ".join(wanted) if wanted else "anything"
    if unwanted:
        text += "; but not " + ", ".join(unwanted)
    return text


def named_film(index: CatalogIndex, recognizer: TitleRecognizer, film_id: int) -> str:
    """A film as a reply names it: its title, in quotes when it could be read as an ordinary word,
    and its year in parentheses."""
    year = index.year(film_id)
    return recognizer.quoted(index.title(film_id)) + (f" ({year})" if year else "")


def film_card(index: CatalogIndex, recognizer: TitleRecognizer, film_id: int) -> str:
    """A candidate as an LLM system's prompt lists it: named, its genres, directors and actors."""
    row = index.films.loc[film_id]
    parts = [named_film(index, recognizer, film_id)]
    if len(row["genre"]):
        parts.append(", ".join(row["genre"][:3]))
    if len(row["director"]):
        parts.append("directed by " + ", ".join(row["director"][:2]))
    if len(row["actor"]):
        parts.append("starring " + ", ".join(row["actor"][:3]))
    return "; ".join(parts)


def render_prompt(
    prompt: PromptTemplate,
    index: CatalogIndex,
    recognizer: TitleRecognizer,
    constraints: list[Constraint],
    candidate_ids: list[int],
) -> str:
    """The prompt an `llm` system is given at a turn, without the user's words: `prompt` with `{constraints}`
    (the tracked wishes) and `{candidates}` (one card per candidate). What a turn records (its
    `system_constraints` and `candidate_titles`) renders it again: the scorer reads what a reply copies from
    its prompt (crseval.metrics.grounded.SystemPrompt)."""
    return prompt.render(**prompt_values(index, recognizer, constraints, candidate_ids))


def prompt_values(
    index: CatalogIndex, recognizer: TitleRecognizer, constraints: list[Constraint], candidate_ids: list[int]
) -> dict[str, str]:
    """What fills a recommender's template at a turn: `constraints` and `candidates`."""
    return {
        "constraints": describe_constraints(constraints),
        "candidates": "\n".join(f"- {film_card(index, recognizer, f)}" for f in candidate_ids)
        or "- (no film in the catalog matches)",
    }


def history_window(history: list[dict], exchanges: int) -> list[dict]:
    """The earlier exchanges an LLM is given: at least `exchanges` (all there are, when fewer) and fewer than
    twice as many, dropped `exchanges` at a time. A window that slid by one exchange at every turn would change
    the prompt right after the instructions at every turn; this one keeps the beginning of consecutive
    prompts the same, except at the turns where it drops, so a prefix cache reuses it."""
    if exchanges <= 0:
        return []
    held = len(history) // 2
    start = max(held - exchanges, 0) // exchanges * exchanges
    return history[2 * start :]


@dataclass
class Reply:
    text: str
    tracked: list[Constraint]
    recommended_titles: list[str]
    mentioned_titles: list[str]
    candidates: list[str]
    llm: dict | None
    unknown_titles: list[str] = field(default_factory=list)  # films named that the catalog does not hold
    # a tool-using system's turn: its `tool_calls`, `tool_turn_end` and, after a commit, `committed_titles`
    tools: dict | None = None


def search_arguments(constraints: list[Constraint], focus, limit: int) -> dict:
    """The `search_films` arguments that ask for `constraints` (field by field, plot keywords as `keywords`,
    exclusions as "field:value"), stressing the (field, value) pairs of `focus`."""
    arguments: dict = {}
    keywords = []
    for c in constraints:
        if c.negated:
            arguments.setdefault("exclude", []).append(f"{c.field}:{c.value}")
        elif c.field == KEYWORD_FIELD:
            keywords.append(c.value)
        else:
            arguments.setdefault(c.field, []).append(c.value)
    if keywords:
        arguments["keywords"] = ", ".join(keywords)
    if focus:
        arguments["focus"] = [f"{name}:{value}" for name, value in sorted(focus)]
    return arguments | {"limit": limit}


_DEFAULTS = schema_defaults("agent")


@dataclass(frozen=True)
class AgentSettings:
    """The `agent` section of the config; defaults from the schema."""

    candidates: int = _DEFAULTS["candidates"]
    history_turns: int = _DEFAULTS["history_turns"]
    track_plot_keywords: bool = _DEFAULTS["track_plot_keywords"]

    @classmethod
    def from_config(cls, section: dict) -> "AgentSettings":
        return cls(**section)


class Agent(ABC):
    """Shared tracking and retrieval; subclasses phrase the reply."""

    def __init__(self, index: CatalogIndex, matcher: ConceptMatcher, settings: AgentSettings, seed: int):
        self.index = index
        self.matcher = matcher
        self.settings = settings
        self.tracker = ConstraintTracker(matcher)
        self.retriever = Retriever(index)
        self.rng = np.random.default_rng(seed)
        self.recommended: set[int] = set()
        self.history: list[dict] = []
        self.seed = seed
        # what an LLM samples with: the session's seed, or a repeated trial's (crseval.simulate.sessions.trial_seed);
        # retrieval's tie-breaking stays the session's, so a system that samples nothing repeats itself
        self.sampling_seed = seed
        self.toolkit: Toolkit | None = None  # searching and committing through the catalog toolkit (`tools: true`)

    def use_tools(self, limits: ToolLimits) -> None:
        """Search and commit through the catalog toolkit: the same retrieval and tie-breaking draws, so the same
        films, each search and commit recorded as a tool call."""
        self.toolkit = Toolkit(self.index, self.seed, limits, rng=self.rng)

    def respond(self, turn: int, user_text: str) -> Reply:
        shown = [self._title(f) for f in self.recommended]
        tracked = self.tracker.update(user_text, titles=shown)
        if self.toolkit is not None:
            return self.through_tools(turn, user_text, tracked, tracked, self.tracker.latest, self.settings.candidates)
        candidate_ids = self.retriever.rank(
            tracked, self.recommended, self.settings.candidates, self.rng, emphasis=self.tracker.latest
        )
        text, llm = self.phrase(turn, user_text, tracked, candidate_ids)
        candidates = [self._title(f) for f in candidate_ids]
        titles = self.matcher.title_recognizer.recognise(text, candidates=candidates + shown, user_text=user_text)
        self.recommended.update(self.index.film_id(t) for t in titles.recommended)
        self.history += [{"role": "user", "content": user_text}, {"role": "assistant", "content": text}]
        return Reply(text, tracked, titles.recommended, titles.mentioned, candidates, llm, titles.unknown)

    def through_tools(self, turn, user_text, tracked, searched, focus, limit: int, keep=None) -> Reply:
        """A turn through the toolkit: one `search_films` for the `searched` constraints (stressing `focus`), the
        films found (those `keep` keeps) phrased as `phrase` phrases them, the first two committed with
        `recommend` and the phrase as its message."""
        tool_turn = ToolTurn(self.toolkit)
        tool_turn.call(1, SEARCH, search_arguments(searched, focus, limit))
        found = [film["id"] for film in (tool_turn.calls[-1]["result"] or {}).get("films", [])]
        candidate_ids = keep(found) if keep is not None else found
        text, llm = self.phrase(turn, user_text, tracked, candidate_ids)
        return self.commit(tool_turn, 2, turn, user_text, text, tracked, candidate_ids, llm)

    def commit(self, tool_turn: ToolTurn, step: int, turn, user_text, text, tracked, candidate_ids, llm) -> Reply:
        """The reply of a turn through the toolkit: the first two candidates committed with `recommend` (none: a
        message without a commit); other catalog films the text names are mentioned, not recommended."""
        if candidate_ids:
            tool_turn.call(step, RECOMMEND, {"film_ids": candidate_ids[:2], "message": text})
        else:
            tool_turn.end = "message"
        committed = tool_turn.titles() or []
        candidates = [self._title(f) for f in candidate_ids]
        titles = self.matcher.title_recognizer.recognise(text, candidates=candidates, user_text=user_text)
        mentioned = [t for t in (*titles.recommended, *titles.mentioned) if t not in committed]
        self.recommended.update(tool_turn.committed or [])
        self.history += [{"role": "user", "content": user_text}, {"role": "assistant", "content": text}]
        return Reply(text, list(tracked), committed, mentioned, candidates, llm, titles.unknown, tool_turn.record())

    def catch_up(self, history: list[dict]) -> Reply | None:
        """Replay the user turns of `history` this agent has not answered, so that a new agent picks up
        a session cut mid-way (its state comes from its seed and the user's turns alone); the last reply
        replayed, if any. ValueError when `history` is not a conversation this agent would have had:
        not alternating user and assistant, not continuing what it has said, or holding a different reply."""
        if len(history) % 2 or any(m.get("role") != r for m, r in zip(history, ("user", "assistant") * len(history))):
            raise ValueError("'history' must alternate user and assistant messages, starting with the user")
        if history[: len(self.history)] != self.history:
            raise ValueError("'history' does not continue the conversation this agent has had")
        reply = None
        for position in range(len(self.history), len(history), 2):
            turn = position // 2 + 1
            reply = self.respond(turn, history[position]["content"])
            if reply.text != history[position + 1]["content"]:
                raise ValueError(f"'history' holds another reply than this agent's at turn {turn}")
        return reply

    def _title(self, film_id: int) -> str:
        return self.index.title(film_id)

    def _named(self, film_id: int) -> str:
        """A film as a reply names it: its title, in quotes when it could be read as an
        ordinary word, and its year in parentheses."""
        return named_film(self.index, self.matcher.title_recognizer, film_id)

    def _card(self, film_id: int) -> str:
        return film_card(self.index, self.matcher.title_recognizer, film_id)

    @abstractmethod
    def phrase(self, turn, user_text, tracked, candidate_ids) -> tuple[str, dict | None]:
        """The reply text and its `llm` record (None for an agent without an LLM)."""


class TemplateAgent(Agent):
    """Deterministic phrasing of the top candidates; no LLM."""

    OPENERS = (
        "Based on what you asked for ({wish}), I recommend {films}.",
        "For {wish}, you could watch {films}.",
        "Here are films for {wish}: {films}.",
    )

    def phrase(self, turn, user_text, tracked, candidate_ids):
        wish = describe_constraints(tracked)
        if not candidate_ids:
            return f"I could not find a film in the catalog for {wish}.", None
        shown = candidate_ids[:2]
        films = " and ".join(self._named(f) for f in shown)
        return self.OPENERS[turn % len(self.OPENERS)].format(wish=wish, films=films), None


class LLMAgent(Agent):
    """Asks an LLM to phrase the recommendation, with or without the candidate list."""

    def __init__(self, index, matcher, settings, seed, client: LLMClient, prompt: PromptTemplate, options: dict):
        super().__init__(index, matcher, settings, seed)
        self.client = client
        self.prompt = prompt
        self.options = options

    def phrase(self, turn, user_text, tracked, candidate_ids):
        values = prompt_values(self.index, self.matcher.title_recognizer, tracked, candidate_ids)
        if self.prompt.has_turn_part:  # instructions first, the turn's wishes and candidates after the history
            system, message = self.prompt.render_system(**values), self.prompt.render_turn(user_text, **values)
        else:
            system, message = self.prompt.render(**values), user_text
        history = history_window(self.history, self.settings.history_turns)
        messages = [{"role": "system", "content": system}, *history, {"role": "user", "content": message}]
        request = LLMRequest.sampled(
            messages,
            self.options,
            seed=self.sampling_seed * 1000 + turn,
            tag=f"{self.prompt.path.name}@{self.prompt.version}",
        )
        response = self.client.complete(request)
        return response.text.strip(), response.meta()


def with_tools(agent: Agent, entry: dict) -> Agent:
    """`agent`, searching and committing through the catalog toolkit when its entry says `tools: true`."""
    if entry.get("tools"):
        agent.use_tools(ToolLimits.from_config(entry.get("tool_limits")))
    return agent


def _template_agent(runner, seed: int) -> TemplateAgent:
    return with_tools(TemplateAgent(runner.ctx.index, runner.tracker, runner.agent_settings, seed), runner.system)


def _llm_agent(runner, seed: int) -> LLMAgent:
    return LLMAgent(
        runner.ctx.index,
        runner.tracker,
        runner.agent_settings,
        seed,
        runner.client,
        runner.prompt,
        runner.system["options"],
    )


TEMPLATE = AgentKind(
    "template",
    "LLM-free: names the tracked wishes and the first retrieved films in a fixed sentence (with `tools: true`, "
    "searching and committing through the catalog toolkit)",
    make_agent=_template_agent,
    optional_keys=shared_keys("tools", "tool_limits"),
)
LLM = AgentKind(
    "llm",
    "tracks the wishes and retrieves candidates like the template agent; an LLM phrases the reply from `prompt`",
    make_agent=_llm_agent,
    llm_backend=True,
    prompt_key="prompt",
    required_keys=shared_keys("prompt", "backend", "options"),
)
