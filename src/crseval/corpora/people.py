"""What the importers of corpora of two people share (ReDial, IARD, AB-ReDial, INSPIRED): in each a
seeker (the user) talks with a recommender who is a person, not a system, so every dialogue of such a
corpus is one "system" named after the corpus's recommenders (`<corpus>-people`).

Shared here: reading a CSV or TSV file bounded as every corpus file is (crseval.corpora.dialogue.read_text,
the csv module's own field size limit), its header checked; a malformed dialogue or row skipped under a
named rule (`Skipped`); a Python literal of the source read with ast.literal_eval, bounded in size; the
film marks of a message, each once in order; and a dialogue's digest.
"""

from __future__ import annotations

import ast
import csv
import hashlib
import io
import json
import math
from pathlib import Path
from typing import Iterator

from crseval.core.io import shown
from crseval.corpora.dialogue import CorpusError, Skipped

PERSON = "the recommender is a person, not a system"
MALFORMED = "malformed dialogue skipped: "
MAX_LITERAL_CHARS = 20_000  # a per-dialogue dictionary of a few dozen titles; far longer is not one


def skipped(what: str, where: str) -> Skipped:
    """A malformed dialogue, skipped and counted under `what` (which names the field, not the value)."""
    return Skipped(MALFORMED + what, where)


def digest(item: object) -> str:
    return hashlib.sha256(json.dumps(item, sort_keys=True, ensure_ascii=False, default=str).encode()).hexdigest()


def clean_title(title: str) -> str:
    """A title as the corpus writes it, its white space runs (the source's doubled spaces) made one space."""
    return " ".join(title.split())


def once(titles: list[str]) -> list[str]:
    """`titles` in order, each once."""
    seen: list[str] = []
    for title in titles:
        if title not in seen:
            seen.append(title)
    return seen


def first_line(text: str) -> str:
    """The text's first line (a header, or the first JSON line)."""
    return text.split("\n", 1)[0].rstrip("\r")


def read_table(
    path: Path, text: str, delimiter: str, required: tuple[str, ...], what: str, quoting: int = csv.QUOTE_MINIMAL
) -> tuple[list[str], Iterator[tuple[int, list[str]]]]:
    """The header of a CSV (TSV) file and its rows as (line number, fields); CorpusError naming the file
    when the header lacks a column of `required` (it is not `what`) or the csv module cannot read it."""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, quoting=quoting)
    try:
        header = next(reader, None)
    except csv.Error as error:
        raise CorpusError(f"{path}, line 1: not readable as {what}: {error}") from None
    if not header:
        raise CorpusError(f"{path}: holds no {what}: the file is empty")
    missing = [column for column in required if column not in header]
    if missing:
        raise CorpusError(
            f"{path}: not {what}: the header lacks the columns {missing} (found {[shown(c) for c in header[:12]]})"
        )

    def rows() -> Iterator[tuple[int, list[str]]]:
        try:
            for row in reader:
                if row:  # a blank line
                    yield reader.line_num, row
        except csv.Error as error:
            raise CorpusError(f"{path}, line {reader.line_num}: not readable as {what}: {error}") from None

    return header, rows()


def python_literal(text: str, kind: type) -> object | None:
    """The Python literal `text` (a dict or list the source wrote with repr) when it is one of `kind`;
    None when it is not, is not a literal, or is longer than MAX_LITERAL_CHARS. Never evaluated as code:
    ast.literal_eval only, on bounded text."""
    if not text or len(text) > MAX_LITERAL_CHARS:
        return None
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, kind) else None


def number(text: str) -> float | None | str:
    """A score cell: its number; None when empty (not given); the string "not a number" otherwise."""
    text = text.strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        return "not a number"
    return value if math.isfinite(value) else "not a number"


def mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 6) if values else None
