"""The case of a recommender's reply: what it did, read by the project's rules, so that the user's next turn can
react to it (the learned voice says what people said after such a reply) and the realism check can compare
turns said after alike replies.

A reply has one case, the first of these that applies (REPLY_CASES, in this order):

- unusable: nothing a reader can use: it is empty, stutters, holds an unfilled slot or is garbled
  (crseval.replies.form; the films it names are no stutter);
- repeated: its word set repeats an earlier reply of the session (Jaccard index of at least 4/5,
  crseval.replies.form), whatever else it does: a reply said again is no new offer;
- catalog_film: it offers at least one catalog film (one it recommends, not one it only mentions);
- outside_film: it names films the catalog does not hold, and no catalog film;
- not_a_film: it recommends something that is not a film and names no film: one of its sentences has a
  recommendation cue (RECOMMENDS: "recommend", "suggest", "try", "check out", "how about", "you might like",
  "you should read", "give it a listen", praise in the present: "it is a great ...") and a lower-case word
  for another kind of thing (OTHER_KINDS: books and reading, music, games, television, podcasts, food), and
  no film word ("movie", "film", "documentary", "adaptation" ...). A TV series or show is not a film: a
  user who asked for a film was given something else. "game" and "show" count only as "video game", "TV
  show" and the like, since both words are also said of films;
- asked: it asks the user something and offers no film: a sentence ends with "?" or, people leaving the
  mark out, opens with a question ("what kind", "what's your", "which one", "how about", "do you", "would
  you", "have you", "are you", "tell me", "let me know", "any favourite" ...; QUESTION_OPENING; not "what
  a ..." or "what I like ..."), after an opening filler such as "ok," or "great!";
- answered: the user's message it replies to asked a question ("?" or a question about a film said,
  crseval.language.user_acts' act_flags and ASKS_ABOUT) that is not a request for a film (ASKS_FOR_A_FILM:
  "can you recommend a movie?", "any good films?": words without a film do not answer it), and the reply
  says something with content words (crseval.language.text.content_words) and asks nothing back;
- other: anything else (small talk, a statement).

FAILURES are the cases in which the reply failed the user whatever the user wanted; GOOD is the case of a
reply that did what a recommender is for. START stands for no reply at all: what a dialogue's first user turn
reacts to.

`session_reply_cases` reads, for each user turn of a session record, the case of the reply it reacts to.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import lru_cache

from crseval.language.text import content_words
from crseval.language.user_acts import ASKS_ABOUT, act_flags
from crseval.replies.form import garbled, is_empty, repeats_any, stutters, unfilled_slot, word_set

REPLY_CASES = ("catalog_film", "outside_film", "not_a_film", "asked", "answered", "repeated", "unusable", "other")
START = "start"  # no reply before: a dialogue's first user turn
FAILURES = frozenset({"outside_film", "not_a_film", "repeated", "unusable"})
GOOD = "catalog_film"

# (system_text, user_text) -> (catalog films the reply offers, films it names outside the catalog)
Recognise = Callable[[str, str], tuple[Sequence[str], Sequence[str]]]

# A recommendation cue (any case; "reccomend" and other misspellings of "recommend" included).
RECOMMENDS = re.compile(
    r"\brec+om+[ae]nd|\bsugg?est|\btry\b|\btrying\b|\bcheck (?:out|it out)\b|\b(?:how|what) about\b|"
    r"\byou (?:might|may|would|will|could|'d|’d|should|must|gotta|have to)(?: really| also| definitely)? "
    r"(?:like|enjoy|love|dig|appreciate|read|listen|play|check|try|give)\b|"
    r"\bgive (?:it|them|that|this) a (?:try|shot|go|read|listen|spin)\b|"
    r"\bworth (?:reading|listening to|playing|a read|a listen|a try)\b|"
    # praise in the present: "it is a good book" puts the thing forward ("the book was better" does not)
    r"\b(?:is|are)(?: such)? (?:a |an )?(?:really |very |truly )?"
    r"(?:good|great|wonderful|fantastic|excellent|amazing|awesome|brilliant|fun|must-read)\b",
    re.IGNORECASE,
)
# Words for things that are not films, lower case only (a capitalised word may be part of a title), but for
# the names of a medium before "show" or "series" ("TV show", "Netflix series").
OTHER_KINDS = re.compile(
    r"\b(?:(?:audio|e-?|comic )?books?|novels?|novellas?|graphic novels?|comics|manga|poems?|poetry|"
    r"songs?|albums?|bands?|singers?|playlists?|"
    r"(?:video|board|computer|pc|console|mobile|card) games?|"
    r"(?i:tv|television|netflix|hbo|web|anime|streaming) (?:show|series|programs?|programmes?)s?|"
    r"sitcoms?|mini-?series|docu-?series|podcasts?|"
    r"restaurants?|recipes?|cookbooks?)\b"
)
FILM_WORDS = re.compile(
    r"\b(?:movies?|films?|flicks?|documentar(?:y|ies)|adaptations?|cinema|trailers?)\b", re.IGNORECASE
)
# A sentence that asks the user something without a question mark, after an opening filler.
QUESTION_OPENING = re.compile(
    r"^(?:what (?:kinds?|sorts?|types?|genres?|movies?|films?|else|do|did|would|are|about)\b|"
    r"what(?:'s|’s| is| are) your\b|which (?:one|ones|genres?|kinds?|types?|movies?|films?|do|would|of)\b|"
    r"how (?:about|do|did|would|are|old|long|often|many|much)\b|"
    r"(?:do|did|would|will|have|are|were|could|can) (?:you|u)\b|"
    r"(?:tell me|let me know)\b|any (?:favou?rites?|preferences?|particular|specific|genres?|actors?)\b)",
    re.IGNORECASE,
)
_FILLER = re.compile(
    r"^(?:(?:yes|yeah|sure|ok|okay|hi|hello|hey|well|great|cool|nice|so|also|and|then|alright|oh|ah|hmm|"
    r"sure thing|no problem|of course|thanks|thank you|i see|got it)\b[\s,!.:;-]*)+",
    re.IGNORECASE,
)
# A user's question that asks for a film to watch (a reply without one answers nothing), misspellings included.
ASKS_FOR_A_FILM = re.compile(
    r"\brec\w*m\w*nd|\bsugg?est|\b(?:give|find|show|get) me\b|\blooking for\b|"
    r"\b(?:any|another|some|other|more) (?:good |new |other |more )?(?:movies?|films?|flicks?)\b|"
    r"\bwhat (?:should|can|could|do) i (?:watch|see)\b",
    re.IGNORECASE,
)
_SENTENCES = re.compile(r"(?<=[.!?])\s+|\n+")


def sentences(text: str) -> list[str]:
    """The sentences of `text` (cut after . ! ? and at line breaks), stripped of list marks and quotes."""
    return [s for s in (part.strip(" \t-*>\"'“”‘’") for part in _SENTENCES.split(text)) if s]


def recommends_another_kind(text: str) -> bool:
    """Whether a sentence of `text` recommends a thing that is not a film (module docstring, not_a_film)."""
    return any(RECOMMENDS.search(s) and OTHER_KINDS.search(s) and not FILM_WORDS.search(s) for s in sentences(text))


def asks_the_user(text: str) -> bool:
    """Whether `text` asks the user something: a sentence ending with "?" or opening with an interrogative."""
    for sentence in sentences(text):
        if sentence.rstrip(" \t)\"'”’").endswith("?"):
            return True
        if QUESTION_OPENING.match(_FILLER.sub("", sentence)):
            return True
    return False


def user_asked(user_text: str) -> bool:
    """Whether the user's message asked a question (a "?", or a question about a film said) that words can
    answer: not a request for a film."""
    asked = act_flags(user_text)["question"] or bool(ASKS_ABOUT.search(user_text))
    return asked and not ASKS_FOR_A_FILM.search(user_text)


def reply_case(
    reply: str,
    catalog_films: Sequence[str],
    outside_films: Sequence[str],
    earlier_replies: Sequence[str],
    user_text: str,
    *,
    mentioned_films: Sequence[str] = (),
) -> str:
    """The case of `reply` (module docstring): `catalog_films` the catalog films it offers, `outside_films` the
    films it names that the catalog does not hold, `earlier_replies` the session's replies before it,
    `user_text` the user's message it replies to; `mentioned_films` (catalog films it only mentions) only keep
    a title's own doubled word from reading as a stutter."""
    for name, value in (("reply", reply), ("user_text", user_text)):
        if not isinstance(value, str):
            raise TypeError(f"reply_case: {name} must be a string, not {type(value).__name__}")
    titles = (*catalog_films, *mentioned_films, *outside_films)
    if is_empty(reply) or stutters(reply, titles) or unfilled_slot(reply) or garbled(reply):
        return "unusable"
    if repeats_any(word_set(reply), (word_set(earlier) for earlier in earlier_replies)):
        return "repeated"
    if catalog_films:
        return "catalog_film"
    if outside_films:
        return "outside_film"
    if recommends_another_kind(reply):
        return "not_a_film"
    if asks_the_user(reply):
        return "asked"
    if user_asked(user_text) and content_words(reply):
        return "answered"
    return "other"


