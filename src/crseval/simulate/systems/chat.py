"""`agent: chat`: an LLM answers the conversation itself, the way a chat assistant would.

No tracking and no catalog retrieval by us: the model sees an optional system prompt and the
conversation, and its reply is whatever it says. It is the plainest system under test, and the
one every researcher's own recommender can be compared with.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from crseval.core.redact import redact_url
from crseval.llm import LLMClient, LLMRequest
from crseval.llm.base import LLMError, TransientLLMError
from crseval.simulate.systems.agent_kind import AgentKind, shared_keys
from crseval.simulate.systems.external import ExternalReply, ExternalSystemError, external_agent


class ChatSystem:
    """An ExternalSystem on any configured LLM backend (crseval.llm)."""

    def __init__(
        self, name: str, client: LLMClient, backend: dict, options: dict, system_prompt: str | Path | None = None
    ):
        self.name = name
        self.client = client
        self.backend = backend
        self.options = options
        self.prompt_text = Path(system_prompt).read_text(encoding="utf-8").strip() if system_prompt else None
        self.seed = 0

    @property
    def prompt_version(self) -> str | None:
        """Content hash of the system prompt: editing it asks the model again."""
        return hashlib.sha256(self.prompt_text.encode("utf-8")).hexdigest()[:16] if self.prompt_text else None

    def start(self, session_id: str, seed: int) -> None:
        self.seed = seed

    def answer(self, turn: int, user_text: str, history: list[dict]) -> ExternalReply:
        system = [{"role": "system", "content": self.prompt_text}] if self.prompt_text else []
        request = LLMRequest.sampled(
            [*system, *history, {"role": "user", "content": user_text}],
            self.options,
            seed=self.seed * 1000 + turn,
            tag=f"chat@{self.prompt_version}",
        )
        try:
            response = self.client.complete(request)
        except LLMError as error:  # the client has retried already
            raise ExternalSystemError(str(error), transient=isinstance(error.__cause__, TransientLLMError)) from error
        return ExternalReply(response.text.strip())

    def describe(self) -> dict:
        backend = {k: redact_url(v) if k in ("host", "base_url") else v for k, v in self.backend.items()}
        return {"agent": "chat", "backend": backend, "options": self.options, "system_prompt": self.prompt_version}


def _chat_system(entry: dict, client: LLMClient | None, prompt_file: str | None) -> ChatSystem:
    return ChatSystem(
        entry["name"], client, entry["backend"], entry["options"], prompt_file or entry.get("system_prompt")
    )


KIND = AgentKind(
    "chat",
    "any chat model answers the conversation itself (optionally with `system_prompt`); films read from its reply",
    make_agent=external_agent,
    llm_backend=True,
    prompt_key="system_prompt",
    make_system=_chat_system,
    required_keys=shared_keys("backend", "options"),
    optional_keys={
        "system_prompt": {
            "type": "string",
            "format": "path",
            "minLength": 1,
            "description": "`chat`: a file whose text is the system message (none: the model gets the conversation "
            "only)",
        }
    },
)
