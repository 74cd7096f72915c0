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


MISSING = object()  # a setting one side does not have (changed_settings)


def changed_settings(first, second, key: str = ""):
    """(key path, first value, second value) of every setting that differs, mappings compared key by key in
    sorted order; MISSING where one side lacks the key. Verify's and compare's lists of differences walk here."""
    if isinstance(first, dict) and isinstance(second, dict):
        for name in sorted(set(first) | set(second), key=str):
            path = f"{key}.{name}" if key else str(name)
            if name not in first or name not in second:
                yield path, first.get(name, MISSING), second.get(name, MISSING)
            else:
                yield from changed_settings(first[name], second[name], path)
    elif first != second:
        yield key, first, second
