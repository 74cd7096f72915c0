"""Import AB-ReDial (Siro, Aliannejadi and de Rijke, 2022): ReDial dialogues scored by annotators who
read them, per dialogue and per sampled turn. The recommender is a person, not a system.

Files, told apart by their headers (the second is optional):
- `annotated_dialogues.csv`: one row per annotator and dialogue: `ConvId`, `utterance0` ...
  `utterance<n>` (each cell `SYSTEM<TAB>text` or `USER<TAB>text`, the human recommender labelled SYSTEM;
  empty cells after the end), and the scores `understanding`, `task-completion`, `interest-arousal`,
  `efficiency`, `dialogue-overall` (and a free-text `justification-text`, not read);
- `annotated_turns.csv`: per row `ConvId` and, for sampled turns K = 1, 2, 3, four utterances each (two of
  context, the recommender's reply `utterance<4K-2>`, the seeker's next) and `relevanceK`,
  `interestingnessK`, `overallK`.

- the rows of one ConvId are one dialogue; its annotators must have read the same utterances (else that
  dialogue is skipped, named and counted). SYSTEM is the SYSTEM, USER the USER; a speaker separated from
  its text by spaces instead of a tab is read all the same (counted). Every dialogue is of one system,
  `ab-redial-people`; the ConvId stays in the provenance;
- verdicts, each the mean over the dialogue's annotators who gave the score: `overall`
  (`dialogue-overall`, the primary one), `understanding`, `task_completion`, `interest_arousal`,
  `efficiency`; the label `annotators` counts the rows. An empty score leaves that annotator out of that
  mean (counted); a score of 0 (the README says 1-5, but the source uses 0 as the bottom of some of its
  scales: efficiency is 0 or 1) is kept as the value it is, counted per column; a score that is not a
  number, or outside 0-5, skips that annotator's row (named and counted); no value is ever made up;
- with the turns file, the label `turn_verdicts: [{turn, relevance, interestingness, overall}]`: the
  means over the annotators of each sampled turn, placed on the turn of the imported session whose reply
  is the sampled reply (white space runs made one space): the one reply equal to it, else the one
  holding it (the reply joined with the recommender's next message; counted), several candidates told
  apart by the seeker's utterance before the reply; a sampled turn placed so on no turn, or on several,
  is counted and left out, never guessed;
- the film marks are the quoted `"Title (Year)"` spans of each utterance (straight or curly quotes),
  white space runs in them made one space: the utterance's `marks` (`marked_titles`).
A file whose header is neither of these is a CorpusError naming it.
"""

from __future__ import annotations

import copy
import re
from collections import Counter
from pathlib import Path
from typing import Iterator

from crseval.core.io import shown
from crseval.corpora import dialogue
from crseval.corpora.dialogue import MARKS, SYSTEM, USER, CorpusError, Dialogue, Skipped, pair_turns
from crseval.corpora.format_kind import CorpusFormat, Verdict
from crseval.corpora.people import MALFORMED, PERSON, clean_title, digest, mean, number, once, read_table

