"""Which catalog films a text refers to, and whether it recommends them or only mentions them.

A string equal to a catalog title is not yet a film reference: "from 1984" is a year, "Bram
Stoker" a writer, "Her performance" a pronoun, "X-Men: First Class" a longer title than the
catalog's "X-Men". The recognizer finds references from what a text offers:

- formatting: a quoted, bold or italic span that is a title, ignoring case, punctuation,
  diacritics, a leading article and a year in parentheses ("'The Lord of the Rings' (2001)");
- a title written verbatim (case-sensitive) that is not part of a longer name: no capitalised
  word right before or after it, no ": Subtitle", no "The" or "of Something" around it;
- a cue for titles that are also ordinary text. A title that is a number or a single letter
  ("1984", "300", "X") needs formatting, a year in parentheses after it, a list-item heading or
  a film word before it ("the movie 2012"); a title that is an everyday word or phrase ("War",
  "Her", "The Help") also counts when capitalised in mid-sentence; a title that is part of a
  person's name in the catalog ("Stoker", "Juno") also counts when it is in the candidate list
  the system was given, or capitalised in mid-sentence and not after "by", "starring"...

People type titles in any case ("i liked shutter island", "Cabin in the woods"): in a user's
text (`by_user`) a title of two or more words also counts in another case or without its leading
article, when it has a rare word or a cue; in a system's text only when it starts with a capital.

Each reference is *recommended* (put forward to watch) unless it is only *mentioned*: named
right after a back-reference ("since you liked X", "similar to X", "the director of X", "along
the lines of X"), an example in a question about the user's taste ("do you prefer X or Y?"), or
a film the user named that the reply does not propose again. "Have you seen X?" proposes X.

Films the catalog does not hold are read where a text marks a title (`unknown`, as written,
without year or markup): a list item ("1: Arrival (2016)", "- Upgrade"), "Title (Year)" in
running text, a quoted, bold or italic title, a title-case name after "the movie", or after a
proposal ("have you seen Zombian?") or joined to another film by "and", "or" or a comma. Words
inside such a title are no catalog film and no concept (`spans` covers them, with their year).
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_left
from dataclasses import dataclass, field
from itertools import compress, islice

import pandas as pd

from crseval.core.fields import PEOPLE_FIELDS
from crseval.language.genres import GENRE_NAMES
from crseval.language.lexicon import is_common_phrase, is_common_word
from crseval.language.tokens import AnalysedText, token_strings, tokenize

# A pattern that opens with a lookahead of the characters a match can start with, "(?=[...])", matches
# what it would match without: the lookahead only lets a scan skip the other places fast.

# Spans the writer marked as a name: quotes, bold, italics.
_FORMATTED = re.compile(
    r"(?=[*_\"“‘'])"
    r"(?:\*\*(?P<b>[^*\n]{1,90}?)\*\*"
    r"|__(?P<u>[^_\n]{1,90}?)__"
    r"|(?<![\w*])\*(?P<i>[^*\s][^*\n]{0,88}?)\*(?![\w*])"
    r"|(?<!\w)_(?P<e>[^_\s][^_\n]{0,88}?)_(?!\w)"
    r"|\"(?P<q>[^\"\n]{1,90}?)\""
    r"|“(?P<c>[^”\n]{1,90}?)”"
    r"|‘(?P<s>[^’\n]{1,90}?)’(?!\w)"
    r"|(?<!\w)'(?P<a>[^\n]{1,90}?)'(?!\w))"
)
_TRAILING_YEAR = re.compile(r"\s*[\(\[]\s*(?:18|19|20)\d\d[^)\]]{0,20}[\)\]]\s*$|,\s*(?:18|19|20)\d\d\s*$")
_YEAR_AFTER = re.compile(r"^\s*[\"'”’*_]*\s*[\(\[]\s*(?:18|19|20)\d\d\b")
_LIST_MARKER = re.compile(r"[ \t]*(?:\d{1,2}[.):]|[-*•+])?[ \t]*[\"'“‘*_]*")  # the start of a line before a heading
_HEADING_END = re.compile(r"^[\"'”’*_]*\s*(?:$|\n|:|\(|,|\s[-–—]\s|[-–—]\s)")
_SENTENCE_START = re.compile(r"(?:^|[.!?:;\n]|^\s*(?:\d{1,2}[.):]|[-*•+]))[\s\"'“‘*_(\[]*$")
_FILM_WORD = re.compile(
    r"\b(?:film|films|movie|movies|flick|classic|titled|called|named|watch|watching|recommend|suggest|try|see)"
    r"[\s\"'“‘*_]*$",
    re.I,
)
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
_LIST_JOIN = re.compile(
    r"^[\s\"'”’*_]*(?:\(\s*(?:18|19|20)\d\d[^)]{0,20}\))?[\s\"'”’*_]*(?:,\s*(?:and|or)?|and|or|&)\s*[\"'“‘*_]*$"
)
# a list item followed by another: "as X, Y, and Z" shares the role of X, "If you liked X, Y is..." does not
_LIST_GOES_ON = re.compile(r"^[\s\"'”’*_]*(?:\(\s*(?:18|19|20)\d\d[^)]{0,20}\))?[\s\"'”’*_]*(?:,|and\b|or\b|&)")
# "X and Y" shares a role; "If you liked X, Y is..." does not (a bare comma may end a clause)
_ROLE_JOIN = re.compile(
    r"^[\s\"'”’*_]*(?:\(\s*(?:18|19|20)\d\d[^)]{0,20}\))?[\s\"'”’*_]*,?\s*(?:and|or|&)\s*[\"'“‘*_]*$"
)
_ARTICLE_BEFORE = re.compile(r"\b(?:The|A|An)\s+$")
_OF_NAME_AFTER = re.compile(r"^\s+of\s+(?:the\s+)?[A-Z]")
_SUBTITLE_AFTER = re.compile(r"^\s*[:–—-]\s*[A-Z0-9]")
_POSSESSIVE_AFTER = re.compile(r"^['’]s\b")
_WORD_BEFORE = re.compile(r"([\w'’-]+)[ \t]+$")
_CAPITALISED_WORD_AFTER = re.compile(r"^[ \t]+([A-Z][\w-]*)")
_CLAUSE_BREAK = re.compile(r"[.!?;:\n]|\s[-–—]\s|\bbut\b|\bwhile\b|\bwhereas\b", re.I)

# A film named right after one of these is referred to, not proposed.
_BACK_REFERENCE = re.compile(
    r"(?:(?<!have\s)(?<!did\s)\byou(?:'ve|\s+have|\s+already|\s+also)?\s+(?:liked|loved|enjoyed|mentioned|watched|seen|saw|asked\s+about|named|"
    r"brought\s+up|picked|chose|like|love|enjoy|enjoyed\s+watching)"
    r"|\bsince\s+you|\bif\s+you\s+(?:liked|loved|enjoyed|like|love|enjoy)"
    r"|\bsimilar\s+to|\b(?:films?|movies?|something|one|ones|titles?|stories|story|vibe|vibes|feel|tone)\s+like"
    r"|\bjust\s+like|\bmuch\s+like|\blike\s+in|\breminiscent\s+of|\bin\s+the\s+(?:vein|spirit|style)\s+of|\bfans?\s+of"
    r"|\bunlike|\bthan|\bas\s+in|\b(?:director|directors|makers|creators|writer|writers|star|stars|author|team)\s+(?:of|behind)"
    r"|\bsequel\s+to|\bprequel\s+to|\bremake\s+of|\bbased\s+on|\binspired\s+by|\bother\s+than|\binstead\s+of|\bbesides"
    r"|\bapart\s+from|\baside\s+from|\bcompared\s+to|\bcomparison\s+to|\bbeyond|\bafter\s+(?:watching|seeing)"
    r"|\b(?:mood|tone|story|plot|cast|ending|themes?|sound|vibe|feel|atmosphere)\s+of|\bin\s+(?:the\s+)?(?:film|movie)?"
    r"|\binterest(?:ed)?\s+in|\bpreference\s+for|\bfond\s+of|\bsimilar\s+(?:\w+\s+){0,2}(?:to|as)|\bsame\s+(?:\w+\s+){0,2}as"
    r"|\bshared\s+about|\bmentioned|\balong\s+the\s+lines\s+of"
    r"|\b(?:wrote|directed|produced|(?:starred|stars|starring|appeared|acted|played)\s+in))"
    r"(?:[ \t]+\w+){0,3}[\s\"'“‘*_]*$",
    re.I,
)
_PREFERENCE_QUESTION = re.compile(r"\b(?:do|would)\s+you\s+(?:rather|prefer)\b", re.I)
# A film the user named counts as recommended again only with one of these around it.
_PROPOSAL_BEFORE = re.compile(
    r"\b(?:recommend\w*|suggest\w*|try|check\s+out|consider\w*|watch|watching|enjoy|give\b.*\b(?:try|shot|chance|go)"
    r"|how\s+about|what\s+about|might\s+(?:like|love)|'ll\s+(?:like|love)|would\s+(?:like|love)|go\s+(?:for|with)|pick)\b",
    re.I,
)
_PROPOSAL_AFTER = re.compile(
    r"^[^.!?\n]*?\b(?:(?:great|good|perfect|excellent|solid|fantastic|ideal|top)\s+(?:choice|pick|option|fit|match|recommendation)"
    r"|worth\s+(?:watching|a\s+watch|seeing|checking)|(?:would|could|might|will)\s+(?:be|suit|fit|interest|appeal|satisfy)"
    r"|must-see|recommend)",
    re.I,
)


def _fold(text: str) -> str:
    """Case, diacritics, punctuation and a leading article removed, for comparing formatted spans to titles."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower().replace("&", " and ")
    words = re.sub(r"[^a-z0-9]+", " ", ascii_text).split()
    if len(words) > 1 and words[0] in ("the", "a", "an"):
        words = words[1:]
    return " ".join(words)


