"""What every imported dialogue shares, whatever its corpus format.

A format's reader turns each of its files into `Dialogue`s, whose messages are `{speaker:
USER|SYSTEM, text, ...}`; from there the same rules apply to every corpus, each counted in the
import report under the same name:
- an empty message (nothing but white space) is dropped;
- a message that repeats, word for word, the one its speaker sent just before is a double send and
  is dropped;
- two messages of one speaker in a row are joined into one (a later non-empty extra field, such as
  the thesis logs' constraints, replaces the earlier one; the films a corpus marks in them, `marks`,
  are joined: the earlier message's, then the later's new ones);
- a dialogue opening with the system loses that message (a turn starts with the user);
- a final user message without reply is dropped;
then the messages pair into user/system turns, and each reply's films are recognised against the
catalog. Also shared: reading JSON that can be written again (no absurd nesting, valid Unicode),
system names as safe folder names (two names that share a folder are an error), and the session
record an import yields. The import that applies these rules to a format's files is written once,
in crseval.corpora.format_kind.

What comes from outside is bounded: a corpus file is read only if it is a regular file of at most
MAX_FILE_BYTES (a leading byte order mark dropped), its JSON is JSON as the standard writes it (no NaN
or Infinity, no number too large for a float, no key twice in one object), and no message is longer
than MAX_MESSAGE_CHARS.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from pathlib import Path

from crseval.core.io import (
    StrictJSONError,
    UnreadableFile,
    read_regular_file,
    shown,
    strict_json_loads,
)
from crseval.core.names import safe_slug
from crseval.language.concepts import ConceptMatcher

USER, SYSTEM = "USER", "SYSTEM"
MAX_DEPTH = 64  # a dialogue is a few levels deep; far deeper nesting is junk that would overflow the stack later
SATISFACTION = ("satisfied", "frustrated")  # the values of the `satisfaction` label
# A corpus file is read whole: its memory is several times its size. A larger corpus is several files.
MAX_FILE_BYTES = 64 << 20
# A chat message, written by a person or generated as a reply, is a few thousand characters at most; a far
# longer one is not a message, and reading its films would hold the import (and a voice's learning) for minutes.
MAX_MESSAGE_CHARS = 100_000
SHOWN_CHARS = 60  # of a value the corpus gives, in a message or a rule's name
# The films a corpus marks in a message itself (ids in the text, quoted titles, placeholders), resolved to
# titles, each once in order: a message's `marks` become its turn's `marked_titles` (`user_marked_titles`).
MARKS = "marks"
LISTED_PLACES = 5  # places listed per rule of a skipped dialogue or row in the import report (`skipped`)
# What a file that is not UTF-8 text may be instead, by its first bytes.
_NOT_TEXT = {
    b"\xff\xfe": "it starts with a UTF-16 byte order mark: save it as UTF-8",
    b"\xfe\xff": "it starts with a UTF-16 byte order mark: save it as UTF-8",
    b"\x1f\x8b": "it starts like a gzip file: decompress it first",
    b"PK\x03\x04": "it starts like a zip archive: unpack it first",
}
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")  # how JSON text spells a surrogate


class CorpusError(ValueError):
    """A corpus file that does not match its format; the message names the file, where in it, and what is wrong."""


@dataclass(frozen=True)
class Skipped:
    """A dialogue (or row) of a file that is the format but is malformed itself: skipped under the named
    `rule` (counted in the import report, the first places listed), and nothing else of the file lost."""

    rule: str  # e.g. "malformed dialogue skipped: a message without text"
    where: str  # the file and the place in it


@dataclass
class Dialogue:
    """One dialogue as its format read it: what the shared rules need to decide whether it becomes a
    session, of which system, and what its session record keeps of it."""

    name: str  # its system, as the corpus names it (a safe folder name is made of it)
    where: str  # where it was read (the file, and the line or position in it), for messages
    identity: Hashable  # a later dialogue of an earlier one's identity repeats it (or conflicts: the format says)
    digest: str  # its content, to tell a repeat from another dialogue of the same identity
    session_name: str  # its session id is `<system>/<session_name>`
    messages: list[dict] = field(default_factory=list)  # {speaker: USER|SYSTEM, text, **extra}, in dialogue order
    provenance: dict = field(default_factory=dict)  # kept in its session's provenance, after the file and format
    labels: dict | None = None  # the corpus's verdict on it, in a format that has labels
    metadata: dict | None = None  # what the corpus says of it beyond the format, kept last in the provenance
    # The rules applied to it, counted: the format's own while it was read, then those of pairing its turns.
    repairs: Counter = field(default_factory=Counter)
    rules: Counter = field(default_factory=Counter)  # the format's own rules counted once it is a session


def unusable(value: object, text: str | None = None) -> str | None:
    """Why parsed JSON cannot go on although it parsed: nesting that would overflow the stack when written
    again, or lone surrogates (from escapes like \\ud800) that no UTF-8 file can hold. With the `text` it
    was parsed from, strings are searched only when that text could have produced a lone surrogate."""
    strings = text is None or bool(_SURROGATE_ESCAPE.search(text) or _LONE_SURROGATE.search(text))
    if isinstance(value, str):
        return _lone_surrogate(value) if strings else None
    stack = [(value, 1)] if isinstance(value, (dict, list)) else []
    while stack:  # containers only: a part sits one level below its container
        item, depth = stack.pop()
        parts = [part for pair in item.items() for part in pair] if isinstance(item, dict) else item
        if parts and depth + 1 > MAX_DEPTH:
            return f"nested deeper than {MAX_DEPTH} levels"
        for part in parts:
            if isinstance(part, (dict, list)):
                stack.append((part, depth + 1))
            elif strings and isinstance(part, str) and (defect := _lone_surrogate(part)):
                return defect
    return None


def _lone_surrogate(item: str) -> str | None:
    if _LONE_SURROGATE.search(item):
        return f"holds text that is not valid Unicode (a lone surrogate escape): {item[:60]!r}"
    return None


def parse_json(text: str, where: str) -> object:
    """`text` parsed as JSON that can be written again; CorpusError starting with `where` otherwise."""
    if not text.strip():
        raise CorpusError(f"{where}: holds no JSON: the file is empty (or only white space)")
    try:
        data = strict_json_loads(text)
    except json.JSONDecodeError as error:
        raise CorpusError(f"{where}: cannot be read as JSON: {_decode_problem(text, error)}") from None
    except StrictJSONError as error:
        raise CorpusError(f"{where}: cannot be read as JSON: {error}") from None
    if (defect := unusable(data, text)) is not None:
        raise CorpusError(f"{where}: {defect}")
    return data


def _decode_problem(text: str, error: json.JSONDecodeError) -> str:
    """What the JSON decoder found and where (by line and column, or by character within one line: a
    JSON-lines line is one), and whether the text ends before the JSON does: a file cut off."""
    place = f"line {error.lineno}, column {error.colno}" if "\n" in text else f"character {error.pos + 1}"
    cut = error.pos >= len(text.rstrip()) or error.msg.startswith("Unterminated string")  # read to the end
    return f"{error.msg} at {place}" + (": the text ends before the JSON does (cut off?)" if cut else "")


def read_text(path: Path) -> str:
    """The file as UTF-8 text (without a leading byte order mark); CorpusError naming it when it is no
    regular file, is over MAX_FILE_BYTES, or is not UTF-8 (with the line of the first byte that is not)."""
    try:
        data = read_regular_file(path, MAX_FILE_BYTES)
    except OSError as error:
        raise CorpusError(f"{path}: cannot be read: {error}") from None
    except UnreadableFile as refused:
        if refused.reason != "too large":
            raise CorpusError(f"{path}: {refused}") from None
        raise _too_large(path, f"{refused.size:,} bytes" if refused.size else "it grew while it was read") from None
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as error:
        hint = next((f" ({what})" for start, what in _NOT_TEXT.items() if data.startswith(start)), "")
        raise CorpusError(f"{path}, {undecodable(data, error)}{hint}") from None


def _too_large(path: Path, size: str) -> CorpusError:
    return CorpusError(
        f"{path}: over the {MAX_FILE_BYTES:,} bytes a corpus file may hold ({size}; "
        "crseval.corpora.dialogue.MAX_FILE_BYTES): split the corpus into several files, or name a sample of it"
    )


def undecodable(data: bytes, error: UnicodeDecodeError) -> str:
    """Where `data` stops being UTF-8, as a line (counted by newlines, as a JSONL reader counts them) and
    the byte within it, and what is there."""
    line = data.count(b"\n", 0, error.start) + 1
    column = error.start - (data.rfind(b"\n", 0, error.start) + 1) + 1
    found = " ".join(f"0x{byte:02x}" for byte in data[error.start : min(error.end, error.start + 4)])
    return f"line {line}: cannot be read as UTF-8 text: byte {column} of the line ({found}): {error.reason}"


def read_json(path: Path) -> object:
    return parse_json(read_text(path), str(path))


def printable(name: str) -> str:
    """A file name as valid Unicode (undecodable bytes in the name shown as U+FFFD), so records can be written."""
    return os.fsencode(name).decode("utf-8", errors="replace")


def _said_again(text: str, earlier: str) -> bool:
    """Whether a message repeats the one its speaker sent just before, word for word (a double send)."""
    return " ".join(text.casefold().split()) == " ".join(earlier.casefold().split())


def pair_turns(messages: list[dict], report: Counter) -> list[dict]:
    """USER/SYSTEM pairs `{user: message, system: message}` after the ordering rules; `messages` are
    `{speaker: USER|SYSTEM, text, **extra}` in dialogue order."""
    kept: list[dict] = []
    sent_last = ""
    for message in messages:
        speaker, text = message["speaker"], message["text"].strip()
        if speaker not in (USER, SYSTEM):
            raise ValueError(f"speaker {speaker!r} is neither {USER} nor {SYSTEM}: the reader must map it")
        if not text:
            report[f"empty {speaker} message dropped"] += 1
            continue
        extra = {key: value for key, value in message.items() if key not in ("speaker", "text")}
        if kept and kept[-1]["speaker"] == speaker and _said_again(text, sent_last):
            report[f"{speaker} message sent twice in a row: the repeat dropped"] += 1
            continue
        sent_last = text
        if kept and kept[-1]["speaker"] == speaker:
            report[f"consecutive {speaker} messages joined"] += 1
            kept[-1]["text"] += " " + text
            marks = extra.pop(MARKS, None)
            kept[-1].update({key: value for key, value in extra.items() if value})
            if marks is not None:  # the joined message marks the films of both, each once, in order
                earlier = kept[-1].get(MARKS) or []
                kept[-1][MARKS] = earlier + [title for title in marks if title not in earlier]
                if marks and earlier:
                    report[f"film marks of consecutive {speaker} messages joined"] += 1
            continue
        kept.append({"speaker": speaker, "text": text, **extra})
    if kept and kept[0]["speaker"] == SYSTEM:
        report[f"opening {SYSTEM} message dropped"] += 1
        kept = kept[1:]
    if kept and kept[-1]["speaker"] == USER:
        report[f"final {USER} message without reply dropped"] += 1
        kept = kept[:-1]
    return [{"user": kept[i], "system": kept[i + 1]} for i in range(0, len(kept) - 1, 2)]


def build_turns(
    pairs: list[dict],
    matcher: ConceptMatcher | None,
    report: Counter,
    *,
    repair_user_text: Callable[[str, Counter], str] | None = None,
    system_constraints: Callable[[dict, Counter], list[dict]] | None = None,
) -> list[dict]:
    """The session turns of the pairs: each reply's films recognised (recommended, mentioned, and the
    films it names that the catalog does not hold), with the films the user named so far as context.

    Without a matcher (counting sessions while planning) no film is recognised: the turns are the same.
    `repair_user_text` rewrites a user text (a pair whose user text it empties is dropped, counted);
    `system_constraints` gives the constraints the system logged for its reply.
    """
    turns = []
    for pair in pairs:
        user_text = pair["user"]["text"]
        if repair_user_text is not None:
            user_text = repair_user_text(user_text, report)
            if not user_text:
                report["user turn empty after repair: pair dropped"] += 1
                continue
        turns.append(
            {
                "turn": len(turns) + 1,
                "user_text": user_text,
                "user_meta": None,
                "system_text": pair["system"]["text"],
                "system_constraints": system_constraints(pair["system"], report) if system_constraints else [],
                "candidate_titles": [],
                "recommended_titles": [],
                "mentioned_titles": [],
                "unknown_titles": [],
                "llm": None,
                # the films the corpus itself marks in the reply (and the user's message), where it marks them
                **({"marked_titles": pair["system"][MARKS]} if MARKS in pair["system"] else {}),
                **({"user_marked_titles": pair["user"][MARKS]} if MARKS in pair["user"] else {}),
            }
        )
    if matcher is not None:
        recognise_films(turns, matcher)
    return turns


def recognise_films(turns: list[dict], matcher: ConceptMatcher) -> None:
    """Each reply's films (recommended, mentioned, named outside the catalog), with the films the user
    named so far as context; in place. Apart from building the turns, so that a corpus planned without
    films gets them shard by shard."""
    recognizer = matcher.title_recognizer
    user_named: list[str] = []  # films the user named so far: the reply may refer back to them
    for turn in turns:
        user_named += [t for t in recognizer.recognise(turn["user_text"], by_user=True).all if t not in user_named]
        # user_named already holds every film of this user turn, so passing user_text as well would
        # only read it a second time for the same result
        titles = recognizer.recognise(turn["system_text"], context_titles=user_named)
        turn.update(
            recommended_titles=titles.recommended, mentioned_titles=titles.mentioned, unknown_titles=titles.unknown
        )


class SystemFolders:
    """System names as safe folder names (crseval.core.names.safe_slug). Two names that would share one
    folder are an error, because merging two systems' sessions silently would compare the wrong systems."""

    def __init__(self, kind: str, advice: str):
        self.kind, self.advice = kind, advice  # "model names", "rename one of them in its log files"
        self._first: dict[str, tuple[str, str]] = {}  # folder -> the name (and where it was first seen)

    def folder(self, name: str, where: str) -> str:
        system = safe_slug(name)
        first_name, first_where = self._first.setdefault(system, (name, where))
        if first_name != name:
            raise CorpusError(
                f"{self.kind} {shown(first_name)} ({first_where}) and {shown(name)} ({where}) both become the "
                f"system folder {system!r}; {self.advice}"
            )
        return system