def catalog_reader(matcher) -> Recognise:
    """The catalog's reading of a reply (a crseval.language.concepts.ConceptMatcher's title recognizer):
    (system_text, user_text) -> (the catalog films it recommends, the films it names outside the catalog),
    each distinct pair read once."""
    recognizer = matcher.title_recognizer

    @lru_cache(maxsize=100_000)
    def recognise(system_text: str, user_text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        found = recognizer.recognise(system_text, user_text=user_text)
        return tuple(found.recommended), tuple(found.unknown)

    return recognise


def session_reply_cases(record: dict, recognise: Recognise | None = None) -> list[str]:
    """For each user turn of a session record, the case of the reply it reacts to: START for the first, then
    the case of turn t's reply for turn t + 1 (one entry per turn).

    A turn's films are its `recommended_titles` (catalog) and `unknown_titles` (outside). Where both are empty
    and `recognise` is given, the films are read from the reply with it (an imported corpus of two people,
    read without a catalog); without `recognise`, a record with no catalog reading at all (no turn names a
    film in those lists or `mentioned_titles`) takes a turn's `marked_titles`, the films the corpus marks in
    the reply, as films outside the catalog."""
    turns = record["turns"]
    read = any(
        turn.get("recommended_titles") or turn.get("unknown_titles") or turn.get("mentioned_titles") for turn in turns
    )
    cases, earlier = [START], []
    for turn in turns[:-1]:  # the last reply has no user turn after it
        reply, user_text = turn.get("system_text") or "", turn.get("user_text") or ""
        catalog, outside = list(turn.get("recommended_titles") or []), list(turn.get("unknown_titles") or [])
        if not catalog and not outside:
            if recognise is not None:
                catalog, outside = (list(films) for films in recognise(reply, user_text))
            elif not read:
                outside = list(turn.get("marked_titles") or [])
        mentioned = turn.get("mentioned_titles") or []
        cases.append(reply_case(reply, catalog, outside, earlier, user_text, mentioned_films=mentioned))
        earlier.append(reply)
    return cases[: len(turns)]
