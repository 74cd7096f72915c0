"""Pairwise votes between two systems, as a corpus may carry them: a voter talked to both and preferred
one, or neither (a tie). Each format reads its own vote file into `Vote`s (a row that is malformed is
counted and dropped there); the rules every vote then meets are here, each counted, in this order:
- a vote naming a system the corpus has no dialogue of is dropped;
- a vote repeating an earlier one (same time, voter, systems, dialogues, winner and feedback) is dropped;
- a vote whose two dialogues are both missing from the imported corpus is dropped: there is nothing
  to relate it to; with one side's dialogue missing it is kept, and counted.
The votes kept are written as `tables/votes.parquet`, one row per vote (VOTES_SCHEMA).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa

from crseval.core.io import write_parquet

UNKNOWN_SYSTEM = "vote naming a system not in the corpus dropped"
DUPLICATE = "duplicate vote dropped"
NO_DIALOGUE = "vote without the dialogue of either side dropped"
ONE_SIDE_MISSING = "vote kept with one side's dialogue missing"
MALFORMED = "vote row malformed, dropped: "  # + what is wrong with the row
KEPT_RULES = (ONE_SIDE_MISSING,)

VOTES_SCHEMA = pa.schema(
    [
        pa.field("time", pa.timestamp("us")),  # as recorded; a time with a UTC offset converted to UTC
        pa.field("voter", pa.string()),
        pa.field("system_a", pa.string()),  # system folders, as in the sessions table
        pa.field("system_b", pa.string()),
        pa.field("winner", pa.string()),  # system_a or system_b; null for a tie
        pa.field("tie", pa.bool_()),
        pa.field("session_a", pa.string()),  # session_id of each side's dialogue; null when not in the corpus
        pa.field("session_b", pa.string()),
        pa.field("found_a", pa.bool_()),
        pa.field("found_b", pa.bool_()),
        pa.field("feedback", pa.string()),
        pa.field("source_line", pa.int64()),  # line of the vote file the vote ends on
    ]
)


@dataclass(frozen=True)
class Vote:
    """One vote as its file states it. `systems`: the two systems as the corpus names them (before they
    became folder names); `winner`: 0 or 1, the side preferred, None for a tie; `dialogues`: the session
    id of each side's dialogue in the imported corpus, None where it has none."""

    line: int
    time: datetime | None
    voter: str | None
    systems: tuple[str, str]
    winner: int | None
    feedback: str | None
    dialogues: tuple[str | None, str | None]


def parse_time(text: str) -> datetime | None:
    """An ISO 8601 date and time (`2024-09-08 23:01:08`, `2024-09-08T23:01:08Z`) as a naive datetime, in
    UTC when it has an offset; None when `text` is not one, or is one whose UTC time is outside the years
    1 to 9999 (`9999-12-31T23:59-01:00`)."""
    try:
        moment = datetime.fromisoformat(text.strip())
        return moment.astimezone(timezone.utc).replace(tzinfo=None) if moment.tzinfo else moment
    except (ValueError, OverflowError):
        return None


def keep_votes(votes: list[Vote], folders: dict[str, str], report: Counter) -> list[dict]:
    """The rows of the votes table for the votes that meet the rules; `folders`: system name as the
    corpus writes it -> its system folder."""
    rows, seen = [], set()
    for vote in votes:
        if any(name not in folders for name in vote.systems):
            report[UNKNOWN_SYSTEM] += 1
            continue
        key = (vote.time, vote.voter, vote.systems, vote.winner, vote.feedback, vote.dialogues)
        if key in seen:
            report[DUPLICATE] += 1
            continue
        seen.add(key)
        found = [session is not None for session in vote.dialogues]
        if not any(found):
            report[NO_DIALOGUE] += 1
            continue
        if not all(found):
            report[ONE_SIDE_MISSING] += 1
        system_a, system_b = (folders[name] for name in vote.systems)
        rows.append(
            {
                "time": vote.time,
                "voter": vote.voter,
                "system_a": system_a,
                "system_b": system_b,
                "winner": None if vote.winner is None else (system_a, system_b)[vote.winner],
                "tie": vote.winner is None,
                "session_a": vote.dialogues[0],
                "session_b": vote.dialogues[1],
                "found_a": found[0],
                "found_b": found[1],
                "feedback": vote.feedback,
                "source_line": vote.line,
            }
        )
    return rows


def votes_report(path: Path, rows_read: int, kept: list[dict], report: Counter) -> dict:
    """The `votes` part of the import report: rows read, kept, dropped, and every rule applied."""
    return {
        "file": path.name,
        "rows": rows_read,
        "kept": len(kept),
        "dropped": sum(count for rule, count in report.items() if rule not in KEPT_RULES),
        "rules_applied": dict(sorted(report.items())),
    }


def votes_table(rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=VOTES_SCHEMA)


def write_votes(rows: list[dict], path: str | Path) -> None:
    write_parquet(votes_table(rows), path)
