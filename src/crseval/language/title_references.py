"""The catalog films a text names: formatted spans that are titles, and titles written verbatim or typed
loosely (another case, no article) with a cue that they name the film (a year after them, a list
heading, a film word, a candidate, a capital in mid-sentence, a list joining them to a film). A title
that is part of a longer name, or of a longer title the text names, is no reference of its own."""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import compress, islice

from crseval.language.lexicon import is_common_word
from crseval.language.title_catalog import _LOOSE_MARKS, TitleCatalog
from crseval.language.title_shapes import (
    _FILM_WORD,
    _INTERJECTIONS,
    _PRONOUNS,
    _SMALL_WORDS,
    _SPACED_MARK,
    _TRAILING_YEAR,
    _YEAR_AFTER,
    _written_year,
)
from crseval.language.tokens import AnalysedText

# the start of a line before a heading: "1.", "1)", "1:", "1 -", a bullet
_LIST_MARKER = re.compile(r"[ \t]*(?:\d{1,2}[.):]|\d{1,2}[ \t]+[-–—]|[-*•+])?[ \t]*[\"'“‘*_]*")
_HEADING_END = re.compile(r"^[\"'”’*_]*\s*(?:$|\n|:|\(|,|\s[-–—]\s|[-–—]\s)")
_HEADING_SEPARATOR = re.compile(r"^[\"'”’*_]*\s*(?::|\(|\s[-–—]\s|[-–—]\s)")  # a heading without a list marker
_CONTRACTION_AFTER = re.compile(r"^['’](?:d|re|ll|ve|m)\b")
_SENTENCE_START = re.compile(r"(?:^|[.!?:;\n]|^\s*(?:\d{1,2}[.):]|\d{1,2}[ \t]+[-–—]|[-*•+]))[\s\"'“‘*_(\[]*$")
_PERSON_CUE = re.compile(
    r"\b(?:by|with|starring|featuring|actor|actress|director|directors|writer|author|novelist|mr|mrs|ms|dr)"
    r"\.?[\s\"'“‘*_]*$",
    re.I,
)
_WEAK = "weak"  # no cue of its own: a reference only when a list joins it to a recognised film
_PLACE_PREPOSITION = re.compile(r"\b(?:in|at|near|across|around|from|to|into|outside|of)\s+$")
_YEAR_PREPOSITION = re.compile(r"\b(?:in|from|since|around|before|after|until|circa|year)\s+$", re.I)
_CHARACTER_BEFORE = re.compile(
    r"(?:(?<!such)\s+as(?:\s+(?:the|a|an))?(?:\s+(?!good|well|much|many|far|long)[a-z][a-z-]*)?|[A-Za-z]/)\s*$"
)  # "as the iconic X", "Parker/X"
# "the Pearl Harbor attack", "the Titanic": a lower-case article before a title that has none is a thing, not a film
_LOWER_ARTICLE_BEFORE = re.compile(r"(?:^|[^\w])the\s+$")
# Between two items of a list: ", ", " and ", ", or " (after an optional year).
_LIST_JOIN = re.compile(
    r"^[\s\"'”’*_]*(?:\(\s*(?:18|19|20)\d\d[^)]{0,20}\))?[\s\"'”’*_]*(?:,\s*(?:and|or)?|and|or|&)\s*[\"'“‘*_]*$"
)
_ARTICLE_BEFORE = re.compile(r"\b(?:The|A|An)\s+$")
_OF_NAME_AFTER = re.compile(r"^\s+of\s+(?:the\s+)?[A-Z]")
_SUBTITLE_AFTER = re.compile(r"^\s*[:–—-]\s*[A-Z0-9]")
_POSSESSIVE_AFTER = re.compile(r"^['’]s\b")
_WORD_BEFORE = re.compile(r"([\w'’-]+)[ \t]+$")
_CAPITALISED_WORD_AFTER = re.compile(r"^[ \t]+([A-Z][\w-]*)")
# Titles that are words a sentence opens with ("You", "Yes", "They"): followed by a lower-case word (not "and",
# "or") they open a sentence, capitalised in mid-sentence or not (chat text often has no full stops).
_CLAUSE_OPENERS = frozenset("you they we he she it yes yeah no ok okay sure well hi hello thanks".split())
# Words after which a capitalised pronoun is no new sentence but a name: "does They tell", "about You".
_TAKES_A_NAME_BEFORE = re.compile(
    r"\b(?:does|did|do|is|was|are|were|has|have|had|will|would|can|could|should|of|about|like|than|as|for|from|to|on"
    r"|in|seen|saw|watched|watch|watching|loved|liked|enjoyed|recommend|suggest|try|called|titled|named)[ \t]+$"
)
_CLAUSE_GOES_ON = re.compile(r"^[ \t]+(?:I\b|(?!(?:and|or|nor)\b)[a-z])")
# Before a title typed in lower case by a user: "i have watched the lord of the rings twice".
_LOOSE_CUE = re.compile(r"\b(?:seen|watched|watch|liked|loved|enjoyed|like|love|about|movie|film)\s+$", re.I)
# Sentence-initial words that may stand right before a title without being part of its name.
_OPENERS = frozenset(
    """
watch try consider see check enjoy rewatch recommend suggest also then and or so but maybe perhaps definitely
absolutely personally honestly yes no well oh sure next finally lastly firstly first second third
""".split()
)


