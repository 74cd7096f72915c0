"""The agent kinds, by the `agent` value a system's config entry gives them (crseval.simulate.systems.agent_kind),
and a system's entry resolved once against them.

Each kind is declared in the module that implements it, with the keys its entry takes; a new kind is
that module and its entry in AGENT_KINDS (the config schema gets the kinds' names and keys from
`schema_part`). Everything that depends on a system's kind (the workflow's inputs, threads and slots,
the config checks, the provenance record, the calibration roles) asks here,
most through ResolvedSystem: the planner, the shard runner and the provenance record read a system's
kind, user profile, prompt file and LLM from it instead of each working them out from the entry, so that
a rule such as "a system that names no `profile` meets `simulator.profile`" is written once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from crseval.core.config_checks import Dispatch, SchemaPart
from crseval.core.registry import look_up
from crseval.simulate.systems import agents, calibration, chat, http_system, python_system, tools_agent
from crseval.simulate.systems.agent_kind import AgentKind

AGENT_KINDS: dict[str, AgentKind] = {
    kind.name: kind
    for kind in (
        agents.TEMPLATE,
        agents.LLM,
        *calibration.KINDS,
        chat.KIND,
        http_system.KIND,
        python_system.KIND,
        tools_agent.KIND,
    )
}


def agent_kind(name: str) -> AgentKind:
    """The kind named `name`; a ValueError naming the known ones (and the closest) otherwise."""
    return look_up(AGENT_KINDS, name, "agent")


# The order of a system entry's keys in the config schema, and so of the rows of config/README.md's table (the
# keys every entry takes, and the kinds' keys between them); a key not named here follows them.
KEY_ORDER = (
    *("name", "agent", "lag", "tools", "tool_limits", "max_steps", "reliability", "profile", "prompt", "backend"),
    *("options", "system_prompt", "url", "timeout", "max_reply_bytes", "retries", "api_key_env", "headers"),
    *("entry_point", "concurrency"),
)


def schema_part() -> SchemaPart:
    """The agent kinds' part of the config schema (crseval.core.config_checks.compose_schema): the `agent` enum
    in AGENT_KINDS' order, every kind's keys, and an if/then block per kind (kinds that take the same keys share
    one). The blocks run from the library's own agents to the external systems, the LLM-free ones first in each,
    so that the README names the kinds that require a key in that order."""
    blocks = sorted(AGENT_KINDS.values(), key=lambda kind: (kind.external, kind.llm_backend))
    return SchemaPart(
        dispatch=Dispatch(
            "system",
            "agent",
            tuple(kind.schema for kind in AGENT_KINDS.values()),
            block_order=tuple(kind.name for kind in blocks),
            key_order=KEY_ORDER,
        )
    )


@dataclass(frozen=True)
class ResolvedSystem:
    """A system's config entry with what it resolves to: its kind, its user profile, its prompt file, its LLM."""

    entry: dict  # as the config's `systems:` gives it
    kind: AgentKind  # its `agent`
    # The user profile its sessions are simulated with: its own `profile`, else `simulator.profile`
    # (None only when resolved without a simulator section that names one: then only its kind was asked).
    profile: str | None

    @classmethod
    def of(cls, entry: dict, simulator: dict | None = None) -> ResolvedSystem:
        """`entry` (an item of config['systems']) with the config's `simulator` section, if given."""
        return cls(entry, agent_kind(entry["agent"]), entry.get("profile") or (simulator or {}).get("profile"))

    @property
    def name(self) -> str:
        return self.entry["name"]

    @property
    def prompt_key(self) -> str | None:
        """The key of the prompt file its simulate job reads (its kind's, when the entry sets it), or None.
        The one place that decides it: the rule's input, the provenance record and the runner ask here."""
        key = self.kind.prompt_key
        return key if key and self.entry.get(key) else None

    @property
    def prompt(self) -> str | None:
        """That prompt file as the config names it, or None."""
        return self.entry[self.prompt_key] if self.prompt_key else None

    @property
    def backend(self) -> dict | None:
        """The LLM backend it calls itself (`backend`, when its kind calls one), or None."""
        return self.entry["backend"] if self.kind.llm_backend else None


def calibration_roles(systems: list[dict]) -> dict[str, str]:
    """System name -> calibration role for the calibration systems among `systems` (config['systems']):
    oracle, lag<k>, stubborn, random or parrot, the names the expected orders of crseval.checks.validity
    rank. Systems under test have no role."""
    return {
        system["name"]: kind.calibration_role(system)
        for system in systems
        if (kind := agent_kind(system["agent"])).reads_ground_truth
    }


def system_problems(config: dict) -> Iterator[str]:
    """What each system's kind requires of its entry beyond the schema (entries of the wrong shape or an
    unknown agent are the schema's to report)."""
    systems = config.get("systems") if isinstance(config, dict) else None
    for i, system in enumerate(systems if isinstance(systems, list) else []):
        if isinstance(system, dict) and system.get("agent") in AGENT_KINDS:
            yield from AGENT_KINDS[system["agent"]].check(system, f"systems[{i}]")
