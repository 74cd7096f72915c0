"""Conduct: what people reward in a recommender's replies, read from the system's side of the record alone.

Computed from each turn's `system_text`, `recommended_titles`, `mentioned_titles` and `unknown_titles` (films
named outside the catalog), and from `user_text` only where a rule needs to know what the user turned down or
asked for; no simulator ground truth, so simulated and imported sessions are scored alike. Nothing of the
user's reaction itself (its length, its tone) is scored: that would measure the user, not the system. Turn t
holds the user's message and the reply to it; the user's message of turn t + 1 reacts to the reply of turn t.

A film is a catalog film by its catalog title, or a film outside the catalog by its name as written,
case-folded and with white space collapsed. A reply *names* the films it recommends, mentions or names
outside the catalog; it *offers* those it recommends and those outside the catalog (the recognizer does not
tell an outside film recommended from one mentioned).

- films_offered_per_reply: distinct films the session's replies name, divided by the number of replies.
- new_films_per_reply: films a reply names that no earlier reply named and the user has not named so far
  (in that turn's message or before; read by the title recognizer as a user's text), per reply.
- new_words_per_reply: content words (crseval.language.text.content_words: lemmas of three letters or more
  that are no stop word) a reply says that no earlier reply of the session said, per reply: what the replies
  add to the conversation, whether films, reasons or questions, rather than how long they are.
- repeated_replies: share of replies that repeat an earlier reply of the session: their word sets have a
  Jaccard index of at least NEAR_REPEAT (4/5, exact). A reply without a word repeats nothing.
- malformed_replies: share of replies that are empty, stutter or hold an unfilled slot (one flag a reply);
  empty_replies, stuttering_replies and unfilled_slot_replies: each kind's share. Empty: no letter or digit
  in any script; stutter: a word or phrase said twice back to back ("the the"), except doublings English or
  a film's title makes; unfilled slot: a template mark or a gap where a name should be ("Have you seen ?").

The rules of a reply's form (repeat, empty, stutter, unfilled slot) are crseval.replies.form's, where each is
written out; the simulated user reads replies by the same rules (crseval.replies.cases).
- rerecommended_after_rejection: of the replies from the first one that answers a turn-down on, the share
  that offer again a film the user turned down. A user message turns down the films the reply before it
  offered when it rejects (REJECTS: user_acts' TURNS_DOWN, "no", "not that one", "don't like", "already
  seen", and "something else", "isn't quite it", "wrong director" ...) and does not take one (user_acts'
  TAKES wins); only the offered films it names, when it names some. NaN when the user turned nothing down.
- replies_without_a_film: of the replies to a message that asks for a film, the share that offer none (a
  mention of a film already named is no offer). A message asks for a film when it turns a film down, has a
  request cue (REQUEST: "recommend", "suggest", "looking for", "something", "another", "more movies" ...), or
  names a film word ("movie", "film") or a catalog value that is not mere context (a wish or an exclusion, as
  the tracker reads it) and does not ask about a film said (user_acts' ASKS_ABOUT). NaN when the user never
  asked.

Every column is NaN for a session without turns (no reply to divide by). Per turn: `films_named`,
`new_films`, `new_words`, `repeated_reply`, `malformed_reply`, `rerecommended_rejected` (the turned-down films the reply
offers again) and `no_film_after_request` (1 when the user asked and the reply offers no film, 0 when it
offers one, NaN when the user did not ask).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from crseval.core.columns import Column
from crseval.language.concepts import Mention
from crseval.language.text import content_words
from crseval.language.tokens import TextAnalyses
from crseval.language.tracker import YEAR, is_context
from crseval.language.user_acts import ASKS_ABOUT, TAKES, TURNS_DOWN
from crseval.metrics.family import (
    FamilyKind,
    never,
    no_backends,
    no_figure_params,
    no_figures,
    no_problems,
    no_settings,
)
from crseval.replies.form import ARTICLES, TOKEN, is_empty, repeats, stutters, unfilled_slot, word_set

NAN = math.nan
SESSION_COLUMNS = (
    Column("films_offered_per_reply", "distinct films the replies name, per reply", "films per reply", True),
    Column("new_films_per_reply", "films named for the first time, per reply", "films per reply", True),
    Column("new_words_per_reply", "content words new to the replies, per reply", "words per reply", True),
    Column("repeated_replies", "replies repeating an earlier reply", "0-1", False),
    Column("malformed_replies", "replies empty, stuttering or with an unfilled slot", "0-1", False),
    Column("empty_replies", "empty replies (share)", "0-1", False),
    Column("stuttering_replies", "stuttering replies", "0-1", False),
    Column("unfilled_slot_replies", "replies with an unfilled slot", "0-1", False),
    Column("rerecommended_after_rejection", "replies offering again a film the user turned down", "0-1", False),
    Column("replies_without_a_film", "replies offering no film when the user asked for one", "0-1", False),
)
TURN_COLUMNS = (
    Column("films_named", "films the reply names", "count", True),
    Column("new_films", "films named for the first time", "count", True),
    Column("new_words", "content words no earlier reply said", "count", True),
    Column("repeated_reply", "the reply repeats an earlier one", "0 or 1", False),
    Column("malformed_reply", "the reply is empty, stutters or has an unfilled slot", "0 or 1", False),
    Column("rerecommended_rejected", "films the user turned down offered again", "count", False),
    Column("no_film_after_request", "the user asked for a film and the reply offers none", "0 or 1", False),
)

# A user message that turns down what it was offered, beyond user_acts' TURNS_DOWN.
REJECTS = re.compile(
    r"\bsomething (?:else|different|better)\b|\b(?:besides|other than)\b|"
    r"\bnot (?:quite|my (?:type|taste|thing|style)|a fan|the \w+ i (?:want|asked for|like))\b|"
    r"\b(?:isn'?t|is not|doesn'?t|does not) (?:quite )?(?:it|fit|what)\b|\bwrong\b|\b(?:less|not) sure about\b|"
    r"\b(?:didn'?t|did not|do not|don'?t) (?:really )?(?:like|enjoy|want)\b|\balready (?:watched|seen)\b|"
    r"\bi(?:'ve|’ve| have|ve) (?:already |all )?(?:watched|seen)\b|"
    r"\b(?:seen|watched) (?:it|that|them|this|those|these)(?: ones?)? (?:already|before)\b|"
    r"^\W*(?:hmm+|um+|uh+)\W+(?:no|nope|nah)\b",
    re.IGNORECASE,
)
# A user message that says it has not seen the film: the answer to "Have you seen X?", not a turn-down.
NOT_SEEN = re.compile(
    r"\b(?:not|never|haven['’]?t|have not)(?: \w+)? (?:seen|watched)\b|^\W*no\W+(?:i haven['’]?t|but|is it)\b",
    re.IGNORECASE,
)
# A user message that asks for a film (misspelt "reccomend", "recomandation" included).
REQUEST = re.compile(
    r"\brec\w*m\w*nd|\bsugg?est|\blooking for\b|\bfind\b|\bgive me\b|\bshow me\b|"
    r"\b(?:want|wanna|like|love|need|going) to (?:watch|see)\b|\bwhat (?:should|can|could|do) i (?:watch|see)\b|"
    r"\b(?:something|anything|another|similar|else)\b|\b(?:other|more) (?:ones?|options?|movies?|films?|titles?)\b",
    re.IGNORECASE,
)
FILM_WORD = re.compile(r"\b(?:movies?|films?|documentar(?:y|ies)|flicks?)\b", re.IGNORECASE)

CATALOG, OUTSIDE = "catalog", "outside"


def _outside_film(title: str) -> tuple[str, str]:
    return OUTSIDE, " ".join(title.casefold().split())


def _phrase(title: str) -> str:
    """A film's title as it is looked for in a user's message: its words, without a leading article."""
    tokens = TOKEN.findall(title.casefold())
    if len(tokens) > 1 and tokens[0] in ARTICLES:
        tokens = tokens[1:]
    return " ".join(tokens)


@dataclass(frozen=True)
class ReplyText:
    """What one reply's text shows, whatever its turn."""

    tokens: frozenset[str]
    content: frozenset[str]
    empty: bool
    stutter: bool
    slot: bool

    @property
    def malformed(self) -> bool:
        return self.empty or self.stutter or self.slot