SYSTEM_NAME = "ab-redial-people"
# column of annotated_dialogues.csv -> verdict
ASPECTS = {
    "dialogue-overall": Verdict("overall", "ordinal", "the annotators' overall satisfaction, 1-5: their mean"),
    "understanding": Verdict("understanding", "ordinal", "did the recommender understand the seeker, 1-3: the mean"),
    "task-completion": Verdict(
        "task_completion", "ordinal", "did the recommender find films the seeker wanted, 1-3: the mean"
    ),
    "interest-arousal": Verdict(
        "interest_arousal", "ordinal", "did the recommender spark the seeker's interest, 0-3: the mean"
    ),
    "efficiency": Verdict("efficiency", "ordinal", "was the dialogue efficient, 0 or 1: the mean"),
}
VERDICTS = tuple(ASPECTS.values())
TURN_ASPECTS = ("relevance", "interestingness", "overall")
DIALOGUE_COLUMNS = ("ConvId", "utterance0", *ASPECTS)
_UTTERANCE = re.compile(r"utterance(\d{1,4})")
_SPEAKER = re.compile(r"(SYSTEM|USER)(?:(\s+)(.*))?", re.S)
_TURN_SCORE = re.compile(r"relevance(\d{1,2})")
_QUOTED = re.compile(r"[\"\u201c]([^\"\u201c\u201d\n]{1,300}?\(\d{4}\))\s*[\"\u201d]")
SPEAKERS = {"SYSTEM": SYSTEM, "USER": USER}
MIN_SCORE, MAX_SCORE = 0.0, 5.0
ROW_SKIPPED = "malformed annotator row skipped: "
TURN_ROW_SKIPPED = "malformed turn-score row skipped: "
DISAGREE = MALFORMED + "its annotators' rows hold different utterances"
SPACES = "speaker and text separated by spaces, not a tab"
NUMBERED = "ConvId repeated with other content: numbered"
NOT_IMPORTED = "turn scores of a dialogue not imported: not used"
ALIGNED_WITHIN = "sampled turn aligned within a joined reply"
NOT_SYSTEM = "sampled turn not aligned: its reply is not a SYSTEM utterance"
NO_MATCH = "sampled turn not aligned: no reply of the dialogue matches"
SEVERAL = "sampled turn not aligned: several replies match"
POOLED = "two sampled turns aligned to one turn: scores pooled"


def _empty(column: str) -> str:
    return f"annotator left {column} empty: not in its mean"


def _zero(column: str) -> str:
    return f"score 0 (the README says 1-5) kept as a value: {column}"


def _normal(text: str) -> str:
    return " ".join(text.split())


def _utterance(cell: str) -> tuple[str, str] | str | None:
    """(speaker, text) of a cell, None for an empty cell, or what is wrong with it."""
    if not cell.strip():
        return None
    match = _SPEAKER.fullmatch(cell.strip("\r\n"))
    if match is None:
        return "an utterance that is not SYSTEM or USER followed by its text"
    return match.group(1), match.group(3) or ""


def _scores(row: dict[str, str], columns) -> dict[str, float | None] | str:
    """column -> score (None: empty) of a row, or what is wrong (a score that is not a number, or outside 0-5)."""
    scores = {}
    for column in columns:
        value = number(row[column])
        if isinstance(value, str):
            return f"{column} {value}"
        if value is not None and not MIN_SCORE <= value <= MAX_SCORE:
            return f"{column} outside {MIN_SCORE:g}-{MAX_SCORE:g}"
        scores[column] = value
    return scores


def _score_counts(scores: list[dict[str, float | None]], columns, repairs: Counter, empty, zero) -> dict:
    """column -> the mean of its given scores; empty and zero scores counted."""
    means = {}
    for column in columns:
        given = [s[column] for s in scores if s[column] is not None]
        repairs[empty(column)] += len(scores) - len(given)
        repairs[zero(column)] += sum(value == 0 for value in given)
        means[column] = mean(given)
    return means


class Annotation:
    """One annotator's row of annotated_dialogues.csv, read."""

    def __init__(self, line: int, messages: tuple, scores: dict, spaced: int):
        self.line, self.messages, self.scores, self.spaced = line, messages, scores, spaced


def read_dialogue_rows(path: Path, text: str) -> Iterator[tuple[str, Annotation] | Skipped]:
    header, rows = read_table(path, text, ",", DIALOGUE_COLUMNS, "AB-ReDial annotated dialogues")
    utterances = sorted((c for c in header if _UTTERANCE.fullmatch(c)), key=lambda c: int(c[len("utterance") :]))
    for line, fields in rows:
        where = f"{path}, line {line}"
        if len(fields) != len(header):
            yield Skipped(ROW_SKIPPED + "wrong number of fields", where)
            continue
        row = dict(zip(header, fields))
        conv_id = row["ConvId"].strip()
        if not conv_id:
            yield Skipped(ROW_SKIPPED + "ConvId empty", where)
            continue
        messages, spaced, problem = [], 0, None
        for column in utterances:
            read = _utterance(row[column])
            if isinstance(read, str):
                problem = read
                break
            if read is not None:
                messages.append(read)
                separator = _SPEAKER.fullmatch(row[column].strip("\r\n")).group(2)
                spaced += (separator or "\t").strip("\t") != ""
        scores = problem or _scores(row, ASPECTS)
        if isinstance(scores, str):
            yield Skipped(ROW_SKIPPED + scores, f"{where} (ConvId {shown(conv_id)})")
            continue
        yield conv_id, Annotation(line, tuple(messages), scores, spaced)