def session_record(
    *,
    session_id: str,
    session_index: int,
    system: str,
    turns: list[dict],
    catalog_sha: str,
    config_sha: str,
    provenance: dict,
    labels: dict | None = None,
) -> dict:
    """An imported session: the record `simulate` writes, without simulator ground truth (no seed, no
    liked titles, no shifts, `user_meta` null in every turn); `labels` only where the corpus has them."""
    record = {
        "session_id": session_id,
        "session_index": session_index,
        "system": system,
        "seed": None,
        "catalog_sha": catalog_sha,
        "config_sha": config_sha,
        "liked_titles": [],
        "turns": turns,
        "shift_events": [],
        "provenance": provenance,
    }
    if labels is not None:
        record["labels"] = labels
    return record


def label_counts(sessions: dict[str, list[dict]]) -> dict[str, int]:
    """How many imported sessions carry each satisfaction label, and how many none."""
    counts = Counter(
        (record.get("labels") or {}).get("satisfaction") or "unlabelled"
        for records in sessions.values()
        for record in records
    )
    return {key: counts[key] for key in (*SATISFACTION, "unlabelled")}


def human_verdicts(record: dict) -> dict:
    """The verdicts people gave on an imported dialogue (its `labels.verdicts`: name -> number or null)."""
    verdicts = (record.get("labels") or {}).get("verdicts")
    return verdicts if isinstance(verdicts, dict) else {}