@dataclass(frozen=True)
class UserText:
    """What a user's message says of the films: whether it turns down what it was offered, whether it asks
    for a film, the films it names, and its words (to find a film it names)."""

    rejects: bool
    asks: bool
    films: frozenset[tuple[str, str]]
    words: str  # its case-folded words joined by single spaces, padded with a space each side

    def names(self, film: tuple[str, str]) -> bool:
        phrase = _phrase(film[1])
        return bool(phrase) and f" {phrase} " in self.words


class Reader:
    """Reads replies and user messages, each distinct text once per shard. `texts`: the analyses the scorer's
    families share (crseval.language.tokens.TextAnalyses), so that a user's message is tokenised once for all."""

    def __init__(self, matcher, texts: TextAnalyses | None = None):
        self.matcher = matcher
        self.texts = texts if texts is not None else TextAnalyses()
        self._replies: dict[tuple[str, tuple[str, ...]], ReplyText] = {}
        self._users: dict[str, UserText] = {}

    def reply(self, text: str, titles: tuple[str, ...]) -> ReplyText:
        key = (text, titles)
        known = self._replies.get(key)
        if known is None:
            empty = is_empty(text)
            known = self._replies[key] = ReplyText(
                word_set(text),
                frozenset(content_words(text)),
                empty,
                not empty and stutters(text, titles),
                not empty and unfilled_slot(text),
            )
        return known

    def user(self, text: str) -> UserText:
        known = self._users.get(text)
        if known is None:
            known = self._users[text] = self._read_user(text)
        return known

    def _read_user(self, text: str) -> UserText:
        analysed = self.texts(text)
        recognised = self.matcher.title_recognizer.recognise(analysed, by_user=True)
        films = frozenset([(CATALOG, t) for t in recognised.all] + [_outside_film(t) for t in recognised.unknown])
        rejects = bool(TURNS_DOWN.search(text) or REJECTS.search(text))
        rejects = rejects and not TAKES.search(text) and not NOT_SEEN.search(text)
        asks = rejects or bool(REQUEST.search(text))
        if not asks and not ASKS_ABOUT.search(text):
            asks = bool(FILM_WORD.search(text)) or self._states_a_value(analysed, recognised)
        return UserText(rejects, asks, films, f" {' '.join(TOKEN.findall(text.casefold()))} ")

    def _states_a_value(self, analysed, recognised) -> bool:
        """Whether the message names a catalog value, or a year, as a wish or an exclusion rather than as context:
        the tracker's reading of a user turn (crseval.language.tracker.extract_statements), on the shared tokens."""
        text = analysed.text
        mentions = self.matcher.values(analysed, recognised.all)
        if any(not is_context(text, mention) for mention in mentions):
            return True
        covered = [(m.start, m.end) for m in mentions] + [(r.start, r.end) for r in recognised.references]
        years = [Mention("year", y.group(1), y.start(), y.end()) for y in YEAR.finditer(text) if _outside(y, covered)]
        return any(not is_context(text, year) for year in years)


