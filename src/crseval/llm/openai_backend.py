"""Any OpenAI-compatible chat endpoint (vLLM, llama.cpp server) for cluster-scale runs."""

from __future__ import annotations

import os
import time

import openai

from crseval.llm.base import LLMError, LLMRequest, LLMResponse, TransientLLMError


class OpenAIBackend:
    name = "openai"

    def __init__(self, model: str, base_url: str, api_key_env: str | None = None, timeout_s: float = 120.0):
        self.model = model
        self.base_url = base_url
        api_key = os.environ.get(api_key_env, "") if api_key_env else ""
        # retries are the client layer's job, so that every backend retries the same way
        self._client = openai.OpenAI(base_url=base_url, api_key=api_key or "unused", timeout=timeout_s, max_retries=0)

    def complete(self, request: LLMRequest) -> LLMResponse:
        kwargs = dict(model=self.model, messages=request.message_dicts(), temperature=request.temperature,
                      top_p=request.top_p, max_tokens=request.max_tokens, seed=request.seed)
        if request.json_schema is not None:
            kwargs["response_format"] = {"type": "json_schema",
                                         "json_schema": {"name": "reply", "schema": request.json_schema, "strict": True}}
        started = time.perf_counter()
        try:
            reply = self._client.chat.completions.create(**kwargs)
        except (openai.APIConnectionError, openai.APITimeoutError) as error:
            raise TransientLLMError(f"openai model {self.model} at {self.base_url}: {type(error).__name__}: {error}") from error
        except openai.APIStatusError as error:
            kind = TransientLLMError if error.status_code >= 500 else LLMError
            raise kind(f"openai model {self.model} at {self.base_url}: HTTP {error.status_code}: {error.message}") from error
        usage = reply.usage
        return LLMResponse(
            text=reply.choices[0].message.content or "",
            backend=self.name,
            model=self.model,
            latency_s=time.perf_counter() - started,
            prompt_tokens=usage.prompt_tokens if usage else None,
            completion_tokens=usage.completion_tokens if usage else None,
            extra={"finish_reason": reply.choices[0].finish_reason},
        )
