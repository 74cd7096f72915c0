"""The interface every recommender under test from outside the project implements (`chat`, `http`, `python`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class ExternalReply:
    text: str
    recommended: tuple[str, ...] | None = None  # titles the system says it recommends (optional)
    constraints: tuple[dict, ...] | None = None  # {field, value, negated} it says it tracks (optional)


class ExternalSystemError(RuntimeError):
    """A reply that could not be obtained; the message names system, session and turn. `transient` says whether
    a retry could help (timeouts, 5xx, connection refused) or not (4xx, malformed reply, a class that raises)."""

    def __init__(self, message: str, transient: bool = False):
        super().__init__(message)
        self.transient = transient


class ExternalSystem(Protocol):
    name: str  # the system's config name (for error messages)

    def start(self, session_id: str, seed: int) -> None: ...

    def answer(self, turn: int, user_text: str, history: list[dict]) -> ExternalReply:
        """history: the conversation before this user turn as [{"role": "user"|"assistant", "content": str}]"""
        ...

    def describe(self) -> dict:
        """For provenance.json and the reply cache key: e.g. {"agent": "http", "url": <URL without secrets>,
        "settings": {...}} or {"agent": "python", "entry_point": "pkg.mod:Class", "package_version": "1.2"};
        never a secret."""
        ...