@dataclass(frozen=True)
class TitleReference:
    """A catalog film a text refers to: where, in which role, and what made the span a reference."""

    title: str
    start: int
    end: int
    role: str  # "recommended" or "mentioned"
    cue: str  # what made the span a reference: formatted, verbatim, year, heading, film word, candidate, capitalised,
    # loose case, marked (a list item or cue span that names the catalog film)


def find_references(
    catalog: TitleCatalog,
    analysed: AnalysedText,
    formatted: list[re.Match],
    candidates: set[str],
    by_user: bool = False,
) -> list[TitleReference]:
    """Catalog films the text names: formatted spans (`formatted`: the text's _FORMATTED matches)
    that are titles, then verbatim and loosely typed titles with a cue."""
    text = analysed.text
    found, covered = _formatted_references(catalog, text, formatted)
    weak: list[TitleReference] = []
    for start, end, title, loose in _written_titles(catalog, analysed):
        if any(a <= start < b for a, b in covered):
            continue
        if loose:
            cue = _loose_cue(text, title, start, end, by_user)
        else:
            cue = _cue(catalog, text, title, start, end, candidates)
        if cue == _WEAK:
            weak.append(TitleReference(title, start, end, "", "list"))
        elif cue is not None:
            found.append(TitleReference(title, start, end, "", cue))
    if weak:
        found = _joined_by_lists(text, found, weak)
    found.sort(key=lambda r: r.start)
    return _drop_parts_of_longer_titles(catalog, found)


def _formatted_references(
    catalog: TitleCatalog, text: str, formatted: list[re.Match]
) -> tuple[list[TitleReference], list[tuple[int, int]]]:
    """The formatted spans that are catalog titles, and the spans of their formatting (covered: no
    title is read inside them)."""
    found: list[TitleReference] = []
    covered: list[tuple[int, int]] = []
    for match in formatted:
        group = match.lastgroup  # each alternative has one group
        inner_start = match.start(group)
        inner = match.group(group)
        core = _SPACED_MARK.sub("", _TRAILING_YEAR.sub("", inner)).strip()
        rest = inner[inner.find(core) + len(core) :]
        year = _written_year(rest) or _written_year(text[match.end() : match.end() + 12])
        title = catalog.title_of(core, year)  # "Waiting..." and "Waiting" are two films
        if title is None:
            core = core.rstrip(",.;:").strip()
            title = catalog.title_of(core, year)
        if title is not None:
            offset = inner.find(core)
            start = inner_start + max(offset, 0)
            found.append(TitleReference(title, start, start + len(core), "", "formatted"))
            covered.append((match.start(), match.end()))
    return found, covered


