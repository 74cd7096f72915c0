"""The request/response types shared by every backend, the two kinds of failure, and the checks
every reply passes before anyone sees it (one place, so that all backends fail the same way)."""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Protocol

from crseval.core.canonical import canonical_sha
from crseval.core.redact import redact_url, redact_urls  # noqa: F401 (the backends' API)


class LLMError(RuntimeError):
    """A call that failed for good; the message names backend, model and cause."""


class TransientLLMError(LLMError):
    """A failure worth retrying: connection refused or reset, timeout, HTTP 5xx, 429 (too many requests),
    408, an empty or unreadable reply. `retry_after_s` is the wait the server asked for, if it said."""

    def __init__(self, message: str, retry_after_s: float | None = None):
        super().__init__(message)
        self.retry_after_s = retry_after_s


def transient_status(status: int) -> bool:
    """Statuses a busy or restarting server sends and a later attempt usually gets past: 5xx (503 is
    the usual "overloaded"), 429 "too many requests" (rate limits, full request queues) and 408."""
    return status >= 500 or status in (408, 429)


def retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header given in seconds (the HTTP-date form is ignored), or None."""
    try:
        seconds = float(value) if value is not None else None
    except ValueError:
        return None
    return seconds if seconds is not None and 0 <= seconds < 86_400 else None


# The sampling options of a config's `options` (the schema's `$defs/options`), as a request's fields.
SAMPLING_OPTIONS = ("temperature", "top_p", "max_tokens")


@dataclass(frozen=True)
class LLMRequest:
    """Everything that determines a reply. `tag` names the prompt template and its version,
    so that editing a template invalidates the cached replies made with it."""

    messages: tuple[tuple[str, str], ...]  # (role, content)
    temperature: float = 0.7
    max_tokens: int = 48
    seed: int = 0
    top_p: float = 0.95
    json_schema: dict | None = None
    tag: str = ""
    # > 0: ask for the probabilities of this many most likely tokens at every position of the reply
    # (TokenLogprob), where the backend gives them
    top_logprobs: int = 0

    @classmethod
    def chat(cls, messages: list[dict], **options) -> "LLMRequest":
        return cls(messages=tuple((m["role"], m["content"]) for m in messages), **options)

    @classmethod
    def sampled(cls, messages: list[dict], options: Mapping, **fields) -> "LLMRequest":
        """A chat request sampled as a config's `options` say (SAMPLING_OPTIONS, the schema's `$defs/options`):
        the one place that reads them into a request, whose fields key the reply cache. `fields` give the
        rest (seed, tag, json_schema, ...); other keys of `options` are not the request's."""
        return cls.chat(messages, **{key: options[key] for key in SAMPLING_OPTIONS}, **fields)

    def message_dicts(self) -> list[dict]:
        return [{"role": role, "content": content} for role, content in self.messages]

    def key(self, backend: str, model: str) -> str:
        """Content hash of backend, model, messages, options, schema and template tag. A request that
        asks for no token probabilities keeps the key it had before they could be asked for, so
        replies cached then are still found."""
        fields = asdict(self)
        if not fields["top_logprobs"]:
            del fields["top_logprobs"]
        return canonical_sha({"backend": backend, "model": model, **fields})


@dataclass
class LLMResponse:
    text: str
    backend: str
    model: str
    latency_s: float
    prompt_tokens: int | None
    completion_tokens: int | None
    cached: bool = False
    extra: dict = field(default_factory=dict)
    # per generated token, in reply order, when the request asked for them and the backend gave them
    # (OpenAI's chat format: {"token", "logprob", "top_logprobs": [{"token", "logprob"}, ...]}); None otherwise
    token_logprobs: list[dict] | None = None

    def meta(self) -> dict:
        """The per-turn `llm` record of the session schema."""
        return {
            "backend": self.backend,
            "model": self.model,
            "latency_s": round(self.latency_s, 4),
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cached": self.cached,
        }


