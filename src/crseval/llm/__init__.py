"""One client layer for every LLM call, used by the simulate, score and judge stages.

Reads prompt templates and, for the embedded models, the GGUF parts installed from PyPI
(assembled and hash-checked into the model folder on first use); writes replies to the on-disk
response cache (`llm.cache_dir`), keyed by backend, model, messages and options. Backends
(llama.cpp in-process, Ollama, OpenAI-compatible), retries with backoff, reply checks. Requests may
offer tools and replies ask for them, in one neutral shape on every backend (crseval.llm.base); running
the tools is the caller's.
"""

from crseval.llm.base import LLMError, LLMRequest, LLMResponse, TransientLLMError
from crseval.llm.client import LLMClient, make_backend

__all__ = ["LLMClient", "LLMError", "LLMRequest", "LLMResponse", "TransientLLMError", "make_backend"]
