"""Build a shard runner from config sections: the catalog index, the simulated user, the agent of
one system and its LLM client, wired for the `simulate` rule (and the tests). Sessions themselves
are run by crseval.simulate.sessions; the user is crseval.simulate.user.simulator."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from crseval.catalog.index import CatalogIndex
from crseval.core.canonical import canonical_sha, without_runtime
from crseval.core.fields import CONCEPT_FIELDS, KEYWORD_FIELD
from crseval.core.session_records import catalog_sha as read_catalog_sha
from crseval.core.session_records import load_schema
from crseval.language.concepts import ConceptMatcher
from crseval.llm import LLMClient
from crseval.llm.client import make_client
from crseval.llm.prompts import PromptTemplate
from crseval.simulate.sessions import SessionContext, run_shard
from crseval.simulate.systems.agent_kind import AgentKind
from crseval.simulate.systems.agents import AgentSettings
from crseval.simulate.systems.external import ExternalCalls, ReplyCache
from crseval.simulate.systems.kinds import ResolvedSystem
from crseval.simulate.user.paraphrase import ParaphrasePrompt, Paraphraser
from crseval.simulate.user.profiles import (
    UserProfile,
    needs_learned_voice,
    paraphrase_examples,
    profile_from_settings,
    resolve_profile,
)
from crseval.simulate.user.templates import Templates
from crseval.simulate.user.user_plan import SimulatorSettings
from crseval.simulate.user.voice import Voice


@dataclass
class ShardRunner:
    ctx: SessionContext
    resolved: ResolvedSystem  # the system's config entry
    agent_settings: AgentSettings
    experiment_seed: int
    config_sha: str
    schema: dict
    client: LLMClient | None
    prompt: PromptTemplate | None
    agent_matcher: ConceptMatcher | None = None  # the agents' tracker (plot keywords optional)
    concurrency: int = 1  # sessions in flight (crseval.planning); changes speed, not results
    reply_cache: ReplyCache | None = None  # replies of an external system
    external: ExternalCalls | None = None
    prompt_file: str | None = None  # the prompt file the system's kind reads, as the rule resolved it

    @property
    def system(self) -> dict:
        """The system's config entry, as the config gives it."""
        return self.resolved.entry

    @property
    def kind(self) -> AgentKind:
        return self.resolved.kind

    @property
    def tracker(self) -> ConceptMatcher:
        """The matcher an agent tracks the user's wishes with (plot keywords as `agent` says)."""
        return self.agent_matcher or self.ctx.matcher

    def make_agent(self, seed: int):
        return self.kind.make_agent(self, seed)

    def run(self, indices: range, progress: str | Path, output: str | Path, trial: int = 0) -> dict:
        """Simulate sessions `indices` (in repeated trial `trial`, sessions.trials) into `output`."""
        return run_shard(
            self.ctx,
            self.resolved.name,
            self.make_agent,
            indices,
            self.experiment_seed,
            self.config_sha,
            progress,
            output,
            self.schema,
            self.concurrency,
            trial,
        )

    def _counters(self) -> list:
        """What asks a model or a system: the LLM system's client or the external system (a chat system's
        client is counted through its replies), and the paraphraser's client."""
        own = self.external if self.external is not None else self.client
        return [c for c in (own, self.ctx.paraphraser.client if self.ctx.paraphraser else None) if c is not None]

    @property
    def calls(self) -> int:
        return sum(c.calls for c in self._counters())

    @property
    def cache_hits(self) -> int:
        return sum(c.cache_hits for c in self._counters())


def matcher_fields(plot_keywords: bool) -> tuple[str, ...]:
    """The fields a concept matcher reads: the concept fields, and plot keywords when they are read too (wished
    by the user: in `simulator.field_order`; tracked by the agents: `agent.track_plot_keywords`)."""
    return CONCEPT_FIELDS + (KEYWORD_FIELD,) if plot_keywords else CONCEPT_FIELDS


