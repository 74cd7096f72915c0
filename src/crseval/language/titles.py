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

Each reference is *recommended* (put forward to watch) unless it is only *mentioned*: named
right after a back-reference ("since you liked X", "similar to X", "the director of X"), or a
film the user named that the reply does not propose again.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

import pandas as pd

from crseval.core.fields import PEOPLE_FIELDS
from crseval.language.lexicon import is_common_phrase
from crseval.language.tokens import tokenize

# Spans the writer marked as a name: quotes, bold, italics.
_FORMATTED = re.compile(
    r"\*\*(?P<b>[^*\n]{1,90}?)\*\*"
    r"|__(?P<u>[^_\n]{1,90}?)__"
    r"|(?<![\w*])\*(?P<i>[^*\s][^*\n]{0,88}?)\*(?![\w*])"
    r"|(?<!\w)_(?P<e>[^_\s][^_\n]{0,88}?)_(?!\w)"
    r"|\"(?P<q>[^\"\n]{1,90}?)\""
    r"|“(?P<c>[^”\n]{1,90}?)”"
    r"|‘(?P<s>[^’\n]{1,90}?)’(?!\w)"
    r"|(?<!\w)'(?P<a>[^\n]{1,90}?)'(?!\w)"
)
_TRAILING_YEAR = re.compile(r"\s*[\(\[]\s*(?:18|19|20)\d\d[^)\]]{0,20}[\)\]]\s*$|,\s*(?:18|19|20)\d\d\s*$")
_YEAR_AFTER = re.compile(r"^\s*[\"'”’*_]*\s*[\(\[]\s*(?:18|19|20)\d\d\b")
_LIST_MARKER = re.compile(r"[ \t]*(?:\d{1,2}[.)]|[-*•+])?[ \t]*[\"'“‘*_]*")  # the start of a line before a heading
_HEADING_END = re.compile(r"^[\"'”’*_]*\s*(?:$|\n|:|\(|,|\s[-–—]\s|[-–—]\s)")
_SENTENCE_START = re.compile(r"(?:^|[.!?:;\n]|^\s*(?:\d{1,2}[.)]|[-*•+]))[\s\"'“‘*_(\[]*$")
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
_CHARACTER_BEFORE = re.compile(
    r"(?:(?<!such)\s+as(?:\s+(?:the|a|an))?(?:\s+(?!good|well|much|many|far|long)[a-z][a-z-]*)?|[A-Za-z]/)\s*$"
)  # "as the iconic X", "Parker/X"
# "the Pearl Harbor attack", "the Titanic": a lower-case article before a title that has none is a thing, not a film
_LOWER_ARTICLE_BEFORE = re.compile(r"(?:^|[^\w])the\s+$")
_LIST_JOIN = re.compile(
    r"^[\s\"'”’*_]*(?:\(\s*(?:18|19|20)\d\d[^)]{0,20}\))?[\s\"'”’*_]*(?:,\s*(?:and|or)?|and|or|&)\s*[\"'“‘*_]*$"
)
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
    r"(?:\byou(?:'ve|\s+have|\s+already|\s+also)?\s+(?:liked|loved|enjoyed|mentioned|watched|seen|saw|asked\s+about|named|"
    r"brought\s+up|picked|chose|like|love|enjoy|enjoyed\s+watching)"
    r"|\bsince\s+you|\bif\s+you\s+(?:liked|loved|enjoyed|like|love|enjoy)"
    r"|\bsimilar\s+to|\b(?:films?|movies?|something|one|ones|titles?|stories|story|vibe|vibes|feel|tone)\s+like"
    r"|\bjust\s+like|\bmuch\s+like|\blike\s+in|\breminiscent\s+of|\bin\s+the\s+(?:vein|spirit|style)\s+of|\bfans?\s+of"
    r"|\bunlike|\bthan|\bas\s+in|\b(?:director|directors|makers|creators|writer|writers|star|stars|author|team)\s+(?:of|behind)"
    r"|\bsequel\s+to|\bprequel\s+to|\bremake\s+of|\bbased\s+on|\binspired\s+by|\bother\s+than|\binstead\s+of|\bbesides"
    r"|\bapart\s+from|\baside\s+from|\bcompared\s+to|\bcomparison\s+to|\bbeyond|\bafter\s+(?:watching|seeing)"
    r"|\b(?:mood|tone|story|plot|cast|ending|themes?|sound|vibe|feel|atmosphere)\s+of|\bin\s+(?:the\s+)?(?:film|movie)?"
    r"|\binterest(?:ed)?\s+in|\bpreference\s+for|\bfond\s+of|\bsimilar\s+(?:\w+\s+){0,2}(?:to|as)|\bsame\s+(?:\w+\s+){0,2}as"
    r"|\bshared\s+about|\bmentioned)"
    r"(?:[ \t]+\w+){0,3}[\s\"'“‘*_]*$",
    re.I,
)
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


