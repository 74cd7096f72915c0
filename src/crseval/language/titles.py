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

The recognizer reads a text in parts: `title_references` finds the catalog films it names,
`marked_titles` the spans it marks as titles and resolves them against those films (both read titles'
shapes with `title_shapes` and look them up in `title_catalog`); this module gives each reference its
role, recommended or mentioned.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from crseval.language.marked_titles import _Marked, find_marked, resolve
from crseval.language.title_catalog import TitleCatalog, title_key
from crseval.language.title_references import _LIST_JOIN, TitleReference, find_references
from crseval.language.title_shapes import _FORMATTED
from crseval.language.tokens import AnalysedText

# a list item followed by another: "as X, Y, and Z" shares the role of X, "If you liked X, Y is..." does not
_LIST_GOES_ON = re.compile(r"^[\s\"'”’*_]*(?:\(\s*(?:18|19|20)\d\d[^)]{0,20}\))?[\s\"'”’*_]*(?:,|and\b|or\b|&)")
# "X and Y" shares a role; "If you liked X, Y is..." does not (a bare comma may end a clause)
_ROLE_JOIN = re.compile(
    r"^[\s\"'”’*_]*(?:\(\s*(?:18|19|20)\d\d[^)]{0,20}\))?[\s\"'”’*_]*,?\s*(?:and|or|&)\s*[\"'“‘*_]*$"
)
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


class TitleRecognizer(TitleCatalog):
    """Film references in free text, for the catalog of `films` (title column) and its people."""

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
        result = RecognisedTitles(references=_with_roles(text, references, named_by_user))
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
        references = find_references(self, analysed, formatted, candidates, by_user)
        return resolve(self, text, references, find_marked(self, analysed, formatted))


def _with_roles(text: str, references: list[TitleReference], named_by_user: set[str]) -> list[TitleReference]:
    """`references` (of `text`, in order) with their roles; `named_by_user`: the films the user named."""
    with_role: list[TitleReference] = []
    for number, ref in enumerate(references):
        previous = with_role[-1] if with_role else None
        between = text[previous.end : ref.start] if previous is not None else ""
        if previous is not None and (
            _ROLE_JOIN.match(between) or (_LIST_JOIN.match(between) and _LIST_GOES_ON.match(text[ref.end :]))
        ):
            role = previous.role  # "the director of X and Y", "as X, Y, and Z": a list shares its role
        else:
            following = references[number + 1].start if number + 1 < len(references) else len(text)
            role = _role(text, ref, named_by_user, following)
        with_role.append(TitleReference(ref.title, ref.start, ref.end, role, ref.cue))
    return with_role


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