def build_shard_runner(
    *,
    system: dict,
    simulator: dict,
    agent: dict,
    user_profile: dict | None = None,
    experiment_seed: int,
    turns: int,
    films,
    concepts,
    catalog_summary,
    schema,
    llm_runtime: dict,
    threads: int,
    concurrency: int = 1,
    templates_file: str | None = None,
    prompt_file: str | None = None,
    voice_file: str | None = None,
    paraphrase_prompt_file: str | None = None,
) -> ShardRunner:
    """The runner of one shard. The templates and the prompt are read from `templates_file` and
    `prompt_file` when given (the files the rule resolved, config/README.md "Paths"), else from the
    paths the settings name; the settings, paths as written, identify the sessions. `user_profile`: the
    settings of the user profile the system meets (crseval.planning.SimulatedSystem.profile_settings; by
    default the one its entry or `simulator.profile` names)."""
    agent_settings = AgentSettings.from_config(agent)
    index = CatalogIndex.read(films, concepts)
    matcher, agent_matcher = _matchers(index, simulator, agent_settings)
    resolved = ResolvedSystem.of(system, simulator)
    profile = user_profile or resolve_profile(resolved.profile, simulator).settings()
    templates = Templates.load(templates_file or simulator["templates"])
    user, voice = _user_and_voice(profile, simulator["paraphrase"], voice_file)
    catalog_sha = read_catalog_sha(catalog_summary)
    paraphraser = _paraphraser(simulator["paraphrase"], voice, matcher, llm_runtime, threads, paraphrase_prompt_file)
    ctx = SessionContext(
        index,
        matcher,
        templates,
        SimulatorSettings.from_config(simulator),
        turns,
        catalog_sha,
        paraphraser,
        voice if user.draws_on_voice else None,
        user,
        experiment_seed,
    )
    side = _SystemSide.of(resolved, llm_runtime, threads, prompt_file)
    # what identifies the sessions: the settings, paths as written, and the files read by their versions
    settings = {"system": without_runtime(system), "simulator": simulator, "user_profile": profile, "agent": agent}
    settings |= {"seed": experiment_seed, "turns": turns, "catalog": catalog_sha, "templates": templates.version}
    settings |= {"voice": voice.version} if voice is not None else {}
    settings |= {"prompt": None, **({resolved.prompt_key: side.prompt.version} if resolved.prompt_key else {})}
    return ShardRunner(
        ctx,
        resolved,
        agent_settings,
        experiment_seed,
        canonical_sha(settings),
        load_schema(schema),
        side.client,
        side.prompt,
        agent_matcher,
        concurrency,
        side.reply_cache,
        side.external,
        side.prompt_file,
    )


def _matchers(index: CatalogIndex, simulator: dict, agent: AgentSettings) -> tuple[ConceptMatcher, ConceptMatcher]:
    """The matcher the user's wishes are read with (plot keywords when the user wishes them), and the one the
    agents track them with (plot keywords as `agent` says): the same matcher when both read the same fields."""
    keyword_wishes = KEYWORD_FIELD in simulator["field_order"]
    matcher = ConceptMatcher(index.concepts, index.films, matcher_fields(keyword_wishes))
    if agent.track_plot_keywords == keyword_wishes:
        return matcher, matcher
    return matcher, ConceptMatcher(index.concepts, index.films, matcher_fields(agent.track_plot_keywords))


def _user_and_voice(profile: dict, paraphrase: dict, voice_file: str | None) -> tuple[UserProfile, Voice | None]:
    """The simulated user's profile (from its `profile` settings, the knobs it fits set from the voice), and the
    learned voice when the profile or the rewording's examples need it (the learn_voice rule's pools)."""
    user = profile_from_settings(profile)
    examples = paraphrase_examples(paraphrase)
    needs_voice = needs_learned_voice(user, paraphrase)
    if needs_voice and voice_file is None:
        needer = "the rewording's examples need" if examples > 0 else f"the {user.name} profile needs"
        raise ValueError(f"{needer} a learned voice: give its pools (voice_file)")
    voice = Voice.read(voice_file) if needs_voice else None
    if user.fit:  # the knobs the corpus shows, each recorded with the statistic behind it (the sessions' log)
        user = user.with_fitted(voice.summary["fitted"])
    return user, voice


def _paraphraser(
    paraphrase: dict, voice: Voice | None, matcher: ConceptMatcher, llm_runtime: dict, threads: int, prompt_file
) -> Paraphraser | None:
    """The LLM that rewords the user's turns (`simulator.paraphrase`), or None while it is off."""
    if not paraphrase["enabled"]:
        return None
    if prompt_file is None:
        raise ValueError("the rewording (simulator.paraphrase) needs its prompt file (paraphrase_prompt_file)")
    examples = paraphrase_examples(paraphrase)
    return Paraphraser(
        make_client(paraphrase["backend"], llm_runtime, threads),
        paraphrase["options"],
        examples,
        voice if examples > 0 else None,  # its turns of the act as examples (simulator.paraphrase.examples)
        matcher,
        prompt=ParaphrasePrompt.read(prompt_file),
    )


@dataclass(frozen=True)
class _SystemSide:
    """What the system under test answers with, as its kind asks: its prompt, its LLM client, and for a system
    from outside the count of its calls and the cache of its replies."""

    prompt: PromptTemplate | None = None
    prompt_file: str | None = None  # the prompt file its kind reads, as the rule resolved it
    client: LLMClient | None = None
    external: ExternalCalls | None = None
    reply_cache: ReplyCache | None = None

    @classmethod
    def of(cls, resolved: ResolvedSystem, llm_runtime: dict, threads: int, prompt_file: str | None) -> _SystemSide:
        kind = resolved.kind
        side = {}
        if resolved.prompt_key:
            side["prompt_file"] = prompt_file or resolved.prompt
            side["prompt"] = PromptTemplate(side["prompt_file"])
        if kind.external:
            side["external"] = ExternalCalls()
            side["reply_cache"] = ReplyCache(llm_runtime["cache_dir"]) if llm_runtime.get("cache_dir") else None
        if kind.llm_backend:  # an external system's replies are cached as its own, not twice
            runtime = {**llm_runtime, "cache_dir": None} if kind.external else llm_runtime
            side["client"] = make_client(resolved.backend, runtime, threads)
        return cls(**side)
