"""Token runs with character offsets, shared by the concept matcher and the title recognizer, and the
word tokens the metrics count; `AnalysedText` computes each of them once per text for every reader."""

from __future__ import annotations

import re
from functools import cached_property

_TOKEN = re.compile(r"\w+|[^\w\s]")
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


def tokenize(text: str) -> list[tuple[str, int, int]]:
    """(token, start, end) for word runs and single punctuation marks."""
    return [(m.group(0), m.start(), m.end()) for m in _TOKEN.finditer(text)]


def token_strings(text: str) -> list[str]:
    """The tokens of `tokenize`, without their offsets."""
    return _TOKEN.findall(text)


def words(text: str) -> list[str]:
    """Lower-cased word tokens (letters and digits, inner apostrophes kept)."""
    return _WORD.findall(text.lower())


def word_spans(text: str) -> list[tuple[int, int]]:
    """Where each of `words(text)` stands in `text`: its (start, end) character offsets, in order."""
    lowered = text.lower()
    found = [(m.start(), m.end()) for m in _WORD.finditer(lowered)]
    if len(lowered) == len(text):
        return found
    # lower-casing lengthened a character (a dotted capital I): each lowered offset back to its character
    origin = [i for i, c in enumerate(text) for _ in c.lower()]
    return [(origin[start], origin[end - 1] + 1) for start, end in found]


class AnalysedText:
    """One text and its tokens, each kind computed on first use and then kept: the concept matcher,
    the title recognizer and the metric families read the same text, and share one analysis of it
    instead of tokenising it once each. Pass it wherever a text is read (ConceptMatcher.values,
    TitleRecognizer.recognise and .spans take either). The tokens are tuples: what one reader gets,
    no reader can change for the others (and the garbage collector stops walking them)."""

    def __init__(self, text: str):
        self.text = text

    @classmethod
    def of(cls, text: str | AnalysedText) -> AnalysedText:
        """`text` itself when it is analysed already, else a fresh analysis of it."""
        return text if isinstance(text, AnalysedText) else cls(text)

    @cached_property
    def keys(self) -> tuple[str, ...]:
        """The tokens' strings, as written."""
        return tuple(token_strings(self.text))

    @cached_property
    def starts(self) -> tuple[int, ...]:
        """Where each token starts in the text. Only white space lies between two tokens, so each is
        the first occurrence of its string after the one before."""
        starts, position, find = [], 0, self.text.index
        for key in self.keys:
            position = find(key, position)
            starts.append(position)
            position += len(key)
        return tuple(starts)

    def span(self, first: int, last: int) -> tuple[int, int]:
        """Character offsets of the run of tokens first .. last - 1."""
        return self.starts[first], self.starts[last - 1] + len(self.keys[last - 1])

    @cached_property
    def tokens(self) -> list[tuple[str, int, int]]:
        """`tokenize(text)`."""
        return [(key, start, start + len(key)) for key, start in zip(self.keys, self.starts)]

    @cached_property
    def lowered(self) -> tuple[str, ...]:
        """The tokens' strings in lower case: lowered at once, joined by a space (which no token holds,
        and which stops the one rule of lower-casing that reads neighbours, a Greek word's final sigma)."""
        return tuple(" ".join(self.keys).lower().split(" ")) if self.keys else ()

    @cached_property
    def words(self) -> tuple[str, ...]:
        """`words(text)`: what the metrics count as words (n-grams, lexical statistics, the plot LM)."""
        return tuple(words(self.text))

    @cached_property
    def word_spans(self) -> tuple[tuple[int, int], ...]:
        """`word_spans(text)`: where each of `words` stands in the text."""
        return tuple(word_spans(self.text))


class TextAnalyses:
    """The analyses of the texts read together (a shard's), one per distinct text; `clear` between
    shards so that memory stays bounded by one shard's texts."""

    def __init__(self):
        self._analyses: dict[str, AnalysedText] = {}

    def __call__(self, text: str) -> AnalysedText:
        analysed = self._analyses.get(text)
        if analysed is None:
            analysed = self._analyses[text] = AnalysedText(text)
        return analysed

    def __len__(self) -> int:
        return len(self._analyses)

    def clear(self) -> None:
        self._analyses.clear()
