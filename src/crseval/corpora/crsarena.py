"""Import CRSArena-Dial: real dialogues between crowd users and conversational recommender systems,
with each user's verdict on the dialogue, and the arena's pairwise votes.

Dialogues: a JSON list of `{"conversation ID", agent: {id}, user: {id}, conversation: [{participant:
USER|AGENT, utterance, "utterance ID"}], metadata: {sentiment: satisfied|frustrated}}`; the
conversation ID is `<agent id>_<user id>`. Votes: a CSV with the columns `session_id` (the time of
the vote), `user_id`, `crs1`, `crs2`, `vote` (crs1, crs2 or `tie`) and `feedback`.

Each defect is handled by an explicit rule and counted in the import report:
- a file that is not a JSON list of dialogues of that shape (or an empty list) fails, naming the file,
  the dialogue (position and conversation ID) and what is wrong;
- the system is the agent id as a safe folder name (crseval.core.names.safe_slug); the original
  stays in the session's provenance; two agent ids that map to one folder are an error;
- a dialogue repeating an earlier one (same conversation ID, same content) is skipped; a conversation
  ID that comes back with other content keeps both, the later one's session id numbered (`#2`);
- the messages follow the rules every dialogue shares (crseval.corpora.dialogue); a dialogue left
  without any user/system pair is skipped;
- the sentiment becomes the label `satisfaction` and the verdict `satisfied` (1.0 satisfied, 0.0
  frustrated); a dialogue without one is unlabelled (null).
Votes (crseval.corpora.votes): a row with the wrong number of fields, an empty required field, a time
that is not a timestamp, one system on both sides or a vote for neither side is malformed (dropped);
then the rules of every vote. A side's dialogue is the dialogue of the voting user with that system
(the conversation `<crs>_<user_id>`).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections import Counter
from pathlib import Path
from typing import Iterator

from crseval.core.io import json_type, shown
from crseval.corpora import dialogue
from crseval.corpora.dialogue import SATISFACTION, SYSTEM, USER, CorpusError, Dialogue
from crseval.corpora.format_kind import CorpusFormat, Verdict
from crseval.corpora.votes import MALFORMED, Vote, keep_votes, parse_time, votes_report

PARTICIPANTS = {"USER": USER, "AGENT": SYSTEM}
VOTE_COLUMNS = ("session_id", "user_id", "crs1", "crs2", "vote")  # and the optional `feedback`
TIE = "tie"
NUMBERED = "conversation ID repeated with other content: numbered"
UNLABELLED = "dialogue without a sentiment: unlabelled"
SATISFIED = Verdict("satisfied", "binary", "the user's own verdict: satisfied (1) or frustrated (0)")


def satisfaction_labels(satisfaction: str | None) -> dict:
    """The labels of a dialogue with the user's satisfaction (satisfied, frustrated or None): the label
    itself and the verdict `satisfied` (1.0, 0.0 or null)."""
    verdict = None if satisfaction is None else float(satisfaction == "satisfied")
    return {"satisfaction": satisfaction, "verdicts": {SATISFIED.name: verdict}}


def read_dialogues(path: Path) -> list[dict]:
    """The dialogues of one file, each checked against the format; CorpusError naming the file, the
    dialogue and what is wrong otherwise."""
    data = dialogue.read_json(path)
    if not isinstance(data, list):
        found = f"an object with the keys {sorted(data)[:8]}" if isinstance(data, dict) else json_type(data)
        raise CorpusError(f"{path}: expected a JSON list of CRSArena-Dial dialogues, found {found}")
    if not data:
        raise CorpusError(f"{path}: holds no dialogue: the JSON list is empty")
    for position, item in enumerate(data):
        if (problem := _problem(item)) is not None:
            conversation_id = item.get("conversation ID") if isinstance(item, dict) else None
            named = f" ({shown(conversation_id)})" if isinstance(conversation_id, str) else ""
            raise CorpusError(f"{path}: dialogue {position}{named}: {problem}")
    return data


def _problem(item: object) -> str | None:
    """What keeps `item` from being a CRSArena-Dial dialogue, or None."""
    if not isinstance(item, dict):
        return f"expected an object, found {json_type(item)}"
    if not _text(item.get("conversation ID")):
        return "'conversation ID' must be a non-empty string"
    for party in ("agent", "user"):
        if not isinstance(item.get(party), dict) or not _text(item[party].get("id")):
            return f"'{party}.id' must be a non-empty string"
    if not isinstance(item.get("conversation"), list):
        return f"'conversation' must be a list of messages, found {json_type(item.get('conversation'))}"
    for position, message in enumerate(item["conversation"]):
        if not isinstance(message, dict):
            return f"message {position}: expected an object, found {json_type(message)}"
        participant = message.get("participant")
        if not isinstance(participant, str) or participant.strip().upper() not in PARTICIPANTS:
            return f"message {position}: 'participant' must be USER or AGENT, found {shown(participant)}"
        utterance = message.get("utterance")
        if not isinstance(utterance, str):
            return f"message {position}: 'utterance' must be a string, found {json_type(utterance)}"
    metadata = item.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        return f"'metadata' must be an object, found {json_type(metadata)}"
    sentiment = (metadata or {}).get("sentiment")
    if sentiment is not None and (not isinstance(sentiment, str) or sentiment.strip().lower() not in SATISFACTION):
        return f"'metadata.sentiment' must be satisfied or frustrated (or absent), found {shown(sentiment)}"
    return None


def _text(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())


def read_file(path: Path) -> Iterator[Dialogue]:
    """The dialogues of one file, as the shared import reads them (crseval.corpora.format_kind)."""
    for position, item in enumerate(read_dialogues(path)):
        agent_id, conversation_id = item["agent"]["id"], item["conversation ID"]
        digest = hashlib.sha256(json.dumps(item, sort_keys=True, ensure_ascii=False).encode()).hexdigest()
        sentiment = (item.get("metadata") or {}).get("sentiment")
        yield Dialogue(
            name=agent_id,
            where=f"{path}: dialogue {position} ({shown(conversation_id)})",
            identity=digest,  # a conversation ID that comes back with other content is another dialogue
            digest=digest,
            session_name=conversation_id,
            messages=[
                {"speaker": PARTICIPANTS[m["participant"].strip().upper()], "text": m["utterance"]}
                for m in item["conversation"]
            ],
            provenance={"conversation_id": conversation_id, "agent_id": agent_id, "user_id": item["user"]["id"]},
            labels=satisfaction_labels(sentiment.strip().lower() if sentiment is not None else None),
            rules=Counter({UNLABELLED: 1} if sentiment is None else {}),
        )


def import_votes(path: str | Path, sessions: dict[str, list[dict]]) -> tuple[list[dict], dict]:
    """The rows of the votes table for the votes of `path` on the imported `sessions`, and the votes report."""
    path = Path(path)
    folders = {r["provenance"]["agent_id"]: system for system, records in sessions.items() for r in records}
    dialogues: dict[tuple[str, str], str] = {}  # (agent id, user id) -> session id of their first dialogue
    for records in sessions.values():
        for r in records:
            dialogues.setdefault((r["provenance"]["agent_id"], r["provenance"]["user_id"]), r["session_id"])
    report: Counter = Counter()
    votes, rows = [], 0
    reader = csv.DictReader(io.StringIO(dialogue.read_text(path).removeprefix("\ufeff"), newline=""))
    try:
        missing = [column for column in VOTE_COLUMNS if column not in (reader.fieldnames or [])]
        if missing:
            raise CorpusError(
                f"{path}: not a CRSArena-Dial votes file: the header lacks the columns {missing} (expected "
                f"{', '.join(VOTE_COLUMNS)}, feedback; found {reader.fieldnames})"
            )
        for row in reader:
            rows += 1
            fields = _vote_fields(row)
            if isinstance(fields, str):
                report[MALFORMED + fields] += 1
                continue
            time, voter, systems, winner, feedback = fields
            votes.append(
                Vote(
                    line=reader.line_num,
                    time=time,
                    voter=voter,
                    systems=systems,
                    winner=winner,
                    feedback=feedback,
                    dialogues=(dialogues.get((systems[0], voter)), dialogues.get((systems[1], voter))),
                )
            )
    except csv.Error as error:
        # the csv reader's own count: the DictReader's is set only once a row is read whole
        raise CorpusError(f"{path}, line {reader.reader.line_num}: not readable as CSV: {error}") from None
    kept = keep_votes(votes, folders, report)
    return kept, votes_report(path, rows, kept, report)


def _vote_fields(row: dict) -> tuple | str:
    """(time, voter, (crs1, crs2), winner side or None for a tie, feedback) of a CSV row, or what is wrong."""
    if None in row or any(value is None for value in row.values()):
        return "wrong number of fields"
    values = {column: row[column].strip() for column in VOTE_COLUMNS}
    if not all(values.values()):
        return "a required field is empty"
    time = parse_time(values["session_id"])
    if time is None:
        return "session_id is not a date and time"
    systems = (values["crs1"], values["crs2"])
    if systems[0] == systems[1]:
        return "one system on both sides"
    # `tie` whatever its case, unless a system has that very name
    tie = values["vote"].lower() == TIE and values["vote"] not in systems
    if values["vote"] not in systems and not tie:
        return "vote names neither side nor a tie"
    winner = None if tie else systems.index(values["vote"])
    feedback = (row.get("feedback") or "").strip() or None
    return time, values["user_id"], systems, winner, feedback


KIND = CorpusFormat(
    "crsarena",
    "CRSArena-Dial dialogues",
    read_file=read_file,
    system_names=("agent ids", "the corpus names two systems that would share one results folder"),
    numbered=NUMBERED,
    labelled=True,
    verdicts=(SATISFIED,),
    import_votes=import_votes,
)
