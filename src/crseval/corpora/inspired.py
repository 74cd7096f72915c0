"""Import INSPIRED (Hayati et al., EMNLP 2020): movie-recommendation dialogues between a seeker and a
recommender trained to be sociable, a person, not a system.

File: tab-separated, one utterance a row, unquoted: `dialog_id`, `utt_id`, `speaker` (SEEKER |
RECOMMENDER), `turn_id`, `text`, `text_with_placeholder` (films, genres and people replaced by
`[MOVIE_TITLE_k]`, `[MOVIE_GENRE_k]` ...), `movie_dict` (the dialogue's films as a Python dict literal,
title -> k), ... and the dialogue's outcome `fine_label` (`accept_rating_good`, `accept_rating_mod`,
`accept_uninterested`, `accept_others`, `reject`).

- the rows of one dialog_id are one dialogue, in `utt_id` order; SEEKER is the USER, RECOMMENDER the
  SYSTEM; every dialogue is of one system, `inspired-people`; the dialog id stays in the provenance;
- the text is `text`, with the source's `QUOTATION_MARK` written back as `"` (counted);
- the film marks of a row are the titles of the `[MOVIE_TITLE_k]` placeholders of its
  `text_with_placeholder`, through the dialogue's `movie_dict` read with ast.literal_eval (bounded in
  size, never evaluated as code); white space runs in a title made one space. A placeholder the dict
  lacks stays unmarked (counted); a dialogue whose movie_dict is not a dict literal is imported without
  film marks (its turns have no `marked_titles`; counted), since its marks cannot be known;
- the verdict `accepted` is 1.0 for `accept_rating_good` (the seeker accepted the film and, after its
  trailer, rated it 4-5) and 0.0 for every other outcome: accepting a film and then rating it 3 or less,
  finding its trailer uninteresting, or accepting it for other reasons is not a recommendation that
  worked. The raw fine_label stays as the label `outcome`. A row whose fine_label is empty or `nan`
  takes the dialogue's (counted); a dialogue none of whose rows has one is unlabelled (null);
- a dialogue with a malformed row (the wrong number of fields, an utt_id that is not a whole number or
  comes twice, a speaker neither SEEKER nor RECOMMENDER, rows that disagree on fine_label, an unknown
  fine_label) is skipped, named and counted, the others imported; a file whose header lacks the columns
  is a CorpusError.
"""

from __future__ import annotations

import csv
import re
from collections import Counter
from pathlib import Path
from typing import Iterator

from crseval.core.io import shown
from crseval.corpora import dialogue
from crseval.corpora.dialogue import MARKS, SYSTEM, USER, CorpusError, Dialogue, Skipped
from crseval.corpora.format_kind import CorpusFormat, Verdict
from crseval.corpora.people import PERSON, clean_title, digest, once, python_literal, read_table, skipped

SYSTEM_NAME = "inspired-people"
SPEAKERS = {"SEEKER": USER, "RECOMMENDER": SYSTEM}
COLUMNS = ("dialog_id", "utt_id", "speaker", "text", "text_with_placeholder", "movie_dict", "fine_label")
OUTCOMES = ("accept_rating_good", "accept_rating_mod", "accept_uninterested", "accept_others", "reject")
GOOD = "accept_rating_good"
NO_LABEL = ("", "nan")  # how the source writes a row without the dialogue's outcome
ACCEPTED = Verdict(
    "accepted",
    "binary",
    "fine_label accept_rating_good (accepted, then rated the film 4-5): 1; any other outcome: 0",
)
QUOTE_TOKEN = "QUOTATION_MARK"
_PLACEHOLDER = re.compile(r"\[MOVIE_TITLE_(\d{1,4})\]")
NUMBERED = "dialog_id repeated with other content: numbered"
QUOTES = "QUOTATION_MARK written as a double quote"
REORDERED = "rows out of utt_id order: sorted"
LABEL_TAKEN = "row without fine_label (nan): the dialogue's label used"
UNLABELLED = "dialogue without a fine_label: unlabelled"
NO_DICT = "movie_dict not a Python dict of titles: dialogue imported without film marks"
TWO_DICTS = "rows disagree on movie_dict: dialogue imported without film marks"
UNMARKED = "film placeholder not in movie_dict: left unmarked"


def _titles(rows: list[dict], repairs: Counter) -> dict[int, str | None] | None:
    """k -> the title of `[MOVIE_TITLE_k]` in the dialogue (None where two titles share k); None when the
    dialogue's movie_dict cannot be read."""
    given = {row["movie_dict"].strip() for row in rows} - {""}
    if len(given) > 1:
        repairs[TWO_DICTS] += 1
        return None
    if not given:
        return {}
    films = python_literal(given.pop(), dict)
    if films is None or not all(isinstance(t, str) and type(k) is int for t, k in films.items()):
        repairs[NO_DICT] += 1
        return None
    titles: dict[int, str | None] = {}
    for title, k in films.items():
        titles[k] = clean_title(title) if k not in titles else None
    return titles