def title_key(title: str) -> str:
    """How two spellings of one film's title compare when neither is a catalog key: case, diacritics
    and punctuation ignored, letters of any script kept ("Zoe’s Tale" = "zoe's tale")."""
    plain = unicodedata.normalize("NFKD", title).casefold().replace("&", " and ")
    plain = unicodedata.normalize("NFC", "".join(c for c in plain if not unicodedata.combining(c)))
    return " ".join(re.sub(r"[\W_]+", " ", plain).split())


# Lower-case words a title may hold between its capitalised words ("The Lady from the Banks").
_SMALL_WORDS = frozenset(
    "a an the and or nor but of in on at to for with from by as vs vs. de la le les du des del el y et into".split()
)
# A word, a number or one mark; a word keeps its inner marks ("A.I.", "Sorcerer's", "Startup.com", "Live!").
_WORD_TOKEN = re.compile(r"[^\W_][\w'’.&-]*[!?]?|[^\w\s]")
_SPACE = re.compile(r"\s")
_YEAR_PARENS = re.compile(r"(?=[ \t(\[])[ \t]*[\(\[]\s*(?:18|19|20)\d\d\s*[\)\]]")
_ITEM_LINE = re.compile(r"^[ \t]*(?:\d{1,2}\s*[.):]|[-*•+])[ \t]+(?P<item>[^\n]+)", re.M)
_ITEM_SEPARATOR = re.compile(r"\s[-–—]\s|:\s|\s\(|\s*\|")
_ITEM_LABEL = re.compile(r"^(?:title|film|movie)\s*:\s*", re.I)  # "- Title: Taken (2008) | Plot: ..."
_LOOSE_MARKS = frozenset(",.:'’-!")  # marks people leave out when they type a title
_CONTRACTIONS = frozenset("who's what's it's that's there's here's he's she's let's where's how's".split())
# Everyday words that open a sentence as an answer ("Yes, ..."), not as a film of that name.
_INTERJECTIONS = frozenset("yes no sure okay ok well oh hi hello hey thanks please wow".split())
# Labels of a film's card, not titles ("- Directed by X", "**Genre:** Drama").
_FIELD_LABEL = frozenset(
    """genre genres director directors directed starring stars cast actor actors plot year released release rating
    runtime language note summary synopsis written writer writers title""".split()
)
# Words a sentence may open with before a title ("Try Heat (1995)", "Sure: Arrival (2016)").
_LEAD_WORDS = frozenset(
    """i you we it how what have did sure yes no ok okay hey hi hello well like love liked loved recommend about is are
    was if since because for with in and or also maybe perhaps watch try consider see check enjoy""".split()
)
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
# A list introduced as films ("I would recommend the following items:", "Here are some movies:").
_FILM_LIST_INTRO = re.compile(r"\b(?:recommend\w*|suggest\w*|movies?|films?|titles?|items?|watch\w*|picks?)\b", re.I)
_PRONOUNS = frozenset("i i'd i'm i've i'll you we they he she".split())  # "one movie I'd recommend"
# After these a capitalised name is a film the writer saw or liked ("I haven't watched Coco").
_SEEN_CUE = re.compile(r"(?=[swle])\b(?:seen|watched|saw|liked|loved|enjoyed)[ \t]+(?=[A-Z0-9])", re.I)
# What joins the next item of a list of films: ", ", " and ", ", or " (after an optional year).
_JOIN_AFTER = re.compile(
    r"^[\s\"'”’*_]*(?:[\(\[]\s*(?:18|19|20)\d\d\s*[\)\]])?[\s\"'”’*_]*(?:,\s*(?:and\s+|or\s+)?|\s(?:and|or|&)\s+)"
)
# "Leonardo DiCaprio in Inception (2010)": a title after one of these is not the end of a longer title
_PERSON_JOIN = re.compile(r"(?:\b(?:in|with|by|from|starring|featuring|and)|:)\s+$", re.I)
# Before a title typed in lower case by a user: "i have watched the lord of the rings twice".
_LOOSE_CUE = re.compile(r"\b(?:seen|watched|watch|liked|loved|enjoyed|like|love|about|movie|film)\s+$", re.I)


