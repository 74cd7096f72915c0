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

from crseval.catalog.normalize import genre_key, normalise_language, normalise_person, normalise_year
from crseval.corpora import dialogue
from crseval.corpora.dialogue import (
    SYSTEM,
    USER,
    CorpusError,
    SystemFolders,
    build_turns,
    printable,
    session_record,
)
from crseval.language.concepts import ConceptMatcher

FORMAT = "thesis_logs"
HAS_VOTES = False

TRACKED_FIELDS = ("genre", "actor", "director", "writer", "language", "year")
# where a pasted record starts: "{'" or '{"', a key, a colon; it ends at its balanced closing brace
_PASTED_START = re.compile(r"\{\s*['\"]\w+['\"]\s*:")
_NAME = re.compile(r"['\"]name['\"]\s*:\s*['\"]([^'\"]+)['\"]")
_INDEX = re.compile(r"_(\d{1,9})\.json$")  # a longer number would overflow the int columns of the tables later
RENAMED = "model name mapped to a safe folder name"
RENUMBERED = "session number taken or missing: next free number assigned"


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
            report[f"logged constraint field not tracked: {field}"] += 1
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


def pair_turns(conversation: list[dict], report: Counter) -> list[dict]:
    """USER/SYSTEM pairs after the ordering rules (crseval.corpora.dialogue.pair_turns); a speaker that
    is neither (case and surrounding space aside) is dropped, counted."""
    messages = []
    for message in conversation:
        speaker = message["speaker"].strip().upper()
        if speaker not in (USER, SYSTEM):
            report[f"message of unknown speaker {message['speaker']!r} dropped"] += 1
            continue
        messages.append({"speaker": speaker, "text": message["text"], "constraints": message.get("constraints")})
    return dialogue.pair_turns(messages, report)


FILE_PER_SESSION = True  # one session per log file: planned file by file (crseval.corpora.manifest)


def plan_file(path: str | Path) -> dict:
    """What planning needs of one log, read without recognising films: its model name, the digest that
    finds a duplicate, the number in its name, its turn count and the rules applied to it (its repairs).
    Cached per file by crseval.corpora.manifest, so a re-plan reads only the files that changed."""
    path = Path(path)
    data = read_log(path)
    file_report: Counter = Counter()
    turns = _import_turns(data["conversation"], None, file_report)
    digest = hashlib.sha256(json.dumps([data["model_name"], data["conversation"]], sort_keys=True).encode())
    match = _INDEX.search(path.name)
    return {
        "model_name": data["model_name"],
        "digest": digest.hexdigest(),
        "number": int(match.group(1)) if match else None,
        "turns": len(turns),
        "report": dict(sorted(file_report.items())),
        "true_genre_invalid": data.get("true_genre") is not None and not isinstance(data["true_genre"], str),
    }


def assign(plans: list[tuple[str, dict]]) -> tuple[dict[str, list[dict]], dict]:
    """The sessions an import of the planned files yields: system -> [{path, session_index, session_id,
    turns}] in session order, and the import report (without films). Duplicates and files without a
    USER/SYSTEM pair are skipped, model names become folder names and sessions are numbered exactly as
    one import of every file would do it: this is the only place those rules are applied."""
    report: Counter = Counter()
    seen: set[str] = set()
    folders = SystemFolders("model names", "rename one of them in its log files")
    renamed: dict[str, str] = {}
    sessions: dict[str, list[dict]] = {}
    numbers: dict[str, list[int | None]] = {}  # the number in each session's file name, in path order
    for path, plan in sorted(plans, key=lambda item: Path(item[0])):
        system = folders.folder(plan["model_name"], str(path))
        if plan["digest"] in seen:
            report["duplicate file skipped"] += 1
            continue
        seen.add(plan["digest"])
        report.update(plan["report"])
        if not plan["turns"]:
            report["file without any USER/SYSTEM pair skipped"] += 1
            continue
        if system != plan["model_name"]:
            report[RENAMED] += 1
            renamed[plan["model_name"]] = system
        if plan["true_genre_invalid"]:
            report["true_genre not a string: set to null"] += 1
        numbers.setdefault(system, []).append(plan["number"])
        source = {"source_file": printable(Path(path).name)}
        sessions.setdefault(system, []).append({"path": str(path), "turns": plan["turns"], "provenance": source})
    for system, entries in sessions.items():
        if renumbered := _number_sessions(system, entries, numbers[system]):
            report[RENUMBERED] += renumbered
        entries.sort(key=lambda e: e["session_index"])
        for entry in entries:
            del entry["provenance"]
    summary = {
        "format": FORMAT,
        "files": len(plans),
        "sessions": {system: len(entries) for system, entries in sorted(sessions.items())},
        "turns": sum(e["turns"] for entries in sessions.values() for e in entries),
        "rules_applied": {k: v for k, v in sorted(report.items()) if isinstance(v, int)},
        "renamed_systems": dict(sorted(renamed.items())),
    }
    return sessions, summary


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
    data = read_log(path)
    file_report: Counter = Counter()
    turns = _import_turns(data["conversation"], matcher, file_report)
    true_genre = data.get("true_genre")
    return session_record(
        session_id=session_id,
        session_index=session_index,
        system=system,
        turns=turns,
        catalog_sha=catalog_sha,
        config_sha=config_sha,
        provenance={
            "source_file": printable(path.name),
            "format": FORMAT,
            "model_name": data["model_name"],
            "true_genre": true_genre if isinstance(true_genre, str) else None,
            "repairs": {k: v for k, v in sorted(file_report.items())},
        },
    )


def import_logs(
    paths: list[str | Path], matcher: ConceptMatcher | None, catalog_sha: str, config_sha: str
) -> tuple[dict[str, list[dict]], dict]:
    """system -> session records (ordered by session number), and the import report."""
    planned, summary = assign([(str(path), plan_file(path)) for path in paths])
    sessions = {
        system: [
            import_file(
                entry["path"],
                matcher,
                system=system,
                session_index=entry["session_index"],
                session_id=entry["session_id"],
                catalog_sha=catalog_sha,
                config_sha=config_sha,
            )
            for entry in entries
        ]
        for system, entries in planned.items()
    }
    return sessions, summary


def _import_turns(conversation: list[dict], matcher: ConceptMatcher | None, file_report: Counter) -> list[dict]:
    return build_turns(
        pair_turns(conversation, file_report),
        matcher,
        file_report,
        repair_user_text=repair_user_text,
        system_constraints=lambda message, report: tracked_constraints(message.get("constraints"), report),
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