def _outside(match: re.Match, spans: list[tuple[int, int]]) -> bool:
    return not any(start <= match.start() < end for start, end in spans)


def score_session(record: dict, reader: Reader) -> tuple[dict, list[dict]]:
    """The session columns and the per-turn columns of one session (module docstring)."""
    turns = record["turns"]
    if not turns:
        return dict.fromkeys((c.name for c in SESSION_COLUMNS), NAN), []
    said: set[tuple[str, str]] = set()  # films named so far, by either side
    named_by_replies: set[tuple[str, str]] = set()
    rejected: set[tuple[str, str]] = set()
    first_answer = None  # the first reply that answers a turn-down
    offered_before: list[tuple[str, str]] = []
    words_said: set[str] = set()  # content words the replies said so far
    replies, rows = [], []
    for number, turn in enumerate(turns):
        user = reader.user(turn.get("user_text") or "")
        if number and user.rejects and offered_before:
            rejected.update([film for film in offered_before if user.names(film)] or offered_before)
            first_answer = number if first_answer is None else first_answer
        said |= user.films
        recommended = [(CATALOG, t) for t in turn.get("recommended_titles") or []]
        outside = [_outside_film(t) for t in turn.get("unknown_titles") or []]
        offered = list(dict.fromkeys(recommended + outside))
        named = set(offered) | {(CATALOG, t) for t in turn.get("mentioned_titles") or []}
        new = named - said
        said |= named
        named_by_replies |= named
        titles = (
            *(turn.get("recommended_titles") or []),
            *(turn.get("mentioned_titles") or []),
            *(turn.get("unknown_titles") or []),
        )
        reply = reader.reply(turn.get("system_text") or "", tuple(titles))
        replies.append(reply)
        new_words = reply.content - words_said
        words_said |= reply.content
        rows.append(
            {
                "films_named": float(len(named)),
                "new_films": float(len(new)),
                "new_words": float(len(new_words)),
                "malformed_reply": float(reply.malformed),
                "rerecommended_rejected": float(sum(film in rejected for film in offered)),
                "no_film_after_request": float(not offered) if user.asks else NAN,
            }
        )
        offered_before = offered
    repeated = repeats([reply.tokens for reply in replies])
    for row, again in zip(rows, repeated):
        row["repeated_reply"] = float(again)
    count = len(turns)
    asked = [row["no_film_after_request"] for row in rows if not math.isnan(row["no_film_after_request"])]
    answers = rows[first_answer:] if first_answer is not None else []
    session = {
        "films_offered_per_reply": len(named_by_replies) / count,
        "new_films_per_reply": sum(row["new_films"] for row in rows) / count,
        "new_words_per_reply": sum(row["new_words"] for row in rows) / count,
        "repeated_replies": float(repeated.sum()) / count,
        "malformed_replies": sum(reply.malformed for reply in replies) / count,
        "empty_replies": sum(reply.empty for reply in replies) / count,
        "stuttering_replies": sum(reply.stutter for reply in replies) / count,
        "unfilled_slot_replies": sum(reply.slot for reply in replies) / count,
        "rerecommended_after_rejection": (
            sum(row["rerecommended_rejected"] > 0 for row in answers) / len(answers) if answers else NAN
        ),
        "replies_without_a_film": sum(asked) / len(asked) if asked else NAN,
    }
    return session, rows


