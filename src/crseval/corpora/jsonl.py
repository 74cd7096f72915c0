"""Import a corpus of your own: JSON lines, one dialogue per line (docs/importing.md, "Bring your own
corpus", has the full specification and an example).

    {"system": "my-crs", "dialogue_id": "d1", "turns": [{"role": "user", "text": "A thriller?"},
     {"role": "system", "text": "Try Heat (1995)."}], "labels": {"satisfaction": "satisfied"},
     "user_id": "u7", "metadata": {...}}

`system`, `dialogue_id` and `turns` are required; `labels`, `user_id` and `metadata` (any object, kept
in the session's provenance) are optional. Every line is checked against DIALOGUE_SCHEMA: a line that
is not JSON, or not of that shape, fails naming the file, the line and what is wrong, and so does a
dialogue id used twice in one system with different content (a repeated line with the same content is
skipped, counted). Blank lines are ignored. The system name becomes a safe folder name (its original
stays in the provenance; two names sharing a folder are an error); the messages follow the rules every
dialogue shares (crseval.corpora.dialogue); a dialogue left without any user/system pair is skipped.

Votes, optional, are JSON lines too (VOTE_SCHEMA): `{"system_a", "dialogue_a", "system_b",
"dialogue_b", "winner": "a"|"b"|"tie", "voter"?, "time"?, "feedback"?}`, each naming the two
dialogues it compares; a line that is not of that shape fails like a dialogue line, then the rules of
every vote apply (crseval.corpora.votes).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path

from jsonschema import Draft202012Validator

from crseval.core.config_checks import key_path
from crseval.core.io import numbered_lines
from crseval.corpora import dialogue
from crseval.corpora.dialogue import SATISFACTION, SYSTEM, USER, CorpusError, SystemFolders
from crseval.corpora.votes import Vote, keep_votes, parse_time, votes_report
from crseval.language.concepts import ConceptMatcher

FORMAT = "jsonl"
HAS_VOTES = True
ROLES = {"user": USER, "system": SYSTEM}
RENAMED = "system name mapped to a safe folder name"
DUPLICATE = "duplicate dialogue skipped"
NO_PAIR = "dialogue without any USER/SYSTEM pair skipped"
HINT = "one dialogue per line: {system, dialogue_id, turns: [{role, text}], labels?, user_id?, metadata?}"
VOTE_HINT = "one vote per line: {system_a, dialogue_a, system_b, dialogue_b, winner: a|b|tie, voter?, time?, feedback?}"

_NAME = {"type": "string", "minLength": 1, "pattern": r"\S"}
_OPTIONAL_TEXT = {"type": ["string", "null"]}
DIALOGUE_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["system", "dialogue_id", "turns"],
    "properties": {
        "system": _NAME,
        "dialogue_id": _NAME,
        "turns": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["role", "text"],
                "properties": {"role": {"enum": list(ROLES)}, "text": {"type": "string"}},
            },
        },
        "labels": {
            "type": "object",
            "additionalProperties": False,
            "properties": {"satisfaction": {"enum": [*SATISFACTION, None]}},
        },
        "user_id": _OPTIONAL_TEXT,
        "metadata": {"type": "object"},
    },
}
VOTE_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["system_a", "dialogue_a", "system_b", "dialogue_b", "winner"],
    "properties": {
        "system_a": _NAME,
        "dialogue_a": _NAME,
        "system_b": _NAME,
        "dialogue_b": _NAME,
        "winner": {"enum": ["a", "b", "tie"]},
        "voter": _OPTIONAL_TEXT,
        "time": _OPTIONAL_TEXT,
        "feedback": _OPTIONAL_TEXT,
    },
}
_DIALOGUE = Draft202012Validator(DIALOGUE_SCHEMA)
_VOTE = Draft202012Validator(VOTE_SCHEMA)


def read_lines(path: Path, validator: Draft202012Validator, hint: str) -> list[tuple[int, dict]]:
    """(line number, object) of every non-blank line, each checked against the schema; CorpusError naming
    the file, the line and what is wrong otherwise."""
    lines = []
    for number, text in numbered_lines(dialogue.read_text(path)):  # a string may hold U+2028 and the like
        where = f"{path}, line {number}"
        try:
            item = dialogue.parse_json(text, where)
        except CorpusError as error:
            raise CorpusError(f"{error} (the {FORMAT} format: {hint})") from None
        errors = sorted(validator.iter_errors(item), key=lambda e: (len(e.absolute_path), [str(p) for p in e.path]))
        if errors:
            first = errors[0]
            at = key_path(first.absolute_path) if first.absolute_path else "the line"
            if first.validator == "type":  # the message would repeat the whole value, maybe a whole corpus
                what = f"{at}: expected {first.validator_value}, found {dialogue.json_type(first.instance)}"
            else:
                what = f"{at}: {first.message[:300]}"
            raise CorpusError(f"{where}: {what} (the {FORMAT} format: {hint})")
        lines.append((number, item))
    return lines


def import_logs(
    paths: list[str | Path], matcher: ConceptMatcher | None, catalog_sha: str, config_sha: str
) -> tuple[dict[str, list[dict]], dict]:
    """system -> session records (in file and line order), and the import report."""
    report: Counter = Counter()
    folders = SystemFolders("system names", "rename one of them in the corpus")
    sessions: dict[str, list[dict]] = {}
    renamed: dict[str, str] = {}
    first: dict[tuple[str, str], tuple[str, str]] = {}  # (system, dialogue id) -> (content digest, where)
    read = 0
    for path in sorted(Path(p) for p in paths):
        for number, item in read_lines(path, _DIALOGUE, HINT):
            read += 1
            where = f"{path}, line {number}"
            name, dialogue_id = item["system"], item["dialogue_id"]
            system = folders.folder(name, where)
            digest = hashlib.sha256(json.dumps(item, sort_keys=True, ensure_ascii=False).encode()).hexdigest()
            earlier = first.setdefault((name, dialogue_id), (digest, where))
            if earlier[1] != where:
                if earlier[0] != digest:
                    raise CorpusError(
                        f"{where}: dialogue_id {dialogue_id!r} of system {name!r} is already used by {earlier[1]} "
                        "for another dialogue; every dialogue of a system needs its own id"
                    )
                report[DUPLICATE] += 1
                continue
            dialogue_report: Counter = Counter()
            messages = [{"speaker": ROLES[turn["role"]], "text": turn["text"]} for turn in item["turns"]]
            turns = dialogue.build_turns(dialogue.pair_turns(messages, dialogue_report), matcher, dialogue_report)
            report.update(dialogue_report)
            if not turns:
                report[NO_PAIR] += 1
                continue
            if system != name:
                report[RENAMED] += 1
                renamed[name] = system
            records = sessions.setdefault(system, [])
            provenance = {
                "source_file": dialogue.printable(path.name),
                "format": FORMAT,
                "line": number,
                "system_name": name,
                "dialogue_id": dialogue_id,
                "user_id": item.get("user_id"),
                "repairs": dict(sorted(dialogue_report.items())),
            }
            if "metadata" in item:
                provenance["metadata"] = item["metadata"]
            records.append(
                dialogue.session_record(
                    session_id=f"{system}/{dialogue_id}",
                    session_index=len(records),
                    system=system,
                    turns=turns,
                    catalog_sha=catalog_sha,
                    config_sha=config_sha,
                    provenance=provenance,
                    labels={"satisfaction": item.get("labels", {}).get("satisfaction")},
                )
            )
    return sessions, dialogue.import_summary(FORMAT, paths, read, sessions, report, renamed)


def import_votes(path: str | Path, sessions: dict[str, list[dict]]) -> tuple[list[dict], dict]:
    """The rows of the votes table for the votes of `path` on the imported `sessions`, and the votes report."""
    path = Path(path)
    folders = {r["provenance"]["system_name"]: system for system, records in sessions.items() for r in records}
    dialogues = {
        (r["provenance"]["system_name"], r["provenance"]["dialogue_id"]): r["session_id"]
        for records in sessions.values()
        for r in records
    }
    votes = []
    for number, item in read_lines(path, _VOTE, VOTE_HINT):
        where = f"{path}, line {number}"
        systems = (item["system_a"], item["system_b"])
        if systems[0] == systems[1]:
            raise CorpusError(f"{where}: system_a and system_b are both {systems[0]!r}; a vote compares two systems")
        time = None
        if item.get("time") is not None:
            time = parse_time(item["time"])
            if time is None:
                raise CorpusError(f"{where}: time {item['time']!r} is not an ISO 8601 date and time")
        votes.append(
            Vote(
                line=number,
                time=time,
                voter=item.get("voter"),
                systems=systems,
                winner={"a": 0, "b": 1, "tie": None}[item["winner"]],
                feedback=item.get("feedback") or None,
                dialogues=(
                    dialogues.get((systems[0], item["dialogue_a"])),
                    dialogues.get((systems[1], item["dialogue_b"])),
                ),
            )
        )
    report: Counter = Counter()
    kept = keep_votes(votes, folders, report)
    return kept, votes_report(path, len(votes), kept, report)