@dataclass(frozen=True)
class TitleReference:
    title: str
    start: int
    end: int
    role: str  # "recommended" or "mentioned"
    cue: str  # what made the span a reference: formatted, verbatim, year, heading, film word, candidate, capitalised


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

    @staticmethod
    def _classify(title: str, name_words: set[str]) -> str:
        words = re.findall(r"[^\W\d_]+", title)
        if not words or len(title) <= 2:
            return "number"  # "1984", "300", "50/50", "X", "W."
        if len(words) > 1 and any(w[0].isupper() for w in words[1:]):
            return "plain"  # "The Dark Knight": title case is a cue in itself (matching is case-sensitive)
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

    def recognise(self, text: str, *, candidates=(), user_text: str = "", context_titles=()) -> RecognisedTitles:
        """The films `text` refers to. `candidates`: titles the writer was given (a cue for
        ambiguous titles); `user_text`: the message the text answers (films named there and
        not proposed again are mentioned); `context_titles`: other films the user named before."""
        candidates = set(candidates)
        references = self._references(text, candidates)
        named_by_user = set(context_titles)
        if user_text:
            named_by_user |= {r.title for r in self._references(user_text, candidates)}
        result = RecognisedTitles(references=[])
        for ref in references:
            previous = result.references[-1] if result.references else None
            if previous is not None and _ROLE_JOIN.match(text[previous.end : ref.start]):
                role = previous.role  # "the director of X and Y": a list shares its role
            else:
                role = self._role(text, ref, named_by_user)
            result.references.append(TitleReference(ref.title, ref.start, ref.end, role, ref.cue))
        for ref in result.references:
            if ref.role == "recommended" and ref.title not in result.recommended:
                result.recommended.append(ref.title)
        for ref in result.references:
            if ref.role == "mentioned" and ref.title not in result.recommended and ref.title not in result.mentioned:
                result.mentioned.append(ref.title)
        return result

    def spans(self, text: str, candidates=()) -> list[tuple[int, int]]:
        """Character spans of film references (for extractors that must not read inside titles)."""
        return [(r.start, r.end) for r in self._references(text, set(candidates))]

    def _references(self, text: str, candidates: set[str]) -> list[TitleReference]:
        found: list[TitleReference] = []
        covered: list[tuple[int, int]] = []
        for match in _FORMATTED.finditer(text):
            group = next(g for g in match.groupdict() if match.group(g) is not None)
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
        tokens = tokenize(text)
        keys = [t for t, _, _ in tokens]
        weak: list[TitleReference] = []
        i = 0
        while i < len(tokens):
            hit = None
            for length in self._lengths.get(keys[i], ()):
                run = tuple(keys[i : i + length])
                if len(run) == length and run in self.titles:
                    hit = (length, self.titles[run])
                    break
            if hit is None:
                i += 1
                continue
            length, title = hit
            start, end = tokens[i][1], tokens[i + length - 1][2]
            i += length
            if any(a <= start < b for a, b in covered):
                continue
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
        keys = {r.title: tuple(t.lower() for t, _, _ in tokenize(r.title)) for r in found}
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

    def _title_of(self, span: str) -> str | None:
        key = tuple(t for t, _, _ in tokenize(span))
        if key in self.titles:
            return self.titles[key]
        if span == span.lower() and len(key) == 1:
            return None  # 'river' in quotes is a word being quoted, not "The River"
        matches = self.folded.get(_fold(span), [])
        return matches[0] if len(set(matches)) == 1 else None

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
        line = before[before.rfind("\n") + 1 :]
        if len(line) <= 12 and _LIST_MARKER.fullmatch(line) and _HEADING_END.match(after):
            return "heading"
        if _FILM_WORD.search(before[-40:]) and kind != "name":
            return "film word"
        if kind == "number":
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
    def _role(text: str, ref: TitleReference, named_by_user: set[str]) -> str:
        before = text[max(0, ref.start - 120) : ref.start]
        clause = before
        breaks = list(_CLAUSE_BREAK.finditer(before))
        if breaks:
            clause = before[breaks[-1].end() :]
        if _BACK_REFERENCE.search(clause):
            return "mentioned"
        if ref.title in named_by_user:
            if ref.cue == "heading" or re.search(r"\btitle:\s*[\"'“‘*_]*$", before[-12:], re.I):
                return "recommended"  # a suggestion list that includes the user's film
            sentence = re.split(r"[.!?\n]", before)[-1]
            after = text[ref.end : ref.end + 120]
            if _PROPOSAL_BEFORE.search(sentence) or _PROPOSAL_AFTER.match(after):
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