class ConductFamily:
    """Films offered, repeats, malformed replies and films offered again after the user turned them down,
    from the system's side of the record (registered as `conduct`)."""

    name = "conduct"
    session_columns = SESSION_COLUMNS
    turn_columns = TURN_COLUMNS

    def __init__(self, context):
        self.matcher = context.space.matcher
        self.texts = context.texts

    def score_shard(self, records: list[dict]) -> list[tuple[dict, list[dict]]]:
        reader = Reader(self.matcher, self.texts)  # a shard's texts, read once each
        return [score_session(record, reader) for record in records]


KIND = FamilyKind(
    name="conduct",
    summary="what people reward, from the system's side: films offered, words new to the conversation, "
    "repeated and malformed replies, films offered again after a turn-down",
    scorer=ConductFamily,
    parse_settings=dict,  # no settings
    backends=no_backends,
    embedding_users=no_settings,
    reads_lda=never,
    checks=no_problems,
    # No calibration order: every calibration system phrases one template, never repeats a film and offers up
    # to two catalog films a reply, so their construction orders none of these columns (the random system
    # offers the most films, by construction, and that says nothing of adaptation).
    expectations=(),
    headline=("films_offered_per_reply", "new_words_per_reply"),
    figures=no_figures,
    scatter_columns=no_settings,
    distribution_columns=(),
    figure_params=no_figure_params,
)
