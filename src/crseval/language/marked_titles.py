"""Spans a text marks as titles, whether the catalog holds the film or not: formatted and inserted
markup, list items (of a list of films, not of reasons, steps or actors), a title-case name before
"(Year)" or after a cue ("the movie It", "Have you seen Zombian?"); and how they resolve against the
catalog references: a marked span that names a catalog film is a reference to it, one that does not is a
film outside the catalog."""

from __future__ import annotations

import re
from dataclasses import dataclass

from crseval.language.lexicon import is_common_word
from crseval.language.title_catalog import TitleCatalog, title_key
from crseval.language.title_references import TitleReference
from crseval.language.title_shapes import (
    _FILM_WORD,
    _INTERJECTIONS,
    _LEAD_WORDS,
    _MARKUP,
    _OPENING_WORDS,
    _SMALL_WORDS,
    _SPACED_MARK,
    _TRAILING_YEAR,
    _WORD_TOKEN,
    _YEAR_PARENS,
    _with_year,
    _written_year,
    title_before_year,
    title_run,
)
from crseval.language.tokens import AnalysedText

# As in title_shapes, a pattern's opening lookahead "(?=[...])" only lets a scan skip fast to where it can match.

# Between two formatted titles of one list: '"Arrival", ‘Moon’ and “Sicario”'.
_FORMATTED_JOIN = re.compile(
    r"^[ \t]*(?:[\(\[]\s*(?:18|19|20)\d\d\s*[\)\]])?[ \t]*(?:,[ \t]*(?:and|or)?|and|or|&)[ \t]*$"
)
# Right before a title in any case: "the movie "the lighthouse"", "a film called 'heat'".
_TITLE_NAME_CUE = re.compile(r"\b(?:film|movie|flick|titled|called|named)[\s\"'“‘*_]*$", re.I)
# Labels of a film's card, not titles ("- Directed by X", "**Genre:** Drama").
_FIELD_LABEL = frozenset(
    """genre genres director directors directed starring stars cast actor actors plot year released release rating
    runtime language note summary synopsis written writer writers title""".split()
)
_JOINED_BEFORE = re.compile(r"(?<=[^\W_]),?[ \t]+(?:or|and)[ \t]+$")
# After these a capitalised name is put forward as a film ("Have you seen Zombian?").
_PROPOSAL_CUE = re.compile(
    r"(?=[hdwrsytc])"
    r"\b(?:have\s+you\s+(?:ever\s+|already\s+)?(?:seen|watched|heard\s+of)|did\s+you\s+(?:see|watch)|how\s+about"
    r"|what\s+about|recommend(?:\s+you)?|suggest(?:\s+you)?|you\s+(?:might|may|could|would|will)\s+(?:also\s+)?"
    r"(?:like|love|enjoy)|you\s+should\s+(?:also\s+)?(?:watch|try|see|check\s+out)|try|check\s+out)"
    r"(?:\s+the\s+(?:movie|film))?[ \t]+(?=[A-Z0-9])",
    re.I,
)
# "the movie It", "a thriller called High Sierra"; not "a girl named Anna", nor "Film Festival" (a name)
_NAME_CUE = re.compile(
    r"(?=[mftcds])"
    r"\b(?:(?:movie|film|flick)(?:\s+(?:titled|called|named))?|(?:thriller|comedy|drama|documentary|show|series)\s+"
    r"(?:titled|called|named))[ \t]+(?=[\"'“‘*_]*[A-Z0-9])"
)
# A name a weak cue offers ends the clause: "Have you seen Zombian?", not "Ryan Robbins and Kathryn Morris in ..."
_NAME_END = re.compile(r"^[\"'”’*_]*\s*(?:$|[.,;:!?)\n]|\s[-–—]\s|\s+(?:and|or)\s|\s+\()")
# In a list a name goes on with a comma only before the next name: "Shelley, a former ..." is no list.
_LIST_NAME_END = re.compile(
    r"^[\"'”’*_]*\s*(?:$|[.;:!?)\n]|,\s*(?:[\"'“‘*_]*[A-Z0-9]|and\s|or\s)|\s[-–—]\s|\s+(?:and|or)\s)"
)
# A line of a card ("Plot keywords: X, Y"), whose names are no list of films.
_CARD_LABEL = re.compile(r"\b(?:keywords?|genres?|starring|cast|directors?|stars|themes?|characters?)\s*:", re.I)
_ARTICLES = ("the", "a", "an")
_SENTENCE_GOES_ON = re.compile(
    r"(?:Have|Did|Do|Does|What|How|Why|Where|When|Who|You|I|We|They|He|She|Yes|No|So|But|And|Or|Is|Are|Was)"
    r"[ \t]+(?:I\b|[a-z])"
)
# After these a capitalised name is a film the writer saw or liked ("I haven't watched Coco").
_SEEN_CUE = re.compile(r"(?=[swle])\b(?:seen|watched|saw|liked|loved|enjoyed)[ \t]+(?=[A-Z0-9])", re.I)
# What joins the next item of a list of films: ", ", " and ", ", or " (after an optional year).
_JOIN_AFTER = re.compile(
    r"^[\s\"'”’*_]*(?:[\(\[]\s*(?:18|19|20)\d\d\s*[\)\]])?[\s\"'”’*_]*(?:,\s*(?:and\s+|or\s+)?|\s(?:and|or|&)\s+)"
)
# "Leonardo DiCaprio in Inception (2010)": a title after one of these is not the end of a longer title
_PERSON_JOIN = re.compile(r"(?:\b(?:in|with|by|from|starring|featuring|and)|:)\s+$", re.I)
# A list item: "1. X", "1) X", "1: X", "1 - X", "- X", "* X", "• X", "•X", and "1 X" (a bare number: only in a
# list numbered in sequence, see list_items).
_ITEM_LINE = re.compile(
    r"^[ \t]*(?:(?:\d{1,2}\s*[.):]|\d{1,2}[ \t]+[-–—]|[-*+])[ \t]+|•[ \t]*|(?P<bare>\d{1,2})[ \t]+(?=[^\W\d_]))"
    r"(?P<item>[^\n]+)",
    re.M,
)
_ITEM_SEPARATOR = re.compile(r"\s[-–—]\s|:\s|\s\(|\s*\|")
_ITEM_LABEL = re.compile(r"^(?:title|film|movie)\s*:\s*", re.I)  # "- Title: Taken (2008) | Plot: ..."
# A list introduced as films ("I would recommend the following items:", "Here are some movies:"), and as something
# else ("three reasons to watch it:", "The main actors of the movie:"): the noun named first says which.
_FILM_LIST_INTRO = re.compile(r"\b(?:recommend\w*|suggest\w*|movies?|films?|titles?|items?|watch\w*|picks?)\b", re.I)
_FILM_LIST_NOUN = re.compile(r"\b(?:movies?|films?|titles?|picks?)\b", re.I)
_OTHER_LIST_INTRO = re.compile(
    r"\b(?:reasons?|why|steps?|ways?|tips?|how\s+to|actors?|actress(?:es)?|cast|characters?|features?|aspects?"
    r"|highlights?|themes?|genres?|directors?|writers?|people|questions?|points|pros|cons|things)\b",
    re.I,
)


