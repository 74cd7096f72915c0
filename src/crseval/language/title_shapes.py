"""How a title is written in running text: formatting (quotes, bold, italics) and inserted markup
("<Title (Year)>", "@123 <Title>"), a "(Year)" after it, a film word before it; the small words,
abbreviations and marks a title holds; and where a title-case name runs, read word by word forward from
a cue ("Have you seen Zombian?") or back from a "(Year)" ("I loved Me, Myself & Irene (2000)")."""

from __future__ import annotations

import re
from itertools import islice

from crseval.language.lexicon import is_common_word
from crseval.language.title_catalog import TitleCatalog

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
_TRAILING_YEAR = re.compile(
    r"\s*[\(\[]\s*(?:18|19|20)\d\d[^)\]]{0,20}[\)\]][\s.,;:!?]*$|,\s*(?:18|19|20)\d\d[\s.,;:!?]*$"
)  # "Identity Thief (2013)?" in quotes
_SPACED_MARK = re.compile(r"\s+[?!.,;:]+\s*$")  # "Notting Hill ?" in quotes (but "Airplane!")
# A "(Year)" right after a title, past its closing quote or bold ("'Heat' (1995)").
_YEAR_AFTER = re.compile(r"^\s*[\"'”’*_]*\s*[\(\[]\s*(?:18|19|20)\d\d\b")
# A "(Year)" after a space or right after the title: "Heat (1995)", "Heat(1995)".
_YEAR_PARENS = re.compile(r"(?=[ \t(\[])[ \t]*[\(\[]\s*(?:18|19|20)\d\d\s*[\)\]]")
# A word right before a title that introduces it as a film: "the movie X", "I recommend X".
_FILM_WORD = re.compile(
    r"\b(?:film|films|movie|movies|flick|classic|titled|called|named|watch|watching|recommend|suggest|try|see)"
    r"[\s\"'“‘*_]*$",
    re.I,
)


def _written_year(text: str) -> int | None:
    """The year of a "(Year)" that `text` starts with, if it does."""
    year = _YEAR_PARENS.match(text) or _YEAR_AFTER.match(text)
    return int(re.search(r"\d{4}", year.group()).group()) if year else None


def _with_year(text: str, end: int) -> int:
    """The end of a reference with the "(Year)" right after it, if any."""
    year = _YEAR_PARENS.match(text, end)
    return year.end() if year else end


# Lower-case words a title may hold between its capitalised words ("The Lady from the Banks").
_SMALL_WORDS = frozenset(
    "a an the and or nor but of in on at to for with from by as vs vs. de la le les du des del el y et into".split()
)
# A word, a number or one mark; a word keeps its inner marks ("A.I.", "Sorcerer's", "Startup.com", "Live!").
_WORD_TOKEN = re.compile(r"[^\W_](?:[\w'’&-]|\.(?!\.))*(?:\.\.\.(?=[ \t]*\(\d{4}\)))?[!?]?|[^\w\s]")
# Abbreviations a title holds without ending a sentence ("Mr. Deeds", "Guardians of the Galaxy Vol. 2").
_ABBREVIATIONS = frozenset("mr mrs ms dr st jr sr vol vs inc co ltd mt ft pt lt sgt capt prof gen".split())
_SPACE = re.compile(r"\s")
_CONTRACTIONS = frozenset("who's what's it's that's there's here's he's she's let's where's how's".split())
# Everyday words that open a sentence as an answer ("Yes, ..."), not as a film of that name.
_INTERJECTIONS = frozenset("yes no sure okay ok well oh hi hello hey thanks please wow".split())
# Words a sentence may open with before a title ("Try Heat (1995)", "Sure: Arrival (2016)"). Pronouns, question
# words and prepositions are not among them: capitalised before a title they open it ("I Kill Giants", "It Follows",
# "About Time", "In Bruges", "How to Train Your Dragon").
_LEAD_WORDS = frozenset(
    """sure yes yeah yep no ok okay hey hi hello well oh hmm lol haha thanks like liked loved recommend since because
    and or also maybe perhaps watch try consider see check enjoy love is are was were""".split()
)
_WH_WORDS = frozenset("what where when who why how which".split())
_OBJECT_VERBS = frozenset(
    """seen saw watched watch watching love loved like liked enjoyed enjoy recommend suggest try about called titled
    named""".split()
)
# Words that open a sentence or a title: part of the title unless a lead word follows them or the rest is a film
# of the catalog ("I Loved Black Swan (2010)", "In Key Largo (1948)").
_OPENING_WORDS = frozenset("i you we it how what have did about if for with in there's here's that's".split())
_PRONOUNS = frozenset("i i'd i'm i've i'll you we they he she".split())  # "one movie I'd recommend"


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