def _written_titles(catalog: TitleCatalog, analysed: AnalysedText) -> Iterator[tuple[int, int, str, bool]]:
    """Where a catalog title is written in the text, as (start, end, title, typed loosely), each time at
    the longest title that starts there, and past the end of the one before."""
    keys, lowered = analysed.keys, analysed.lowered
    lengths, loose_lengths = catalog.title_lengths, catalog.loose_lengths
    # the words people do not leave out when they type a title, and where they stand
    is_kept = [word not in _LOOSE_MARKS for word in lowered]
    kept, kept_words = list(compress(range(len(lowered)), is_kept)), list(compress(lowered, is_kept))
    # where a title may start (its first token, or first two), as written or typed loosely (at kept[r])
    starts, loose_pairs, none = catalog.title_starts, catalog.loose_pairs, frozenset()
    firsts = [i for i, key in enumerate(keys) if key in catalog.first_tokens]
    longer = {i for i in firsts if i + 1 < len(keys) and keys[i + 1] in starts.get(keys[i], none)}
    single = [i for i in firsts if keys[i] in catalog.one_token_titles]
    loose_at = {
        kept[r]: r for r, pair in enumerate(zip(kept_words, islice(kept_words, 1, None))) if pair in loose_pairs
    }
    free = 0  # the first token no earlier title covers
    for i in sorted(longer.union(single, loose_at)):
        if i < free:
            continue
        hit = None
        for length in lengths.get(keys[i], ()):
            if length > 1 and i not in longer:
                continue
            run = tuple(keys[i : i + length])
            if len(run) == length and run in catalog.titles:
                hit = (length, catalog.titles[run], False)
                break
        else:
            first = loose_at.get(i)
            if first is not None:
                # the next words up to 40 tokens on, over the marks people leave out ("Monsters, Inc."
                # typed "monsters inc")
                stop = bisect_left(kept, i + 40, first)
                for length in loose_lengths[lowered[i]]:
                    run = tuple(kept_words[first : first + length])
                    if first + length <= stop and run in catalog.loose:
                        hit = (kept[first + length - 1] - i + 1, catalog.loose[run], True)
                        break
        if hit is None:
            continue
        length, title, loose = hit
        start, end = analysed.span(i, i + length)
        free = i + length
        yield start, end, title, loose


def _joined_by_lists(text: str, found: list[TitleReference], weak: list[TitleReference]) -> list[TitleReference]:
    """An occurrence with no cue of its own (`weak`) counts when a list joins it to a recognised film
    (`found`): "Heat and Casino"; a sweep each way reads a list of several such titles whole."""
    items = sorted([(r, True) for r in found] + [(r, False) for r in weak], key=lambda item: item[0].start)
    accepted = [ok for _, ok in items]
    for order in (range(1, len(items)), range(len(items) - 2, -1, -1)):
        for i in order:
            j = i - 1 if order.step == 1 else i + 1
            left, right = (items[j][0], items[i][0]) if j < i else (items[i][0], items[j][0])
            if not accepted[i] and accepted[j] and _LIST_JOIN.match(text[left.end : right.start]):
                accepted[i] = True
    return [r for (r, _), ok in zip(items, accepted) if ok]


def _drop_parts_of_longer_titles(catalog: TitleCatalog, found: list[TitleReference]) -> list[TitleReference]:
    """A title that is part of a longer title the text refers to ("Spider-Man" beside "The
    Amazing Spider-Man", "Die Hard" beside "Die Hard 2") names its character or franchise;
    it counts on its own only when formatted or followed by a year."""
    if len(found) < 2:
        return found
    keys = {r.title: catalog.lower_words(r.title) for r in found}
    longer = [keys[r.title] for r in found]

    def inside(short: tuple, long: tuple) -> bool:
        return len(short) < len(long) and any(
            long[i : i + len(short)] == short for i in range(len(long) - len(short) + 1)
        )

    return [
        r for r in found if r.cue in ("formatted", "year") or not any(inside(keys[r.title], other) for other in longer)
    ]


def _loose_cue(text: str, title: str, start: int, end: int, by_user: bool) -> str | None:
    """Why a title written in another case or without its article is a reference, or None.
    In a system's text it must start with a capital; a title of everyday words needs a cue."""
    before, after = text[:start], text[end:]
    if not (text[start].isupper() or text[start].isdigit() or by_user) or _inside_longer_name(before, after):
        return None
    if _YEAR_AFTER.match(after):
        return "year"
    first, *rest = text[start:end].split()
    if not by_user and first.lower().replace("’", "'") in _PRONOUNS and not any(w[:1].isupper() for w in rest):
        return None  # "I'm here to help": a sentence, not "I'm Here" typed in another case (but "I Robot")
    words = [w for w in re.findall(r"[^\W\d_]+", text[start:end].lower()) if w not in _SMALL_WORDS]
    if any(len(w) > 2 and not is_common_word(w) for w in words):
        return "loose case"  # "shutter island": a word no sentence uses by chance
    if text[start].isupper() and len(words) >= 2:
        return "loose case"  # "Reign of fire", "Cabin in the woods"
    if by_user and _LOOSE_CUE.search(before[-12:]):
        return "film word"  # "i have watched the lord of the rings twice"
    return _WEAK  # "The Matrix, Blade runner and ...": read when a list joins it to a film