def _second_tokens(keys) -> dict[str, frozenset[str]]:
    """First token -> the second tokens of the keys (token runs of two or more) that start with it."""
    seconds: dict[str, set[str]] = {}
    for key in keys:
        seconds.setdefault(key[0], set()).add(key[1])
    return {first: frozenset(second) for first, second in seconds.items()}


# The words a match of each cue starts with, as a whole token (as written for _NAME_CUE; in lower case for
# the others, which ignore case).
_CUE_WORDS = {
    _NAME_CUE: frozenset("movie film flick thriller comedy drama documentary show series".split()),
    _PROPOSAL_CUE: frozenset("have did how what recommend suggest you try check".split()),
    _SEEN_CUE: frozenset("seen watched saw liked loved enjoyed".split()),
}


_ANY_CUE_WORD = frozenset().union(*_CUE_WORDS.values())
_IGNORES_CASE = {cue: bool(cue.flags & re.IGNORECASE) for cue in _CUE_WORDS}


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


def _last_word_tokens(text: str, start: int, end: int, keep: int = 18) -> list[re.Match]:
    """The _WORD_TOKEN matches in text[start:end], or, of a long stretch, only its last ones (at least
    `keep`): a token holds no white space, so a scan begun just after one reads the same tokens from
    there as a scan of the whole stretch."""
    cut = end - 160
    space = _SPACE.search(text, cut, end) if cut > start else None
    if space:
        tokens = list(_WORD_TOKEN.finditer(text, space.end(), end))
        if len(tokens) >= keep:
            return tokens
    return list(_WORD_TOKEN.finditer(text, start, end))


def _with_year(text: str, end: int) -> int:
    """The end of a reference with the "(Year)" right after it, if any."""
    year = _YEAR_PARENS.match(text, end)
    return year.end() if year else end


@dataclass(frozen=True)
class _Marked:
    """A span the text marks as a title: from formatting, a list item, a year, or a cue."""

    start: int
    end: int
    end_with_year: int  # the end of the reference with its "(Year)", for readers that skip it
    strong: bool  # formatting, a list item or a year: the span wins over catalog titles inside it
    lone_word: bool  # a single everyday word may be a title here ("the movie It", a list item)
    cue: str  # formatted, list item, year, film word, proposal, seen, list join


