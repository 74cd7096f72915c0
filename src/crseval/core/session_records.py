"""Session records on disk: JSON lines (crseval.core.io), checked against the session schema, written atomically.

Every stage that reads or writes sessions (simulation, import, scoring, judging, the viewer, the user
realism and audit, the CLI) goes through here, so a record is always validated the same way, no reader
ever sees half a file, and a reply holding U+2028 or another line break stays in its session's line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable, Iterator

import jsonschema
import yaml

from crseval.core.io import read_json_lines, write_json_lines

SESSION_SCHEMA = Path(__file__).resolve().with_name("schemas") / "session.schema.yaml"  # package data


def load_schema(path: str | Path = SESSION_SCHEMA) -> dict:
    return yaml.safe_load(Path(path).read_text(encoding="utf-8"))


def session_validator(schema: dict) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(schema)


def validate_session(validator: jsonschema.Draft202012Validator, record: dict) -> None:
    """Raise ValueError naming the session and the first place where it breaks the schema."""
    errors = sorted(validator.iter_errors(record), key=lambda e: [str(p) for p in e.path])
    if errors:
        first = errors[0]
        where = "/".join(str(p) for p in first.path) or "(record)"
        raise ValueError(
            f"session {record.get('session_id')} does not match the session schema at {where}: {first.message}"
        )


def write_sessions(
    records: Iterable[dict], path: str | Path, validator: jsonschema.Draft202012Validator | None = None
) -> None:
    """Write records as JSON lines, all or nothing (validated first when a validator is given)."""
    records = list(records)
    if validator is not None:
        for record in records:
            validate_session(validator, record)
    write_json_lines(records, path)


def read_sessions(path: str | Path) -> list[dict]:
    """The records of one shard; JsonLinesError naming the shard and the line that cannot be read."""
    return read_json_lines(path)


def read_shards(paths: Iterable[str | Path]) -> Iterator[dict]:
    """The records of the shards at `paths`, shard after shard."""
    for path in paths:
        yield from read_sessions(path)


def catalog_sha(summary_path: str | Path) -> str:
    """The catalog's content hash from the `index_catalog` summary; every session records it."""
    return json.loads(Path(summary_path).read_text(encoding="utf-8"))["catalog"]["sha256"]