def title_run(text: str, position: int) -> tuple[int, int] | None:
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


def title_before_year(catalog: TitleCatalog, text: str, year_start: int, list_numbers=frozenset()) -> int | None:
    """Where the title before "(Year)" starts in running text: the capitalised words (and the
    small words between them) back to the clause, a list number or a person's possessive ("Nolan's
    Inception", not "Ocean's Eight")."""
    line_start = text.rfind("\n", 0, year_start) + 1
    tokens = _last_word_tokens(text, line_start, year_start)
    start, comma = _capitalised_words_back(catalog, text, tokens, list_numbers)
    if start is None:
        return None
    # a verb right before makes the name its object, whole: "I love Love Story (1970)", "seen Yes Man (2008)",
    # "about Me, Myself & Irene (2000)" (chat text without full stops has "... great Also Heat (1995)")
    after_verb = start > 0 and tokens[start - 1].group() in _OBJECT_VERBS
    if comma is not None and start < comma:
        left = tokens[start:comma]
        # "Besides Heat, Arrival (2016)", "Honestly, Arrival (2016)": the title starts after the comma
        if not (after_verb and len(left) <= 4) or catalog.title_of(text[left[0].start() : left[-1].end()]) is not None:
            start = comma + 1
    start = _after_last_join(tokens, start)
    start = _past_lead_words(catalog, text, tokens, start, after_verb)
    first = tokens[start].group()
    if text[tokens[-1].end() - 1] in "'’" or text[:year_start].rstrip()[-1:] in '"”*_':
        return None  # a quoted title, read as formatted
    return tokens[start].start() if first[:1].isalnum() and not first[0].islower() else None


def _capitalised_words_back(
    catalog: TitleCatalog, text: str, tokens: list[re.Match], list_numbers: set[int] | frozenset
) -> tuple[int | None, int | None]:
    """The first of the capitalised words (and the small words and marks between them) that end `tokens`,
    read back to the clause, a list number or a person's possessive; and the comma among them a title may
    hold ("Me, Myself & Irene"), if any."""
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
                if token[:-2].lower() in catalog.surnames or catalog.title_of(rest) is not None:
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
    return start, comma


def _after_last_join(tokens: list[re.Match], start: int) -> int:
    """Where the title starts when the words from `start` name two films joined ("Ace Ventura or Dumb and
    Dumber To (2014)", "Hot Tub Time Machine and Super Troopers (2001)"): after the last "or", or after an
    "and" with two capitalised words or more either side ("Dumb and Dumber", "Fantastic Beasts and Where to
    Find Them" are one title)."""
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
    return start


def _past_lead_words(catalog: TitleCatalog, text: str, tokens: list[re.Match], start: int, after_verb: bool) -> int:
    """Where the title starts past the words that open the sentence ("Try Heat"); `after_verb`: the name is
    a verb's object, whole ("I love Love Story")."""
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
                    or catalog.title_of(text[tokens[start + 1].start() : tokens[-1].end()]) is not None
                )
            )
        ):
            start += 1
        else:
            break
    return start
