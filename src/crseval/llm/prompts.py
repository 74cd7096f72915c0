"""Prompt templates: a file under resources/prompts whose content hash is its version.

The version is part of every LLM cache key, so editing a prompt asks the model again instead of
serving replies to the old wording.

A recommender's template may have two parts, split by a line `TURN_MARKER`: the part above is the
system message, the same at every turn; the part below is rendered at each turn around the user's
words (`{message}`) with what changes from turn to turn. Laid out this way, consecutive prompts of a
conversation share their beginning (the instructions, then the earlier exchanges), which a model
server with a prefix cache (llama.cpp, vLLM, Ollama) does not evaluate again. A template without the
marker is one system message rendered at each turn, as written.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

TURN_MARKER = "=== each turn ==="


class PromptTemplate:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.text = self.path.read_text(encoding="utf-8")
        self.version = hashlib.sha256(self.text.encode("utf-8")).hexdigest()[:16]
        lines = self.text.splitlines()
        marker = next((i for i, line in enumerate(lines) if line.strip() == TURN_MARKER), None)
        self.system_text = "\n".join(lines if marker is None else lines[:marker])
        self.turn_text = None if marker is None else "\n".join(lines[marker + 1 :])

    @property
    def has_turn_part(self) -> bool:
        return self.turn_text is not None

    def render(self, **values) -> str:
        """The whole template (both parts, without the marker line) with `values` filled in."""
        if self.turn_text is None:
            return self.text.format(**values).strip()
        return f"{self.render_system(**values)}\n\n{self.render_turn(**values)}".strip()

    def render_system(self, **values) -> str:
        return self.system_text.format(**values).strip()

    def render_turn(self, message: str = "", **values) -> str:
        """The turn part with the user's words as `{message}`; "" for a template without one."""
        if self.turn_text is None:
            return ""
        return self.turn_text.format(message=message, **values).strip()