# The words a match of each cue starts with, as a whole token (as written for _NAME_CUE; in lower case for
# the others, which ignore case).
_CUE_WORDS = {
    _NAME_CUE: frozenset("movie film flick thriller comedy drama documentary show series".split()),
    _PROPOSAL_CUE: frozenset("have did how what recommend suggest you try check".split()),
    _SEEN_CUE: frozenset("seen watched saw liked loved enjoyed".split()),
}


_ANY_CUE_WORD = frozenset().union(*_CUE_WORDS.values())
_IGNORES_CASE = {cue: bool(cue.flags & re.IGNORECASE) for cue in _CUE_WORDS}


@dataclass(frozen=True)
class _Marked:
    """A span the text marks as a title: from formatting, a list item, a year, or a cue."""

    start: int
    end: int
    end_with_year: int  # the end of the reference with its "(Year)", for readers that skip it
    strong: bool  # formatting, a list item or a year: the span wins over catalog titles inside it
    lone_word: bool  # a single everyday word may be a title here ("the movie It", a list item)
    cue: str  # formatted, markup, list item, year, film word, proposal, seen, list join
    any_case: bool = False  # a title in lower case counts here (markup, "the movie "the lighthouse"")


def find_marked(catalog: TitleCatalog, analysed: AnalysedText, formatted: list[re.Match]) -> list[_Marked]:
    """Spans the text marks as titles, whether the catalog holds them or not (`formatted`: the
    text's _FORMATTED matches)."""
    text = analysed.text
    marked = _formatted_spans(catalog, text, formatted)
    items, list_numbers = list_item_spans(catalog, text)
    years, year_ends = _year_spans(catalog, text, list_numbers)
    return marked + items + years + _cue_spans(analysed, year_ends)


