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

from crseval.core.bounded_http import (
    LARGEST_REPLY_BYTES,
    BoundedPoster,
    Bounds,
    HttpFailure,
    ReplyTooLarge,
    split_credentials,
)
from crseval.llm.base import (
    LLMError,
    LLMRequest,
    TransientLLMError,
    http_failure,
    redact_library_logs,
    redact_urls,
    retry_after,
)

ENVELOPE_BYTES = 64 << 10  # the reply's JSON around the text: ids, usage, timings
# One token in a reply, worst case: its text (tokens run to about 16 characters; escaped as JSON, a non-ASCII
# character takes 6 bytes, as in \u00e9) ~100 bytes, plus its entry in `logprobs` (the text again, its UTF-8 bytes
# as a list of numbers ~65, the logprob ~25, keys ~40) ~230: 512 leaves twice that, so no real reply meets
# the bound while one that ignores max_tokens by orders of magnitude does.
BYTES_PER_TOKEN = 512


def reply_bound(request: LLMRequest, configured: int | None = None) -> int:
    """The largest reply body accepted for `request`: `configured`, else derived from its max_tokens and
    top_logprobs (each token may come with that many alternatives)."""
    if configured:
        return configured
    derived = ENVELOPE_BYTES + request.max_tokens * BYTES_PER_TOKEN * (1 + request.top_logprobs)
    return min(derived, LARGEST_REPLY_BYTES)


class ServerCall:
    """POSTs JSON to one endpoint of a server backend, with the bounds of each request. The endpoint's
    user part becomes a Basic Authorization header, `bearer_key` a Bearer one (not both); either goes
    to the endpoint's origin only and is blanked in every message."""

    def __init__(
        self, where: str, endpoint: str, bearer_key: str | None, timeout_s: float, max_reply_bytes: int | None
    ):
        try:
            Bounds(max_bytes=max_reply_bytes or LARGEST_REPLY_BYTES, deadline_s=timeout_s)
        except ValueError as problem:
            raise LLMError(f"{where}: timeout_s or max_reply_bytes: {problem}") from None
        self.url, basic, secrets = split_credentials(endpoint)
        if basic and bearer_key:
            raise LLMError(f"{where}: give one of a key and a user:password in the address, not both")
        authorization = basic or (f"Bearer {bearer_key}" if bearer_key else None)
        self.where = where
        self.headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if authorization:
            self.headers["Authorization"] = authorization
        self.timeout_s = timeout_s
        self.max_reply_bytes = max_reply_bytes
        self._secrets = [secret for secret in (*secrets, bearer_key) if secret]
        redact_library_logs()
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
