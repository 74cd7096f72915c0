"""On-disk response cache keyed by the request's content hash.

One small JSON file per reply under `<dir>/<key[:2]>/<key>.json`, written atomically, so that
concurrent jobs can share a cache and a killed job never leaves a half-written entry.
"""

from __future__ import annotations

import json
from pathlib import Path

from crseval.io import atomic_path
from crseval.llm.base import LLMResponse


class ResponseCache:
    def __init__(self, directory: str | Path):
        self.directory = Path(directory)

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> LLMResponse | None:
        path = self._path(key)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except json.JSONDecodeError:
            return None  # an unreadable entry is recomputed, never trusted
        return LLMResponse(**{**data, "cached": True})

    def put(self, key: str, response: LLMResponse) -> None:
        record = {
            "text": response.text,
            "backend": response.backend,
            "model": response.model,
            "latency_s": response.latency_s,
            "prompt_tokens": response.prompt_tokens,
            "completion_tokens": response.completion_tokens,
            "extra": response.extra,
        }
        with atomic_path(self._path(key)) as temporary:
            temporary.write_text(json.dumps(record, ensure_ascii=False), encoding="utf-8")