def _formatted_spans(catalog: TitleCatalog, text: str, formatted: list[re.Match]) -> list[_Marked]:
    """The formatted spans and inserted markup of the text, each with whether it counts by itself or as
    part of a list in prose."""
    marked = []
    spans = []  # (match, core, start, year after it, year inside it, markup, cued by itself)
    for match in formatted:
        group = match.lastgroup  # each alternative has one group
        inner = match.group(group)
        core = _SPACED_MARK.sub("", _TRAILING_YEAR.sub("", inner)).strip().rstrip(",.;").strip()
        if not core or core.endswith(":") or text[match.end() : match.end() + 1] == ":":
            continue  # "**Plot:**", "**Genre**:" are labels
        year = _YEAR_PARENS.match(text, match.end())
        inner_year = _TRAILING_YEAR.search(inner) is not None
        markup = group in _MARKUP
        before = text[max(0, match.start() - 40) : match.start()]
        cued = markup or bool(year) or inner_year or _FILM_WORD.search(before) is not None
        spans.append((match, core, match.start(group) + inner.find(core), year, inner_year, markup, cued))
    # a single everyday word also counts in a list in prose ("X, Y and Z") with a formatted title that counts
    # by itself: '"Arrival", ‘Moon’ and “Sicario”' (not "['Horse', 'British Isles']", a list of values)
    joins = [_FORMATTED_JOIN.match(text[a[0].end() : b[0].start()]) for a, b in zip(spans, spans[1:])]
    chain, chains = 0, []  # the list each span is in
    for number in range(len(spans)):
        chain += number > 0 and joins[number - 1] is None
        chains.append(chain)
    prose = {chains[n + 1] for n, join in enumerate(joins) if join and re.search(r"\b(?:and|or)\b|&", join.group())}
    strong_chains = {
        chains[n] for n, (_, core, *_, cued) in enumerate(spans) if cued or looks_like_title(catalog, core, False)
    }
    for number, (match, core, start, year, inner_year, markup, cued) in enumerate(spans):
        cued = cued or (
            chains[number] in prose
            and chains[number] in strong_chains
            and len([c for c in chains if c == chains[number]]) > 1
        )
        before = text[max(0, match.start() - 40) : match.start()]
        any_case = markup or bool(year) or inner_year or _TITLE_NAME_CUE.search(before) is not None
        end_with_year = year.end() if year else match.end(match.lastgroup) if inner_year else start + len(core)
        marked.append(
            _Marked(start, start + len(core), end_with_year, True, cued, "markup" if markup else "formatted", any_case)
        )
    return marked


