"""The agent kinds, by the `agent` value a system's config entry gives them (crseval.simulate.agent_kind).

Each kind is declared in the module that implements it; a new kind is that module and one entry in
AGENT_KINDS. Everything that depends on a system's kind (the workflow's inputs, threads and slots, the
config checks, the provenance record, the calibration roles) asks here.
"""

from __future__ import annotations

from typing import Iterator

from crseval.core.registry import look_up
from crseval.simulate import agents, calibration, chat, http_system, python_system
from crseval.simulate.agent_kind import AgentKind

AGENT_KINDS: dict[str, AgentKind] = {
    kind.name: kind
    for kind in (agents.TEMPLATE, agents.LLM, *calibration.KINDS, chat.KIND, http_system.KIND, python_system.KIND)
}


def agent_kind(name: str) -> AgentKind:
    """The kind named `name`; a ValueError naming the known ones (and the closest) otherwise."""
    return look_up(AGENT_KINDS, name, "agent")


def kind_of(system: dict) -> AgentKind:
    """The kind of a system's config entry."""
    return agent_kind(system["agent"])


def system_prompt_key(system: dict) -> str | None:
    """The key of the prompt file a system's simulate job reads (its kind's, when the entry sets it),
    or None. The one place that decides it: the rule's input, the provenance record and the runner ask here."""
    key = kind_of(system).prompt_key
    return key if key and system.get(key) else None


def calibration_roles(systems: list[dict]) -> dict[str, str]:
    """System name -> calibration role for the calibration systems among `systems` (config['systems']):
    oracle, lag<k>, stubborn, random or parrot, the names the expected orders of crseval.checks.validity
    rank. Systems under test have no role."""
    return {
        system["name"]: kind.calibration_role(system)
        for system in systems
        if (kind := kind_of(system)).reads_ground_truth
    }


def system_problems(config: dict) -> Iterator[str]:
    """What each system's kind requires of its entry beyond the schema (entries of the wrong shape or an
    unknown agent are the schema's to report)."""
    systems = config.get("systems") if isinstance(config, dict) else None
    for i, system in enumerate(systems if isinstance(systems, list) else []):
        if isinstance(system, dict) and system.get("agent") in AGENT_KINDS:
            yield from AGENT_KINDS[system["agent"]].check(system, f"systems[{i}]")
