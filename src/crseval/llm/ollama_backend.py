"""An Ollama server through the official `ollama` client (the thesis setup)."""

from __future__ import annotations

import json
import time

import httpx
import ollama

from crseval.llm.base import (
    LLMError,
    LLMRequest,
    LLMResponse,
    TransientLLMError,
    excerpt,
    json_reply,
    redact_library_logs,
    redact_url,
    redact_urls,
    reply_text,
    short_label,
    token_count,
    transient_status,
)


class OllamaBackend:
    name = "ollama"
    gives_token_logprobs = False  # the chat API returns no token probabilities

    def __init__(self, model: str, host: str, num_ctx: int | None = None, timeout_s: float = 120.0):
        self.model = model
        self.host = host
        self.num_ctx = num_ctx
        self._where = f"ollama model {model} at {redact_url(host)}"
        redact_library_logs()
        self._client = ollama.Client(host=host, timeout=timeout_s)

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
        messages = [{key: value for key, value in m.items() if value} for m in request.message_dicts()]
        payload = {"model": self.model, "messages": messages, "tools": [], "stream": False, "options": options}
        if request.json_schema is not None:
            payload["format"] = request.json_schema
        started = time.perf_counter()
        try:
            # the raw reply, not client.chat(): that parses the body itself and fails on odd bodies with
            # bare JSONDecodeError or ValidationError; json_reply checks them like every backend's
            raw = self._client._request_raw("POST", "/api/chat", json=payload)
        except ollama.ResponseError as error:
            kind = TransientLLMError if transient_status(error.status_code) else LLMError
            raise kind(f"{self._where}: HTTP {error.status_code}: {redact_urls(excerpt(str(error.error)))}") from error
        except (httpx.TransportError, httpx.DecodingError, ConnectionError) as error:
            raise TransientLLMError(f"{self._where}: {type(error).__name__}: {redact_urls(str(error))}") from error
        except httpx.HTTPError as error:  # too many redirects
            raise LLMError(f"{self._where}: {type(error).__name__}: {redact_urls(str(error))}") from error
        return self.parse_reply(
            raw.status_code, raw.headers.get("content-type"), raw.content, time.perf_counter() - started
        )

    def parse_reply(self, status: int, content_type: str | None, body: bytes, latency_s: float) -> LLMResponse:
        """The reply in an HTTP response; LLMError (transient when worth retrying) for anything unusable."""
        data, seen = json_reply(self._where, status, content_type, body)
        if "done" in data and data["done"] is not True:  # a fragment of a streamed reply, or junk
            raise TransientLLMError(f"{self._where}: reply is unfinished (done is {json_value(data['done'])}); {seen}")
        text = reply_text(self._where, data, ("message", "content"), seen)
        return LLMResponse(
            text=text,
            backend=self.name,
            model=self.model,
            latency_s=latency_s,
            prompt_tokens=token_count(data.get("prompt_eval_count")),
            completion_tokens=token_count(data.get("eval_count")),
            extra={"finish_reason": short_label(data.get("done_reason"))},
        )


def json_value(value) -> str:
    """A decoded JSON value written back as JSON, cut short, for a message."""
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:40] + "…"
