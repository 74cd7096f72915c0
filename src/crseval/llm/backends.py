"""The LLM backend kinds, by the `type` a backend section gives them (crseval.llm.backend_kind).

A new backend is a module of this package with a `KIND`, listed in BACKEND_KINDS. No module imports
its model library at import time (llama.cpp is loaded by the first call), so planning stays light.
"""

from __future__ import annotations

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


def in_process(settings: dict) -> bool:
    """A backend section whose model runs inside the job's own process."""
    return backend_kind(settings["type"]).in_process


def model_file(settings: dict) -> str | None:
    """The GGUF file a backend section names by path, if any."""
    return backend_kind(settings["type"]).model_file(settings)


def identities(settings: dict) -> set[tuple]:
    """What makes two backend sections the same model (compare by intersection)."""
    return backend_kind(settings["type"]).identities(settings)