def list_item_spans(catalog: TitleCatalog, text: str) -> tuple[list[_Marked], set[int]]:
    """The titles the items of the text's lists of films open with (an item with a year counts in any
    list), and where the bare numbers of items ("1  Black Panther (2018)") stand."""
    items, film_lists = list_items(catalog, text)
    marked = []
    list_numbers = {m.start("bare") for m in items if m.group("bare")}  # "1  Black Panther (2018)"
    for match, film_list in zip(items, film_lists):
        item, offset = match.group("item"), match.start("item")
        if item[:1] in "*_\"“'‘":
            continue  # a formatted title, read with the formatting (marked_titles)
        label = _ITEM_LABEL.match(item)
        if label:
            item, offset = item[label.end() :], offset + label.end()
        year = _YEAR_PARENS.search(item)
        cut = year.start() if year else len(item)
        separators = list(_ITEM_SEPARATOR.finditer(item[:cut]))
        for number, separator in enumerate(separators):
            following = separators[number + 1].start() if number + 1 < len(separators) else len(item)
            segment = item[separator.end() : following]
            lower = [w for w in re.findall(r"[^\W\d_][\w'’-]*", segment) if w[0].islower() and w not in _SMALL_WORDS]
            if separator.group().strip() in ("(", "|") or len(lower) >= 2:
                cut = separator.start()  # "Inception: A thief who ...": the rest describes the film
                break
        title = item[:cut].rstrip(" \t,.;:")
        if re.search(r"[A-Z][\w.'’-]*\s+as\s+[A-Z]", title) or title.count(",") > 1 or re.search(r"[\"“”*]", title):
            continue  # a cast line ("Emma Stone as Gwen Stacy"), a list of names, a label with a title in it
        if title and (year or film_list):
            end = offset + len(title)
            marked.append(
                _Marked(
                    offset,
                    end,
                    offset + year.end() if year and cut == year.start() else end,
                    True,
                    True,
                    "list item",
                )
            )
    return marked, list_numbers


def list_items(catalog: TitleCatalog, text: str) -> tuple[list[re.Match], list[bool]]:
    """The list items of `text` (_ITEM_LINE; a bare number only where the next or the previous number
    numbers another item too) and, for each, whether its list is one of films. A list is a run of
    items that no intro line (one ending with ":") interrupts; it is one of films when an item holds a
    year or a catalog title, or its intro names films first ("Here are some movies with great
    actors:") and not something else ("Three reasons to watch it:", "The actors of the movie:"), or,
    with an intro that names neither, when a list of films came before it."""
    items = _item_lines(text)
    bare = {int(m.group("bare")) for m in items if m.group("bare")}
    items = [m for m in items if not m.group("bare") or {int(m.group("bare")) - 1, int(m.group("bare")) + 1} & bare]
    blocks: list[list[re.Match]] = []
    for match in items:
        gap = text[blocks[-1][-1].end() : match.start()] if blocks else ":"
        if any(line.rstrip().endswith(":") for line in gap.split("\n")):
            blocks.append([match])
        else:
            blocks[-1].append(match)
    film_lists: list[bool] = []
    films_before = False
    for block in blocks:
        intro = text[: block[0].start()].rstrip().rsplit("\n", 1)[-1]
        other = _OTHER_LIST_INTRO.search(intro)
        named = _FILM_LIST_NOUN.search(intro)
        if any(
            _YEAR_PARENS.search(m.group("item")) or catalog.title_of(_ITEM_SEPARATOR.split(m.group("item"))[0].strip())
            for m in block
        ):
            film_list = True
        elif other is not None:
            film_list = named is not None and named.start() < other.start()
        else:
            film_list = films_before or _FILM_LIST_INTRO.search(intro) is not None
        films_before = films_before or film_list
        film_lists += [film_list] * len(block)
    return items, film_lists


def _item_lines(text: str) -> list[re.Match]:
    """`_ITEM_LINE.finditer(text)`, tried at the line starts only (the pattern starts with "^"), skipping
    those inside a match as finditer would."""
    matches, free, start = [], 0, 0
    while start >= 0:
        match = _ITEM_LINE.match(text, start) if start >= free else None
        if match:
            matches.append(match)
            free = match.end()
        start = text.find("\n", start) + 1 or -1
    return matches


