"""The request/response types shared by every backend, the two kinds of failure, and the checks
every reply passes before anyone sees it (one place, so that all backends fail the same way).

Tool calls: a request may carry tool definitions (`LLMRequest.tools`) and tool messages (an assistant
message that asked for tools, a tool result), and a reply may ask for tools (`LLMResponse.tool_calls`)
instead of, or besides, giving text. The messages and calls are kept in one neutral shape, which each
backend translates to its API's, so that the loop that runs the tools and the cache see one format;
a reply's calls are bounded and checked here, like its text (`tool_calls_from`).
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Protocol

from crseval.core.canonical import canonical_json, canonical_sha
from crseval.core.io import strict_json_loads
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

# What a reply may ask for: more calls are dropped, longer names and arguments cut (the response's `extra` says so).
MAX_TOOL_CALLS_PER_REPLY = 64
MAX_TOOL_NAME_CHARS = 200
MAX_ARGUMENT_CHARS = 100_000
# The fields a neutral message dict may have besides role and content: `tool_calls` (an assistant message
# that asked for tools: [{"id", "name", "arguments"}]), `tool_call_id` and `name` (a tool's result).
TOOL_MESSAGE_FIELDS = ("tool_calls", "tool_call_id", "name")
TOOL_CALL_FIELDS = ("id", "name", "arguments")


def message_tuple(message: Mapping) -> tuple[str, ...]:
    """A neutral message dict as an LLMRequest holds it: (role, content), or (role, content, the canonical
    JSON of its tool fields) when it has any. Tool calls must be {"id", "name", "arguments"}, all strings."""
    role, content = message["role"], message["content"]
    # a tool result's id and name; other messages' stray `name`s are not the request's (as before tools)
    fields = TOOL_MESSAGE_FIELDS if role == "tool" else ("tool_calls",)
    extra = {key: message[key] for key in fields if message.get(key) not in (None, [], "")}
    if not extra:
        return (role, content)
    if "tool_calls" in extra:
        calls = extra["tool_calls"]
        if not isinstance(calls, (list, tuple)) or not all(
            isinstance(call, Mapping) and all(isinstance(call.get(key), str) for key in TOOL_CALL_FIELDS)
            for call in calls
        ):
            raise ValueError(
                f"a message's tool_calls must be a list of {{id, name, arguments}} strings: {calls!r:.200}"
            )
        extra["tool_calls"] = [{key: call[key] for key in TOOL_CALL_FIELDS} for call in calls]
    return (role, "" if content is None else content, canonical_json(extra))


def tool_definitions_json(tools) -> str:
    """The canonical JSON of tool definitions in OpenAI's function format ([{"type": "function", "function":
    {"name", "description", "parameters"}}]), as LLMRequest.tools holds them; "" for none."""
    if not tools:
        return ""
    if isinstance(tools, str):
        tools = json.loads(tools)
    if not isinstance(tools, list) or not all(
        isinstance(tool, Mapping)
        and isinstance(tool.get("function"), Mapping)
        and isinstance(tool["function"].get("name"), str)
        for tool in tools
    ):
        raise ValueError('tools must be a list of {"type": "function", "function": {"name", ...}}')
    return canonical_json(tools)


@dataclass(frozen=True)
class LLMRequest:
    """Everything that determines a reply. `tag` names the prompt template and its version,
    so that editing a template invalidates the cached replies made with it."""

    # (role, content), or (role, content, canonical JSON of the tool fields) for a tool message (message_tuple)
    messages: tuple[tuple[str, ...], ...]
    temperature: float = 0.7
    max_tokens: int = 48
    seed: int = 0
    top_p: float = 0.95
    json_schema: dict | None = None
    tag: str = ""
    # > 0: ask for the probabilities of this many most likely tokens at every position of the reply
    # (TokenLogprob), where the backend gives them
    top_logprobs: int = 0
    # the canonical JSON of the tool definitions the model may call (tool_definitions_json); "" for none
    tools: str = ""

    def __post_init__(self):
        if not isinstance(self.tools, str) or self.tools:  # given as a list, or as JSON in any key order
            object.__setattr__(self, "tools", tool_definitions_json(self.tools))

    @classmethod
    def chat(cls, messages: list[dict], **options) -> "LLMRequest":
        """A request of neutral message dicts (role, content, and the tool fields of TOOL_MESSAGE_FIELDS)."""
        return cls(messages=tuple(message_tuple(m) for m in messages), **options)

    @classmethod
    def sampled(cls, messages: list[dict], options: Mapping, **fields) -> "LLMRequest":
        """A chat request sampled as a config's `options` say (SAMPLING_OPTIONS, the schema's `$defs/options`):
        the one place that reads them into a request, whose fields key the reply cache. `fields` give the
        rest (seed, tag, json_schema, ...); other keys of `options` are not the request's."""
        return cls.chat(messages, **{key: options[key] for key in SAMPLING_OPTIONS}, **fields)

    def message_dicts(self) -> list[dict]:
        """The neutral message dicts, tool fields included."""
        return [{"role": m[0], "content": m[1], **(json.loads(m[2]) if len(m) > 2 else {})} for m in self.messages]

    def tool_definitions(self) -> list[dict] | None:
        """The tool definitions (OpenAI's function format), or None when the request has none."""
        return json.loads(self.tools) if self.tools else None

    def key(self, backend: str, model: str) -> str:
        """Content hash of backend, model, messages (tool fields included), options, schema, tools and
        template tag. A request that asks for no token probabilities and has no tools keeps the key it
        had before either could be asked for, so replies cached then are still found."""
        fields = asdict(self)
        if not fields["top_logprobs"]:
            del fields["top_logprobs"]
        if not fields["tools"]:
            del fields["tools"]
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
    # the tools the reply asks to call, in its order: [{"id", "name", "arguments" (JSON text as the model gave
    # it)}]; None when it asks for none. A reply is good when it has text or at least one call (has_content).
    tool_calls: list[dict] | None = None

    def has_content(self) -> bool:
        """Non-blank text or at least one tool call: what every reply must have."""
        return good_reply(self.text, self.tool_calls)

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


