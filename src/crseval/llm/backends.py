"""The LLM backend kinds, by the `type` a backend section gives them (crseval.llm.backend_kind).

A new backend is a module of this package with a `KIND`, listed in BACKEND_KINDS (the config schema gets
the kinds' names and keys from `schema_part`). No module imports
its model library at import time (llama.cpp is loaded by the first call), so planning stays light.
"""

from __future__ import annotations

from typing import Iterator

from crseval.core.config_checks import Dispatch, SchemaPart, _at, _is_number, key_path
from crseval.core.registry import look_up
from crseval.llm import llamacpp_backend, ollama_backend, openai_backend
from crseval.llm.backend_kind import BackendKind
from crseval.llm.base import LLMError

BACKEND_KINDS: dict[str, BackendKind] = {
    module.KIND.name: module.KIND for module in (llamacpp_backend, ollama_backend, openai_backend)
}


def backend_kind(name: str) -> BackendKind:
    """The kind of backend `type` `name`; an LLMError naming the known ones (and the closest) otherwise."""
    return look_up(BACKEND_KINDS, name, "LLM backend type", LLMError)


def schema_part() -> SchemaPart:
    """The backends' part of the config schema (crseval.core.config_checks.compose_schema): the `type` enum in
    BACKEND_KINDS' order, every kind's keys, and an if/then block per kind."""
    return SchemaPart(dispatch=Dispatch("backend", "type", tuple(kind.schema for kind in BACKEND_KINDS.values())))


def in_process(settings: dict) -> bool:
    """A backend section whose model runs inside the job's own process."""
    return backend_kind(settings["type"]).in_process


def model_file(settings: dict) -> str | None:
    """The GGUF file a backend section names by path, if any."""
    return backend_kind(settings["type"]).model_file(settings)


def identities(settings: dict) -> set[tuple]:
    """What makes two backend sections the same model (compare by intersection)."""
    return backend_kind(settings["type"]).identities(settings)


def config_problems(config) -> Iterator[str]:
    """An explicit concurrency above 1 for a backend that runs in the job's own process would promise a
    speed-up that one model instance in the job cannot give (the global llm.concurrency is simply not
    applied to such jobs). Entries of the wrong shape or an unknown type are the schema's to report."""
    panel = _at(config, ("judge", "panel"))
    paths = [("systems", i) for i in range(len(_at(config, ("systems",)) or []))]
    paths += [("judge",), *(("judge", "panel", i) for i in range(len(panel if isinstance(panel, list) else [])))]
    servers = ", ".join(name for name, kind in BACKEND_KINDS.items() if not kind.in_process)
    for path in paths:
        entry = _at(config, path)
        backend = entry.get("backend") if isinstance(entry, dict) else None
        kind_name = backend.get("type") if isinstance(backend, dict) else None
        kind = BACKEND_KINDS.get(kind_name) if isinstance(kind_name, str) else None
        concurrency = entry.get("concurrency") if kind else None
        if kind and kind.in_process and _is_number(concurrency) and concurrency > 1:
            yield (
                f"{key_path((*path, 'concurrency'))}: {concurrency} requests in flight need a server backend "
                f"({servers}); the {kind.name} backend runs in the job's process, one request at a time: use 1"
            )
