"""Import conversation logs of the thesis prototype as sessions, so they can be re-scored.

Legacy format: `{model_name, true_genre, conversation: [{speaker: USER|SYSTEM, text,
constraints?}]}`. Each defect is handled by an explicit rule and counted in the import report:
- a file that is not readable JSON of that shape (or nested absurdly deep, or holding text that is
  not valid Unicode) fails with the file named;
- a model name becomes a folder name: one that is not a safe name (`..`, `/`, spaces) is mapped to a
  safe slug (crseval.core.names) and kept in the session's provenance; two model names that map to one
  slug are an error, not a merge;
- a file whose conversation repeats an earlier file's is skipped (duplicate);
- a session keeps the number in its file name (`..._<n>.json`) while no earlier file (by path) has
  it; files without a number or with a taken one get the smallest free numbers, in path order;
- a Python/JSON structure pasted into a user turn (the prototype's simulator pasted a film's
  record) is replaced by the film name it holds, or removed when it holds none, record by record;
- a message of a speaker other than USER or SYSTEM is dropped; then the rules every dialogue shares
  (crseval.corpora.dialogue): empty messages dropped, consecutive messages of one speaker joined, an
  opening system message and a final user message without reply dropped;
- the CRS's logged constraints become its tracked constraints (catalog fields only; values
  normalised like the catalog's; the prototype's `plot` and `name` entries are not tracked).
Imported sessions have no simulator ground truth: `user_meta` is null, and every metric that
needs it is NaN.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from collections import Counter
from pathlib import Path
from typing import Iterator

from crseval.catalog.normalize import genre_key, normalise_language, normalise_person, normalise_year
from crseval.core.io import shown
from crseval.corpora import dialogue
from crseval.corpora.dialogue import SYSTEM, USER, CorpusError, Dialogue, printable
from crseval.corpora.format_kind import Admission, CorpusFormat, FileByFile
from crseval.language.concepts import ConceptMatcher

TRACKED_FIELDS = ("genre", "actor", "director", "writer", "language", "year")
# where a pasted record starts: "{'" or '{"', a key, a colon; it ends at its balanced closing brace
_PASTED_START = re.compile(r"\{\s*['\"]\w+['\"]\s*:")
_NAME = re.compile(r"['\"]name['\"]\s*:\s*['\"]([^'\"]+)['\"]")
_INDEX = re.compile(r"_(\d{1,9})\.json$")  # a longer number would overflow the int columns of the tables later
RENAMED = "model name mapped to a safe folder name"
RENUMBERED = "session number taken or missing: next free number assigned"
UNTYPED_GENRE = "true_genre not a string: set to null"
ENTRY_KEYS = {"model_name", "digest", "number", "turns", "report", "true_genre_invalid"}  # of read_file_entry's plan


# A log file that cannot be read as a legacy conversation (the message names the file): the error of every
# corpus format, under the name it always had here.
LogImportError = CorpusError


def _normalise(field: str, value: str) -> str | None:
    if field == "genre":
        return genre_key(value) or None
    if field == "language":
        return normalise_language(value)
    if field == "year":
        return normalise_year(value)[0]
    return normalise_person(value)


def tracked_constraints(logged: object, report: Counter) -> list[dict]:
    if not isinstance(logged, dict):
        return []
    constraints = []
    for field, raw in logged.items():
        if field not in TRACKED_FIELDS:
            report[f"logged constraint field not tracked: {field[: dialogue.SHOWN_CHARS]}"] += 1
            continue
        for value in raw if isinstance(raw, list) else [raw]:
            if not isinstance(value, (str, int)) or isinstance(value, bool):
                continue
            normal = _normalise(field, str(value))
            if normal:
                item = {"field": field, "value": normal, "negated": False}
                if item not in constraints:
                    constraints.append(item)
    return constraints


def _pasted_end(text: str, start: int) -> int:
    """End of the record opening at `start`: just after its balanced closing brace (braces inside quoted
    strings do not count), or the end of the text when the record was cut off."""
    depth, quote, position = 0, None, start
    while position < len(text):
        char = text[position]
        if quote:
            if char == "\\":
                position += 1
            elif char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return position + 1
        position += 1
    return len(text)


def repair_user_text(text: str, report: Counter) -> str:
    """Replace each pasted record by the film name it holds (or remove it); the text between records stays."""
    pieces, position = [], 0
    while (match := _PASTED_START.search(text, position)) is not None:
        end = _pasted_end(text, match.start())
        name = _NAME.search(text, match.start(), end)
        report[
            "structure pasted into a user turn: replaced by the film name"
            if name
            else "structure pasted into a user turn: removed"
        ] += 1
        pieces += [text[position : match.start()], name.group(1) if name else ""]
        position = end
    pieces.append(text[position:])
    return re.sub(r"\s+", " ", "".join(pieces)).strip()


def read_log(path: Path) -> dict:
    data = dialogue.parse_json(dialogue.read_text(path), str(path))
    if (
        not isinstance(data, dict)
        or not isinstance(data.get("conversation"), list)
        or not isinstance(data.get("model_name"), str)
    ):
        raise LogImportError(f"{path}: expected an object with 'model_name' (string) and 'conversation' (list)")
    for position, message in enumerate(data["conversation"]):
        if (
            not isinstance(message, dict)
            or not isinstance(message.get("text"), str)
            or not isinstance(message.get("speaker"), str)
        ):
            raise LogImportError(f"{path}: message {position} needs 'speaker' and 'text' strings")
    return data


def known_speakers(conversation: list[dict], report: Counter) -> list[dict]:
    """The messages of USER and SYSTEM (case and surrounding space aside), with the constraints the
    system logged; a message of another speaker is dropped, counted."""
    messages = []
    for message in conversation:
        speaker = message["speaker"].strip().upper()
        if speaker not in (USER, SYSTEM):
            report[f"message of unknown speaker {shown(message['speaker'])} dropped"] += 1
            continue
        messages.append({"speaker": speaker, "text": message["text"], "constraints": message.get("constraints")})
    return messages


def pair_turns(conversation: list[dict], report: Counter) -> list[dict]:
    """USER/SYSTEM pairs after the ordering rules (crseval.corpora.dialogue.pair_turns) of the messages
    of known speakers."""
    return dialogue.pair_turns(known_speakers(conversation, report), report)


def logged_constraints(message: dict, report: Counter) -> list[dict]:
    """The constraints the CRS logged with its reply, as tracked constraints."""
    return tracked_constraints(message.get("constraints"), report)


def read_file(path: Path) -> Iterator[Dialogue]:
    """The one dialogue of a log file, as the shared import reads it (crseval.corpora.format_kind)."""
    data = read_log(path)
    repairs: Counter = Counter()
    messages = known_speakers(data["conversation"], repairs)
    digest = hashlib.sha256(json.dumps([data["model_name"], data["conversation"]], sort_keys=True).encode()).hexdigest()
    true_genre = data.get("true_genre")
    untyped = true_genre is not None and not isinstance(true_genre, str)
    yield Dialogue(
        name=data["model_name"],
        where=str(path),
        identity=digest,  # a log repeating an earlier log's conversation is a duplicate
        digest=digest,
        session_name=Path(printable(path.name)).stem,  # numbered by `assign`
        messages=messages,
        provenance={
            "model_name": data["model_name"],
            "true_genre": true_genre if isinstance(true_genre, str) else None,
        },
        repairs=repairs,
        rules=Counter({UNTYPED_GENRE: 1} if untyped else {}),
    )


def read_file_entry(path: str | Path) -> dict:
    """What planning needs of one log, read without recognising films: its model name, the digest that
    finds a duplicate, the number in its name, its turn count and the rules applied to it (its repairs).
    Cached per file by crseval.corpora.manifest, so a re-plan reads only the files that changed."""
    path = Path(path)
    (found,) = read_file(path)
    turns = KIND.turns(found, None)
    match = _INDEX.search(path.name)
    return {
        "model_name": found.name,
        "digest": found.digest,
        "number": int(match.group(1)) if match else None,
        "turns": len(turns),
        "report": dict(sorted(found.repairs.items())),
        "true_genre_invalid": UNTYPED_GENRE in found.rules,
    }


def usable_entry(plan: object) -> bool:
    """Whether a cached plan is one `read_file_entry` writes: its keys, each of its type."""
    if not isinstance(plan, dict) or set(plan) != ENTRY_KEYS:
        return False
    report = plan["report"]
    return (
        isinstance(plan["model_name"], str)
        and isinstance(plan["digest"], str)
        and (plan["number"] is None or _whole(plan["number"]))
        and _whole(plan["turns"])
        and isinstance(report, dict)
        and all(isinstance(rule, str) and _whole(count) for rule, count in report.items())
        and isinstance(plan["true_genre_invalid"], bool)
    )


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _entry_dialogue(path: str, plan: dict) -> Dialogue:
    """A planned log as the shared rules see it; its messages are read again when its session is imported."""
    return Dialogue(
        name=plan["model_name"],
        where=str(path),
        identity=plan["digest"],
        digest=plan["digest"],
        session_name=Path(printable(Path(path).name)).stem,
        repairs=Counter(plan["report"]),
        rules=Counter({UNTYPED_GENRE: 1} if plan["true_genre_invalid"] else {}),
    )


def assign(plans: list[tuple[str, dict]]) -> tuple[dict[str, list[dict]], dict]:
    """The sessions an import of the planned files yields: system -> [{path, turns, session_index,
    session_id}] in session order, and the import report (without films). The rules every format
    shares (crseval.corpora.format_kind.Admission) decide which files become sessions; then the
    sessions are numbered by the numbers in their file names, exactly as one import of every file
    numbers them: this is the only place that is done."""
    admission = Admission(KIND)
    sessions: dict[str, list[dict]] = {}
    numbers: dict[str, list[int | None]] = {}  # the number in each session's file name, in path order
    for path, plan in sorted(plans, key=lambda item: Path(item[0])):
        found = _entry_dialogue(path, plan)
        system = admission.system(found)
        if system is None or not admission.keep(system, found, plan["turns"]):
            continue
        numbers.setdefault(system, []).append(plan["number"])
        source = {"source_file": printable(Path(path).name)}
        sessions.setdefault(system, []).append({"path": str(path), "turns": plan["turns"], "provenance": source})
    for system, entries in sessions.items():
        if renumbered := _number_sessions(system, entries, numbers[system]):
            admission.report[RENUMBERED] += renumbered
        entries.sort(key=lambda e: e["session_index"])
        for entry in entries:
            del entry["provenance"]
    return sessions, admission.summary(
        len(plans),
        {system: len(entries) for system, entries in sessions.items()},
        sum(e["turns"] for entries in sessions.values() for e in entries),
    )


def import_file(
    path: str | Path,
    matcher: ConceptMatcher | None,
    *,
    system: str,
    session_index: int,
    session_id: str,
    catalog_sha: str,
    config_sha: str,
) -> dict:
    """The session record of one planned log (`assign` gave its system, number and id)."""
    path = Path(path)
    (found,) = read_file(path)
    return KIND.record(
        path,
        found,
        KIND.turns(found, matcher),
        system=system,
        session_index=session_index,
        session_id=session_id,
        catalog_sha=catalog_sha,
        config_sha=config_sha,
    )


def _number_sessions(system: str, records: list[dict], numbers: list[int | None]) -> int:
    """Give the records of one system (in path order) unique session numbers and ids; returns how many
    records did not get the number in their file name.

    A record keeps its file's number unless an earlier file took it; the others get the smallest free
    numbers in path order. The id is `<system>/<file stem>`, with `#<number>` added when an earlier file
    (in another folder) has the same stem.
    """
    kept: set[int] = set()
    waiting = []
    for record, number in zip(records, numbers):
        if number is not None and number not in kept:
            kept.add(number)
            record["session_index"] = number
        else:
            waiting.append(record)
    free = (number for number in itertools.count() if number not in kept)
    for record in waiting:
        record["session_index"] = next(free)
    used: set[str] = set()
    for record in records:
        stem = Path(record["provenance"]["source_file"]).stem
        session_id = f"{system}/{stem}"
        suffixes = (f"#{record['session_index']}" + (f"-{n}" if n else "") for n in itertools.count())
        while session_id in used:
            session_id = f"{system}/{stem}{next(suffixes)}"
        used.add(session_id)
        record["session_id"] = session_id
    return len(waiting)


KIND = CorpusFormat(
    "thesis_logs",
    "the thesis prototype's legacy logs",
    read_file=read_file,
    system_names=("model names", "rename one of them in its log files"),
    repair_user_text=repair_user_text,
    system_constraints=logged_constraints,
    file_by_file=FileByFile(read_file_entry, assign, import_file, usable_entry),
    renamed=RENAMED,
    duplicate="duplicate file skipped",
    no_pair="file without any USER/SYSTEM pair skipped",
)
import_logs = KIND.import_logs  # under the name the benchmarks and tests import