class Backend(Protocol):
    name: str
    model: str
    # whether the backend can return token probabilities (LLMRequest.top_logprobs)
    gives_token_logprobs: bool

    def complete(self, request: LLMRequest) -> LLMResponse:
        """One call, no retries; raises TransientLLMError or LLMError."""


# --- passwords out of library log lines (crseval.core.redact does the URLs)


class RedactURLs(logging.Filter):
    """Rewrites log records whose text holds a URL with a password (httpx logs every request URL at INFO)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a broken record is the handler's to report, not the filter's
            return True
        redacted = redact_urls(message)
        if redacted != message:
            record.msg, record.args = redacted, ()
        return True


def redact_library_logs() -> None:
    """Adds RedactURLs to the loggers of the HTTP libraries the backends use (once)."""
    for name in ("httpx",):
        logger = logging.getLogger(name)
        if not any(isinstance(f, RedactURLs) for f in logger.filters):
            logger.addFilter(RedactURLs())


# --- reply checks -------------------------------------------------------------------------------------------------

EXCERPT_CHARS = 200


def excerpt(text: str, limit: int = EXCERPT_CHARS, size: str | None = None) -> str:
    """`text` on one line, cut to about `limit` characters: error messages must stay readable.

    `size` describes the whole when `text` is only its start (e.g. "50013 bytes").
    """
    flat = " ".join(text[: 4 * limit].split())
    if size is None and len(flat) <= limit and len(text) <= 4 * limit:
        return flat
    return f"{flat[:limit]}… ({size or f'{len(text)} characters'} in all)"


def describe_http(status: int, content_type: str | None, body: bytes) -> str:
    """What came back, for error messages: status, content type and the start of the body."""
    start = body[: 4 * EXCERPT_CHARS]
    text = _decode(start, content_type)
    if not text.strip():
        shown = "(empty)" if not body.strip() else excerpt(_decode(body, content_type))
    else:
        shown = excerpt(text, size=f"{len(body)} bytes" if len(body) > len(start) else None)
    kind = clean_unicode(excerpt(content_type, 80)) if content_type and content_type.strip() else "(none)"
    return f"HTTP {status}, content-type {kind}, body: {redact_urls(clean_unicode(shown))}"


def _decode(data: bytes, content_type: str | None) -> str:
    """`data` as text in the charset the content type names, else (unknown, unusable) UTF-8; never fails."""
    match = re.search(r"charset=\"?([\w.:-]+)", content_type or "", re.I)
    if match:
        try:
            return data.decode(match.group(1), "replace")
        except (LookupError, UnicodeError, ValueError, TypeError):  # no codec, or not a text codec (rot13, base64)
            pass
    return data.decode("utf-8", "replace")


def clean_unicode(text: str) -> str:
    """`text` with lone surrogates (legal in JSON escapes, not in UTF-8) replaced, so it can be written to disk."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def http_failure(
    where: str, status: int, content_type: str | None, body: bytes, retry_after_s: float | None = None
) -> LLMError:
    """The error for a reply with a status other than 2xx: transient for server trouble and back-pressure."""
    message = f"{where}: {describe_http(status, content_type, body)}"
    if transient_status(status):
        return TransientLLMError(message, retry_after_s)
    return LLMError(message)


def json_reply(where: str, status: int, content_type: str | None, body: bytes) -> tuple[dict, str]:
    """The JSON object of an HTTP reply and its description, shared by the HTTP backends.

    HTTP 5xx and anything unreadable in a 2xx reply (empty, cut short, an HTML page from a proxy,
    not an object) are TransientLLMErrors: overloaded servers and gateways send such replies now
    and then, and the next attempt usually succeeds. Other statuses are plain LLMErrors.
    """
    if not 200 <= status < 300:
        raise http_failure(where, status, content_type, body)
    seen = describe_http(status, content_type, body)
    if not body.strip():
        raise TransientLLMError(f"{where}: reply body is empty; {seen}")
    try:
        data = json.loads(body)
    except json.JSONDecodeError as error:
        problem = f"{error.msg.removesuffix(' at')} at character {error.pos}"
        raise TransientLLMError(f"{where}: reply is not JSON ({problem}); {seen}") from None
    except (ValueError, RecursionError) as error:  # not UTF-8, a number too long, nested too deep
        raise TransientLLMError(f"{where}: reply is not JSON ({excerpt(str(error), 80)}); {seen}") from None
    if not isinstance(data, dict):
        raise TransientLLMError(f"{where}: reply is not a JSON object; {seen}")
    return data, seen