def _marks(placeholders: str, titles: dict[int, str | None], repairs: Counter) -> list[str]:
    marks = []
    for match in _PLACEHOLDER.finditer(placeholders):
        title = titles.get(int(match.group(1)))
        if title is None:
            repairs[UNMARKED] += 1
        else:
            marks.append(title)
    return once(marks)


def _dialogue(path: Path, dialog_id: str, rows: list[tuple[int, dict]]) -> Dialogue | Skipped:
    where = f"{path}: dialog_id {shown(dialog_id)} (line {rows[0][0]})"
    if any(not row["utt_id"].strip().isdigit() for _, row in rows):
        return skipped("an utt_id that is not a whole number", where)
    order = [int(row["utt_id"]) for _, row in rows]
    if len(set(order)) != len(order):
        return skipped("an utt_id that comes twice", where)
    if any(row["speaker"].strip() not in SPEAKERS for _, row in rows):
        return skipped("a speaker neither SEEKER nor RECOMMENDER", where)
    labels = {row["fine_label"].strip() for _, row in rows} - set(NO_LABEL)
    if len(labels) > 1:
        return skipped("rows that disagree on fine_label", where)
    if labels and not labels <= set(OUTCOMES):
        return skipped("a fine_label that is not one of the five outcomes", where)
    repairs: Counter = Counter()
    ordered = [row for _, row in sorted(rows, key=lambda pair: int(pair[1]["utt_id"]))]
    repairs[REORDERED] += ordered != [row for _, row in rows]
    outcome = labels.pop() if labels else None
    if outcome is not None:
        repairs[LABEL_TAKEN] += sum(row["fine_label"].strip() in NO_LABEL for row in ordered)
    titles = _titles(ordered, repairs)
    messages = []
    for row in ordered:
        repairs[QUOTES] += QUOTE_TOKEN in row["text"]
        message = {"speaker": SPEAKERS[row["speaker"].strip()], "text": row["text"].replace(QUOTE_TOKEN, '"')}
        if titles is not None:
            message[MARKS] = _marks(row["text_with_placeholder"], titles, repairs)
        messages.append(message)
    return Dialogue(
        name=SYSTEM_NAME,
        where=where,
        identity=digest(ordered),  # a dialog_id that comes back with other content is another dialogue
        digest=digest(ordered),
        session_name=dialog_id,
        messages=messages,
        provenance={"dialog_id": dialog_id},
        labels={"verdicts": {ACCEPTED.name: None if outcome is None else float(outcome == GOOD)}, "outcome": outcome},
        repairs=+repairs,
        rules=Counter({UNLABELLED: 1} if outcome is None else {}),
    )


def read_file(path: Path) -> Iterator[Dialogue | Skipped]:
    """The dialogues of one INSPIRED file, in the order of their first rows; a malformed one skipped."""
    header, rows = read_table(
        path, dialogue.read_text(path), "\t", COLUMNS, "INSPIRED dialogues (tab-separated)", quoting=csv.QUOTE_NONE
    )
    grouped: dict[str, list[tuple[int, dict]]] = {}
    broken: dict[str, str] = {}  # dialog_id -> where its first row of the wrong length is
    position = header.index("dialog_id")
    for line, fields in rows:
        dialog_id = fields[position].strip() if position < len(fields) else ""
        if len(fields) != len(header) or not dialog_id:
            if dialog_id:
                broken.setdefault(dialog_id, f"{path}, line {line}")
            else:
                yield skipped("a row without a dialog_id", f"{path}, line {line}")
            continue
        grouped.setdefault(dialog_id, []).append((line, dict(zip(header, fields))))
    if not grouped and not broken:
        raise CorpusError(f"{path}: holds no dialogue: no row after the header")
    for dialog_id in {**grouped, **broken}:
        if dialog_id in broken:
            yield skipped(
                "a row with the wrong number of fields", f"{broken[dialog_id]} (dialog_id {shown(dialog_id)})"
            )
        else:
            yield _dialogue(path, dialog_id, grouped[dialog_id])


KIND = CorpusFormat(
    "inspired",
    f"INSPIRED dialogues of a seeker and a sociable recommender; {PERSON}",
    read_file=read_file,
    system_names=("recommenders", "the corpus has one system"),
    numbered=NUMBERED,
    verdicts=(ACCEPTED,),
    between_people=True,
)