def _year_spans(catalog: TitleCatalog, text: str, list_numbers: set[int]) -> tuple[list[_Marked], set[int]]:
    """The titles read back from a "(Year)" (and a film joined to one: "Zootopia or Moana (2016)"), and
    where they end (`list_numbers`: where the bare numbers of list items stand, no part of a title)."""
    marked = []
    year_ends = set()  # where titles read before a year end: joined names there are the year rule's to split
    for year in _YEAR_PARENS.finditer(text) if "(" in text or "[" in text else ():
        start = title_before_year(catalog, text, year.start(), list_numbers)
        if start is not None:
            end = len(text[: year.start()].rstrip())
            marked.append(_Marked(start, end, year.end(), True, True, "year"))
            year_ends.add(end)
            joined = _JOINED_BEFORE.search(text, max(0, start - 8), start)
            if joined:  # "Zootopia or Moana (2016)": the film before the join is one too, read as a list join
                left = title_before_year(catalog, text, joined.start(), list_numbers)
                first = text[left : joined.start()].split()[0].lower() if left is not None else ""
                if left is not None and first not in _LEAD_WORDS | _OPENING_WORDS | _INTERJECTIONS:
                    marked.append(_Marked(left, joined.start(), joined.start(), False, False, "list join"))
    return marked, year_ends


def _cue_spans(analysed: AnalysedText, year_ends: set[int]) -> list[_Marked]:
    """The title-case names after a cue: a film word ("the movie It"), a proposal ("Have you seen
    Zombian?"), a film seen or liked (`year_ends`: where titles read before a year end)."""
    text = analysed.text
    marked = []
    places = [i for i, word in enumerate(analysed.lowered) if word in _ANY_CUE_WORD]
    for cue, lone_word, name in (
        (_NAME_CUE, True, "film word"),
        (_PROPOSAL_CUE, False, "proposal"),
        (_SEEN_CUE, False, "seen"),
    ):
        for match in _cue_matches(cue, analysed, places):
            run = title_run(text, match.end())
            if run is not None and _SENTENCE_GOES_ON.match(text[run[0] : run[0] + 20]):
                continue  # "a good movie Have you seen ...": a sentence its writer did not punctuate
            if run is not None and run[1] in year_ends and re.search(r"\s(?:and|or)\s", text[run[0] : run[1]]):
                continue  # "try Hot Tub Time Machine and Super Troopers (2001)": two films, split by the year rule
            if run is not None and (name == "film word" or _NAME_END.match(text[run[1] :])):
                marked.append(_Marked(*run, _with_year(text, run[1]), False, lone_word, name))
    return marked


def _cue_matches(cue: re.Pattern, analysed: AnalysedText, places: list[int]) -> list[re.Match]:
    """`cue.finditer(text)`, tried only where one of its words (_CUE_WORDS) starts a token (`places`:
    the tokens that are any cue's word in lower case). A cue that ignores case is looked up in lower
    case, which in ASCII text is how the pattern ignores case; other text (where Unicode folds letters
    further: "ſ" is "s") is scanned whole."""
    text = analysed.text
    ignore_case = _IGNORES_CASE[cue]
    if ignore_case and not text.isascii():
        return list(cue.finditer(text))
    words, first_words = analysed.lowered if ignore_case else analysed.keys, _CUE_WORDS[cue]
    matches, free = [], 0  # free: where the last match ended (matches do not overlap)
    for i in [i for i in places if words[i] in first_words]:
        match = cue.match(text, analysed.starts[i])
        if match and match.start() >= free:
            matches.append(match)
            free = match.end()
    return matches


