"""An Ollama server through the official `ollama` client (the thesis setup)."""

from __future__ import annotations

import time

import httpx
import ollama

from crseval.llm.base import LLMError, LLMRequest, LLMResponse, TransientLLMError


class OllamaBackend:
    name = "ollama"

    def __init__(self, model: str, host: str, num_ctx: int | None = None, timeout_s: float = 120.0):
        self.model = model
        self.host = host
        self.num_ctx = num_ctx
        self._client = ollama.Client(host=host, timeout=timeout_s)

    def complete(self, request: LLMRequest) -> LLMResponse:
        options = {"temperature": request.temperature, "top_p": request.top_p, "seed": request.seed,
                   "num_predict": request.max_tokens}
        if self.num_ctx:
            options["num_ctx"] = self.num_ctx
        started = time.perf_counter()
        try:
            reply = self._client.chat(model=self.model, messages=request.message_dicts(), options=options,
                                      format=request.json_schema, stream=False)
        except ollama.ResponseError as error:
            kind = TransientLLMError if error.status_code >= 500 else LLMError
            raise kind(f"ollama model {self.model} at {self.host}: HTTP {error.status_code}: {error.error}") from error
        except (httpx.TransportError, ConnectionError) as error:
            raise TransientLLMError(f"ollama model {self.model} at {self.host}: {type(error).__name__}: {error}") from error
        return LLMResponse(
            text=reply.message.content or "",
            backend=self.name,
            model=self.model,
            latency_s=time.perf_counter() - started,
            prompt_tokens=reply.prompt_eval_count,
            completion_tokens=reply.eval_count,
            extra={"finish_reason": reply.done_reason},
        )
