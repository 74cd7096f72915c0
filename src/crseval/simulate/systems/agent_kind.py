"""What an agent kind declares about itself: the one description the workflow, the checks, the
config schema and the provenance record ask.

An agent kind (`systems[*].agent` in the config) is declared once, as an `AgentKind` in the module
that implements it, and listed in crseval.simulate.systems.kinds. It says how its agent is built for a
session, whether it calls an LLM of its own (`backend`) and which prompt file it reads, whether it
asks a service that answers many requests at once, whether it answers the conversation itself
(an external system: its replies are cached and it describes itself for provenance and the reply
cache key), whether it reads the simulator's ground truth (a calibration system, with its role in
the expected orders), the keys its config entry takes with their schemas, and what must be true of
that entry beyond the schema. The config schema names no kind: the registry hands every kind's keys
to it (`AgentKind.schema`, crseval.core.config_checks.compose_schema), so that the schema and the kinds cannot drift
apart. A key several kinds take is declared once, here (SHARED_KEYS), and each kind names it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterator, Mapping

from crseval.core.config_checks import KindKeys

# The keys every system entry takes, whatever its kind (the config schema's `system` entry declares them).
ENTRY_KEYS = ("name", "agent", "profile", "concurrency")

# The keys several kinds take, each with its schema (the type, bounds and description config/README.md shows);
# a kind takes them by name (`shared_keys`).
SHARED_KEYS: dict[str, dict] = {
    "tools": {
        "type": "boolean",
        "description": "`template`, `oracle`, `lagging`, `stubborn`, `random`: search and commit through the catalog "
        'toolkit, as a tool-using recommender does (docs/own_recommender.md, "Tool-using recommenders"): the same '
        "films, with every search and commit recorded as tool calls (default false)",
    },
    "tool_limits": {
        "type": "object",
        "additionalProperties": False,
        "description": "`tools` (and `tools: true`): the bounds of the catalog toolkit; a key left out takes the "
        "default its description states (crseval.catalog.toolkit.ToolLimits)",
        "properties": {
            "calls_per_turn": {
                "type": "integer",
                "minimum": 1,
                "maximum": 64,
                "description": 'tool calls one turn may make; the turn ends (`tool_turn_end` "bound") when they are '
                "spent (default 8)",
            },
            "argument_chars": {
                "type": "integer",
                "minimum": 100,
                "maximum": 1000000,
                "description": "largest arguments of one call, in characters (a larger one is an error, not run) "
                "(default 10,000)",
            },
            "result_chars": {
                "type": "integer",
                "minimum": 200,
                "maximum": 100000,
                "description": "largest result handed back to the model, in characters of JSON (films dropped past "
                "it) (default 4,000)",
            },
            "search_results": {
                "type": "integer",
                "minimum": 1,
                "maximum": 20,
                "description": "films a search returns when the call gives no `limit` (default 5)",
            },
        },
    },
    "prompt": {
        "type": "string",
        "format": "path",
        "minLength": 1,
        "description": "prompt template with `{constraints}` and `{candidates}` placeholders (`llm`; `prompt_echo` "
        "echoes its first line that changes with the turn); a line `=== each turn ===` splits it into the system "
        "message (above) and the turn's user message (below, the user's words as `{message}`: docs/simulation.md); "
        "or the system message of a `tools` system (plain text); its content hash is part of the cache key",
    },
    "backend": {"$ref": "#/$defs/backend", "description": "the model"},
    "options": {
        "type": "object",
        "description": "the model's sampling options (`llm`, `chat`: temperature, top_p, max_tokens), or the keyword "
        "arguments of a `python` system's class",
        "properties": {
            "temperature": {"type": "number", "minimum": 0, "description": "sampling temperature"},
            "top_p": {"type": "number", "exclusiveMinimum": 0, "maximum": 1, "description": "nucleus sampling share"},
            "max_tokens": {"type": "integer", "minimum": 1, "description": "longest reply in tokens"},
        },
    },
    "timeout": {
        "type": "number",
        "exclusiveMinimum": 0,
        "description": "`http`: seconds one request may take in all, connecting to last byte (a reply still arriving "
        "then is cut off); `python`: seconds one answer() may take",
    },
}
# What a kind that calls an LLM asks of its `options` beyond their schema: every sampling option, none other.
SAMPLING_OPTIONS = {"$ref": "#/$defs/options"}


def shared_keys(*names: str) -> dict[str, dict]:
    """The keys `names` with their schemas, from SHARED_KEYS."""
    return {name: SHARED_KEYS[name] for name in names}


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
    # The keys its entry takes besides ENTRY_KEYS, each with its schema: those it must give and those it may.
    required_keys: Mapping[str, dict] = field(default_factory=dict, hash=False)
    optional_keys: Mapping[str, dict] = field(default_factory=dict, hash=False)

    @property
    def config_keys(self) -> tuple[str, ...]:
        """Every key its entry may have (the schema's block for the kind allows exactly these)."""
        return ENTRY_KEYS + tuple(self.required_keys) + tuple(self.optional_keys)

    @property
    def schema(self) -> KindKeys:
        """Its part of the config schema's `system` entry: its keys, those it must give, and (a kind that calls an
        LLM) its `options` as every sampling option."""
        return KindKeys(
            self.name,
            {**self.required_keys, **self.optional_keys},
            tuple(self.required_keys),
            {"options": SAMPLING_OPTIONS} if self.llm_backend else {},
        )

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
