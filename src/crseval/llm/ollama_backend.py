"""An Ollama server's /api/chat (the thesis setup), one bounded POST per call (crseval.llm.server).

Tools: a request's definitions go out as `tools` (a request without them sends `"tools": []`, the body
Ollama's own client sends, so replies cached before tools existed stay valid), an assistant's calls as
`tool_calls: [{"function": {"name", "arguments": <object>}}]` (Ollama takes arguments as an object only:
arguments the model gave that are not a JSON object, NaN, Infinity and 1e400 among them, which would make the
request body no JSON for the server, go back as {}), a tool's result as {"role": "tool",
"content", "tool_name"}; the reply's `message.tool_calls` (arguments an object) come back neutral, the
arguments written as JSON text (crseval.llm.base.tool_calls_from).
"""

from __future__ import annotations

import json
import os
from urllib.parse import urlsplit, urlunsplit

from crseval.llm.backend_kind import BackendKind, no_model_file, server_identities
from crseval.llm.base import (
    LLMError,
    LLMRequest,
    LLMResponse,
    TransientLLMError,
    json_reply,
    redact_url,
    reply_content,
    short_label,
    strict_json_object,
    token_count,
    tool_calls_from,
)
from crseval.llm.server import ServerCall

DEFAULT_PORT = 11434


def server_url(host: str) -> str:
    """The server's address as Ollama's own client reads `host`: `http://` when no scheme is given,
    port 11434 when neither scheme nor port is, the scheme's own port when only the port is missing."""
    text = host.strip()
    has_scheme = "://" in text
    parts = urlsplit(text if has_scheme else f"http://{text}")
    try:
        port = parts.port
    except ValueError as error:
        raise LLMError(f"ollama host {redact_url(host)!r}: {error}") from None
    if port is None:
        port = {"http": 80, "https": 443}.get(parts.scheme, DEFAULT_PORT) if has_scheme else DEFAULT_PORT
    hostname = parts.hostname or "127.0.0.1"
    shown_host = f"[{hostname}]" if ":" in hostname else hostname
    userinfo = parts.netloc.rpartition("@")[0]
    netloc = f"{userinfo}@{shown_host}:{port}" if userinfo else f"{shown_host}:{port}"
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


class OllamaBackend:
    name = "ollama"
    gives_token_logprobs = False  # the chat API returns no token probabilities

    def __init__(
        self,
        model: str,
        host: str,
        num_ctx: int | None = None,
        timeout_s: float = 120.0,
        max_reply_bytes: int | None = None,
    ):
        self.model = model
        self.host = host
        self.num_ctx = num_ctx
        self._where = f"ollama model {model} at {redact_url(host)}"
        endpoint = f"{server_url(host)}/api/chat"
        # as Ollama's own client: a key in OLLAMA_API_KEY (its hosted service), unless the host has a user part
        key = None if "@" in urlsplit(endpoint).netloc else os.environ.get("OLLAMA_API_KEY", "").strip() or None
        self._call = ServerCall(self._where, endpoint, key, timeout_s, max_reply_bytes)

    def __repr__(self) -> str:
        return f"OllamaBackend(model={self.model!r}, host={redact_url(self.host)!r})"

    def complete(self, request: LLMRequest) -> LLMResponse:
        options = {
            "temperature": request.temperature,
            "top_p": request.top_p,
            "seed": request.seed,
            "num_predict": request.max_tokens,
        }
        if self.num_ctx:
            options["num_ctx"] = self.num_ctx
        # the body ollama's client.chat() sends (it drops empty message fields), so replies stay as they were
        messages = [{key: value for key, value in m.items() if value} for m in ollama_messages(request.message_dicts())]
        tools = request.tool_definitions() or []
        payload = {"model": self.model, "messages": messages, "tools": tools, "stream": False, "options": options}
        if request.json_schema is not None:
            payload["format"] = request.json_schema
        return self.parse_reply(*self._call.post(payload, request), tools=bool(request.tools))

    def parse_reply(
        self, status: int, content_type: str | None, body: bytes, latency_s: float, tools: bool = False
    ) -> LLMResponse:
        """The reply in an HTTP response; LLMError (transient when worth retrying) for anything unusable.
        Its tool calls are read only for a request that offered `tools` (other callers want text)."""
        data, seen = json_reply(self._where, status, content_type, body)
        if "done" in data and data["done"] is not True:  # a fragment of a streamed reply, or junk
            raise TransientLLMError(f"{self._where}: reply is unfinished (done is {json_value(data['done'])}); {seen}")
        message = data.get("message") if tools else None
        calls, notes = tool_calls_from(
            self._where, message.get("tool_calls") if isinstance(message, dict) else None, seen
        )
        text = reply_content(self._where, data, ("message", "content"), calls, seen)
        return LLMResponse(
            text=text,
            backend=self.name,
            model=self.model,
            latency_s=latency_s,
            prompt_tokens=token_count(data.get("prompt_eval_count")),
            completion_tokens=token_count(data.get("eval_count")),
            extra={"finish_reason": short_label(data.get("done_reason")), **notes},
            tool_calls=calls,
        )


def ollama_messages(messages: list[dict]) -> list[dict]:
    """Neutral message dicts (crseval.llm.base.message_tuple) in Ollama's chat format; plain ones as they are."""
    shaped = []
    for message in messages:
        if message.get("tool_calls"):
            calls = [
                {"function": {"name": c["name"], "arguments": _object(c["arguments"])}} for c in message["tool_calls"]
            ]
            shaped.append({"role": message["role"], "content": message["content"], "tool_calls": calls})
        elif message["role"] == "tool":
            shaped.append({"role": "tool", "content": message["content"], "tool_name": message.get("name", "")})
        else:
            shaped.append(message)
    return shaped


def _object(arguments: str) -> dict:
    """A call's arguments as the object Ollama takes; {} for text that is not a strict JSON object (NaN or
    Infinity would go out as the bare words, which Ollama's JSON decoder refuses with HTTP 400)."""
    value = strict_json_object(arguments)
    return {} if value is None else value


def json_value(value) -> str:
    """A decoded JSON value written back as JSON, cut short, for a message."""
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:40] + "…"


def _build(settings: dict, threads: int, timeout_s: float, max_reply_bytes: int | None) -> OllamaBackend:
    return OllamaBackend(
        settings["model"],
        host=settings.get("host", "http://127.0.0.1:11434"),
        num_ctx=settings.get("num_ctx"),
        timeout_s=timeout_s,
        max_reply_bytes=max_reply_bytes,
    )


KIND = BackendKind(
    name="ollama",
    summary="a model served by an Ollama server (its /api/chat)",
    in_process=False,
    build=_build,
    model_file=no_model_file,
    identities=server_identities,
    required_keys={
        "host": {"type": "string", "minLength": 1, "description": "the Ollama server, e.g. `http://localhost:11434`"}
    },
    optional_keys={"num_ctx": {"type": "integer", "minimum": 256, "description": "context length in tokens"}},
)
