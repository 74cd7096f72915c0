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
- empty messages are dropped; consecutive messages of one speaker are joined; a conversation
  opening with the system loses that message; a final user message without reply is dropped;
- the CRS's logged constraints become its tracked constraints (catalog fields only; values
  normalised like the catalog's; the prototype's `plot` and `name` entries are not tracked).
Imported sessions have no simulator ground truth: `user_meta` is null, and every metric that
needs it is NaN.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
from collections import Counter
from pathlib import Path

from crseval.catalog.normalize import genre_key, normalise_language, normalise_person, normalise_year
from crseval.core.names import safe_slug
from crseval.language.concepts import ConceptMatcher

TRACKED_FIELDS = ("genre", "actor", "director", "writer", "language", "year")
# where a pasted record starts: "{'" or '{"', a key, a colon; it ends at its balanced closing brace
_PASTED_START = re.compile(r"\{\s*['\"]\w+['\"]\s*:")
_NAME = re.compile(r"['\"]name['\"]\s*:\s*['\"]([^'\"]+)['\"]")
_INDEX = re.compile(r"_(\d{1,9})\.json$")  # a longer number would overflow the int columns of the tables later
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
MAX_DEPTH = 64  # a legacy log is 5 levels deep; far deeper nesting is junk that would overflow the stack later
RENAMED = "model name mapped to a safe folder name"
RENUMBERED = "session number taken or missing: next free number assigned"


class LogImportError(ValueError):
    """A log file that cannot be read as a legacy conversation; names the file."""


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


def _unusable(value: object) -> str | None:
    """Why parsed JSON cannot go on although it parsed: nesting that would overflow the stack when written
    again, or lone surrogates (from escapes like \\ud800) that no UTF-8 file can hold."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            return f"nested deeper than {MAX_DEPTH} levels"
        if isinstance(item, str) and _LONE_SURROGATE.search(item):
            return f"holds text that is not valid Unicode (a lone surrogate escape): {item[:60]!r}"
        if isinstance(item, dict):
            stack += [(part, depth + 1) for pair in item.items() for part in pair]
        elif isinstance(item, list):
            stack += [(part, depth + 1) for part in item]
    return None


def read_log(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except RecursionError:
        raise LogImportError(f"{path}: cannot be read as JSON: nested too deeply") from None
    except (OSError, UnicodeDecodeError, ValueError) as error:  # ValueError: also numbers too long to convert
        raise LogImportError(f"{path}: cannot be read as JSON: {error}") from None
    if (defect := _unusable(data)) is not None:
        raise LogImportError(f"{path}: {defect}")
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
    """USER/SYSTEM pairs after the ordering rules."""
    messages = []
    for message in conversation:
        speaker = message["speaker"].strip().upper()
        if speaker not in ("USER", "SYSTEM"):
            report[f"message of unknown speaker {message['speaker']!r} dropped"] += 1
            continue
        text = message["text"].strip()
        if not text:
            report[f"empty {speaker} message dropped"] += 1
            continue
        if messages and messages[-1]["speaker"] == speaker:
            report[f"consecutive {speaker} messages joined"] += 1
            messages[-1]["text"] += " " + text
            if message.get("constraints"):
                messages[-1]["constraints"] = message["constraints"]
            continue
        messages.append({"speaker": speaker, "text": text, "constraints": message.get("constraints")})
    if messages and messages[0]["speaker"] == "SYSTEM":
        report["opening SYSTEM message dropped"] += 1
        messages = messages[1:]
    if messages and messages[-1]["speaker"] == "USER":
        report["final USER message without reply dropped"] += 1
        messages = messages[:-1]
    return [{"user": messages[i], "system": messages[i + 1]} for i in range(0, len(messages) - 1, 2)]


def import_logs(
    paths: list[str | Path], matcher: ConceptMatcher | None, catalog_sha: str, config_sha: str
) -> tuple[dict[str, list[dict]], dict]:
    """system -> session records (ordered by session number), and the import report."""
    report: Counter = Counter()
    seen: dict[str, str] = {}
    model_of_system: dict[str, tuple[str, Path]] = {}  # slug -> the model name (and its first file) it stands for
    renamed: dict[str, str] = {}
    sessions: dict[str, list[dict]] = {}
    numbers: dict[str, list[int | None]] = {}  # the number in each session's file name, in path order
    for path in sorted(Path(p) for p in paths):
        data = read_log(path)
        model_name = data["model_name"]
        system = _system_name(model_name, path, model_of_system)
        digest = hashlib.sha256(json.dumps([model_name, data["conversation"]], sort_keys=True).encode()).hexdigest()
        if digest in seen:
            report["duplicate file skipped"] += 1
            continue
        seen[digest] = path.name
        file_report: Counter = Counter()
        turns = _import_turns(data["conversation"], matcher, file_report)
        report.update(file_report)
        if not turns:
            report["file without any USER/SYSTEM pair skipped"] += 1
            continue
        if system != model_name:
            report[RENAMED] += 1
            renamed[model_name] = system
        true_genre = data.get("true_genre")
        if true_genre is not None and not isinstance(true_genre, str):
            report["true_genre not a string: set to null"] += 1
            true_genre = None
        match = _INDEX.search(path.name)
        numbers.setdefault(system, []).append(int(match.group(1)) if match else None)
        sessions.setdefault(system, []).append(
            {
                "session_id": None,
                "session_index": None,
                "system": system,
                "seed": None,
                "catalog_sha": catalog_sha,
                "config_sha": config_sha,
                "liked_titles": [],
                "turns": turns,
                "shift_events": [],
                "provenance": {
                    "source_file": _printable(path.name),
                    "model_name": model_name,
                    "true_genre": true_genre,
                    "repairs": {k: v for k, v in sorted(file_report.items())},
                },
            }
        )
    for system, records in sessions.items():
        if renumbered := _number_sessions(system, records, numbers[system]):
            report[RENUMBERED] += renumbered
        records.sort(key=lambda r: r["session_index"])
    summary = {
        "files": len(paths),
        "sessions": {system: len(records) for system, records in sorted(sessions.items())},
        "turns": sum(len(r["turns"]) for records in sessions.values() for r in records),
        "rules_applied": {k: v for k, v in sorted(report.items()) if isinstance(v, int)},
        "renamed_systems": dict(sorted(renamed.items())),
    }
    return sessions, summary


def _system_name(model_name: str, path: Path, model_of_system: dict[str, tuple[str, Path]]) -> str:
    """The model name as a safe folder name; two model names that would share one folder are an error,
    because merging two models' sessions silently would compare the wrong systems."""
    system = safe_slug(model_name)
    first_name, first_path = model_of_system.setdefault(system, (model_name, path))
    if first_name != model_name:
        raise LogImportError(
            f"model names {first_name!r} ({first_path}) and {model_name!r} ({path}) both become the "
            f"system folder {system!r}; rename one of them in its log files"
        )
    return system