def has_human_verdict(record: dict) -> bool:
    """Whether people judged the dialogue: a satisfaction label or any verdict that is not null."""
    labels = record.get("labels") or {}
    return labels.get("satisfaction") is not None or any(v is not None for v in human_verdicts(record).values())


def verdict_counts(sessions: dict[str, list[dict]], verdicts) -> dict[str, dict]:
    """Per declared verdict (crseval.corpora.format_kind.Verdict), how the imported sessions carry it: a
    binary one counted by value (`1`, `0`, `none`), an ordinal one as the dialogues rated, those not, and
    the mean, lowest and highest value."""
    counts = {}
    for verdict in verdicts:
        values = [human_verdicts(r).get(verdict.name) for records in sessions.values() for r in records]
        given = [value for value in values if value is not None]
        if verdict.scale == "binary":
            counts[verdict.name] = {
                "1": sum(value == 1 for value in given),
                "0": sum(value == 0 for value in given),
                "none": len(values) - len(given),
            }
        else:
            counts[verdict.name] = {
                "rated": len(given),
                "none": len(values) - len(given),
                "mean": round(sum(given) / len(given), 4) if given else None,
                "min": min(given, default=None),
                "max": max(given, default=None),
            }
    return counts


def unique_id(wanted: str, used: set[str]) -> str:
    """`wanted`, or `wanted#2`, `wanted#3` ... when an earlier session took it; recorded in `used`."""
    candidate, number = wanted, 1
    while candidate in used:
        number += 1
        candidate = f"{wanted}#{number}"
    used.add(candidate)
    return candidate


