"""What an agent kind declares about itself: the one description the workflow, the checks and the
provenance record ask.

An agent kind (`systems[*].agent` in the config) is declared once, as an `AgentKind` in the module
that implements it, and listed in crseval.simulate.systems.kinds. It says how its agent is built for a
session, whether it calls an LLM of its own (`backend`) and which prompt file it reads, whether it
asks a service that answers many requests at once, whether it answers the conversation itself
(an external system: its replies are cached and it describes itself for provenance and the reply
cache key), whether it reads the simulator's ground truth (a calibration system, with its role in
the expected orders), the keys its config entry takes, and what must be true of that entry beyond
the schema. The schema validates an entry; tests/test_kinds.py holds its `system` block for each kind
to the keys the kind declares, so that the two cannot drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator

# The keys every system entry takes, whatever its kind.
ENTRY_KEYS = ("name", "agent", "profile", "concurrency")


def no_problems(system: dict, key: str) -> Iterator[str]:
    """A kind whose config entry the schema checks completely."""
    return iter(())


@dataclass(frozen=True)
class AgentKind:
    name: str  # its `agent` value in a system's config entry
    summary: str  # one line for the docs
    # (runner, seed) -> the agent of one session; `runner` is the shard's crseval.simulate.shard.ShardRunner
    make_agent: Callable
    llm_backend: bool = False  # it calls the LLM of its entry's `backend`
    # The key of the prompt file its entry names (`prompt`, `system_prompt`); read only when the entry sets it.
    prompt_key: str | None = None
    asks_a_service: bool = False  # a service answers many requests at once: its concurrency is honoured
    # An external system (answers the conversation itself): (entry, client, prompt file) -> ExternalSystem,
    # whose describe() is recorded in provenance and keys its reply cache.
    make_system: Callable | None = None
    # entry -> what an external system says it is, without building it (default: build it and ask describe()).
    describe_entry: Callable[[dict], dict] | None = None
    # A calibration system reads the simulator's ground truth: entry -> its role in the expected orders.
    calibration_role: Callable[[dict], str] | None = None
    # (entry, its key path `systems[i]`) -> problems beyond the schema, each starting with its key path.
    check: Callable[[dict, str], Iterator[str]] = no_problems
    # The keys its entry takes besides ENTRY_KEYS: those it must give and those it may.
    required_keys: tuple[str, ...] = ()
    optional_keys: tuple[str, ...] = ()

    @property
    def config_keys(self) -> tuple[str, ...]:
        """Every key its entry may have (the schema's block for the kind allows exactly these)."""
        return ENTRY_KEYS + self.required_keys + self.optional_keys

    @property
    def external(self) -> bool:
        return self.make_system is not None

    def describe(self, entry: dict, prompt_file: str | None = None) -> dict:
        """What the external system of `entry` says it is (its describe(): no secret), for provenance."""
        if self.describe_entry is not None:
            return self.describe_entry(entry)
        return self.make_system(entry, None, prompt_file).describe()

    @property
    def reads_ground_truth(self) -> bool:
        return self.calibration_role is not None
