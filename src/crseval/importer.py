"""Import conversation logs of the thesis prototype as sessions, so they can be re-scored.

Legacy format: `{model_name, true_genre, conversation: [{speaker: USER|SYSTEM, text,
constraints?}]}`. Each defect is handled by an explicit rule and counted in the import report:
- a file that is not readable JSON of that shape fails with the file named;
- a file whose conversation repeats an earlier file's is skipped (duplicate);
- a Python/JSON structure pasted into a user turn (the prototype's simulator pasted a film's
  record) is replaced by the film name it holds, or removed when it holds none;
- empty messages are dropped; consecutive messages of one speaker are joined; a conversation
  opening with the system loses that message; a final user message without reply is dropped;
- the CRS's logged constraints become its tracked constraints (catalog fields only; values
  normalised like the catalog's; the prototype's `plot` and `name` entries are not tracked).
Imported sessions have no simulator ground truth: `user_meta` is null, and every metric that
needs it is NaN.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from pathlib import Path

from crseval.concepts import ConceptMatcher
from crseval.normalize import genre_key, normalise_language, normalise_person, normalise_year

TRACKED_FIELDS = ("genre", "actor", "director", "writer", "language", "year")
# a pasted record: from "{'" or '{"' to the closing brace, or to the end of a truncated text
_PASTED = re.compile(r"\{\s*['\"]\w+['\"]\s*:.*?(?:\}(?=[^{}]*$)|$)", re.S)
_NAME = re.compile(r"['\"]name['\"]\s*:\s*['\"]([^'\"]+)['\"]")
_INDEX = re.compile(r"_(\d+)\.json$")


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


def repair_user_text(text: str, report: Counter) -> str:
    """Replace a pasted record by the film name it holds (or remove it)."""
    def replace(match: re.Match) -> str:
        name = _NAME.search(match.group(0))
        report["structure pasted into a user turn: replaced by the film name" if name
               else "structure pasted into a user turn: removed"] += 1
        return name.group(1) if name else ""

    return re.sub(r"\s+", " ", _PASTED.sub(replace, text)).strip()


def read_log(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise LogImportError(f"{path}: cannot be read as JSON: {error}") from None
    if not isinstance(data, dict) or not isinstance(data.get("conversation"), list) or not isinstance(data.get("model_name"), str):
        raise LogImportError(f"{path}: expected an object with 'model_name' (string) and 'conversation' (list)")
    for position, message in enumerate(data["conversation"]):
        if not isinstance(message, dict) or not isinstance(message.get("text"), str) or not isinstance(message.get("speaker"), str):
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


def import_logs(paths: list[str | Path], matcher: ConceptMatcher | None, catalog_sha: str, config_sha: str) -> tuple[dict[str, list[dict]], dict]:
    """system -> session records (ordered by the session number in the file name), and the import report."""
    report: Counter = Counter()
    seen: dict[str, str] = {}
    sessions: dict[str, list[dict]] = {}
    for path in sorted(Path(p) for p in paths):
        data = read_log(path)
        digest = hashlib.sha256(json.dumps([data["model_name"], data["conversation"]], sort_keys=True).encode()).hexdigest()
        if digest in seen:
            report["duplicate file skipped"] += 1
            continue
        seen[digest] = path.name
        file_report: Counter = Counter()
        turns = []
        user_named: list[str] = []  # films the user named so far: the reply may refer back to them
        for number, pair in enumerate(pair_turns(data["conversation"], file_report), start=1):
            user_text = repair_user_text(pair["user"]["text"], file_report)
            if not user_text:
                file_report["user turn empty after repair: pair dropped"] += 1
                continue
            system_text = pair["system"]["text"]
            titles = None
            if matcher is not None:
                recognizer = matcher.title_recognizer
                user_named += [t for t in recognizer.recognise(user_text).all if t not in user_named]
                titles = recognizer.recognise(system_text, user_text=user_text, context_titles=user_named)
            turns.append({
                "turn": len(turns) + 1, "user_text": user_text, "user_meta": None, "system_text": system_text,
                "system_constraints": tracked_constraints(pair["system"].get("constraints"), file_report),
                "candidate_titles": [], "recommended_titles": titles.recommended if titles else [],
                "mentioned_titles": titles.mentioned if titles else [], "llm": None,
            })
        report.update(file_report)
        if not turns:
            report["file without any USER/SYSTEM pair skipped"] += 1
            continue
        system = data["model_name"]
        match = _INDEX.search(path.name)
        sessions.setdefault(system, []).append({
            "session_id": f"{system}/{path.stem}",
            "session_index": int(match.group(1)) if match else None,
            "system": system, "seed": None, "catalog_sha": catalog_sha, "config_sha": config_sha,
            "liked_titles": [], "turns": turns, "shift_events": [],
            "provenance": {"source_file": path.name, "true_genre": data.get("true_genre"),
                           "repairs": {k: v for k, v in sorted(file_report.items())}},
        })
    for system, records in sessions.items():
        records.sort(key=lambda r: (r["session_index"] is None, r["session_index"], r["session_id"]))
        for position, record in enumerate(records):
            if record["session_index"] is None:
                record["session_index"] = position
    summary = {
        "files": len(paths),
        "sessions": {system: len(records) for system, records in sorted(sessions.items())},
        "turns": sum(len(r["turns"]) for records in sessions.values() for r in records),
        "rules_applied": {k: v for k, v in sorted(report.items()) if isinstance(v, int)},
    }
    return sessions, summary


def sessions_per_system(paths: list[str]) -> dict[str, int]:
    """How many sessions an import of `paths` yields per system (for planning the workflow)."""
    sessions, _ = import_logs(paths, None, "0" * 64, "0" * 64)
    return {system: len(records) for system, records in sessions.items()}