@dataclass(frozen=True)
class TitleReference:
    title: str
    start: int
    end: int
    role: str  # "recommended" or "mentioned"
    cue: str  # what made the span a reference: formatted, verbatim, year, heading, film word, candidate, capitalised,
    # loose case, marked (a list item or cue span that names the catalog film)


@dataclass
class RecognisedTitles:
    """The catalog films of one text, each once, in order of first reference; and the films it
    names that the catalog does not hold (`unknown`, as written), which are neither catalog
    concepts nor hallucinations."""

    recommended: list[str] = field(default_factory=list)
    mentioned: list[str] = field(default_factory=list)
    references: list[TitleReference] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)

    @property
    def all(self) -> list[str]:
        return self.recommended + [t for t in self.mentioned if t not in self.recommended]


class TitleRecognizer:
    """Film references in free text, for the catalog of `films` (title column) and its people."""

    def __init__(self, films: pd.DataFrame, people: list[str] | None = None):
        self.titles: dict[tuple[str, ...], str] = {}
        self.folded: dict[str, list[str]] = {}
        for title in films["title"].tolist():
            key = tuple(t for t, _, _ in tokenize(title))
            if key:
                self.titles.setdefault(key, title)
            self.folded.setdefault(_fold(title), []).append(title)
        self._lengths: dict[str, list[int]] = {}
        for key in self.titles:
            self._lengths.setdefault(key[0], []).append(len(key))
        for first in self._lengths:
            self._lengths[first] = sorted(set(self._lengths[first]), reverse=True)
        if people is None:
            people = [v for f in PEOPLE_FIELDS if f in films for values in films[f] for v in values]
        name_words = {w.lower() for name in people for w in re.findall(r"[A-Za-z]+", name) if len(w) > 1}
        self.people = frozenset(name.lower() for name in people)  # "written by Antwone Fisher": the person
        self.kind = {title: self._classify(title, name_words) for title in self.titles.values()}
        # titles of two or more words in any case, with or without their leading article ("cabin in the woods")
        loose: dict[tuple[str, ...], set[str]] = {}
        for key, title in self.titles.items():
            words = tuple(t.lower() for t in key if t not in _LOOSE_MARKS)  # "monsters inc" for "Monsters, Inc."
            for variant in (words, words[1:] if words and words[0] in ("the", "a", "an") else ()):
                if sum(w.isalnum() for w in variant) >= 2:
                    loose.setdefault(variant, set()).add(title)
        self.loose = {key: titles.pop() for key, titles in loose.items() if len(titles) == 1}
        self._loose_lengths: dict[str, list[int]] = {}
        for key in self.loose:
            self._loose_lengths.setdefault(key[0], []).append(len(key))
        for first in self._loose_lengths:
            self._loose_lengths[first] = sorted(set(self._loose_lengths[first]), reverse=True)
        # what a list item or quoted name may be without being a film: a person, a language, a genre
        languages = [v for values in films["language"] for v in values] if "language" in films else []
        self.not_titles = frozenset(title_key(v) for v in [*people, *languages, *GENRE_NAMES])
        self._title_words: dict[str, tuple[str, ...]] = {}
        self._span_titles: dict[str, str | None] = {}
        # first token -> the second tokens of the longer titles (every loose title has two words or more),
        # and the one-token titles, to skip the places where no title starts
        self._title_starts = _second_tokens(key for key in self.titles if len(key) > 1)
        self._loose_pairs = frozenset(key[:2] for key in self.loose)  # the first two words of each
        self._one_token_titles = frozenset(key[0] for key in self.titles if len(key) == 1)
        self._first_tokens = frozenset(key[0] for key in self.titles)

    @staticmethod
    def _classify(title: str, name_words: set[str]) -> str:
        words = re.findall(r"[^\W\d_]+", title)
        if not words or len(title) <= 2:
            return "number"  # "1984", "300", "50/50", "X", "W."
        if len(words) > 1 and any(w[0].isupper() for w in words[1:]):
            return "plain"  # "The Dark Knight": title case is a cue in itself (matching is case-sensitive)
        if words[0][0].isupper() and re.search(r"\s\d", title):
            return "plain"  # "District 9", "Apollo 13": a capitalised word and a number name a film
        if len(words) == 1 and words[0].lower() in name_words and not is_common_phrase(words):
            return "name"
        if is_common_phrase(words):
            return "common"
        if len(words) == 1 and words[0].lower() in name_words:
            return "name"
        return "plain"

    def needs_cue(self, title: str) -> bool:
        """Whether a title written verbatim in running text is not recognised without a cue."""
        return self.kind.get(title, "plain") != "plain"

    def quoted(self, title: str) -> str:
        """How a writer who wants to be understood writes the title: in quotes when it needs a cue."""
        return f'"{title}"' if self.needs_cue(title) else title

    # ------------------------------------------------------------------ recognition

    def recognise(
        self,
        text: str | AnalysedText,
        *,
        candidates=(),
        user_text: str | AnalysedText = "",
        context_titles=(),
        by_user: bool = False,
    ) -> RecognisedTitles:
        """The films `text` refers to, and the films it names that the catalog does not hold.
        `candidates`: titles the writer was given (a cue for ambiguous titles); `user_text`: the
        message the text answers (films named there and not proposed again are mentioned; read as
        typed by a person); `context_titles`: other films the user named before; `by_user`: the
        text is a user's (titles typed in any case count). Either text may be given analysed
        (crseval.language.tokens.AnalysedText), so that its tokens are reused."""
        candidates = set(candidates)
        named_by_user = set(context_titles)
        if user_text:
            named_by_user |= {r.title for r in self._read(AnalysedText.of(user_text), candidates, True)[0]}
        # a film the user named is a cue in the reply, as a candidate is ("the mood of X")
        analysed = AnalysedText.of(text)
        text = analysed.text
        references, marked = self._read(analysed, candidates | named_by_user, by_user)
        result = RecognisedTitles(references=[])
        for number, ref in enumerate(references):
            previous = result.references[-1] if result.references else None
            between = text[previous.end : ref.start] if previous is not None else ""
            if previous is not None and (
                _ROLE_JOIN.match(between) or (_LIST_JOIN.match(between) and _LIST_GOES_ON.match(text[ref.end :]))
            ):
                role = previous.role  # "the director of X and Y", "as X, Y, and Z": a list shares its role
            else:
                following = references[number + 1].start if number + 1 < len(references) else len(text)
                role = self._role(text, ref, named_by_user, following)
            result.references.append(TitleReference(ref.title, ref.start, ref.end, role, ref.cue))
        for ref in result.references:
            if ref.role == "recommended" and ref.title not in result.recommended:
                result.recommended.append(ref.title)
        for ref in result.references:
            if ref.role == "mentioned" and ref.title not in result.recommended and ref.title not in result.mentioned:
                result.mentioned.append(ref.title)
        keys = set()
        for span in marked:
            surface = text[span.start : span.end]
            if title_key(surface) not in keys:
                keys.add(title_key(surface))
                result.unknown.append(surface)
        return result

    def spans(self, text: str | AnalysedText, candidates=(), by_user: bool = False) -> list[tuple[int, int]]:
        """Character spans of film references, catalog or not, an out-of-catalog film's with its
        "(Year)" (for extractors that must not read inside titles)."""
        references, marked = self._read(AnalysedText.of(text), set(candidates), by_user)
        return sorted([(r.start, r.end) for r in references] + [(m.start, m.end_with_year) for m in marked])

    def _read(
        self, analysed: AnalysedText, candidates: set[str], by_user: bool
    ) -> tuple[list[TitleReference], list[_Marked]]:
        """Catalog references and the out-of-catalog titles the text marks, neither overlapping the other."""
        text = analysed.text
        formatted = list(_FORMATTED.finditer(text))
        references = self._references(analysed, formatted, candidates, by_user)
        return self._resolve(text, references, self._marked(analysed, formatted))

    def _references(
        self, analysed: AnalysedText, formatted: list[re.Match], candidates: set[str], by_user: bool = False
    ) -> list[TitleReference]:
        """Catalog films the text names: formatted spans (`formatted`: the text's _FORMATTED matches)
        that are titles, then verbatim and loosely typed titles with a cue."""
        text = analysed.text
        found: list[TitleReference] = []
        covered: list[tuple[int, int]] = []
        for match in formatted:
            group = match.lastgroup  # each alternative has one group
            inner_start = match.start(group)
            inner = match.group(group)
            core = _TRAILING_YEAR.sub("", inner).strip()
            title = self._title_of(core)  # "Waiting..." and "Waiting" are two films
            if title is None:
                core = core.rstrip(",.;:").strip()
                title = self._title_of(core)
            if title is not None:
                offset = inner.find(core)
                start = inner_start + max(offset, 0)
                found.append(TitleReference(title, start, start + len(core), "", "formatted"))
                covered.append((match.start(), match.end()))
        keys, lowered = analysed.keys, analysed.lowered
        lengths, loose_lengths = self._lengths, self._loose_lengths
        # the words people do not leave out when they type a title, and where they stand
        is_kept = [word not in _LOOSE_MARKS for word in lowered]
        kept, kept_words = list(compress(range(len(lowered)), is_kept)), list(compress(lowered, is_kept))
        # where a title may start (its first token, or first two), as written or typed loosely (at kept[r])
        starts, loose_pairs, none = self._title_starts, self._loose_pairs, frozenset()
        firsts = [i for i, key in enumerate(keys) if key in self._first_tokens]
        longer = {i for i in firsts if i + 1 < len(keys) and keys[i + 1] in starts.get(keys[i], none)}
        single = [i for i in firsts if keys[i] in self._one_token_titles]
        loose_at = {
            kept[r]: r for r, pair in enumerate(zip(kept_words, islice(kept_words, 1, None))) if pair in loose_pairs
        }
        weak: list[TitleReference] = []
        free = 0  # the first token no earlier title covers
        for i in sorted(longer.union(single, loose_at)):
            if i < free:
                continue
            hit = None
            for length in lengths.get(keys[i], ()):
                if length > 1 and i not in longer:
                    continue
                run = tuple(keys[i : i + length])
                if len(run) == length and run in self.titles:
                    hit = (length, self.titles[run], False)
                    break
            else:
                first = loose_at.get(i)
                if first is not None:
                    # the next words up to 40 tokens on, over the marks people leave out ("Monsters, Inc."
                    # typed "monsters inc")
                    stop = bisect_left(kept, i + 40, first)
                    for length in loose_lengths[lowered[i]]:
                        run = tuple(kept_words[first : first + length])
                        if first + length <= stop and run in self.loose:
                            hit = (kept[first + length - 1] - i + 1, self.loose[run], True)
                            break
            if hit is None:
                continue
            length, title, loose = hit
            start, end = analysed.span(i, i + length)
            free = i + length
            if any(a <= start < b for a, b in covered):
                continue
            if loose:
                cue = self._loose_cue(text, title, start, end, by_user)
            else:
                cue = self._cue(text, title, start, end, candidates)
            if cue == _WEAK:
                weak.append(TitleReference(title, start, end, "", "list"))
            elif cue is not None:
                found.append(TitleReference(title, start, end, "", cue))
        # "Heat and Casino": an occurrence with no cue of its own counts when a list joins it
        # to a recognised film; a sweep each way reads a list of several such titles whole
        if weak:
            items = sorted([(r, True) for r in found] + [(r, False) for r in weak], key=lambda item: item[0].start)
            accepted = [ok for _, ok in items]
            for order in (range(1, len(items)), range(len(items) - 2, -1, -1)):
                for i in order:
                    j = i - 1 if order.step == 1 else i + 1
                    left, right = (items[j][0], items[i][0]) if j < i else (items[i][0], items[j][0])
                    if not accepted[i] and accepted[j] and _LIST_JOIN.match(text[left.end : right.start]):
                        accepted[i] = True
            found = [r for (r, _), ok in zip(items, accepted) if ok]
        found.sort(key=lambda r: r.start)
        return self._drop_parts_of_longer_titles(found)

    def _drop_parts_of_longer_titles(self, found: list[TitleReference]) -> list[TitleReference]:
        """A title that is part of a longer title the text refers to ("Spider-Man" beside "The
        Amazing Spider-Man", "Die Hard" beside "Die Hard 2") names its character or franchise;
        it counts on its own only when formatted or followed by a year."""
        if len(found) < 2:
            return found
        keys = {r.title: self._lower_words(r.title) for r in found}
        longer = [keys[r.title] for r in found]

        def inside(short: tuple, long: tuple) -> bool:
            return len(short) < len(long) and any(
                long[i : i + len(short)] == short for i in range(len(long) - len(short) + 1)
            )

        return [
            r
            for r in found
            if r.cue in ("formatted", "year") or not any(inside(keys[r.title], other) for other in longer)
        ]

    def _lower_words(self, title: str) -> tuple[str, ...]:
        """A title's tokens in lower case (remembered: the same films come up in text after text)."""
        words = self._title_words.get(title)
        if words is None:
            words = self._title_words[title] = tuple(t.lower() for t, _, _ in tokenize(title))
        return words

    def _loose_cue(self, text: str, title: str, start: int, end: int, by_user: bool) -> str | None:
        """Why a title written in another case or without its article is a reference, or None.
        In a system's text it must start with a capital; a title of everyday words needs a cue."""
        before, after = text[:start], text[end:]
        if not (text[start].isupper() or text[start].isdigit() or by_user) or self._inside_longer_name(before, after):
            return None
        if _YEAR_AFTER.match(after):
            return "year"
        words = [w for w in re.findall(r"[^\W\d_]+", text[start:end].lower()) if w not in _SMALL_WORDS]
        if any(len(w) > 2 and not is_common_word(w) for w in words):
            return "loose case"  # "shutter island": a word no sentence uses by chance
        if text[start].isupper() and len(words) >= 2:
            return "loose case"  # "Reign of fire", "Cabin in the woods"
        if by_user and _LOOSE_CUE.search(before[-12:]):
            return "film word"  # "i have watched the lord of the rings twice"
        return _WEAK  # "The Matrix, Blade runner and ...": read when a list joins it to a film

    def _marked(self, analysed: AnalysedText, formatted: list[re.Match]) -> list[_Marked]:
        """Spans the text marks as titles, whether the catalog holds them or not (`formatted`: the
        text's _FORMATTED matches)."""
        text = analysed.text
        marked = []
        for match in formatted:
            group = match.lastgroup  # each alternative has one group
            inner = match.group(group)
            core = _TRAILING_YEAR.sub("", inner).strip().rstrip(",.;").strip()
            if not core or core.endswith(":") or text[match.end() : match.end() + 1] == ":":
                continue  # "**Plot:**", "**Genre**:" are labels
            start = match.start(group) + inner.find(core)
            year = _YEAR_PARENS.match(text, match.end())
            cued = bool(year) or _FILM_WORD.search(text[max(0, match.start() - 40) : match.start()]) is not None
            marked.append(
                _Marked(start, start + len(core), year.end() if year else start + len(core), True, cued, "formatted")
            )
        items = _item_lines(text)
        if items:
            intro = text[: items[0].start()].rstrip().rsplit("\n", 1)[-1]
            film_list = bool(_FILM_LIST_INTRO.search(intro)) or any(
                _YEAR_PARENS.search(m.group("item"))
                or self._title_of(_ITEM_SEPARATOR.split(m.group("item"))[0].strip())
                for m in items
            )
        for match in items:
            item, offset = match.group("item"), match.start("item")
            if item[:1] in "*_\"“'‘":
                continue  # a formatted title, read above
            label = _ITEM_LABEL.match(item)
            if label:
                item, offset = item[label.end() :], offset + label.end()
            year = _YEAR_PARENS.search(item)
            cut = year.start() if year else len(item)
            separators = list(_ITEM_SEPARATOR.finditer(item[:cut]))
            for number, separator in enumerate(separators):
                following = separators[number + 1].start() if number + 1 < len(separators) else len(item)
                segment = item[separator.end() : following]
                lower = [
                    w for w in re.findall(r"[^\W\d_][\w'’-]*", segment) if w[0].islower() and w not in _SMALL_WORDS
                ]
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
        for year in _YEAR_PARENS.finditer(text) if "(" in text or "[" in text else ():
            start = self._title_before_year(text, year.start())
            if start is not None:
                end = len(text[: year.start()].rstrip())
                marked.append(_Marked(start, end, year.end(), True, True, "year"))
        places = [i for i, word in enumerate(analysed.lowered) if word in _ANY_CUE_WORD]
        for cue, lone_word, name in (
            (_NAME_CUE, True, "film word"),
            (_PROPOSAL_CUE, False, "proposal"),
            (_SEEN_CUE, False, "seen"),
        ):
            for match in _cue_matches(cue, analysed, places):
                run = self._run(text, match.end())
                if run is not None and (name == "film word" or _NAME_END.match(text[run[1] :])):
                    marked.append(_Marked(*run, _with_year(text, run[1]), False, lone_word, name))
        return marked

    def _resolve(self, text: str, found: list[TitleReference], marked: list[_Marked]):
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
            title = self._title_of(surface)
            if title is not None:
                inside = all(span.start <= r.start and r.end <= span.end for r in overlapping)
                if not any(r.title == title for r in overlapping) and (span.strong and inside or not overlapping):
                    references = [r for r in references if r not in overlapping]
                    references.append(TitleReference(title, span.start, span.end, "", "marked"))
                continue  # "Twelve" inside "Ocean's Twelve" stays the longer film
            if not self._looks_like_title(surface, span.lone_word):
                continue
            inside = [r for r in overlapping if span.start <= r.start and r.end <= span.end]
            if len(inside) < len(overlapping) or (inside and not span.strong):
                continue
            if inside and inside[-1].end == span.end and _PERSON_JOIN.search(text[span.start : inside[-1].start]):
                continue  # "Tom Hanks in Cast Away (2000)", "Bruce Willis: Looper (2012)": the film is the catalog's
            references = [r for r in references if r not in inside]
            unknown.append(span)
            joined = _JOIN_AFTER.match(text[span.end_with_year :])
            if joined:  # "Arrival (2016) and Moon": the next name of a list of films
                run = self._run(text, span.end_with_year + joined.end())
                if run is not None and self._joins_list(text, run):
                    pending.insert(0, _Marked(*run, _with_year(text, run[1]), False, False, "list join"))
        for ref in list(references):
            joined = _JOIN_AFTER.match(text[ref.end :])
            if joined:  # "The Return of the King or The Lady from the Banks"
                run = self._run(text, ref.end + joined.end())
                if run is None or not self._joins_list(text, run):
                    continue
                if not any(r.start < run[1] and run[0] < r.end for r in references + unknown):
                    surface = text[run[0] : run[1]]
                    if self._title_of(surface) is None and self._looks_like_title(surface, False):
                        unknown.append(_Marked(*run, _with_year(text, run[1]), False, False, "list join"))
        references.sort(key=lambda r: r.start)
        unknown.sort(key=lambda m: m.start)
        return references, unknown

    @staticmethod
    def _joins_list(text: str, run: tuple[int, int]) -> bool:
        """Whether a name after "X and", "X," continues a list of films (not a card line, not an aside)."""
        line = text[text.rfind("\n", 0, run[0]) + 1 : run[0]]
        return _LIST_NAME_END.match(text[run[1] :]) is not None and _CARD_LABEL.search(line) is None

    @staticmethod
    def _run(text: str, position: int) -> tuple[int, int] | None:
        """The title-case name starting at `position`: capitalised words and numbers, with the small
        words and marks a title holds between them ("The Lady from the Banks", "Alien: Covenant")."""
        words: list[re.Match] = []
        for match in _WORD_TOKEN.finditer(text, position):
            gap = text[words[-1].end() if words else position : match.start()]
            if gap.strip(" \t\"'“‘*_" if not words else " \t") or len(gap) > 2:
                break
            token = match.group()
            if token[0].isalnum():
                if token[0].islower() and token.lower() not in _SMALL_WORDS:
                    break
                words.append(match)
                if token[-1] in "!?" or (token.endswith(".") and not re.fullmatch(r"(?:\w\.)+", token)):
                    break  # the sentence ends here
            elif token in ":&–-" and words:
                words.append(match)
            else:
                break
        while words and (words[-1].group() in ":&–-" or words[-1].group().lower() in _SMALL_WORDS):
            words.pop()
        if not words or words[0].group()[0].islower() or words[0].group().lower().replace("’", "'") in _PRONOUNS:
            return None
        end = words[-1].end()
        while text[end - 1] in ".!?,;'’":
            end -= 1
        return words[0].start(), end

    @staticmethod
    def _title_before_year(text: str, year_start: int) -> int | None:
        """Where the title before "(Year)" starts in running text: the capitalised words (and the
        small words between them) back to the clause, a list number or a possessive ("Nolan's")."""
        line_start = text.rfind("\n", 0, year_start) + 1
        tokens = _last_word_tokens(text, line_start, year_start)
        start = None
        for i in range(len(tokens) - 1, max(-1, len(tokens) - 16), -1):
            token = tokens[i].group()
            last = i == len(tokens) - 1
            if token[0].isalnum():
                if (token[-1] in "!?" and not last) or (
                    token.endswith(".") and not re.fullmatch(r"(?:[^\W\d]\.)+", token) and not last
                ):
                    break  # the end of the sentence before, or a list number ("1.")
                if token[0].islower() and token.lower() not in _SMALL_WORDS:
                    break
                if (
                    token.endswith(("'s", "’s"))
                    and len(token) > 2
                    and token.lower().replace("’", "'") not in _CONTRACTIONS
                ):
                    if not (i and tokens[i - 1].group().lower() in ("the", "a", "an")):
                        break  # "Nolan's Inception (2010)"; but "the Sorcerer's Stone"
            elif token in ":&–—-":
                left = tokens[i - 1].group() if i else ""
                list_number = left.isdigit() and (i < 2 or not tokens[i - 2].group()[:1].isalnum())
                if token != "&" and not (left[:1].isupper() or (left[:1].isdigit() and not list_number)):
                    break  # "2: Title": a list number; but "300: Rise of an Empire"
            else:
                break
            start = i
        if start is None:
            return None
        while start < len(tokens) - 1:  # a sentence's first words are no part of the title ("Try Heat")
            token = tokens[start].group().rstrip(".!?")
            if (
                (token[:1].islower() and token in _SMALL_WORDS)
                or token.lower() in _LEAD_WORDS
                or not token[:1].isalnum()
            ):
                start += 1
            else:
                break
        first = tokens[start].group()
        if text[tokens[-1].end() - 1] in "'’" or text[:year_start].rstrip()[-1:] in '"”*_':
            return None  # a quoted title, read as formatted
        return tokens[start].start() if first[:1].isalnum() and not first[0].islower() else None

    def _looks_like_title(self, surface: str, lone_word: bool) -> bool:
        """Whether a marked span reads as a film's title: title case, a few words, not a person, a
        language, a genre or a card label; a single everyday word only where `lone_word` allows."""
        words = [w.rstrip("!?.,") for w in re.findall(r"[^\W_][\w'’.&-]*[!?]?", surface)]
        if not words or len(words) > 12 or surface.rstrip().endswith(":"):
            return False
        if any(w[:1].islower() and w.lower() not in _SMALL_WORDS for w in words) or words[0][:1].islower():
            return False
        if words[0].lower() in _FIELD_LABEL or title_key(surface) in self.not_titles:
            return False
        if words[-1].endswith(("'s", "’s")) or words == ["I"]:
            return False
        if any(a.lower() == b.lower() for a, b in zip(words, words[1:])):
            return False  # "The The Secret": a stutter, not a title
        return len(words) > 1 or lone_word or not (is_common_word(words[0]) or len(words[0]) < 3)

    def _title_of(self, span: str) -> str | None:
        """The catalog film a marked span names, if one (remembered: a reply's quoted titles and list
        items are read up to three times, and the same films come up in text after text)."""
        if span in self._span_titles:
            return self._span_titles[span]
        key = tuple(token_strings(span))
        if key in self.titles:
            title = self.titles[key]
        elif span == span.lower() and len(key) == 1:
            title = None  # 'river' in quotes is a word being quoted, not "The River"
        else:
            matches = self.folded.get(_fold(span), [])
            title = matches[0] if len(set(matches)) == 1 else None
        self._span_titles[span] = title
        return title

    def _cue(self, text: str, title: str, start: int, end: int, candidates: set[str]) -> str | None:
        """Why a verbatim occurrence is a film reference, or None when it is not one."""
        before, after = text[:start], text[end:]
        if self._inside_longer_name(before, after):
            return None
        kind = self.kind[title]
        if _YEAR_AFTER.match(after):
            return "year"
        if title.lower() in self.people and _PERSON_CUE.search(before[-30:]):
            return None  # a person of the catalog with a film's name, introduced as a person
        if _CHARACTER_BEFORE.search(before[-30:]):
            return None  # "Scott Weinger as Aladdin": a character
        if _LOWER_ARTICLE_BEFORE.search(before[-6:]) and _FILM_WORD.search(before[-40:]) is None:
            return None
        if kind == "plain":
            return "verbatim"
        if title.lower() in _INTERJECTIONS and re.match(r"^\s*[,!]", after):
            return None  # "Yes, ...": an answer
        line = before[before.rfind("\n") + 1 :]
        if len(line) <= 12 and _LIST_MARKER.fullmatch(line) and _HEADING_END.match(after):
            return "heading"
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

    @staticmethod
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

    @staticmethod
    def _role(text: str, ref: TitleReference, named_by_user: set[str], following: int) -> str:
        """`following`: where the next film reference starts (a proposal after it is about that one)."""
        before = text[max(0, ref.start - 120) : ref.start]
        clause = before
        breaks = list(_CLAUSE_BREAK.finditer(before))
        if breaks:
            clause = before[breaks[-1].end() :]
        if _BACK_REFERENCE.search(clause):
            return "mentioned"
        if _PREFERENCE_QUESTION.search(re.split(r"[.!?\n]", before)[-1]):
            return "mentioned"  # "Do you prefer X or Y?": examples to learn the user's taste
        if ref.title in named_by_user:
            if ref.cue == "heading" or re.search(r"\btitle:\s*[\"'“‘*_]*$", before[-12:], re.I):
                return "recommended"  # a suggestion list that includes the user's film
            sentence = re.split(r"[.!?\n]", before)[-1]
            after = text[ref.end : ref.end + 120]
            proposal = _PROPOSAL_AFTER.match(after)
            if proposal and ref.end + proposal.end() + 40 >= following and ref.end + proposal.end() <= following:
                proposal = None  # "X, I'd recommend Y": the proposal is about the film right after it
            if _PROPOSAL_BEFORE.search(sentence) or proposal:
                return "recommended"
            return "mentioned"
        return "recommended"


# Sentence-initial words that may stand right before a title without being part of its name.
_OPENERS = frozenset(
    """
watch try consider see check enjoy rewatch recommend suggest also then and or so but maybe perhaps definitely
absolutely personally honestly yes no well oh sure next finally lastly firstly first second third
""".split()
)
