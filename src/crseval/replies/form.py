"""The form of a recommender's reply: whether it is empty, stutters, holds an unfilled slot, is garbled, or repeats
an earlier reply of its session. Read from the reply's text alone (and the films it names), by rules that apply
to any system, simulated or real.

- empty: no letter or digit in any script (`is_empty`);
- stutter: a word or a phrase of up to four words said twice back to back, case ignored, separated only by
  spaces ("the the", "I think I think"), except a word English doubles on purpose (DOUBLES: "had had", "that
  that"), a doubling inside a film the reply names ("La La Land"), and an article doubled before a film's own
  ("the The Shape of Water", how filling a slot reads) (`stutters`);
- unfilled slot: a template mark ("{title}", "[MOVIE]", "<title>", "<UNK>", a ReDial id "@123", "___"); a word
  that needs an object followed by a space and a punctuation mark ("Have you seen ?", "How about  ?") or by two
  spaces and a conjunction or copula ("starred in  and"); a sentence opening with a lower-case copula whose
  subject is missing ("is a great movie."); a reply opening with a lower-case "and" before a name ("and The Big
  Short are ...") or with a punctuation mark (".  is a comedy") (`unfilled_slot`);
- garbled: text no reader can use, by three conservative rules (`garbled`): the same letter ten times or more
  in a row (no English word, however drawn out in chat, comes near: "soooo" is five); a run of three to twenty
  words, two of them different, said three times or more back to back, whatever separates them (a generator
  caught in a loop: "I recommend it. I recommend it. I recommend it."); or, among at least GARBLED_MIN_WORDS
  lower-case words of Latin letters, more than half that English does not use at all (not in the `wordfreq`
  English list, which holds slang, misspellings and names: "lol", "reccomend", "tarantino" are words there,
  "xqzvt" is not). Capitalised words are left out of the count (names and titles), and words of other
  scripts are not judged;
- repeat: a reply whose word set (case-folded words of any script, `word_set`) has a Jaccard index of at least
  NEAR_REPEAT (4/5, compared in integers: exact) with an earlier reply's; a reply without a word repeats
  nothing (`repeats`, all replies of a session at once, and `repeats_any`, one reply against earlier ones).

crseval.metrics.conduct scores the shares of these forms (except garbled); crseval.replies.cases reads a
reply's case with them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from fractions import Fraction
from functools import lru_cache

import numpy as np

# Two replies whose word sets have a Jaccard index of at least this are one reply said twice (an exact
# fraction, compared as |A & B| * 5 >= |A | B| * 4: no float rounding can move a pair across it).
NEAR_REPEAT = Fraction(4, 5)

# Words of any script (letters and digits), inner apostrophes kept.
TOKEN = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
ANY_WORD = re.compile(r"[^\W_]")

# A word or a phrase of up to four words said twice in a row (case ignored; spaces or tabs between).
STUTTER = re.compile(r"(?<![\w'])([^\W\d_][\w']*(?:[ \t]+[^\W\d_][\w']*){0,3})[ \t]+\1(?![\w'])", re.IGNORECASE)
DOUBLES = frozenset({"that", "had", "very", "really", "so", "bye", "ha", "no"})  # doubled on purpose
ARTICLES = frozenset({"the", "a", "an"})
# Words that need an object after them: followed by nothing but a punctuation mark, the object is missing.
_NEEDS_OBJECT = (
    r"(?:seen|watch|watched|watching|recommend|recommended|suggest|suggested|try|about|called|titled|named|"
    r"in|of|by|with|starring|and|or|the|a|an)"
)
SLOTS = (
    re.compile(r"\{\s*\w+\s*\}"),  # {title}
    re.compile(r"[\[<][A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*[\]>]"),  # [MOVIE], <MOVIE_TITLE>, <UNK>
    re.compile(
        r"[\[<]\s*(?:movie|film|title|name|item|genre|actor|director|person|entity|unk|mask|blank|slot)"
        r"(?:[ _]\w+)?\s*[\]>]",
        re.IGNORECASE,
    ),  # <title>, [movie name]
    re.compile(r"@\d+"),  # a ReDial film id nobody resolved
    re.compile(r"_{2,}"),  # a blank: ___
    re.compile(rf"\b{_NEEDS_OBJECT}[ \t]+[?.!,;:]", re.IGNORECASE),  # "Have you seen ?"
    re.compile(rf"\b{_NEEDS_OBJECT}[ \t]{{2,}}(?:and|or|but|is|are|was|were)\b", re.IGNORECASE),  # "in  and"
    # "is a great movie.": a lower-case copula opening a sentence, no subject (not a question: "is it ...")
    re.compile(
        r"(?:^|[.!?][ \t]+)[ \t]*(?:is|are|was|were)\b"
        r"(?![ \t]+(?:it|that|this|they|there|you|he|she|we|i|those|these|your|his|her|their)\b)"
    ),
    re.compile(r"^\s*and[ \t]+(?=[A-Z0-9])"),  # "and The Big Short are ...": the first film is missing
    re.compile(r"^\s*[.,;]\s"),  # ".  is a comedy"
)

# Garbled text (module docstring).
LETTER_RUN = re.compile(r"([^\W\d_])\1{9,}")  # one letter ten times or more
LOOP = re.compile(r"(?<![^\W_])([^\W_]+(?:[\W_]+[^\W_]+){2,19})(?:[\W_]+\1(?![^\W_])){2,}", re.IGNORECASE)
_LOWER_LATIN_WORD = re.compile(r"(?<![^\W_])[a-z]+(?:['’][a-z]+)?(?![^\W_])")
GARBLED_MIN_WORDS = 4


def is_empty(text: str) -> bool:
    """Whether `text` has no letter or digit in any script."""
    return not ANY_WORD.search(text)


def word_set(text: str) -> frozenset[str]:
    """The case-folded words of `text`, any script: the set two replies are compared by."""
    return frozenset(TOKEN.findall(text.casefold()))


def stutters(text: str, titles: tuple[str, ...] = ()) -> bool:
    """Whether `text` says a word or phrase twice back to back (module docstring), `titles` being the films
    it names as written or as the catalog spells them."""
    folded = text.casefold()
    spans = []
    for title in titles:
        title = title.casefold()
        start = folded.find(title) if title else -1
        while start >= 0:
            spans.append((start, start + len(title)))
            start = folded.find(title, start + 1)
    for match in STUTTER.finditer(text):
        said = match.group(1)
        one_word = said.split() == [said]
        if one_word and said.casefold() in DOUBLES:
            continue
        if any(start <= match.start() and match.end() <= end for start, end in spans):
            continue  # "La La Land"
        second = match.end() - len(said)
        if one_word and said.casefold() in ARTICLES and any(start == second for start, _ in spans):
            continue  # "the The Shape of Water"
        return True
    return False


def unfilled_slot(text: str) -> bool:
    """Whether `text` holds a template mark or a gap where a name should be (module docstring)."""
    return any(pattern.search(text) for pattern in SLOTS)


@lru_cache(maxsize=100_000)
def is_english_word(word: str) -> bool:
    """Whether English uses `word` at all: it is in the `wordfreq` English list (any frequency)."""
    from wordfreq import zipf_frequency  # imported where used: half a second that most readers never pay

    return zipf_frequency(word, "en") > 0


def garbled(text: str) -> bool:
    """Whether `text` is garbled: a letter ten times in a row, a run of words said three times back to back, or
    mostly lower-case Latin words English does not use (module docstring)."""
    if LETTER_RUN.search(text):
        return True
    if any(len(set(TOKEN.findall(loop.group(1).casefold()))) > 1 for loop in LOOP.finditer(text)):
        return True  # one word said over and over ("no no no ...") is emphasis, not a loop
    lower = _LOWER_LATIN_WORD.findall(text)
    if len(lower) < GARBLED_MIN_WORDS:
        return False
    unknown = sum(not is_english_word(word.replace("’", "'")) for word in lower)
    return unknown * 2 > len(lower)


def _near(shared: int, union: int) -> bool:
    """Jaccard index shared / union at least NEAR_REPEAT, in integers; no words, no repeat."""
    return union > 0 and shared * NEAR_REPEAT.denominator >= union * NEAR_REPEAT.numerator


def repeats_any(reply_words: frozenset[str], earlier: Iterable[frozenset[str]]) -> bool:
    """Whether a reply's word set repeats one of `earlier` (module docstring)."""
    return any(_near(len(reply_words & other), len(reply_words | other)) for other in earlier)


def repeats(tokens: list[frozenset[str]]) -> np.ndarray:
    """Per reply, whether an earlier reply's word set has a Jaccard index of at least NEAR_REPEAT with its own
    (replies without a word repeat nothing): one incidence matrix, all pairs at once, in integers."""
    vocabulary = {word: i for i, word in enumerate(sorted(set().union(*tokens)))} if tokens else {}
    incidence = np.zeros((len(tokens), len(vocabulary)), dtype=np.int64)
    for row, words_ in enumerate(tokens):
        incidence[row, [vocabulary[w] for w in words_]] = 1
    shared = incidence @ incidence.T
    sizes = incidence.sum(axis=1)
    union = sizes[:, None] + sizes[None, :] - shared
    near = (shared * NEAR_REPEAT.denominator >= union * NEAR_REPEAT.numerator) & (union > 0)
    return np.tril(near, k=-1).any(axis=1)
