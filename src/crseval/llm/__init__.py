"""One client layer for every LLM call: backends, on-disk response cache, retries."""

from crseval.llm.base import LLMError, LLMRequest, LLMResponse, TransientLLMError
from crseval.llm.client import LLMClient, make_backend

__all__ = ["LLMClient", "LLMError", "LLMRequest", "LLMResponse", "TransientLLMError", "make_backend"]