def strict_json_object(text: str) -> dict | None:
    """`text` decoded when it is a JSON object by the strict rules (crseval.core.io.strict_json_loads: no NaN
    or Infinity, no number past a double's range, which servers' decoders refuse), else None: a tool call's
    arguments are echoed back to the server only in that form."""
    try:
        value = strict_json_loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


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


def good_reply(text, tool_calls) -> bool:
    """A reply anyone may see or cache: text that is a string, non-blank unless the reply asks for a tool
    (then it may be ""), and tool calls that are None or a list of {"id", "name", "arguments"} strings."""
    if not isinstance(text, str):
        return False
    if tool_calls is None:
        return bool(text.strip())
    return (
        isinstance(tool_calls, list)
        and all(
            isinstance(call, dict)
            and set(call) == set(TOOL_CALL_FIELDS)
            and all(isinstance(v, str) for v in call.values())
            for call in tool_calls
        )
        and (bool(tool_calls) or bool(text.strip()))
    )


def tool_calls_from(where: str, raw, seen: str) -> tuple[list[dict] | None, dict]:
    """The tool calls of a reply in the neutral shape ({"id", "name", "arguments"}), from a chat API's list of
    {"id"?, "function": {"name", "arguments"}} (arguments as JSON text, as OpenAI gives them, or as a JSON value,
    as Ollama does: written back as JSON), and what `extra` must say about them; (None, {}) for no calls.

    Bounded: MAX_TOOL_CALLS_PER_REPLY calls kept (`tool_calls_dropped`: how many more there were), names cut to
    MAX_TOOL_NAME_CHARS and arguments to MAX_ARGUMENT_CHARS characters (`tool_names_cut`, `tool_arguments_cut`:
    the calls' indices), so a runaway server cannot fill the cache. A call without an id gets `call_<index>`.
    Garbage (not a list, an entry or function that is not an object, a name missing, blank or not a string)
    is a TransientLLMError naming what is wrong, like an unreadable reply.
    """
    if raw is None or raw == []:
        return None, {}
    if not isinstance(raw, list):
        raise TransientLLMError(f"{where}: reply's tool_calls is {_kind(raw)}, not a list; {seen}")
    notes: dict = {}
    if len(raw) > MAX_TOOL_CALLS_PER_REPLY:
        notes["tool_calls_dropped"] = len(raw) - MAX_TOOL_CALLS_PER_REPLY
        raw = raw[:MAX_TOOL_CALLS_PER_REPLY]
    calls, names_cut, arguments_cut = [], [], []
    for index, entry in enumerate(raw):
        here = f"tool_calls[{index}]"
        function = entry.get("function") if isinstance(entry, dict) else None
        problem = None
        if not isinstance(entry, dict):
            problem = f"{here} is {_kind(entry)}, not an object"
        elif not isinstance(function, dict):
            problem = f"{here}.function is {'missing' if 'function' not in entry else _kind(function)}, not an object"
        elif not isinstance(function.get("name"), str):
            name = function.get("name")
            problem = f"{here}.function.name is {'missing' if 'name' not in function else _kind(name)}, not a string"
        elif not function["name"].strip():
            problem = f"{here}.function.name is blank"
        if problem:
            raise TransientLLMError(f"{where}: reply has an unusable tool call ({problem}); {seen}")
        name, arguments = function["name"], function.get("arguments")
        if arguments is None:
            arguments = "{}"  # a call of a tool without parameters, as some servers send it
        elif not isinstance(arguments, str):
            try:
                arguments = json.dumps(arguments, ensure_ascii=False)
            except (TypeError, ValueError, RecursionError):  # cannot come from decoded JSON; never trusted
                raise TransientLLMError(f"{where}: reply's {here}.function.arguments is unusable; {seen}") from None
        if len(name) > MAX_TOOL_NAME_CHARS:
            name = name[:MAX_TOOL_NAME_CHARS]
            names_cut.append(index)
        if len(arguments) > MAX_ARGUMENT_CHARS:
            arguments = arguments[:MAX_ARGUMENT_CHARS]
            arguments_cut.append(index)
        call_id = entry.get("id")
        call_id = call_id[:MAX_TOOL_NAME_CHARS] if isinstance(call_id, str) and call_id.strip() else f"call_{index}"
        calls.append({"id": clean_unicode(call_id), "name": clean_unicode(name), "arguments": clean_unicode(arguments)})
    if names_cut:
        notes["tool_names_cut"] = names_cut
    if arguments_cut:
        notes["tool_arguments_cut"] = arguments_cut
    return calls, notes


def reply_content(where: str, data, path: tuple, calls: list[dict] | None, seen: str) -> str:
    """The text at `path` of a reply that asks for `calls`: as reply_text when it asks for none; else the text
    may be missing, null or blank (then ""), but anything else there is a TransientLLMError."""
    if not calls:
        return reply_text(where, data, path, seen)
    value = data
    for step in path:
        try:
            value = value[step]
        except (KeyError, IndexError, TypeError):
            return ""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise TransientLLMError(f"{where}: reply's text is {_kind(value)}, not a string; {seen}")
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
