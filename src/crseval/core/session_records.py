"""Session records on disk: JSON lines, checked against the session schema, written atomically.

Every stage that reads or writes sessions (simulation, import, scoring, judging, the CLI) goes
through here, so a record is always validated the same way and no reader ever sees half a file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable

import jsonschema
import yaml

from crseval.core.io import atomic_path

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


def session_line(record: dict) -> str:
    """One record as one JSON line (Unicode kept as is)."""
    return json.dumps(record, ensure_ascii=False) + "\n"


def write_sessions(
    records: Iterable[dict], path: str | Path, validator: jsonschema.Draft202012Validator | None = None
) -> None:
    """Write records as JSON lines, all or nothing (validated first when a validator is given)."""
    records = list(records)
    if validator is not None:
        for record in records:
            validate_session(validator, record)
    with atomic_path(path) as temporary:
        temporary.write_text("".join(session_line(r) for r in records), encoding="utf-8")


def read_sessions(path: str | Path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]


def catalog_sha(summary_path: str | Path) -> str:
    """The catalog's content hash from the `index_catalog` summary; every session records it."""
    return json.loads(Path(summary_path).read_text(encoding="utf-8"))["catalog"]["sha256"]