def _cue(catalog: TitleCatalog, text: str, title: str, start: int, end: int, candidates: set[str]) -> str | None:
    """Why a verbatim occurrence is a film reference, or None when it is not one."""
    before, after = text[:start], text[end:]
    if _inside_longer_name(before, after):
        return None
    kind = catalog.kind[title]
    if _YEAR_AFTER.match(after):
        return "year"
    if title.lower() in catalog.people and _PERSON_CUE.search(before[-30:]):
        return None  # a person of the catalog with a film's name, introduced as a person
    if _CHARACTER_BEFORE.search(before[-30:]):
        return None  # "Scott Weinger as Aladdin": a character
    if _LOWER_ARTICLE_BEFORE.search(before[-6:]) and _FILM_WORD.search(before[-40:]) is None:
        return None
    if kind == "plain":
        return "verbatim"
    if title.lower() in _INTERJECTIONS and re.match(r"^\s*[,!]", after):
        return None  # "Yes, ...": an answer
    if _CONTRACTION_AFTER.match(after):
        return None  # "You'd love ...", "You're welcome": the word, not the film
    line = before[before.rfind("\n") + 1 :]
    if (
        len(line) <= 12
        and _LIST_MARKER.fullmatch(line)
        and _HEADING_END.match(after)
        and (
            line.strip(" \t\"'“‘*_")
            or _HEADING_SEPARATOR.match(after)
            or (after.lstrip().startswith(",") and title.lower() not in _CLAUSE_OPENERS)
        )
    ):
        return "heading"  # "1. War - ...", "War (2007)", "War: ..."; but a reply that is only "You" or "Yes, ..."
    if _FILM_WORD.search(before[-40:]) and kind != "name":
        return "film word"
    if kind == "number":
        if title in candidates and not (re.fullmatch(r"\d{4}", title) and _YEAR_PREPOSITION.search(before[-8:])):
            return "candidate"  # the film the user just named ("the mood of X")
        return _WEAK
    sentence_start = _SENTENCE_START.search(before[-12:]) is not None or not before.strip()
    capitalised_mid = text[start].isupper() and not sentence_start
    if kind == "common":
        if _PLACE_PREPOSITION.search(before[-8:]) and title not in candidates:
            return None  # "in London", "from Chicago": a place
        if (
            title.lower() in _CLAUSE_OPENERS
            and _CLAUSE_GOES_ON.match(after)
            and not _TAKES_A_NAME_BEFORE.search(before[-12:])
        ):
            return None  # "... a classic You might like it": a sentence its writer did not punctuate
            # (but "What kind of story does They tell?")
        if capitalised_mid:
            return "capitalised"
        if title in candidates and text[start].isupper():
            return "candidate"
        return _WEAK if text[start].isupper() else None
    # a person's name part
    if _PERSON_CUE.search(before[-30:]) or _POSSESSIVE_AFTER.match(after):
        return "candidate" if title in candidates and _YEAR_AFTER.match(after) else None
    if title in candidates:
        return "candidate"
    return "capitalised" if capitalised_mid else _WEAK


def _inside_longer_name(before: str, after: str) -> bool:
    """A capitalised word joined to the occurrence makes it part of another name."""
    if _ARTICLE_BEFORE.search(before[-5:]) or _OF_NAME_AFTER.match(after) or _SUBTITLE_AFTER.match(after):
        return True
    previous = _WORD_BEFORE.search(before[-60:])
    if previous:
        word = previous.group(1)
        if word[0].isupper() and word != "I" and not word.endswith(("'s", "’s", "s'")):
            head = before[: len(before) - len(previous.group(0))]
            at_start = not head.strip() or _SENTENCE_START.search(head[-12:]) is not None
            if not (at_start and word.lower() in _OPENERS):
                return True
    following = _CAPITALISED_WORD_AFTER.match(after)
    return bool(following and following.group(1) != "I")
