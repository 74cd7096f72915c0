"""Which preference fields a recommender's reply asks the user about.

The simulated user answers what it was asked, and a metric counts how often a system elicits
preferences, so both need to know whether a reply asks "what genre?", "any favourite actor?" or
an open "what are you in the mood for?". Rules (lower-case text, precompiled regexes, no model):

- A reply is cut into sentences (at . ! ? and line breaks) and each sentence into clauses at
  ", or ". A sentence is a question when it ends with "?", or a request for information when it
  opens with (or contains "could you", "please" ... before) tell me / let me know / name /
  describe / share ("Tell me which actor you like.").
- A question clause asks about a field when it carries one of the field's cue words (`CUES`):
  genre, "kind of movie", "what sort of"; actor, actress, star, cast; director, filmmaker;
  writer, screenwriter, written; language, subtitles, dubbed, foreign; year, decade, era,
  "old or new"; theme, plot, story, subject, "be about", "set in"; and more below.
- Not asks: a clause that is a question about a named or earlier film ("Have you seen Heat?",
  "Did you know it was written by ...?", "Was it good?"), an offer ("Shall I suggest another?",
  "Would you like me to ...?", "Would you like to know more ...?"), statements, and a cue that
  points back at a film ("the same genre", "that decade").
- A yes/no question proposing a value ("Would you like a comedy?", "How about something with Tom
  Hanks?") is not an ask, unless a cue word of the field is in it ("... starring Tom Hanks?",
  "... released this year?"): values are not recognised, cue words are.
- `OPEN` is reported when the reply asks no field but asks the user's wishes openly ("Anything in
  mind?", "What are you in the mood for?", "Tell me more about what you like", "Any
  preferences?", "What is your favourite movie?"). A reply that asks a field is not also open.

Measured (tests/test_asks.py) as precision and recall over (reply, field) pairs on hand-labelled
replies (tests/data/ask_labels/, GUIDE.md there): replies written for the project and real
system replies of CRSArena-Dial, each split into a `dev` half the rules were tuned on and a
`test` half that estimates them.
"""

from __future__ import annotations

import re

from crseval.core.fields import CONCEPT_FIELDS, KEYWORD_FIELD

FIELDS = (*CONCEPT_FIELDS, KEYWORD_FIELD)  # genre, actor, director, writer, language, year, plot_keyword
OPEN = "open"

_ERA = r"(?:old|older|new|newer|recent|classic|classics|modern|contemporary|vintage)"
# field -> cue words; a cue in a question clause that is no film question and no offer asks that field
CUES = {
    "genre": r"\bgenres?\b|\b(?:kinds?|types?|sorts?) of (?:[\w-]+ ){0,2}"
    r"(?:movies?|films?|flicks?|documentar(?:y|ies)|cinema|things?|stuff)\b|\bwhat sort of\b",
    "actor": r"\bactors?\b|\bactress(?:es)?\b|\bstars?\b(?! wars| trek)|\bstarring\b|\bcast\b"
    r"|\bwho would you like to see(?! it\b)|\bleading (?:man|lady|role)\b",
    "director": r"\bdirectors?\b|\bdirected\b|\bfilm-?makers?\b",
    "writer": r"\b(?:screen)?writers?\b|\bwritten\b|\bscreenplays?\b",
    "language": r"\blanguages?\b|\bsubtitle[sd]?\b|\bdubbed\b|\bdubbing\b|\bforeign\b",
    "year": rf"\byears?\b|\bdecades?\b|\beras?\b|\btime periods?\b|\breleased when\b"
    rf"|\b{_ERA}(?: \w+)? or (?:an? )?{_ERA}\b",
    "plot_keyword": r"\bthemes?\b|\bplots?\b|\bstory\b|\bstorylines?\b|\bsubjects?\b|\btopics?\b|\bset in\b"
    r"|\b(?:be|is|are|something|anything|ones?|movies?|films?) about\b",
}
_CUES = {field: re.compile(pattern) for field, pattern in CUES.items()}
assert tuple(_CUES) == FIELDS