def read_turn_rows(path: Path, text: str, turns: dict[str, list]) -> Iterator[Skipped]:
    """The sampled turns' scores of annotated_turns.csv into `turns`: ConvId -> [(k, reply, context, scores)]
    (its first entry the file it was read from)."""
    header, rows = read_table(path, text, ",", ("ConvId", "relevance1"), "AB-ReDial annotated turns")
    sampled = sorted(int(m.group(1)) for c in header if (m := _TURN_SCORE.fullmatch(c)))
    columns = {k: [f"{aspect}{k}" for aspect in TURN_ASPECTS] for k in sampled}
    needed = [c for k in sampled for c in (*columns[k], f"utterance{4 * k - 3}", f"utterance{4 * k - 2}")]
    if missing := [c for c in needed if c not in header]:
        raise CorpusError(f"{path}: not AB-ReDial annotated turns: the header lacks the columns {missing}")
    for line, fields in rows:
        where = f"{path}, line {line}"
        if len(fields) != len(header):
            yield Skipped(TURN_ROW_SKIPPED + "wrong number of fields", where)
            continue
        row = dict(zip(header, fields))
        read = []
        for k in sampled:
            scores = _scores(row, columns[k])
            reply, context = _utterance(row[f"utterance{4 * k - 2}"]), _utterance(row[f"utterance{4 * k - 3}"])
            problem = next((p for p in (scores, reply, context) if isinstance(p, str)), None)
            if problem is not None:
                break
            read.append((k, reply, context, {aspect: scores[f"{aspect}{k}"] for aspect in TURN_ASPECTS}))
        if problem is not None:
            yield Skipped(TURN_ROW_SKIPPED + problem, f"{where} (ConvId {shown(row['ConvId'])})")
            continue
        turns.setdefault(row["ConvId"].strip(), [path]).extend(read)


def _marks(text: str) -> list[str]:
    return once([clean_title(match.group(1)) for match in _QUOTED.finditer(text)])


def _turn_verdicts(messages: list[dict], sampled: list, repairs: Counter) -> list[dict]:
    """The sampled turns' mean scores on the turns of the imported session (module docstring)."""
    pairs = pair_turns(copy.deepcopy(messages), Counter())  # the turns the session will have, numbered alike
    replies = [_normal(pair["system"]["text"]) for pair in pairs]
    users = [_normal(pair["user"]["text"]) for pair in pairs]
    groups: dict[tuple, list[dict]] = {}  # one sampled turn: its annotators' scores
    for k, reply, context, scores in sampled:
        groups.setdefault((k, reply, context), []).append(scores)
    placed: dict[int, list[dict]] = {}
    for (_, reply, context), scores in groups.items():
        if reply is None or reply[0] != "SYSTEM":
            repairs[NOT_SYSTEM] += 1
            continue
        text = _normal(reply[1])
        candidates = [i for i, r in enumerate(replies) if r == text]
        if not candidates and text:
            candidates = [i for i, r in enumerate(replies) if text in r]
            repairs[ALIGNED_WITHIN] += len(candidates) == 1
        if len(candidates) > 1 and context is not None and context[0] == "USER":
            candidates = [i for i in candidates if _normal(context[1]) in users[i]] or candidates
        if len(candidates) != 1:
            repairs[SEVERAL if candidates else NO_MATCH] += 1
            continue
        turn = candidates[0] + 1
        if turn in placed:
            repairs[POOLED] += 1
        placed.setdefault(turn, []).extend(scores)
    return [
        {"turn": turn} | _score_counts(scores, TURN_ASPECTS, repairs, _turn_empty, _turn_zero)
        for turn, scores in sorted(placed.items())
    ]


