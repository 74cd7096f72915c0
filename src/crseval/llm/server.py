"""What the server backends (Ollama, OpenAI-compatible) share: one bounded POST per call.

The reply is read by crseval.core.bounded_http, whose bounds are the deadline `llm.timeout_s` (the whole
call) and a size derived from the request: a reply can hold at most `max_tokens` tokens (with their
probabilities, if asked for), so a body far larger than that is not a reply (`llm.max_reply_bytes`
replaces the derived size). Past either bound, or on a redirect to another origin, the call fails with
an LLMError naming backend, model and what happened; too large is permanent, a passed deadline transient.
"""

from __future__ import annotations

import json
import time

from crseval.core.bounded_http import LARGEST_REPLY_BYTES, BoundedPoster, Bounds, HttpFailure, ReplyTooLarge
from crseval.llm.base import LLMError, LLMRequest, TransientLLMError, http_failure, redact_urls, retry_after

ENVELOPE_BYTES = 64 << 10  # the reply's JSON around the text: ids, usage, timings
BYTES_PER_TOKEN = 512  # a token's text escaped as JSON (\uXXXX for each non-ASCII character), generously


def reply_bound(request: LLMRequest, configured: int | None = None) -> int:
    """The largest reply body accepted for `request`: `configured`, else derived from its max_tokens and
    top_logprobs (each token may come with that many alternatives)."""
    if configured:
        return configured
    derived = ENVELOPE_BYTES + request.max_tokens * BYTES_PER_TOKEN * (1 + request.top_logprobs)
    return min(derived, LARGEST_REPLY_BYTES)


class ServerCall:
    """POSTs JSON to one endpoint of a server backend with its headers and the bounds of each request."""

    def __init__(
        self,
        where: str,
        url: str,
        headers: dict[str, str],
        timeout_s: float,
        max_reply_bytes: int | None,
        secrets: tuple[str, ...] = (),
    ):
        if not timeout_s > 0:
            raise LLMError(f"{where}: timeout_s must be a positive number of seconds, got {timeout_s!r}")
        if max_reply_bytes is not None and not 0 < max_reply_bytes <= LARGEST_REPLY_BYTES:
            raise LLMError(f"{where}: max_reply_bytes must be 1 to {LARGEST_REPLY_BYTES}, got {max_reply_bytes!r}")
        self.where = where
        self.url = url
        self.headers = {"Content-Type": "application/json", "Accept": "application/json", **headers}
        self.timeout_s = timeout_s
        self.max_reply_bytes = max_reply_bytes
        self._secrets = [secret for secret in secrets if secret]
        self._poster = BoundedPoster()

    def post(self, payload: dict, request: LLMRequest) -> tuple[int, str | None, bytes, float]:
        """Status, content type, body and seconds taken of a 2xx reply; LLMError (transient when another
        attempt may get past it) for a failed transport or any other status."""
        bounds = Bounds(max_bytes=reply_bound(request, self.max_reply_bytes), deadline_s=self.timeout_s)
        started = time.perf_counter()
        try:
            reply = self._poster.post(self.url, json.dumps(payload).encode(), self.headers, bounds)
        except HttpFailure as failure:
            message = f"{self.where}: {redact_urls(str(failure))}"
            if isinstance(failure, ReplyTooLarge):
                message += f" (the bound follows from max_tokens {request.max_tokens}; llm.max_reply_bytes sets it)"
            raise self._blanked(TransientLLMError(message) if failure.transient else LLMError(message)) from None
        content_type = reply.headers.get("content-type")
        if not 200 <= reply.status < 300:
            failure = http_failure(
                self.where, reply.status, content_type, reply.body, retry_after(reply.headers.get("retry-after"))
            )
            raise self._blanked(failure)
        return reply.status, content_type, reply.body, time.perf_counter() - started

    def _blanked(self, error: LLMError) -> LLMError:
        """`error` with the credentials this call sends blanked, in case the server echoed one back."""
        message = str(error)
        for secret in self._secrets:
            message = message.replace(secret, "***")
        if message == str(error):
            return error
        blanked = type(error)(message)
        if isinstance(error, TransientLLMError):
            blanked.retry_after_s = error.retry_after_s
        return blanked