def resolve(
    catalog: TitleCatalog, text: str, found: list[TitleReference], marked: list[_Marked]
) -> tuple[list[TitleReference], list[_Marked]]:
    """Catalog references and out-of-catalog titles: a marked span that names a catalog film
    is a reference to it; one that does not is an out-of-catalog title, which a formatted,
    list or year span stays even with a catalog title inside ("Blade Runner 2049 (2017)")."""
    references = list(found)
    unknown: list[_Marked] = []
    pending = sorted(marked, key=lambda m: (m.start, not m.strong, m.start - m.end))
    while pending:
        span = pending.pop(0)
        if any(u.start < span.end and span.start < u.end for u in unknown):
            continue
        surface = text[span.start : span.end]
        overlapping = [r for r in references if r.start < span.end and span.start < r.end]
        title = catalog.title_of(surface, _written_year(text[span.end : span.end_with_year]))
        if title is not None:
            inside = all(span.start <= r.start and r.end <= span.end for r in overlapping)
            if not any(r.title == title for r in overlapping) and (span.strong and inside or not overlapping):
                references = [r for r in references if r not in overlapping]
                references.append(TitleReference(title, span.start, span.end, "", "marked"))
            continue  # "Twelve" inside "Ocean's Twelve" stays the longer film
        possessive = span.end_with_year > span.end or span.cue == "markup"  # "Porky's (1981)"
        if not looks_like_title(catalog, surface, span.lone_word, span.any_case, possessive):
            continue
        inside = [r for r in overlapping if span.start <= r.start and r.end <= span.end]
        if len(inside) < len(overlapping) or (inside and not span.strong):
            continue
        if (
            inside
            and inside[-1].end == span.end
            and _PERSON_JOIN.search(text[span.start : inside[-1].start])
            and catalog.kind[inside[-1].title] == "plain"
        ):
            continue  # "Tom Hanks in Cast Away (2000)", "Bruce Willis: Looper (2012)": the film is the catalog's
            # (but "Southside with You (2016)" is no "You")
        references = [r for r in references if r not in inside]
        unknown.append(span)
        joined = _JOIN_AFTER.match(text[span.end_with_year :])
        if joined:  # "Arrival (2016) and Moon": the next name of a list of films
            run = title_run(text, span.end_with_year + joined.end())
            if run is not None and _joins_list(text, run):
                pending.insert(0, _Marked(*run, _with_year(text, run[1]), False, False, "list join"))
    for ref in list(references):
        joined = _JOIN_AFTER.match(text[ref.end :])
        if joined:  # "Heat or The Quiet Harbour": a known film, then the next name of the list
            run = title_run(text, ref.end + joined.end())
            if run is None or not _joins_list(text, run):
                continue
            if not any(r.start < run[1] and run[0] < r.end for r in references + unknown):
                surface = text[run[0] : run[1]]
                if catalog.title_of(surface) is None and looks_like_title(catalog, surface, False):
                    unknown.append(_Marked(*run, _with_year(text, run[1]), False, False, "list join"))
    references.sort(key=lambda r: r.start)
    unknown.sort(key=lambda m: m.start)
    return references, unknown


def _joins_list(text: str, run: tuple[int, int]) -> bool:
    """Whether a name after "X and", "X," continues a list of films (not a card line, not an aside)."""
    line = text[text.rfind("\n", 0, run[0]) + 1 : run[0]]
    return _LIST_NAME_END.match(text[run[1] :]) is not None and _CARD_LABEL.search(line) is None


def looks_like_title(
    catalog: TitleCatalog, surface: str, lone_word: bool, any_case: bool = False, possessive: bool = False
) -> bool:
    """Whether a marked span reads as a film's title: title case, a few words, not a person, a
    language, a genre or a card label; a single everyday word only where `lone_word` allows; in
    any case (a few words, not a sentence) where `any_case` allows; ending in a possessive only
    where `possessive` allows ("Porky's (1981)", but not "the movie Spielberg's")."""
    words = [w.rstrip("!?.,") for w in _WORD_TOKEN.findall(surface) if w[0].isalnum()]
    if not words or len(words) > 12 or surface.rstrip().endswith(":"):
        return False
    lower_case = any(w[:1].islower() and w.lower() not in _SMALL_WORDS for w in words) or words[0][:1].islower()
    if lower_case and not (any_case and len(words) <= 8 and not surface.rstrip().endswith(".")):
        return False
    if words[0].lower() in _FIELD_LABEL or title_key(surface) in catalog.not_titles:
        return False
    if (words[-1].endswith(("'s", "’s")) and not possessive) or words == ["I"]:
        return False
    if any(a.lower() == b.lower() and a.lower() in _ARTICLES for a, b in zip(words, words[1:])):
        return False  # "The The Secret": a stutter, not a title (but "La La Land", "The Bye Bye Man")
    return len(words) > 1 or lone_word or not (is_common_word(words[0]) or len(words[0]) < 3)
