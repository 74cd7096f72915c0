"""What an LLM backend kind declares about itself: the one description the rest of crseval asks.

A backend kind (`llm.backend.type` in the config: llamacpp, ollama, openai) is a module of this
package with a `KIND` of this class; crseval.llm.backends lists them. Planning asks whether a kind
runs inside the job's process (then the job gets `llm.threads` and runs one request at a time), which
GGUF file a backend section names (provenance hashes it, the input check looks for it), and which
identities make two backends the same model (the judge's self-preference warning), and the keys its
section takes besides `type` and `model`, with their schemas (the config schema names no backend: the
registry hands them to it). Nothing outside this package tests a backend's type by name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping
from urllib.parse import urlsplit

from crseval.core.config_checks import KindKeys

LOOPBACK = {"localhost", "127.0.0.1", "::1", "[::1]"}


@dataclass(frozen=True)
class BackendKind:
    name: str  # its `type` in a backend section
    summary: str  # one line for the docs
    in_process: bool  # the model runs in the job's own process (threads; one request at a time)
    build: Callable  # (settings, threads, timeout_s, max_reply_bytes) -> Backend
    # The GGUF file a backend section names by path (None: an embedded model, or a server that holds the weights).
    model_file: Callable[[dict], str | None]
    # What makes two backend sections the same model: a set of hashable identities, compared by intersection.
    identities: Callable[[dict], set[tuple]]
    # The keys its section takes besides `type` and `model`, each with its schema: those it must give and those it may.
    required_keys: Mapping[str, dict] = field(default_factory=dict, hash=False)
    optional_keys: Mapping[str, dict] = field(default_factory=dict, hash=False)

    @property
    def schema(self) -> KindKeys:
        """Its part of the config schema's `backend` entry: its keys and those it must give."""
        return KindKeys(self.name, {**self.required_keys, **self.optional_keys}, tuple(self.required_keys))


def no_model_file(settings: dict) -> None:
    """A server holds its own weights: no file to check or hash here."""
    return None


def server_identities(settings: dict) -> set[tuple]:
    """A model served over HTTP: the same model name on the same server (host and port, whichever API
    reaches it: Ollama's or the OpenAI-compatible one), loopback names counted as one host."""
    model = settings["model"]
    address = settings.get("host") or settings.get("base_url") or ""
    url = urlsplit(address if "//" in address else f"//{address}")  # a host given without its scheme
    host = url.hostname or ""
    try:
        port = url.port
    except ValueError:
        port = None
    return {(settings["type"], model), ("server", "loopback" if host in LOOPBACK else host, port, model)}