def _turn_empty(aspect: str) -> str:
    return f"sampled turn left {aspect} empty: not in its mean"


def _turn_zero(aspect: str) -> str:
    return f"turn score 0 (the README says 1-5) kept as a value: {aspect}"


def _dialogue(path: Path, conv_id: str, rows: list[Annotation], sampled: list | None) -> Dialogue | Skipped:
    lines = ", ".join(str(row.line) for row in rows)
    where = f"{path}: ConvId {shown(conv_id)} (lines {lines})"
    if len({row.messages for row in rows}) > 1:
        return Skipped(DISAGREE, where)
    repairs: Counter = Counter({SPACES: rows[0].spaced})
    messages = [{"speaker": SPEAKERS[speaker], "text": text, MARKS: _marks(text)} for speaker, text in rows[0].messages]
    means = _score_counts([row.scores for row in rows], ASPECTS, repairs, _empty, _zero)
    labels = {"verdicts": {verdict.name: means[column] for column, verdict in ASPECTS.items()}, "annotators": len(rows)}
    if sampled is not None:
        labels["turn_verdicts"] = _turn_verdicts(messages, sampled, repairs)
    content = {"conv_id": conv_id, "messages": rows[0].messages, "scores": [row.scores for row in rows]}
    return Dialogue(
        name=SYSTEM_NAME,
        where=where,
        identity=digest(content),  # a ConvId that comes back with other content is another dialogue
        digest=digest(content),
        session_name=conv_id,
        messages=messages,
        provenance={"conv_id": conv_id, "lines": [row.line for row in rows]},
        labels=labels,
        repairs=+repairs,
    )


def read_corpus(paths: list[Path]) -> Iterator[tuple[Path, Dialogue | Skipped]]:
    """The dialogues of the annotated-dialogue files among `paths`, with the scores of their sampled turns
    when an annotated-turns file is among them (told apart by the header)."""
    texts, turns = [], None
    for path in paths:
        text = dialogue.read_text(path)
        header = text.split("\n", 1)[0]
        if "relevance1" in header.split(","):
            turns = {} if turns is None else turns
            yield from ((path, found) for found in read_turn_rows(path, text, turns))
        else:
            texts.append((path, text))
    if not texts:
        raise CorpusError(
            f"{', '.join(map(str, paths)) or 'no file'}: no AB-ReDial annotated dialogues file among the import "
            "paths (annotated_turns.csv holds only the scores of sampled turns)"
        )
    imported = set()
    for path, text in texts:
        grouped: dict[str, list[Annotation]] = {}
        rows = 0
        for read in read_dialogue_rows(path, text):
            rows += 1
            if isinstance(read, Skipped):
                yield path, read
            else:
                grouped.setdefault(read[0], []).append(read[1])
        if not rows:
            raise CorpusError(f"{path}: holds no dialogue: no row after the header")
        for conv_id, rows in grouped.items():
            found = _dialogue(path, conv_id, rows, None if turns is None else turns.get(conv_id, [None])[1:])
            if isinstance(found, Dialogue):
                imported.add(conv_id)
            yield path, found
    for conv_id, (turns_path, *_) in (turns or {}).items():
        if conv_id not in imported:
            yield turns_path, Skipped(NOT_IMPORTED, f"{turns_path}: ConvId {shown(conv_id)}")


def read_file(path: Path) -> Iterator[Dialogue | Skipped]:
    """The dialogues of one annotated-dialogues file, read alone (without turn scores)."""
    return (found for _, found in read_corpus([path]))


KIND = CorpusFormat(
    "ab_redial",
    f"AB-ReDial: ReDial dialogues scored by annotators, per dialogue and per sampled turn; {PERSON}",
    read_file=read_file,
    system_names=("recommenders", "the corpus has one system"),
    numbered=NUMBERED,
    verdicts=VERDICTS,
    read_corpus=read_corpus,
    between_people=True,
)
