"""Import a corpus of your own: JSON lines, one dialogue per line (docs/importing.md, "Bring your own
corpus", has the full specification and an example).

    {"system": "my-crs", "dialogue_id": "d1", "turns": [{"role": "user", "text": "A thriller?"},
     {"role": "system", "text": "Try Heat (1995)."}], "labels": {"satisfaction": "satisfied"},
     "user_id": "u7", "metadata": {...}}

`system`, `dialogue_id` and `turns` are required; `labels`, `user_id` and `metadata` (any object, kept
in the session's provenance) are optional. Every line is checked against DIALOGUE_SCHEMA: a line that
is not JSON, or not of that shape, fails naming the file, the line and what is wrong, and so does a
dialogue id used twice in one system with different content (a repeated line with the same content is
skipped, counted). Blank lines are ignored; a file without any other line is an error. The system name
becomes a safe folder name (its original stays in the provenance; two names sharing a folder are an
error); the messages follow the rules every dialogue shares (crseval.corpora.dialogue); a dialogue left
without any user/system pair is skipped.

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
from typing import Iterator

from jsonschema import Draft202012Validator

from crseval.core.config_checks import key_path
from crseval.core.io import json_type, numbered_lines, shown
from crseval.corpora import dialogue
from crseval.corpora.crsarena import SATISFIED, satisfaction_labels
from crseval.corpora.dialogue import SATISFACTION, SYSTEM, USER, CorpusError, Dialogue
from crseval.corpora.format_kind import CorpusFormat
from crseval.corpora.votes import Vote, keep_votes, parse_time, votes_report

ROLES = {"user": USER, "system": SYSTEM}
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
            raise CorpusError(f"{error} (the {KIND.name} format: {hint})") from None
        errors = sorted(validator.iter_errors(item), key=lambda e: (len(e.absolute_path), [str(p) for p in e.path]))
        if errors:
            first = errors[0]
            at = key_path(first.absolute_path) if first.absolute_path else "the line"
            if first.validator == "type":  # the message would repeat the whole value, maybe a whole corpus
                what = f"{at}: expected {first.validator_value}, found {json_type(first.instance)}"
            else:
                what = f"{at}: {first.message[:300]}"
            raise CorpusError(f"{where}: {what} (the {KIND.name} format: {hint})")
        lines.append((number, item))
    return lines


def read_file(path: Path) -> Iterator[Dialogue]:
    """The dialogues of one file, as the shared import reads them (crseval.corpora.format_kind). A file
    without a line is an error: a corpus file named that holds nothing is a mistake, not a corpus."""
    lines = read_lines(path, _DIALOGUE, HINT)
    if not lines:
        raise CorpusError(
            f"{path}: holds no dialogue: the file is empty (or only blank lines) (the {KIND.name} format: {HINT})"
        )
    for number, item in lines:
        name, dialogue_id = item["system"], item["dialogue_id"]
        yield Dialogue(
            name=name,
            where=f"{path}, line {number}",
            identity=(name, dialogue_id),
            digest=hashlib.sha256(json.dumps(item, sort_keys=True, ensure_ascii=False).encode()).hexdigest(),
            session_name=dialogue_id,
            messages=[{"speaker": ROLES[turn["role"]], "text": turn["text"]} for turn in item["turns"]],
            provenance={
                "line": number,
                "system_name": name,
                "dialogue_id": dialogue_id,
                "user_id": item.get("user_id"),
            },
            labels=satisfaction_labels(item.get("labels", {}).get("satisfaction")),
            metadata=item.get("metadata"),  # an object where the line has one (DIALOGUE_SCHEMA)
        )


def repeats(found: Dialogue, earlier: Dialogue) -> bool:
    """A dialogue id its system used before: the same dialogue again (skipped), or an error."""
    if found.where == earlier.where:  # the very line read again (its file listed twice) is imported again
        return False
    if found.digest != earlier.digest:
        raise CorpusError(
            f"{found.where}: dialogue_id {shown(found.session_name)} of system {shown(found.name)} "
            f"is already used by "
            f"{earlier.where} for another dialogue; every dialogue of a system needs its own id"
        )
    return True


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
            raise CorpusError(
                f"{where}: system_a and system_b are both {shown(systems[0])}; a vote compares two systems"
            )
        time = None
        if item.get("time") is not None:
            time = parse_time(item["time"])
            if time is None:
                raise CorpusError(f"{where}: time {shown(item['time'])} is not an ISO 8601 date and time")
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


KIND = CorpusFormat(
    "jsonl",
    "one dialogue per line, for a corpus of your own",
    read_file=read_file,
    system_names=("system names", "rename one of them in the corpus"),
    repeats=repeats,
    labelled=True,
    verdicts=(SATISFIED,),  # `labels.satisfaction`, as CRSArena-Dial's
    import_votes=import_votes,
)