def _kind(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return {str: "a string", list: "a list", dict: "an object"}.get(type(value), type(value).__name__)


def reply_text(where: str, data, path: tuple, seen: str) -> str:
    """The text at `path` (keys and list indices) in a decoded reply, which must be a non-blank string.

    Anything else is a TransientLLMError: an empty reply is retried like a timeout, and so never
    reaches the cache, where it would be served again after the server is fixed.
    """
    value, walked, problem = data, "", None
    for step in path:
        here = f"{walked}[{step}]" if isinstance(step, int) else f"{walked}.{step}" if walked else step
        if isinstance(step, int) and not isinstance(value, list):
            problem = f"{walked} is {_kind(value)}, not a list"
        elif isinstance(step, int) and len(value) <= step:
            problem = f"{walked} is an empty list" if not value else f"{walked} has no item {step}"
        elif isinstance(step, str) and not isinstance(value, dict):
            problem = f"{walked or 'reply'} is {_kind(value)}, not an object"
        elif isinstance(step, str) and step not in value:
            problem = f"{here} is missing"
        if problem:
            break
        value, walked = value[step], here
    else:
        if not isinstance(value, str):
            problem = f"{walked} is null" if value is None else f"{walked} is {_kind(value)}, not a string"
        elif not value.strip():
            problem = f"{walked} is {'an empty string' if not value else 'blank'}"
    if problem:
        raise TransientLLMError(f"{where}: reply has no text ({problem}); {seen}")
    return clean_unicode(value)


def token_count(value) -> int | None:
    """A token count from a reply, or None for anything that is not a plausible count."""
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 10**12 else None


def short_label(value) -> str | None:
    """A finish reason from a reply, or None: only short strings go into the cache."""
    return clean_unicode(value[:40]) if isinstance(value, str) else None


def token_logprobs_from(where: str, choice: dict) -> list[dict] | None:
    """The token probabilities of a chat completion's choice in OpenAI's format (`logprobs.content`:
    token, logprob, top_logprobs), checked and reduced to those three fields; None when the reply has
    none or they are unusable (a token that is not a string, a logprob that is not a finite number
    <= 0): the reply's text stays good, only the probabilities are left out, with a warning."""
    content = choice.get("logprobs", {}).get("content") if isinstance(choice.get("logprobs"), dict) else None
    if content is None:
        return None
    try:
        return [_token_logprob(entry, with_top=True) for entry in content]
    except (TypeError, ValueError, KeyError, AttributeError) as error:
        logging.getLogger(__name__).warning("%s: token probabilities left out: %s", where, excerpt(str(error), 120))
        return None


def _token_logprob(entry: dict, with_top: bool) -> dict:
    token, logprob = entry["token"], entry["logprob"]
    if not isinstance(token, str) or isinstance(logprob, bool) or not isinstance(logprob, (int, float)):
        raise TypeError(f"token {excerpt(repr(token), 40)} with logprob {excerpt(repr(logprob), 40)}")
    if not (math.isfinite(logprob) and logprob <= 0):
        raise ValueError(f"logprob {logprob} of token {excerpt(repr(token), 40)} is not a log probability")
    record = {"token": clean_unicode(token), "logprob": float(logprob)}
    if with_top:
        record["top_logprobs"] = [_token_logprob(top, with_top=False) for top in entry.get("top_logprobs") or []]
    return record
