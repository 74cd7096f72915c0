"""Looking a pluggable kind up by the name a config gives it (an agent, an LLM backend, a metric family,
a corpus format: each package keeps its own registry of declarations).

A name that is not registered fails with the known names and, when one is close, the one meant: a
typo in a config is the most common way to reach here.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import TypeVar

Kind = TypeVar("Kind")


def did_you_mean(given: str, known: list[str]) -> str:
    """ " (did you mean 'x'?)" for the closest known name, if one is close; "" otherwise."""
    close = difflib.get_close_matches(str(given).lower(), known, n=1, cutoff=0.7)
    return f" (did you mean {close[0]!r}?)" if close else ""


def look_up(kinds: Mapping[str, Kind], name: str, what: str, error: type[Exception] = ValueError) -> Kind:
    """The kind registered as `name` in `kinds`; else `error` saying "unknown <what> ...; known: ..."."""
    try:
        return kinds[name]
    except (KeyError, TypeError):
        hint = did_you_mean(name, list(kinds))
        raise error(f"unknown {what} {name!r}{hint}; known: {', '.join(kinds)}") from None
