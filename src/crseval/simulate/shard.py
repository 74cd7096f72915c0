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
from crseval.simulate.user.profiles import profile_from_settings, resolve_profile
from crseval.simulate.user.simulator import SimulatorSettings, Templates
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
    settings of the user profile the system meets (crseval.planning.user_profile_settings; by default
    the one its entry or `simulator.profile` names)."""
    index = CatalogIndex.read(films, concepts)
    keyword_wishes = KEYWORD_FIELD in simulator["field_order"]
    matcher = ConceptMatcher(
        index.concepts, index.films, CONCEPT_FIELDS + (KEYWORD_FIELD,) if keyword_wishes else CONCEPT_FIELDS
    )
    agent_matcher = matcher
    if agent.get("track_plot_keywords", False) != keyword_wishes:
        agent_matcher = ConceptMatcher(
            index.concepts,
            index.films,
            CONCEPT_FIELDS + (KEYWORD_FIELD,) if agent.get("track_plot_keywords") else CONCEPT_FIELDS,
        )
    resolved = ResolvedSystem.of(system, simulator)
    profile = user_profile or resolve_profile(resolved.profile, simulator).settings()
    templates = Templates.load(templates_file or simulator["templates"])
    # the learned voice a profile speaks with or takes knobs from, or the rewording takes examples from (the
    # learn_voice rule's pools); none otherwise
    user = profile_from_settings(profile)
    paraphrase = simulator["paraphrase"]
    examples = paraphrase.get("examples", 0) if paraphrase["enabled"] else 0
    needs_voice = user.needs_voice or examples > 0
    if needs_voice and voice_file is None:
        needer = "the rewording's examples need" if examples > 0 else f"the {user.name} profile needs"
        raise ValueError(f"{needer} a learned voice: give its pools (voice_file)")
    voice = Voice.read(voice_file) if needs_voice else None
    if user.fit:  # the knobs the corpus shows, each recorded with the statistic behind it (the sessions' log)
        user = user.with_fitted(voice.summary["fitted"])
    catalog_sha = read_catalog_sha(catalog_summary)
    paraphraser = None
    if paraphrase["enabled"]:
        if paraphrase_prompt_file is None:
            raise ValueError("the rewording (simulator.paraphrase) needs its prompt file (paraphrase_prompt_file)")
        paraphraser = Paraphraser(
            make_client(paraphrase["backend"], llm_runtime, threads),
            paraphrase["options"],
            examples,
            voice if examples > 0 else None,  # its turns of the act as examples (simulator.paraphrase.examples)
            matcher,
            prompt=ParaphrasePrompt.read(paraphrase_prompt_file),
        )
    ctx = SessionContext(
        index,
        matcher,
        templates,
        SimulatorSettings.from_config(simulator),
        turns,
        catalog_sha,
        paraphraser,
        voice if user.learned or user.wants == "people" else None,
        user,
        experiment_seed,
    )
    kind, prompt_key = resolved.kind, resolved.prompt_key
    client = prompt = external = reply_cache = None
    if prompt_key:
        prompt_file = prompt_file or resolved.prompt
        prompt = PromptTemplate(prompt_file)
    if kind.external:
        external = ExternalCalls()
        reply_cache = ReplyCache(llm_runtime["cache_dir"]) if llm_runtime.get("cache_dir") else None
    if kind.llm_backend:  # an external system's replies are cached as its own, not twice
        client = make_client(
            resolved.backend, {**llm_runtime, "cache_dir": None} if kind.external else llm_runtime, threads
        )
    config_sha = canonical_sha(
        {
            "system": without_runtime(system),
            "simulator": simulator,
            "user_profile": profile,
            "agent": agent,
            "seed": experiment_seed,
            "turns": turns,
            "catalog": catalog_sha,
            "templates": templates.version,
            **({"voice": voice.version} if voice is not None else {}),
            "prompt": None,
            **({prompt_key: prompt.version} if prompt_key else {}),
        }
    )
    return ShardRunner(
        ctx,
        resolved,
        AgentSettings.from_config(agent),
        experiment_seed,
        config_sha,
        load_schema(schema),
        client,
        prompt,
        agent_matcher,
        concurrency,
        reply_cache,
        external,
        prompt_file if prompt_key else None,
    )
