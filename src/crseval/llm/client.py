"""LLMClient: cache lookup, then the backend with retries and exponential backoff.

A reply is good when it has text or asks for at least one tool (LLMResponse.has_content): a tool-using
system's model may answer a turn with calls only.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from dataclasses import dataclass

from crseval.llm.base import Backend, LLMError, LLMRequest, LLMResponse, TransientLLMError, redact_urls
from crseval.llm.cache import ResponseCache

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with jitter. Requests that failed together (a server restarting under
    many requests in flight) must not all come back at the same instant, so each waits between half
    and all of its backoff; the fraction comes from the request's key, not from a clock or a global
    RNG, so runs stay reproducible. A server's Retry-After is honoured (up to `max_wait_s`)."""

    max_retries: int = 3
    backoff_s: float = 2.0
    max_wait_s: float = 300.0

    def delay(self, attempt: int, key: str = "", retry_after_s: float | None = None) -> float:
        fraction = int.from_bytes(hashlib.sha256(f"{key}:{attempt}".encode()).digest()[:4], "big") / 2**32
        backoff = self.backoff_s * (2**attempt) * (0.5 + 0.5 * fraction)
        return min(self.max_wait_s, max(backoff, retry_after_s or 0.0))


class LLMClient:
    """Counts real (uncached) calls in `calls`, so callers and tests can check a re-run made none.

    Safe to share between threads (sessions in flight): the backends' HTTP clients are, the cache
    writes each entry atomically, and the counters are updated under a lock.
    """

    def __init__(
        self, backend: Backend, cache: ResponseCache | None, retry: RetryPolicy = RetryPolicy(), sleep=time.sleep
    ):
        self.backend = backend
        self.cache = cache
        self.retry = retry
        self.calls = 0
        self.cache_hits = 0
        self._sleep = sleep
        self._lock = threading.Lock()

    def _count(self, counter: str) -> None:
        with self._lock:
            setattr(self, counter, getattr(self, counter) + 1)

    def complete(self, request: LLMRequest) -> LLMResponse:
        key = request.key(self.backend.name, self.backend.model)
        if self.cache is not None:
            cached = self.cache.get(key)
            if cached is not None:
                self._count("cache_hits")
                return cached
        response = self._call_with_retries(request, key)
        if self.cache is not None:
            self.cache.put(key, response)
        return response

    def _call_with_retries(self, request: LLMRequest, key: str) -> LLMResponse:
        attempt = 0
        while True:
            self._count("calls")
            try:
                return self._checked(self.backend.complete(request))
            except TransientLLMError as error:
                reason = redact_urls(str(error))
                if attempt >= self.retry.max_retries:
                    raise LLMError(
                        f"{self.backend.name} model {self.backend.model}: giving up after "
                        f"{attempt + 1} attempts: {reason}"
                    ) from error
                delay = self.retry.delay(attempt, key, error.retry_after_s)
                log.warning(
                    "%s model %s: %s; retry %d in %.1f s",
                    self.backend.name,
                    self.backend.model,
                    reason,
                    attempt + 1,
                    delay,
                )
                self._sleep(delay)
                attempt += 1

    def _checked(self, response: LLMResponse) -> LLMResponse:
        """The backend's reply, if it has text or asks for a tool (well-formed calls): the backends check
        this themselves, and this makes sure that no backend can hand an empty reply to the caller or the cache."""
        if not response.has_content():
            calls = "" if response.tool_calls is None else f" and tool calls {response.tool_calls!r:.60}"
            raise TransientLLMError(
                f"{self.backend.name} model {self.backend.model}: reply has no text "
                f"(the backend returned {response.text!r:.40}{calls})"
            )
        return response


def make_backend(
    settings: dict, threads: int = 1, timeout_s: float = 120.0, max_reply_bytes: int | None = None
) -> Backend:
    """A backend from a system's `backend` config section; a server backend's calls last at most
    `timeout_s` each and their replies are bounded (crseval.llm.server)."""
    from crseval.llm.backends import backend_kind  # the backends import this module's siblings

    return backend_kind(settings["type"]).build(settings, threads, timeout_s, max_reply_bytes)


def make_client(backend: dict, llm_runtime: dict, threads: int) -> LLMClient:
    """A client for a `backend` config section with the experiment's `llm` runtime settings
    (cache folder, timeout, reply bound, retries)."""
    cache_dir = llm_runtime.get("cache_dir")
    return LLMClient(
        make_backend(
            backend,
            threads=threads,
            timeout_s=llm_runtime["timeout_s"],
            max_reply_bytes=llm_runtime.get("max_reply_bytes"),
        ),
        ResponseCache(cache_dir) if cache_dir else None,
        RetryPolicy(max_retries=llm_runtime["max_retries"], backoff_s=llm_runtime["backoff_s"]),
    )
