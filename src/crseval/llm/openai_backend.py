"""Any OpenAI-compatible chat endpoint (vLLM, llama.cpp server) for cluster-scale runs."""

from __future__ import annotations

import os
import time

import openai

from crseval.llm.base import (
    LLMError,
    LLMRequest,
    LLMResponse,
    TransientLLMError,
    http_failure,
    json_reply,
    redact_library_logs,
    redact_url,
    redact_urls,
    reply_text,
    retry_after,
    short_label,
    token_count,
    token_logprobs_from,
)


def api_key_from(api_key_env: str | None, where: str) -> str:
    """The key in the environment variable the config names; "unused" for key-less local servers.

    A named but unset variable is an error: sending a placeholder would fail later with a
    puzzling HTTP 401, or worse, succeed against a server that should have refused.
    """
    if not api_key_env:
        return "unused"  # the openai client insists on some key
    key = os.environ.get(api_key_env, "").strip()
    if not key:
        raise LLMError(
            f"environment variable {api_key_env} (llm api_key_env of {where}) is not set; "
            "export it, or remove api_key_env for a server that needs no key"
        )
    return key


class OpenAIBackend:
    name = "openai"
    gives_token_logprobs = True  # where the server does: a server that ignores `logprobs` gives None

    def __init__(self, model: str, base_url: str, api_key_env: str | None = None, timeout_s: float = 120.0):
        self.model = model
        self.base_url = base_url
        self._where = f"openai model {model} at {redact_url(base_url)}"
        api_key = api_key_from(api_key_env, self._where)
        redact_library_logs()
        # retries are the client layer's job, so that every backend retries the same way
        self._client = openai.OpenAI(base_url=base_url, api_key=api_key, timeout=timeout_s, max_retries=0)

    def __repr__(self) -> str:
        return f"OpenAIBackend(model={self.model!r}, base_url={redact_url(self.base_url)!r})"

    def complete(self, request: LLMRequest) -> LLMResponse:
        kwargs = dict(
            model=self.model,
            messages=request.message_dicts(),
            temperature=request.temperature,
            top_p=request.top_p,
            max_tokens=request.max_tokens,
            seed=request.seed,
        )
        if request.json_schema is not None:
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "reply", "schema": request.json_schema, "strict": True},
            }
        if request.top_logprobs > 0:
            kwargs.update(logprobs=True, top_logprobs=request.top_logprobs)
        started = time.perf_counter()
        try:
            # the raw reply, not the parsed one: the openai client fails on odd bodies with bare
            # IndexError or JSONDecodeError, and json_reply checks them the same way for every backend
            raw = self._client.chat.completions.with_raw_response.create(**kwargs).http_response
            status, content_type, body = raw.status_code, raw.headers.get("content-type"), raw.content
        except (openai.APIConnectionError, openai.APITimeoutError) as error:
            cause = f" ({type(error.__cause__).__name__}: {error.__cause__})" if error.__cause__ else ""
            detail = redact_urls(f"{error}{cause}")
            raise TransientLLMError(f"{self._where}: {type(error).__name__}: {detail}") from error
        except openai.APIStatusError as error:
            response = error.response
            raise http_failure(
                self._where,
                error.status_code,
                response.headers.get("content-type"),
                response.content,
                retry_after(response.headers.get("retry-after")),
            ) from error
        return self.parse_reply(status, content_type, body, time.perf_counter() - started)

    def parse_reply(self, status: int, content_type: str | None, body: bytes, latency_s: float) -> LLMResponse:
        """The reply in an HTTP response; LLMError (transient when worth retrying) for anything unusable."""
        data, seen = json_reply(self._where, status, content_type, body)
        text = reply_text(self._where, data, ("choices", 0, "message", "content"), seen)
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        return LLMResponse(
            text=text,
            backend=self.name,
            model=self.model,
            latency_s=latency_s,
            prompt_tokens=token_count(usage.get("prompt_tokens")),
            completion_tokens=token_count(usage.get("completion_tokens")),
            extra={"finish_reason": short_label(data["choices"][0].get("finish_reason"))},
            token_logprobs=token_logprobs_from(self._where, data["choices"][0]),
        )
