"""Token runs with character offsets, shared by the concept matcher and the title recognizer."""

from __future__ import annotations

import re

_TOKEN = re.compile(r"\w+|[^\w\s]")


def tokenize(text: str) -> list[tuple[str, int, int]]:
    """(token, start, end) for word runs and single punctuation marks."""
    return [(m.group(0), m.start(), m.end()) for m in _TOKEN.finditer(text)]
