"""The request/response types shared by every backend, and the two kinds of failure."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Protocol


class LLMError(RuntimeError):
    """A call that failed for good; the message names backend, model and cause."""


class TransientLLMError(LLMError):
    """A failure worth retrying: connection refused or reset, timeout, HTTP 5xx."""


@dataclass(frozen=True)
class LLMRequest:
    """Everything that determines a reply. `tag` names the prompt template and its version,
    so that editing a template invalidates the cached replies made with it."""

    messages: tuple[tuple[str, str], ...]  # (role, content)
    temperature: float = 0.7
    max_tokens: int = 128
    seed: int = 0
    top_p: float = 0.95
    json_schema: dict | None = None
    tag: str = ""

    @classmethod
    def chat(cls, messages: list[dict], **options) -> "LLMRequest":
        return cls(messages=tuple((m["role"], m["content"]) for m in messages), **options)

    def message_dicts(self) -> list[dict]:
        return [{"role": role, "content": content} for role, content in self.messages]

    def key(self, backend: str, model: str) -> str:
        """Content hash of backend, model, messages, options, schema and template tag."""
        payload = {"backend": backend, "model": model, **asdict(self)}
        text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass
class LLMResponse:
    text: str
    backend: str
    model: str
    latency_s: float
    prompt_tokens: int | None
    completion_tokens: int | None
    cached: bool = False
    extra: dict = field(default_factory=dict)

    def meta(self) -> dict:
        """The per-turn `llm` record of the session schema."""
        return {
            "backend": self.backend,
            "model": self.model,
            "latency_s": round(self.latency_s, 4),
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cached": self.cached,
        }


class Backend(Protocol):
    name: str
    model: str

    def complete(self, request: LLMRequest) -> LLMResponse:
        """One call, no retries; raises TransientLLMError or LLMError."""
