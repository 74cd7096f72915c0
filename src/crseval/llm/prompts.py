"""Prompt templates: a file under resources/prompts whose content hash is its version.

The version is part of every LLM cache key, so editing a prompt asks the model again instead of
serving replies to the old wording.
"""

from __future__ import annotations

import hashlib
from pathlib import Path


class PromptTemplate:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.text = self.path.read_text(encoding="utf-8")
        self.version = hashlib.sha256(self.text.encode("utf-8")).hexdigest()[:16]

    def render(self, **values) -> str:
        return self.text.format(**values).strip()
