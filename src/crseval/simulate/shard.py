"""Build a shard runner from config sections: the catalog index, the simulated user, the agent of
one system and its LLM client, wired for the `simulate` rule (and the tests). Sessions themselves
are run by crseval.simulate.sessions; the user is crseval.simulate.user."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from crseval.catalog.index import CatalogIndex
from crseval.core.canonical import canonical_sha
from crseval.core.experiment import without_runtime
from crseval.core.fields import CONCEPT_FIELDS, KEYWORD_FIELD
from crseval.core.session_records import catalog_sha as read_catalog_sha
from crseval.core.session_records import load_schema
from crseval.language.concepts import ConceptMatcher
from crseval.llm import LLMClient
from crseval.llm.client import make_client
from crseval.llm.prompts import PromptTemplate
from crseval.simulate.agents import AgentSettings, LLMAgent, TemplateAgent
from crseval.simulate.calibration import CALIBRATION_AGENTS, make_calibration_agent
from crseval.simulate.external import EXTERNAL_AGENTS, ExternalAgent, ExternalCalls, ReplyCache
from crseval.simulate.sessions import Paraphraser, SessionContext, run_shard
from crseval.simulate.user import SimulatorSettings, Templates


@dataclass
class ShardRunner:
    ctx: SessionContext
    system: dict
    agent_settings: AgentSettings
    experiment_seed: int
    config_sha: str
    schema: dict
    client: LLMClient | None
    prompt: PromptTemplate | None
    agent_matcher: ConceptMatcher | None = None  # the agents' tracker (plot keywords optional)
    concurrency: int = 1  # sessions in flight (crseval.core.experiment); changes speed, not results
    reply_cache: ReplyCache | None = None  # replies of an external system (chat, http, python)
    external: ExternalCalls | None = None
    system_prompt_file: str | None = None  # a chat system's prompt, as the rule resolved it

    def make_agent(self, seed: int):
        matcher = self.agent_matcher or self.ctx.matcher
        if self.system["agent"] in EXTERNAL_AGENTS:
            # one system object per session: a system may keep per-session state, and sessions run in threads
            system = make_external_system(self.system, self.client, self.system_prompt_file)
            return ExternalAgent(system, self.ctx.index, self.ctx.matcher, seed, self.reply_cache, self.external)
        if self.system["agent"] == "template":
            return TemplateAgent(self.ctx.index, matcher, self.agent_settings, seed)
        if self.system["agent"] in CALIBRATION_AGENTS:
            return make_calibration_agent(self.system, self.ctx.index, matcher, self.agent_settings, seed)
        return LLMAgent(
            self.ctx.index, matcher, self.agent_settings, seed, self.client, self.prompt, self.system["options"]
        )

    def run(self, indices: range, progress: str | Path, output: str | Path) -> dict:
        return run_shard(
            self.ctx,
            self.system["name"],
            self.make_agent,
            indices,
            self.experiment_seed,
            self.config_sha,
            progress,
            output,
            self.schema,
            self.concurrency,
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


def make_external_system(system: dict, client: LLMClient | None, system_prompt_file: str | None = None):
    """The ExternalSystem of a `chat`, `http` or `python` system entry."""
    name, agent = system["name"], system["agent"]
    if agent == "chat":
        from crseval.simulate.chat import ChatSystem

        prompt = system_prompt_file or system.get("system_prompt")
        return ChatSystem(name, client, system["backend"], system["options"], prompt)
    if agent == "http":
        from crseval.core.bounded_http import DEFAULT_MAX_REPLY_BYTES
        from crseval.simulate.http_system import HttpSystem

        return HttpSystem(
            name,
            system["url"],
            timeout=system["timeout"],
            retries=system["retries"],
            api_key_env=system.get("api_key_env"),
            headers=system.get("headers"),
            max_reply_bytes=system.get("max_reply_bytes", DEFAULT_MAX_REPLY_BYTES),
        )
    from crseval.simulate.python_system import PythonSystem

    return PythonSystem(name, system["entry_point"], options=system.get("options", {}), timeout=system.get("timeout"))


def build_shard_runner(
    *,
    system: dict,
    simulator: dict,
    agent: dict,
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
) -> ShardRunner:
    """The runner of one shard. The templates and the prompt are read from `templates_file` and
    `prompt_file` when given (the files the rule resolved, config/README.md "Paths"), else from the
    paths the settings name; the settings, paths as written, identify the sessions."""
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
    templates = Templates.load(templates_file or simulator["templates"])
    catalog_sha = read_catalog_sha(catalog_summary)
    paraphraser = None
    if simulator["paraphrase"]["enabled"]:
        paraphrase = simulator["paraphrase"]
        paraphraser = Paraphraser(make_client(paraphrase["backend"], llm_runtime, threads), paraphrase["options"])
    ctx = SessionContext(
        index, matcher, templates, SimulatorSettings.from_config(simulator), turns, catalog_sha, paraphraser
    )
    client = prompt = None
    if system["agent"] == "llm":
        client = make_client(system["backend"], llm_runtime, threads)
        prompt = PromptTemplate(prompt_file or system["prompt"])
    external = reply_cache = None
    if system["agent"] in EXTERNAL_AGENTS:
        external = ExternalCalls()
        reply_cache = ReplyCache(llm_runtime["cache_dir"]) if llm_runtime.get("cache_dir") else None
        if system["agent"] == "chat":  # its replies are cached as the external system's, not twice
            client = make_client(system["backend"], {**llm_runtime, "cache_dir": None}, threads)
    config_sha = canonical_sha(
        {
            "system": without_runtime(system),
            "simulator": simulator,
            "agent": agent,
            "seed": experiment_seed,
            "turns": turns,
            "catalog": catalog_sha,
            "templates": templates.version,
            "prompt": prompt.version if prompt else None,
            **(
                {"system_prompt": file_version(prompt_file or system["system_prompt"])}
                if system.get("system_prompt")
                else {}
            ),
        }
    )
    return ShardRunner(
        ctx,
        system,
        AgentSettings(**agent),
        experiment_seed,
        config_sha,
        load_schema(schema),
        client,
        prompt,
        agent_matcher,
        concurrency,
        reply_cache,
        external,
        (prompt_file or system["system_prompt"]) if system.get("system_prompt") else None,
    )


def file_version(path: str | Path) -> str:
    """Content hash of a file the sessions depend on (a chat system's prompt)."""
    return PromptTemplate(path).version
