"""On-disk response cache keyed by the request's content hash.

One small JSON file per reply under `<dir>/<key[:2]>/<key>.json`, written atomically, so that
concurrent jobs can share a cache and a killed job never leaves a half-written entry. A reply's
token probabilities, when it has them, are kept with it (the judge's G-Eval scores need them), and so are
the tools it asks to call: such a reply may have no text, and is still good; one with neither is never kept.
"""

from __future__ import annotations

import json
from pathlib import Path

from crseval.core.io import atomic_path
from crseval.llm.base import LLMResponse


class ResponseCache:
    def __init__(self, directory: str | Path):
        self.directory = Path(directory)

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> LLMResponse | None:
        """The cached reply, or None for a miss. Unreadable entries and empty replies (which older
        versions cached: neither text nor tool calls) are misses: they are asked for again and overwritten,
        never trusted."""
        path = self._path(key)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            response = LLMResponse(**{**data, "cached": True})
        except FileNotFoundError:
            return None
        except (ValueError, TypeError, OSError, RecursionError):  # half a file, not UTF-8, wrong fields
            return None
        if not response.has_content():  # neither text nor tool calls, or calls of the wrong shape
            return None
        if response.token_logprobs is not None and not isinstance(response.token_logprobs, list):
            return None
        return response

    def put(self, key: str, response: LLMResponse) -> None:
        if not response.has_content():
            raise ValueError(f"refusing to cache an empty reply of {response.backend} model {response.model}")
        record = {
            "text": response.text,
            "backend": response.backend,
            "model": response.model,
            "latency_s": response.latency_s,
            "prompt_tokens": response.prompt_tokens,
            "completion_tokens": response.completion_tokens,
            "extra": response.extra,
        }
        if response.token_logprobs is not None:  # kept, so that a re-run needs no call to weigh the scores again
            record["token_logprobs"] = response.token_logprobs
        if response.tool_calls is not None:  # only then: entries of replies without calls stay as they were
            record["tool_calls"] = response.tool_calls
        text = json.dumps(record, ensure_ascii=False)
        try:
            content = text.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate from a JSON escape: \u escapes keep it intact
            content = json.dumps(record).encode("ascii")
        with atomic_path(self._path(key)) as temporary:
            temporary.write_bytes(content)
