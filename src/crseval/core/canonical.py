"""Canonical JSON and its hash: the one way settings and requests become identities.

Cache keys, configuration hashes stored with every session and the rules' `params` all use it, so
that two equal values (whatever their key order) always give the same identity.
"""

from __future__ import annotations

import hashlib
import json


def canonical_json(data: object) -> str:
    """`data` as JSON with sorted keys and no spaces (Unicode kept as is)."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_sha(data: object) -> str:
    """sha256 of `canonical_json(data)`."""
    return hashlib.sha256(canonical_json(data).encode("utf-8")).hexdigest()


# Settings that change how fast a job runs, never what it produces (same seeds, cache keys and records).
RUNTIME_KEYS = ("concurrency",)


def without_runtime(section: dict) -> dict:
    """`section` without the keys that change speed only: what identifies a system's or a judge's results."""
    return {key: value for key, value in section.items() if key not in RUNTIME_KEYS}