# a cue that points back at a film already named is no question about the user's wish
_BACK_REFERENCE = re.compile(
    r"\b(?:the same|that|those|these|its|his|her|their)\s+(?:same\s+)?"
    r"(?:genres?|years?|decades?|eras?|directors?|actors?|actress|writers?|languages?|cast|plot|story|themes?)\b"
)
# opening words that do not change what a clause asks ("Sure! What genre ...")
_FILLER = re.compile(
    r"^(?:(?:yes|yeah|sure|ok|okay|hi|hello|hey|well|great|so|also|or|and|then|alright|oh|"
    r"sure thing|no problem|of course|thanks|thank you)\b[\s,!.:;-]*)+"
)
# questions about a film named or recommended before, not about the user's wishes
_FILM_QUESTION = re.compile(
    r"^(?:have|had) (?:you|your|u) (?:ever )?(?:seen|see|watched|heard|read|tried|caught)\b"
    r"|^did you (?:ever )?(?:see|watch|like|enjoy|love|know|hear|read|catch|want to try|get a chance)\b"
    r"|^(?:was|were) (?:it|that|they|this|the)\b|^what did you think\b|^how did you like\b"
    r"|^ever get a chance\b|\bdo you (?:know|remember)\b"
)
# the system offers to do something; the user is not asked a preference
_OFFER = re.compile(
    r"^(?:shall|should|can|may|could) i\b|^do you want me to\b|^want (?:me to|a few more|more|another)\b"
    r"|^would you like (?:me to|to know|to see more|more|another|other|some more|some other)\b"
    r"|^(?:is there )?anything else\b"
)
_REQUEST = re.compile(r"^(?:please |just |also )?(?:tell me|let me know|name|describe|share|give me)\b")
_REQUEST_INSIDE = re.compile(
    r"\b(?:could you|can you|would you|please|feel free to)\s+(?:also )?(?:tell|let me know|share)"
)
# open questions about the user's wishes that name no field
_OPEN = re.compile(
    r"\b(?:anything|something) (?:specific |particular )?(?:in|on) (?:your )?mind\b|\bin the mood\b"
    r"|\bwhat (?:else )?(?:do|would) you (?:feel like|fancy|want|like to watch)\b|\bfeel like watching\b"
    r"|\bwhat (?:you|you're|you are) (?:like|enjoy|want|love|are looking|'re looking|looking)\b"
    r"|\btell me more\b|\bany (?:particular |specific |other )?preferences?\b|\byour preferences?\b"
    r"|\b(?:how|what) can i help\b|\blooking for\b|\byour (?:all[- ]time )?favou?rites?\b"
    r"|\bwhat (?:movies|films) do you like\b|\bfavou?rite\b.*\byours\s*\?$|\byour tastes?\b"
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"'})


def _question_clauses(text: str) -> list[str]:
    """The clauses of the reply's questions and requests, fillers off their starts: only
    these can ask the user anything."""
    clauses = []
    for sentence in _SENTENCE_END.split(text.lower().translate(_QUOTES)):
        sentence = sentence.strip(" \t-*>\"'")
        if not sentence:
            continue
        opening = _FILLER.sub("", sentence)
        if not (sentence.endswith("?") or _REQUEST.match(opening) or _REQUEST_INSIDE.search(sentence)):
            continue
        clauses.extend(_FILLER.sub("", part.strip()) for part in sentence.split(", or "))
    return clauses


def asked_fields(text: str) -> frozenset[str]:
    """The fields the reply asks the user about, or {OPEN} for an open preference question
    that names none (rules in the module docstring)."""
    fields, open_question = set(), False
    for clause in _question_clauses(text):
        if _FILM_QUESTION.search(clause) or _OFFER.match(clause):
            continue
        cued = _BACK_REFERENCE.sub(" ", clause)
        fields.update(field for field, cue in _CUES.items() if cue.search(cued))
        open_question = open_question or _OPEN.search(clause) is not None
    if not fields and open_question:
        return frozenset((OPEN,))
    return frozenset(fields)