def named_films(records: list[dict]) -> dict[str, set[str]]:
    """The distinct films the replies of `records` name: catalog films (recommended or mentioned) and
    films outside the catalog (`unknown_titles`, casefolded: compared case-insensitively)."""
    turns = [turn for record in records for turn in record["turns"]]
    return {
        "catalog": {t for turn in turns for t in turn["recommended_titles"] + turn["mentioned_titles"]},
        "outside": {t.casefold() for turn in turns for t in turn.get("unknown_titles", [])},
    }


def film_coverage(sessions: dict[str, list[dict]]) -> dict:
    """How many of the distinct films the replies name the catalog holds, overall and per system. A
    corpus whose systems name mostly films outside the catalog can say little through the
    catalog-grounded metrics, and the report should show it."""
    return coverage_of({system: named_films(records) for system, records in sessions.items()})


def coverage_of(named: dict[str, dict[str, set[str]]]) -> dict:
    """film_coverage from the films each system's replies name (`named_films`, merged over shards)."""

    def share(catalog: set, outside: set) -> dict:
        films = len(catalog) + len(outside)
        return {
            "films_named": films,
            "in_catalog": len(catalog),
            "outside_catalog": len(outside),
            "catalog_share": round(len(catalog) / films, 4) if films else None,
        }

    every = [set().union(*(n[kind] for n in named.values())) for kind in ("catalog", "outside")]
    return share(*every) | {"per_system": {s: share(n["catalog"], n["outside"]) for s, n in sorted(named.items())}}
