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
without year or markup): a list item ("1: Arrival (2016)", "1) Arrival", "1 - Arrival", "• Arrival",
"1  Arrival" in a list numbered in sequence; in a list of films, not of reasons, steps or actors),
"Title (Year)" in running text, a quoted, bold or italic title, inserted markup ("<Arrival (2016)>",
"@123 <Arrival>"), a title-case name after "the movie", or after a proposal ("have you seen
Zombian?") or joined to another film by "and", "or" or a comma. Words inside such a title are no
catalog film and no concept (`spans` covers them, with their year).

Chat text (ReDial's people, no full stops, "...") is read as such: "Title (Year)" runs back over
abbreviations ("Vol.", "Mr."), possessives that are not a person's ("Ocean's Eight"), a comma after a
verb ("seen Me, Myself & Irene"), and words that open titles ("I Kill Giants", "It Follows"); a word
that opens sentences ("You", "Yes", "Have") followed by a lower-case word opens one, capitalised or not.
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

# Spans the writer marked as a name: quotes, bold, italics, and inserted markup: "<Title (Year)>", "@123 <Title>"
# (a corpus's film id before it; without the id, only with a year: "<br>" is no title).
_FORMATTED = re.compile(
    r"(?=[*_\"“‘'<@])"
    r"(?:\*\*(?P<b>[^*\n]{1,90}?)\*\*"
    r"|__(?P<u>[^_\n]{1,90}?)__"
    r"|(?<![\w*])\*(?P<i>[^*\s][^*\n]{0,88}?)\*(?![\w*])"
    r"|(?<!\w)_(?P<e>[^_\s][^_\n]{0,88}?)_(?!\w)"
    r"|\"(?P<q>[^\"\n]{1,90}?)\""
    r"|“(?P<c>[^”\n]{1,90}?)”"
    r"|‘(?P<s>[^’\n]{1,90}?)’(?!\w)"
    r"|(?<!\w)'(?P<a>[^\n]{1,90}?)'(?!\w)"
    r"|(?<![\w@])@\d{1,12}[ \t]*<(?P<m>[^<>\n]{1,90}?)>"
    r"|<(?P<y>[^<>\n]{1,80}?[\(\[]\s*(?:18|19|20)\d\d\s*[\)\]]\s*)>)"
)
_MARKUP = frozenset("my")  # the groups of _FORMATTED that are inserted markup
# Between two formatted titles of one list: '"Arrival", ‘Moon’ and “Sicario”'.
_FORMATTED_JOIN = re.compile(
    r"^[ \t]*(?:[\(\[]\s*(?:18|19|20)\d\d\s*[\)\]])?[ \t]*(?:,[ \t]*(?:and|or)?|and|or|&)[ \t]*$"
)
# Right before a title in any case: "the movie "the lighthouse"", "a film called 'heat'".
_TITLE_NAME_CUE = re.compile(r"\b(?:film|movie|flick|titled|called|named)[\s\"'“‘*_]*$", re.I)
_TRAILING_YEAR = re.compile(
    r"\s*[\(\[]\s*(?:18|19|20)\d\d[^)\]]{0,20}[\)\]][\s.,;:!?]*$|,\s*(?:18|19|20)\d\d[\s.,;:!?]*$"
)  # "Identity Thief (2013)?" in quotes
_SPACED_MARK = re.compile(r"\s+[?!.,;:]+\s*$")  # "Notting Hill ?" in quotes (but "Airplane!")
_YEAR_AFTER = re.compile(r"^\s*[\"'”’*_]*\s*[\(\[]\s*(?:18|19|20)\d\d\b")
# the start of a line before a heading: "1.", "1)", "1:", "1 -", a bullet
_LIST_MARKER = re.compile(r"[ \t]*(?:\d{1,2}[.):]|\d{1,2}[ \t]+[-–—]|[-*•+])?[ \t]*[\"'“‘*_]*")
_HEADING_END = re.compile(r"^[\"'”’*_]*\s*(?:$|\n|:|\(|,|\s[-–—]\s|[-–—]\s)")
_HEADING_SEPARATOR = re.compile(r"^[\"'”’*_]*\s*(?::|\(|\s[-–—]\s|[-–—]\s)")  # a heading without a list marker
_CONTRACTION_AFTER = re.compile(r"^['’](?:d|re|ll|ve|m)\b")
_SENTENCE_START = re.compile(r"(?:^|[.!?:;\n]|^\s*(?:\d{1,2}[.):]|\d{1,2}[ \t]+[-–—]|[-*•+]))[\s\"'“‘*_(\[]*$")
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
_WORD_TOKEN = re.compile(r"[^\W_](?:[\w'’&-]|\.(?!\.))*(?:\.\.\.(?=[ \t]*\(\d{4}\)))?[!?]?|[^\w\s]")
# Abbreviations a title holds without ending a sentence ("Mr. Deeds", "Guardians of the Galaxy Vol. 2").
_ABBREVIATIONS = frozenset("mr mrs ms dr st jr sr vol vs inc co ltd mt ft pt lt sgt capt prof gen".split())
_SPACE = re.compile(r"\s")
_YEAR_PARENS = re.compile(r"(?=[ \t(\[])[ \t]*[\(\[]\s*(?:18|19|20)\d\d\s*[\)\]]")
# A list item: "1. X", "1) X", "1: X", "1 - X", "- X", "* X", "• X", "•X", and "1 X" (a bare number: only in a
# list numbered in sequence, see _list_items).
_ITEM_LINE = re.compile(
    r"^[ \t]*(?:(?:\d{1,2}\s*[.):]|\d{1,2}[ \t]+[-–—]|[-*+])[ \t]+|•[ \t]*|(?P<bare>\d{1,2})[ \t]+(?=[^\W\d_]))"
    r"(?P<item>[^\n]+)",
    re.M,
)
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
# Words a sentence may open with before a title ("Try Heat (1995)", "Sure: Arrival (2016)"). Pronouns, question
# words and prepositions are not among them: capitalised before a title they open it ("I Kill Giants", "It Follows",
# "About Time", "In Bruges", "How to Train Your Dragon").
_LEAD_WORDS = frozenset(
    """sure yes yeah yep no ok okay hey hi hello well oh hmm lol haha thanks like liked loved recommend since because
    and or also maybe perhaps watch try consider see check enjoy love is are was were""".split()
)
_JOINED_BEFORE = re.compile(r"(?<=[^\W_]),?[ \t]+(?:or|and)[ \t]+$")
_WH_WORDS = frozenset("what where when who why how which".split())
_OBJECT_VERBS = frozenset(
    """seen saw watched watch watching love loved like liked enjoyed enjoy recommend suggest try about called titled
    named""".split()
)
# Words that open a sentence or a title: part of the title unless a lead word follows them or the rest is a film
# of the catalog ("I Loved Black Swan (2010)", "In Key Largo (1948)").
_OPENING_WORDS = frozenset("i you we it how what have did about if for with in there's here's that's".split())
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
# A list introduced as films ("I would recommend the following items:", "Here are some movies:"), and as something
# else ("three reasons to watch it:", "The main actors of the movie:"): the noun named first says which.
_FILM_LIST_INTRO = re.compile(r"\b(?:recommend\w*|suggest\w*|movies?|films?|titles?|items?|watch\w*|picks?)\b", re.I)
_FILM_LIST_NOUN = re.compile(r"\b(?:movies?|films?|titles?|picks?)\b", re.I)
_OTHER_LIST_INTRO = re.compile(
    r"\b(?:reasons?|why|steps?|ways?|tips?|how\s+to|actors?|actress(?:es)?|cast|characters?|features?|aspects?"
    r"|highlights?|themes?|genres?|directors?|writers?|people|questions?|points|pros|cons|things)\b",
    re.I,
)
_ARTICLES = ("the", "a", "an")
# Titles that are words a sentence opens with ("You", "Yes", "They"): followed by a lower-case word (not "and",
# "or") they open a sentence, capitalised in mid-sentence or not (chat text often has no full stops).
_CLAUSE_OPENERS = frozenset("you they we he she it yes yeah no ok okay sure well hi hello thanks".split())
_SENTENCE_GOES_ON = re.compile(
    r"(?:Have|Did|Do|Does|What|How|Why|Where|When|Who|You|I|We|They|He|She|Yes|No|So|But|And|Or|Is|Are|Was)"
    r"[ \t]+(?:I\b|[a-z])"
)
# Words after which a capitalised pronoun is no new sentence but a name: "does They tell", "about You".
_TAKES_A_NAME_BEFORE = re.compile(
    r"\b(?:does|did|do|is|was|are|were|has|have|had|will|would|can|could|should|of|about|like|than|as|for|from|to|on"
    r"|in|seen|saw|watched|watch|watching|loved|liked|enjoyed|recommend|suggest|try|called|titled|named)[ \t]+$"
)
_CLAUSE_GOES_ON = re.compile(r"^[ \t]+(?:I\b|(?!(?:and|or|nor)\b)[a-z])")
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


def _capitalised_words(tokens: list[re.Match]) -> int:
    """How many of `tokens` are capitalised words other than small words ("The", "To")."""
    return sum(t.group()[:1].isupper() and t.group().lower() not in _SMALL_WORDS for t in tokens)


def _one_title_with_or(left: list[re.Match], right: list[re.Match]) -> bool:
    """Whether "left or right" reads as one title: an everyday word either side ("Truth or Dare", "Ready or
    Not"), not two names ("Zootopia or Moana", "Ace Ventura or The Mask")."""
    left = [t for t in left if t.group().lower() not in _LEAD_WORDS]  # "Or Truth or Dare (2013)"
    if len(left) != 1 or not right or not right[0].group()[:1].isupper():
        return False
    word = right[0].group().rstrip("!?.")
    one_word = len(right) == 1 or not right[1].group()[:1].isupper() or word != right[0].group()
    return one_word and is_common_word(left[0].group()) and is_common_word(word)


def _abbreviation(token: str) -> bool:
    """Whether a word ending in "." is an abbreviation or initials ("Mr.", "Vol.", "A.I."), not a sentence's end."""
    return token[:-1].lower() in _ABBREVIATIONS or re.fullmatch(r"(?:[^\W\d_]\.)+", token) is not None


def _written_year(text: str) -> int | None:
    """The year of a "(Year)" that `text` starts with, if it does."""
    year = _YEAR_PARENS.match(text) or _YEAR_AFTER.match(text)
    return int(re.search(r"\d{4}", year.group()).group()) if year else None


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
    cue: str  # formatted, markup, list item, year, film word, proposal, seen, list join
    any_case: bool = False  # a title in lower case counts here (markup, "the movie "the lighthouse"")


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
        self._surnames = frozenset(name.split()[-1].lower() for name in people if len(name.split()) > 1)
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
        self._span_titles: dict[str, tuple[str | None, bool]] = {}  # span -> (title, named exactly)
        self._years: dict[str, int] = {}
        if "year" in films:
            for title, year in zip(films["title"].tolist(), films["year"].tolist()):
                if isinstance(year, (int, float)) and year == year and title not in self._years:
                    self._years[title] = int(year)
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
            core = _SPACED_MARK.sub("", _TRAILING_YEAR.sub("", inner)).strip()
            rest = inner[inner.find(core) + len(core) :]
            year = _written_year(rest) or _written_year(text[match.end() : match.end() + 12])
            title = self._title_of(core, year)  # "Waiting..." and "Waiting" are two films
            if title is None:
                core = core.rstrip(",.;:").strip()
                title = self._title_of(core, year)
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

    def _marked(self, analysed: AnalysedText, formatted: list[re.Match]) -> list[_Marked]:
        """Spans the text marks as titles, whether the catalog holds them or not (`formatted`: the
        text's _FORMATTED matches)."""
        text = analysed.text
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
            chains[n] for n, (_, core, *_, cued) in enumerate(spans) if cued or self._looks_like_title(core, False)
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
                _Marked(
                    start, start + len(core), end_with_year, True, cued, "markup" if markup else "formatted", any_case
                )
            )
        items, film_lists = self._list_items(text)
        list_numbers = {m.start("bare") for m in items if m.group("bare")}  # "1  Black Panther (2018)"
        for match, film_list in zip(items, film_lists):
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
        year_ends = set()  # where titles read before a year end: joined names there are the year rule's to split
        for year in _YEAR_PARENS.finditer(text) if "(" in text or "[" in text else ():
            start = self._title_before_year(text, year.start(), list_numbers)
            if start is not None:
                end = len(text[: year.start()].rstrip())
                marked.append(_Marked(start, end, year.end(), True, True, "year"))
                year_ends.add(end)
                joined = _JOINED_BEFORE.search(text, max(0, start - 8), start)
                if joined:  # "Zootopia or Moana (2016)": the film before the join is one too, read as a list join
                    left = self._title_before_year(text, joined.start(), list_numbers)
                    first = text[left : joined.start()].split()[0].lower() if left is not None else ""
                    if left is not None and first not in _LEAD_WORDS | _OPENING_WORDS | _INTERJECTIONS:
                        marked.append(_Marked(left, joined.start(), joined.start(), False, False, "list join"))
        places = [i for i, word in enumerate(analysed.lowered) if word in _ANY_CUE_WORD]
        for cue, lone_word, name in (
            (_NAME_CUE, True, "film word"),
            (_PROPOSAL_CUE, False, "proposal"),
            (_SEEN_CUE, False, "seen"),
        ):
            for match in _cue_matches(cue, analysed, places):
                run = self._run(text, match.end())
                if run is not None and _SENTENCE_GOES_ON.match(text[run[0] : run[0] + 20]):
                    continue  # "a good movie Have you seen ...": a sentence its writer did not punctuate
                if run is not None and run[1] in year_ends and re.search(r"\s(?:and|or)\s", text[run[0] : run[1]]):
                    continue  # "try Hot Tub Time Machine and Super Troopers (2001)": two films, split by the year rule
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
            title = self._title_of(surface, _written_year(text[span.end : span.end_with_year]))
            if title is not None:
                inside = all(span.start <= r.start and r.end <= span.end for r in overlapping)
                if not any(r.title == title for r in overlapping) and (span.strong and inside or not overlapping):
                    references = [r for r in references if r not in overlapping]
                    references.append(TitleReference(title, span.start, span.end, "", "marked"))
                continue  # "Twelve" inside "Ocean's Twelve" stays the longer film
            possessive = span.end_with_year > span.end or span.cue == "markup"  # "Porky's (1981)"
            if not self._looks_like_title(surface, span.lone_word, span.any_case, possessive):
                continue
            inside = [r for r in overlapping if span.start <= r.start and r.end <= span.end]
            if len(inside) < len(overlapping) or (inside and not span.strong):
                continue
            if (
                inside
                and inside[-1].end == span.end
                and _PERSON_JOIN.search(text[span.start : inside[-1].start])
                and self.kind[inside[-1].title] == "plain"
            ):
                continue  # "Tom Hanks in Cast Away (2000)", "Bruce Willis: Looper (2012)": the film is the catalog's
                # (but "Southside with You (2016)" is no "You")
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

    def _list_items(self, text: str) -> tuple[list[re.Match], list[bool]]:
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
                _YEAR_PARENS.search(m.group("item"))
                or self._title_of(_ITEM_SEPARATOR.split(m.group("item"))[0].strip())
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
                if (token[0].islower() and token.lower() not in _SMALL_WORDS) or (
                    token == "or"
                    and not _one_title_with_or(words, list(islice(_WORD_TOKEN.finditer(text, match.end()), 2)))
                ):
                    break  # "Have you seen Zootopia or Moana?": the next film is a list join
                words.append(match)
                if token[-1] in "!?" or (
                    token.endswith(".") and not (_abbreviation(token) or re.fullmatch(r"(?:\w\.)+", token))
                ):
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

    def _title_before_year(self, text: str, year_start: int, list_numbers=frozenset()) -> int | None:
        """Where the title before "(Year)" starts in running text: the capitalised words (and the
        small words between them) back to the clause, a list number or a person's possessive ("Nolan's
        Inception", not "Ocean's Eight")."""
        line_start = text.rfind("\n", 0, year_start) + 1
        tokens = _last_word_tokens(text, line_start, year_start)
        start = comma = None
        for i in range(len(tokens) - 1, max(-1, len(tokens) - 16), -1):
            token = tokens[i].group()
            last = i == len(tokens) - 1
            if tokens[i].start() in list_numbers:
                break  # the number of a list item ("2 Get Out (2017)")
            if token[0].isalnum():
                if (token[-1] in "!?" and not last) or (token.endswith(".") and not _abbreviation(token) and not last):
                    break  # the end of the sentence before, or a list number ("1.")
                if token[0].islower() and token.lower() not in _SMALL_WORDS:
                    break
                if (
                    token.endswith(("'s", "’s"))
                    and len(token) > 2
                    and not last
                    and token.lower().replace("’", "'") not in _CONTRACTIONS
                    and not (i and tokens[i - 1].group().lower() in ("the", "a", "an"))  # "the Sorcerer's Stone"
                ):
                    rest = text[tokens[i + 1].start() : tokens[-1].end()]
                    if token[:-2].lower() in self._surnames or self._title_of(rest) is not None:
                        break  # "Nolan's Inception (2010)"; but "Ocean's Eight (2018)"
            elif token in ":&–—-":
                left = tokens[i - 1].group() if i else ""
                list_number = left.isdigit() and (i < 2 or not tokens[i - 2].group()[:1].isalnum())
                if token != "&" and not (left[:1].isupper() or (left[:1].isdigit() and not list_number)):
                    break  # "2: Title": a list number; but "300: Rise of an Empire"
            elif token == "," and comma is None and start is not None and i and tokens[i - 1].group()[:1].isupper():
                comma = i  # "Me, Myself & Irene (2000)": read on, and see below whether the comma is the title's
            else:
                break
            start = i
        if start is None:
            return None
        # a verb right before makes the name its object, whole: "I love Love Story (1970)", "seen Yes Man (2008)",
        # "about Me, Myself & Irene (2000)" (chat text without full stops has "... great Also Heat (1995)")
        after_verb = start > 0 and tokens[start - 1].group() in _OBJECT_VERBS
        if comma is not None and start < comma:
            left = tokens[start:comma]
            # "Besides Heat, Arrival (2016)", "Honestly, Arrival (2016)": the title starts after the comma
            if (
                not (after_verb and len(left) <= 4)
                or self._title_of(text[left[0].start() : left[-1].end()]) is not None
            ):
                start = comma + 1
        # two films joined: "Ace Ventura or Dumb and Dumber To (2014)", "Hot Tub Time Machine and Super Troopers
        # (2001)": the title starts after the last "or", or after an "and" with two capitalised words or more
        # either side ("Dumb and Dumber", "Fantastic Beasts and Where to Find Them" are one title)
        for i in range(len(tokens) - 2, start, -1):
            word, following = tokens[i].group(), tokens[i + 1].group()
            if (word == "or" and not _one_title_with_or(tokens[start:i], tokens[i + 1 :])) or (
                word == "and"
                and following[:1].isupper()
                and following.lower() not in _OPENING_WORDS | _WH_WORDS
                and min(_capitalised_words(tokens[start:i]), _capitalised_words(tokens[i + 1 :])) >= 2
            ):
                start = i + 1
                break
        first_start = start
        while start < len(tokens) - 1:  # a sentence's first words are no part of the title ("Try Heat")
            token = tokens[start].group().rstrip(".!?")
            following = tokens[start + 1].group().lower()
            if (
                (token[:1].islower() and token in _SMALL_WORDS)
                or (token.lower() in _LEAD_WORDS and not (after_verb and start == first_start))
                or not token[:1].isalnum()
                or (
                    token.lower().replace("’", "'") in _OPENING_WORDS
                    and (  # "I Loved Black Swan", "In Key Largo": but "I Kill Giants", "It Follows"
                        following in _LEAD_WORDS
                        or following in _OPENING_WORDS
                        or self._title_of(text[tokens[start + 1].start() : tokens[-1].end()]) is not None
                    )
                )
            ):
                start += 1
            else:
                break
        first = tokens[start].group()
        if text[tokens[-1].end() - 1] in "'’" or text[:year_start].rstrip()[-1:] in '"”*_':
            return None  # a quoted title, read as formatted
        return tokens[start].start() if first[:1].isalnum() and not first[0].islower() else None

    def _looks_like_title(
        self, surface: str, lone_word: bool, any_case: bool = False, possessive: bool = False
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
        if words[0].lower() in _FIELD_LABEL or title_key(surface) in self.not_titles:
            return False
        if (words[-1].endswith(("'s", "’s")) and not possessive) or words == ["I"]:
            return False
        if any(a.lower() == b.lower() and a.lower() in _ARTICLES for a, b in zip(words, words[1:])):
            return False  # "The The Secret": a stutter, not a title (but "La La Land", "The Bye Bye Man")
        return len(words) > 1 or lone_word or not (is_common_word(words[0]) or len(words[0]) < 3)

    def _title_of(self, span: str, year: int | None = None) -> str | None:
        """The catalog film a marked span names, if one (remembered: a reply's quoted titles and list
        items are read up to three times, and the same films come up in text after text). A span that
        names it only in another spelling (without its article, other punctuation) and is written with
        a year more than four years from the film's is another film ("Darkest Hour (2017)" is not *The
        Darkest Hour* of 2010; the catalog's own years may be a few years off)."""
        known = self._span_titles.get(span)
        if known is None:
            key = tuple(token_strings(span))
            if key in self.titles:
                known = (self.titles[key], True)
            elif span == span.lower() and len(key) == 1:
                known = (None, False)  # 'river' in quotes is a word being quoted, not "The River"
            else:
                matches = self.folded.get(_fold(span), [])
                known = (matches[0] if len(set(matches)) == 1 else None, False)
            self._span_titles[span] = known
        title, exact = known
        if title is not None and not exact and year is not None:
            film_year = self._years.get(title)
            if film_year is not None and abs(film_year - year) > 4:
                return None
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