def _import_turns(conversation: list[dict], matcher: ConceptMatcher | None, file_report: Counter) -> list[dict]:
    turns = []
    user_named: list[str] = []  # films the user named so far: the reply may refer back to them
    for pair in pair_turns(conversation, file_report):
        user_text = repair_user_text(pair["user"]["text"], file_report)
        if not user_text:
            file_report["user turn empty after repair: pair dropped"] += 1
            continue
        system_text = pair["system"]["text"]
        titles = None
        if matcher is not None:
            recognizer = matcher.title_recognizer
            user_named += [t for t in recognizer.recognise(user_text).all if t not in user_named]
            # user_named already holds every film of this user turn, so passing user_text as well would
            # only read it a second time (a third of the import's time) for the same result
            titles = recognizer.recognise(system_text, context_titles=user_named)
        turns.append(
            {
                "turn": len(turns) + 1,
                "user_text": user_text,
                "user_meta": None,
                "system_text": system_text,
                "system_constraints": tracked_constraints(pair["system"].get("constraints"), file_report),
                "candidate_titles": [],
                "recommended_titles": titles.recommended if titles else [],
                "mentioned_titles": titles.mentioned if titles else [],
                "llm": None,
            }
        )
    return turns


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


def _printable(name: str) -> str:
    """A file name as valid Unicode (undecodable bytes in the name shown as U+FFFD), so records can be written."""
    return os.fsencode(name).decode("utf-8", errors="replace")


def sessions_per_system(paths: list[str]) -> dict[str, int]:
    """How many sessions an import of `paths` yields per system (for planning the workflow)."""
    sessions, _ = import_logs(paths, None, "0" * 64, "0" * 64)
    return {system: len(records) for system, records in sessions.items()}
