"""Any OpenAI-compatible chat endpoint (vLLM, llama.cpp server) for cluster-scale runs.

One bounded POST to `<base_url>/chat/completions` per call (crseval.llm.server): the reply's size and
the call's duration are bounded, and the key goes only to the base URL's origin.

Tools: a request's definitions go out as `tools` with `tool_choice: "auto"`, its neutral tool messages in
OpenAI's shape (an assistant's `tool_calls` of {"id", "type": "function", "function": {"name", "arguments"}},
a result as {"role": "tool", "tool_call_id", "content"}), and the reply's `message.tool_calls` come back
neutral (crseval.llm.base.tool_calls_from). Arguments the model gave that are not a JSON object (cut short, not
JSON, NaN, a list) go back to the server as "{}", as Ollama's backend sends them: servers that render the
conversation through a chat template decode every earlier call's arguments and refuse the whole request
(HTTP 400) when one is not an object, so one bad call would fail every later step of the turn. The tool's
error result tells the model what was wrong; the neutral message, and so the cache key, keeps what it sent.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit, urlunsplit

from crseval.llm.backend_kind import BackendKind, no_model_file, server_identities
from crseval.llm.base import (
    LLMError,
    LLMRequest,
    LLMResponse,
    json_reply,
    redact_url,
    reply_content,
    short_label,
    strict_json_object,
    token_count,
    token_logprobs_from,
    tool_calls_from,
)
from crseval.llm.server import ServerCall


def api_key_from(api_key_env: str | None, where: str) -> str | None:
    """The key in the environment variable the config names; None for key-less local servers.

    A named but unset variable is an error: sending nothing would fail later with a puzzling
    HTTP 401, or worse, succeed against a server that should have refused.
    """
    if not api_key_env:
        return None
    key = os.environ.get(api_key_env, "").strip()
    if not key:
        raise LLMError(
            f"environment variable {api_key_env} (llm api_key_env of {where}) is not set; "
            "export it, or remove api_key_env for a server that needs no key"
        )
    return key


def openai_messages(messages: list[dict]) -> list[dict]:
    """Neutral message dicts (crseval.llm.base.message_tuple) in OpenAI's chat format; plain ones as they are."""
    shaped = []
    for message in messages:
        if message.get("tool_calls"):
            shaped.append(
                {
                    "role": message["role"],
                    "content": message["content"] or None,  # OpenAI's own form of "calls only"
                    "tool_calls": [
                        {
                            "id": c["id"],
                            "type": "function",
                            "function": {"name": c["name"], "arguments": echoed_arguments(c["arguments"])},
                        }
                        for c in message["tool_calls"]
                    ],
                }
            )
        elif message["role"] == "tool":
            shaped.append(
                {"role": "tool", "tool_call_id": message.get("tool_call_id", ""), "content": message["content"]}
            )
        else:
            shaped.append(message)
    return shaped


def echoed_arguments(arguments: str) -> str:
    """A call's arguments as they go back to the server: as the model gave them when they are a JSON object
    (strict: NaN, Infinity and numbers past a double are no JSON), else "{}" (see the module docstring)."""
    return arguments if strict_json_object(arguments) is not None else "{}"


def completions_url(base_url: str) -> str:
    """`<base_url>/chat/completions`, with the base URL's query kept (some gateways want one)."""
    parts = urlsplit(base_url)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/chat/completions"))


class OpenAIBackend:
    name = "openai"
    gives_token_logprobs = True  # where the server does: a server that ignores `logprobs` gives None

    def __init__(
        self,
        model: str,
        base_url: str,
        api_key_env: str | None = None,
        timeout_s: float = 120.0,
        max_reply_bytes: int | None = None,
    ):
        self.model = model
        self.base_url = base_url
        self._where = f"openai model {model} at {redact_url(base_url)}"
        key = api_key_from(api_key_env, self._where)
        self._call = ServerCall(self._where, completions_url(base_url), key, timeout_s, max_reply_bytes)

    def __repr__(self) -> str:
        return f"OpenAIBackend(model={self.model!r}, base_url={redact_url(self.base_url)!r})"

    def complete(self, request: LLMRequest) -> LLMResponse:
        kwargs = dict(
            model=self.model,
            messages=openai_messages(request.message_dicts()),
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
        if request.tools:
            kwargs.update(tools=request.tool_definitions(), tool_choice="auto")
        return self.parse_reply(*self._call.post(kwargs, request), tools=bool(request.tools))

    def parse_reply(
        self, status: int, content_type: str | None, body: bytes, latency_s: float, tools: bool = False
    ) -> LLMResponse:
        """The reply in an HTTP response; LLMError (transient when worth retrying) for anything unusable.
        Its tool calls are read only for a request that offered `tools` (other callers want text)."""
        data, seen = json_reply(self._where, status, content_type, body)
        choices = data.get("choices") if tools else None
        message = (
            choices[0].get("message")
            if isinstance(choices, list) and choices and isinstance(choices[0], dict)
            else None
        )
        calls, notes = tool_calls_from(
            self._where, message.get("tool_calls") if isinstance(message, dict) else None, seen
        )
        text = reply_content(self._where, data, ("choices", 0, "message", "content"), calls, seen)
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        return LLMResponse(
            text=text,
            backend=self.name,
            model=self.model,
            latency_s=latency_s,
            prompt_tokens=token_count(usage.get("prompt_tokens")),
            completion_tokens=token_count(usage.get("completion_tokens")),
            extra={"finish_reason": short_label(data["choices"][0].get("finish_reason")), **notes},
            token_logprobs=token_logprobs_from(self._where, data["choices"][0]),
            tool_calls=calls,
        )


def _build(settings: dict, threads: int, timeout_s: float, max_reply_bytes: int | None) -> OpenAIBackend:
    return OpenAIBackend(
        settings["model"],
        base_url=settings["base_url"],
        api_key_env=settings.get("api_key_env"),
        timeout_s=timeout_s,
        max_reply_bytes=max_reply_bytes,
    )


KIND = BackendKind(
    name="openai",
    summary="a model behind any OpenAI-compatible chat endpoint (vLLM, llama.cpp's server)",
    in_process=False,
    build=_build,
    model_file=no_model_file,
    identities=server_identities,
    required_keys={
        "base_url": {
            "type": "string",
            "minLength": 1,
            "description": "the server's OpenAI-compatible API, e.g. `http://localhost:8000/v1`",
        }
    },
    optional_keys={"api_key_env": {"type": "string", "description": "environment variable that holds the API key"}},
)
