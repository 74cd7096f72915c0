"""Import ReDial (Li et al., NeurIPS 2018): movie-recommendation dialogues between two crowd workers, a
seeker and a recommender who is a person, not a system.

Dialogues: JSON lines, one dialogue a line: `{conversationId, initiatorWorkerId (the seeker),
respondentWorkerId (the recommender), messages: [{text, senderWorkerId, ...}], movieMentions: {movie id:
"Title (Year)"}, initiatorQuestions: {movie id: {suggested, seen, liked}}, respondentQuestions}`. In a
text a film is written `@<movie id>`. The film list `movies_with_mentions.csv` (`movieId, movieName,
nbMentions`) is optional: named among the import paths (it is told from a dialogue file by its header),
it resolves the ids a dialogue's own `movieMentions` lacks.

- the seeker's messages are USER, the recommender's SYSTEM; every dialogue is of one system,
  `redial-people`; the conversation id, the seeker's and the recommender's worker ids stay in the
  provenance (the seeker's as `user_id`);
- `@<movie id>` becomes the film's title as its `movieMentions` writes it (the film list's otherwise,
  counted), runs of white space in a title made one space; an id neither names stays as written
  (counted). The titles a message marks so become its `marks` (the turn's `marked_titles`);
- ReDial has no verdict on a dialogue: the seeker's answers per film (`initiatorQuestions`) become the
  label `films: {title: {suggested, seen, liked}}` as the source codes them: `suggested` 1 when the
  recommender suggested the film, 0 when the seeker named it; `seen` and `liked` 0 no, 1 yes, 2 the
  seeker did not say. An empty list for the answers (the source writes some so) is no answers (counted);
- a line that is not a JSON object of that shape, a message of a worker who is neither of the two, an
  answer that is not 0, 1 or 2: that dialogue is skipped, named and counted, the others imported; a
  first line that is not a JSON object means the file is not ReDial (CorpusError). A dialogue repeating
  an earlier one is skipped; a conversation id that comes back with other content is numbered (`#2`).
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Iterator

from crseval.core.io import json_type, numbered_lines, shown
from crseval.corpora import dialogue
from crseval.corpora.dialogue import MARKS, SYSTEM, USER, CorpusError, Dialogue, Skipped
from crseval.corpora.format_kind import CorpusFormat
from crseval.corpora.people import PERSON, clean_title, digest, first_line, once, read_table, skipped

SYSTEM_NAME = "redial-people"
FILM_LIST_COLUMNS = ("movieId", "movieName")  # and nbMentions
ANSWERS = ("suggested", "seen", "liked")
ANSWER_VALUES = (0, 1, 2)
_MENTION = re.compile(r"@(\d{1,12})")
NUMBERED = "conversation id repeated with other content: numbered"
FROM_FILM_LIST = "film id resolved through movies_with_mentions.csv"
UNRESOLVED = "film id resolved nowhere: left as written"
NO_ANSWERS = "seeker's answers an empty list: no answers"
ANSWERS_UNRESOLVED = "seeker's answers for a film id resolved nowhere: kept under @<id>"
ANSWERS_TWICE = "seeker's answers for one title given twice: the first kept"
FILM_LIST_SKIPPED = "film list row skipped: "


def _is_id(value: object) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool)) or (isinstance(value, str) and bool(value.strip()))


def read_film_list(path: Path, text: str, films: dict[str, str]) -> Iterator[Skipped]:
    """The titles of movies_with_mentions.csv into `films` (movie id -> title); a row without a numeric id
    and a name, or repeating an id, is skipped (counted)."""
    header, rows = read_table(path, text, ",", FILM_LIST_COLUMNS, "a ReDial film list (movies_with_mentions.csv)")
    at = {column: header.index(column) for column in FILM_LIST_COLUMNS}
    for line, row in rows:
        where = f"{path}, line {line}"
        if len(row) != len(header):
            yield Skipped(FILM_LIST_SKIPPED + "wrong number of fields", where)
            continue
        movie_id, name = row[at["movieId"]].strip(), clean_title(row[at["movieName"]])
        if not movie_id.isdigit() or not name:
            yield Skipped(FILM_LIST_SKIPPED + "movieId not a number or movieName empty", where)
        elif movie_id in films:
            yield Skipped(FILM_LIST_SKIPPED + "movieId repeated", where)
        else:
            films[movie_id] = name


def _problem(item: dict) -> str | None:
    """What keeps `item` from being a ReDial dialogue, or None (names the field, never the value)."""
    for key in ("conversationId", "initiatorWorkerId", "respondentWorkerId"):
        if not _is_id(item.get(key)):
            return f"{key} missing or not a string or integer"
    if not isinstance(item.get("messages"), list):
        return "messages missing or not a list"
    workers = {str(item["initiatorWorkerId"]), str(item["respondentWorkerId"])}
    for message in item["messages"]:
        if not isinstance(message, dict) or not isinstance(message.get("text"), str):
            return "a message without text"
        if not _is_id(message.get("senderWorkerId")) or str(message["senderWorkerId"]) not in workers:
            return "a message of a worker who is neither the seeker nor the recommender"
    mentions = item.get("movieMentions")
    if not (isinstance(mentions, dict) or mentions == []):
        return "movieMentions missing or not an object"
    if isinstance(mentions, dict) and not all(isinstance(v, (str, type(None))) for v in mentions.values()):
        return "movieMentions: a title that is not a string"
    answers = item.get("initiatorQuestions")
    if not (isinstance(answers, dict) or answers == []):
        return "initiatorQuestions missing or not an object"
    for given in (answers or {}).values():
        if not isinstance(given, dict) or any(
            type(given.get(key)) is not int or given[key] not in ANSWER_VALUES for key in ANSWERS
        ):
            return "initiatorQuestions: an answer that is not 0, 1 or 2"
    return None


class Titles:
    """The title of a film id in one dialogue: its own movieMentions first, then the film list."""

    def __init__(self, mentions: dict, films: dict[str, str], repairs: Counter):
        self.mentions, self.films, self.repairs = mentions, films, repairs

    def title(self, movie_id: str) -> str | None:
        own = self.mentions.get(movie_id)
        if isinstance(own, str) and own.strip():
            return clean_title(own)
        if movie_id in self.films:
            self.repairs[FROM_FILM_LIST] += 1
            return self.films[movie_id]
        return None

    def resolve(self, text: str) -> tuple[str, list[str]]:
        """`text` with each `@<id>` written as its title, and the titles it marks in order, each once."""
        marks: list[str] = []

        def written(match: re.Match) -> str:
            title = self.title(match.group(1))
            if title is None:
                self.repairs[UNRESOLVED] += 1
                return match.group(0)
            marks.append(title)
            return title

        return _MENTION.sub(written, text), once(marks)


def _films(answers: dict, titles: Titles, repairs: Counter) -> dict[str, dict[str, int]]:
    films: dict[str, dict[str, int]] = {}
    for movie_id, given in answers.items():
        title = titles.title(str(movie_id))
        if title is None:
            repairs[ANSWERS_UNRESOLVED] += 1
            title = f"@{movie_id}"
        if title in films:
            repairs[ANSWERS_TWICE] += 1
            continue
        films[title] = {key: given[key] for key in ANSWERS}
    return films


def read_dialogues(path: Path, text: str, films: dict[str, str]) -> Iterator[Dialogue | Skipped]:
    """The dialogues of one JSON-lines file; a malformed line skipped (Skipped), the file refused
    (CorpusError) when its first line is not a JSON object."""
    lines = numbered_lines(text)
    first = True
    for number, line in lines:
        where = f"{path}, line {number}"
        try:
            item = dialogue.parse_json(line, where)
        except CorpusError as error:
            if first:
                raise CorpusError(f"{error} (not ReDial JSON lines: one dialogue object a line)") from None
            yield skipped("a line that is not JSON", where)
            continue
        if not isinstance(item, dict):
            if first:
                raise CorpusError(
                    f"{where}: not ReDial JSON lines: expected a dialogue object, found {json_type(item)}"
                )
            yield skipped("a line that is not a JSON object", where)
            continue
        first = False
        problem = _problem(item)
        if problem is not None:
            yield skipped(problem, where)
            continue
        yield _dialogue(path, number, item, films)
    if first:
        raise CorpusError(f"{path}: holds no dialogue: the file is empty (or only blank lines)")


def _dialogue(path: Path, number: int, item: dict, films: dict[str, str]) -> Dialogue:
    conversation_id = str(item["conversationId"])
    seeker = str(item["initiatorWorkerId"])
    repairs: Counter = Counter()
    titles = Titles(item["movieMentions"] or {}, films, repairs)
    messages = []
    for message in item["messages"]:
        text, marks = titles.resolve(message["text"])
        speaker = USER if str(message["senderWorkerId"]) == seeker else SYSTEM
        messages.append({"speaker": speaker, "text": text, MARKS: marks})
    if item["initiatorQuestions"] == []:
        repairs[NO_ANSWERS] += 1
    return Dialogue(
        name=SYSTEM_NAME,
        where=f"{path}, line {number} (conversation {shown(conversation_id)})",
        identity=digest(item),  # a conversation id that comes back with other content is another dialogue
        digest=digest(item),
        session_name=conversation_id,
        messages=messages,
        provenance={
            "conversation_id": conversation_id,
            "user_id": seeker,
            "recommender_id": str(item["respondentWorkerId"]),
            "line": number,
        },
        labels={"verdicts": {}, "films": _films(item["initiatorQuestions"] or {}, titles, repairs)},
        repairs=repairs,
    )


def read_corpus(paths: list[Path]) -> Iterator[tuple[Path, Dialogue | Skipped]]:
    """The dialogues of the JSON-lines files among `paths`, their ids resolved with the film lists among
    them (read first, whatever their names)."""
    films: dict[str, str] = {}
    dialogue_files = []
    for path in paths:
        text = dialogue.read_text(path)
        if first_line(text).startswith("movieId,"):
            yield from ((path, found) for found in read_film_list(path, text, films))
        else:
            dialogue_files.append((path, text))
    if not dialogue_files:
        raise CorpusError(
            f"{', '.join(map(str, paths)) or 'no file'}: no ReDial dialogue file (JSON lines) among the import paths"
        )
    for path, text in dialogue_files:
        yield from ((path, found) for found in read_dialogues(path, text, films))


def read_file(path: Path) -> Iterator[Dialogue | Skipped]:
    """The dialogues of one dialogue file, read alone (without a film list)."""
    return (found for _, found in read_corpus([path]))


KIND = CorpusFormat(
    "redial",
    f"ReDial dialogues of a seeker and a recommender; {PERSON}",
    read_file=read_file,
    system_names=("recommenders", "the corpus has one system"),
    numbered=NUMBERED,
    read_corpus=read_corpus,
    between_people=True,
)
