"""In-process llama.cpp on a GGUF file (the embedded default: no server needed).

`n_threads` is the thread count Snakemake gave the job: more llama.cpp threads than free
cores makes generation collapse. Models whose chat format drops system messages (Gemma) get
the system text prepended to the first user turn instead.

Token probabilities (LLMRequest.top_logprobs) are read by a logits processor that only looks: at
each generated position it keeps the k most likely tokens of the model's own distribution (before
the JSON grammar, the temperature and top-p act), which is what llama-cpp-python's `logprobs`
option reports too, without `logits_all`: that would keep the logits of every prompt token (for
Gemma's 262k-token vocabulary 4 GB at 4096 tokens of context) and compute them.

Prompt-prefix reuse: llama-cpp-python's Llama.generate keeps the KV cache of the longest prefix a
prompt shares with the previous call's tokens and evaluates only the rest (for Gemma too: llama.cpp
keeps a full-size sliding-window cache by default, so the prefix can be kept). Seeds, the JSON
grammar and the logits processor do not reset it. What is shared is only what the prompts share from
their first token, so the prompts are laid out stable part first (crseval.llm.prompts): a recommender's
instructions, then the earlier exchanges, then the turn's wishes and candidates; the judge's criteria
before the session (benchmarks/bench_llm_prefix.py measures what is reused). llama.cpp's
CPU kernels give slightly different logits for a token depending on where its batch starts and how
long it is, so a reply can depend on the previous call in the process (a reused prefix) and differ
from a fresh evaluation's at the same seed.

A reply held to a JSON grammar (the judge's, a tool call's) is sampled as llama.cpp's own tools sample it
(crseval.llm.lazy_grammar): the grammar checks the token drawn without it and draws again only when it
breaks the grammar, instead of checking every token of the vocabulary at every position.

Tool calls (LLMRequest.tools): the small embedded models have no tool-call format of their own that
llama-cpp-python reads back, so the model answers one JSON object, held to a grammar made from the tool
definitions: {"tool": <name>, "arguments": {...}} (one call per reply, the arguments held to that tool's
parameter schema as far as llama.cpp's schema grammar goes: integer bounds are not enforced) or
{"message": "..."}. The definitions are written into the system message; earlier calls go back as the
JSON the model gave, earlier messages as {"message": ...}, and tool results as user turns "Result of
<name>: <result JSON>", which every chat template holds. This was measured against llama-cpp-python's
`chatml-function-calling` format on the embedded Qwen (benchmarks/bench_llm_tools.py, 15 turns of a
recommender with three tools): here 91-100% of replies were well-formed calls of a known tool and 67-80%
of turns reached `recommend` within 4 calls (temperature 0.7 and 0.2), at 5-7 s a call on one thread;
with chatml-function-calling none were, as its first step always chose "message:" and its message is held
to a grammar of tool names ("functions.search_films:" as text). That format also renders no tool results,
ignores the seed, leaves the arguments unbounded by max_tokens, and writes ChatML, which Gemma does not read.
The small models fill nearly every optional argument the grammar offers (in the definitions' canonical,
alphabetical order), so their calls are well-formed but often not what the user asked for.
"""

from __future__ import annotations

import atexit
import json
import re
import time
from functools import lru_cache
from pathlib import Path

import numpy as np

from crseval.llm.backend_kind import BackendKind
from crseval.llm.base import (
    LLMError,
    LLMRequest,
    LLMResponse,
    excerpt,
    reply_text,
    short_label,
    token_count,
    tool_calls_from,
)
from crseval.llm.models import EMBEDDED_MODELS, model_path


@lru_cache(maxsize=4)
def _load(path: str, n_ctx: int, threads: int, chat_format: str | None):
    # only a job that runs an embedded model loads llama.cpp
    from crseval.llm.lazy_grammar import LazyGrammarLlama

    return LazyGrammarLlama(
        model_path=path,
        n_ctx=n_ctx,
        n_threads=threads,
        n_threads_batch=threads,
        chat_format=chat_format,
        seed=0,
        verbose=False,
    )


# free the models while the interpreter is still whole (llama.cpp's finaliser needs its modules)
atexit.register(_load.cache_clear)


def merge_system_into_user(messages: list[dict]) -> list[dict]:
    """System messages folded into the first user message, for chat formats without a system role."""
    system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
    rest = [dict(m) for m in messages if m["role"] != "system"]
    if system:
        for message in rest:
            if message["role"] == "user":
                message["content"] = f"{system}\n\n{message['content']}"
                break
        else:
            rest.insert(0, {"role": "user", "content": system})
    return rest


TOOL_INSTRUCTIONS = (
    "You can call these tools:\n{tools}\n\n"
    'Answer with one JSON object: {{"tool": "<tool name>", "arguments": {{...}}}} to call one tool (its result '
    'comes back as "Result of <tool name>: ..."), or {{"message": "<text>"}} to write to the user.'
)


# Size bounds a schema may state that llama.cpp's grammar would unroll into one rule per repetition (a
# 2,000-character string, 20 list items): past its limits it refuses the grammar. The caller checks them.
UNROLLED = ("maxLength", "minLength", "maxItems", "minItems")


def grammar_schema(schema):
    """`schema` without the size bounds a grammar cannot hold (UNROLLED), at every depth."""
    if isinstance(schema, dict):
        return {key: grammar_schema(value) for key, value in schema.items() if key not in UNROLLED}
    if isinstance(schema, list):
        return [grammar_schema(value) for value in schema]
    return schema


def tool_reply_schema(tools: list[dict]) -> dict:
    """The JSON schema of a reply to a request with tools: a call of one of them, its arguments held to its
    parameter schema (without the size bounds a grammar cannot hold: the tools check those), or a message."""
    calls = [
        {
            "type": "object",
            "properties": {
                "tool": {"const": tool["function"]["name"]},
                "arguments": grammar_schema(tool["function"].get("parameters") or {"type": "object"}),
            },
            "required": ["tool", "arguments"],
        }
        for tool in tools
    ]
    message = {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}
    return {"anyOf": [*calls, message]}


def tool_prompt(tools: list[dict]) -> str:
    """The tool definitions as the system message tells them to the model."""
    lines = []
    for tool in tools:
        function = tool["function"]
        parameters = json.dumps(function.get("parameters") or {}, ensure_ascii=False, separators=(",", ":"))
        description = " ".join(str(function.get("description") or "").split())
        lines.append(f"- {function['name']}: {description} Arguments (JSON schema): {parameters}")
    return TOOL_INSTRUCTIONS.format(tools="\n".join(lines))


def tool_messages(messages: list[dict], tools: list[dict]) -> list[dict]:
    """Neutral messages, tool fields included, as plain turns any chat template holds: the tool definitions
    added to the system message, an assistant's calls and text as the JSON the model answers with, a tool's
    result as a user turn "Result of <name>: <content>"."""
    shaped, told = [], False
    for message in messages:
        role, content = message["role"], message["content"]
        if role == "system" and not told:
            shaped.append({"role": "system", "content": f"{content}\n\n{tool_prompt(tools)}"})
            told = True
        elif role == "assistant":
            turns = [_call_json(call) for call in message.get("tool_calls") or []]
            if content.strip() and not turns:
                turns = [json.dumps({"message": content}, ensure_ascii=False)]
            shaped.append({"role": "assistant", "content": "\n".join(turns)})
        elif role == "tool":
            shaped.append({"role": "user", "content": f"Result of {message.get('name') or 'the tool'}: {content}"})
        else:
            shaped.append({"role": role, "content": content})
    if not told:
        shaped.insert(0, {"role": "system", "content": tool_prompt(tools)})
    return shaped


def _call_json(call: dict) -> str:
    """A call as the model would have answered it (the arguments as given when they are not JSON)."""
    try:
        arguments = json.loads(call["arguments"])
    except (ValueError, RecursionError):
        return f'{{"tool": {json.dumps(call["name"], ensure_ascii=False)}, "arguments": {call["arguments"]}}}'
    return json.dumps({"tool": call["name"], "arguments": arguments}, ensure_ascii=False)


_CUT_CALL = re.compile(r'\s*\{\s*"tool"\s*:\s*("(?:[^"\\]|\\.)*")\s*,\s*"arguments"\s*:\s*(.*)', re.S)


def parse_tool_reply(where: str, text: str, seen: str) -> tuple[str, list[dict] | None, dict]:
    """Text, tool calls and notes of a reply held to tool_reply_schema. A reply cut short (max_tokens) is
    still read: a call with its arguments as far as they go (not JSON: the caller refuses them), a message
    as far as it goes; `tool_reply_cut` says so."""
    try:
        value, cut = json.loads(text), False
    except (ValueError, RecursionError):
        value, cut = None, True
    if isinstance(value, dict) and isinstance(value.get("tool"), str) and "arguments" in value:
        call = {"function": {"name": value["tool"], "arguments": value["arguments"]}}
        calls, notes = tool_calls_from(where, [call], seen)
        return "", calls, notes
    if isinstance(value, dict) and isinstance(value.get("message"), str):
        return value["message"], None, {}
    match = _CUT_CALL.match(text) if cut else None
    name = _json_string(match.group(1)) if match else None
    if name is not None:
        call = {"function": {"name": name, "arguments": match.group(2)}}
        calls, notes = tool_calls_from(where, [call], seen)
        return "", calls, {**notes, "tool_reply_cut": True}
    for ending in ('"}', "}") if cut else ():
        try:
            value = json.loads(text + ending)
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict) and isinstance(value.get("message"), str):
            return value["message"], None, {"tool_reply_cut": True}
    return text, None, {"tool_reply_unread": True}  # not the grammar's JSON (a model file that ignores it)


def _json_string(text: str) -> str | None:
    try:
        return json.loads(text)
    except ValueError:
        return None


class TopTokens:
    """A llama.cpp logits processor that records, and never changes, the distribution of each position.

    Called once per sampled token with the tokens so far and the raw logits of the next position; the
    token sampled at one position is the last of the tokens seen at the next. So every token's id is
    known but that of the last position when nothing follows it (a reply cut at max_tokens), which
    `entries` then leaves out.
    """

    def __init__(self, k: int):
        self.k = k
        self.prompt: list[int] | None = None
        self.tops: list[tuple[np.ndarray, np.ndarray]] = []  # per position: top token ids, their logprobs
        self.sampled: list[tuple[int, float]] = []  # per position but the last seen: token id, its logprob
        self._previous: np.ndarray | None = None

    def __call__(self, input_ids: np.ndarray, logits: np.ndarray) -> np.ndarray:
        if self.prompt is None:
            self.prompt = [int(t) for t in input_ids]
        elif self._previous is not None:
            token = int(input_ids[-1])
            self.sampled.append((token, float(self._previous[token])))
        logprobs = logits.astype(np.float64)
        peak = logprobs.max()  # log-sum-exp shifted by the largest logit: a third of np.logaddexp.reduce's time
        logprobs -= peak + np.log(np.exp(logprobs - peak).sum())
        k = min(self.k, len(logprobs))
        top = np.argpartition(logits, len(logits) - k)[len(logits) - k :]  # float32 logits: the same order
        top = top[np.lexsort((top, -logprobs[top]))]  # most likely first, ties by token id
        self.tops.append((top, logprobs[top]))
        self._previous = logprobs
        return logits

    def entries(self, llm) -> list[dict]:
        """The reply's tokens in OpenAI's chat format (token, logprob, top_logprobs; `bytes` where a
        token alone is not whole UTF-8, as OpenAI-compatible servers give it)."""
        entries, context = [], list(self.prompt or [])
        for (token, logprob), (top_ids, top_logprobs) in zip(self.sampled, self.tops):
            entry = _token_text(llm, token, context) | {"logprob": logprob}
            entry["top_logprobs"] = [
                {"token": _token_text(llm, int(i), context)["token"], "logprob": float(lp)}
                for i, lp in zip(top_ids, top_logprobs)
            ]
            entries.append(entry)
            context.append(token)
        return entries


def _token_text(llm, token: int, context: list[int]) -> dict:
    data = llm.detokenize([token], prev_tokens=context)
    text = data.decode("utf-8", "replace")
    return {"token": text} if text.encode("utf-8") == data else {"token": text, "bytes": list(data)}


class LlamaCppBackend:
    name = "llamacpp"
    gives_token_logprobs = True

    def __init__(self, model: str, n_ctx: int = 2048, threads: int = 1):
        self.model = model
        spec = EMBEDDED_MODELS.get(model)
        if spec is not None:
            self._path = str(model_path(model))
            self._chat_format, self._system_role = spec.chat_format, spec.system_role
        else:
            if not Path(model).is_file():
                raise LLMError(
                    f"llamacpp model {model}: neither an embedded model ({', '.join(EMBEDDED_MODELS)}) nor a GGUF file"
                )
            self._path, self._chat_format, self._system_role = model, None, True
        self.n_ctx = n_ctx
        self.threads = max(1, int(threads))

    def llama(self):
        """The process's llama_cpp.Llama of this model, context size and thread count (loaded once)."""
        return _load(self._path, self.n_ctx, self.threads, self._chat_format)

    def complete(self, request: LLMRequest) -> LLMResponse:
        llm = self.llama()
        messages = request.message_dicts()
        if not self._system_role:
            messages = merge_system_into_user(messages)
        kwargs = dict(
            messages=messages,
            temperature=request.temperature,
            top_p=request.top_p,
            max_tokens=request.max_tokens,
            seed=request.seed,
        )
        tools = request.tool_definitions()
        if tools and request.json_schema is not None:
            raise LLMError(f"llamacpp model {self.model}: a request with tools cannot also have a json_schema")
        if tools:
            messages = tool_messages(request.message_dicts(), tools)
            if not self._system_role:
                messages = merge_system_into_user(messages)
            kwargs.update(
                messages=messages, response_format={"type": "json_object", "schema": tool_reply_schema(tools)}
            )
        if request.json_schema is not None:
            kwargs["response_format"] = {"type": "json_object", "schema": request.json_schema}
        recorder = TopTokens(request.top_logprobs) if request.top_logprobs > 0 else None
        if recorder is not None:
            kwargs["logits_processor"] = [recorder]
        started = time.perf_counter()
        try:
            reply = llm.create_chat_completion(**kwargs)
        except ValueError as error:  # e.g. prompt longer than the context window
            raise LLMError(f"llamacpp model {self.model}: {error}") from error
        latency = time.perf_counter() - started
        where = f"llamacpp model {self.model}"
        seen = f"completion: {excerpt(json.dumps(reply, ensure_ascii=True, default=repr))}"
        text = reply_text(where, reply, ("choices", 0, "message", "content"), seen)
        calls, notes = None, {}
        if tools:
            text, calls, notes = parse_tool_reply(where, text, seen)
            if not calls:
                text = reply_text(where, {"message": text}, ("message",), seen)
        usage = reply.get("usage") if isinstance(reply.get("usage"), dict) else {}
        return LLMResponse(
            text=text,
            backend=self.name,
            model=self.model,
            latency_s=latency,
            prompt_tokens=token_count(usage.get("prompt_tokens")),
            completion_tokens=token_count(usage.get("completion_tokens")),
            extra={"finish_reason": short_label(reply["choices"][0].get("finish_reason")), **notes},
            token_logprobs=recorder.entries(llm) if recorder is not None else None,
            tool_calls=calls,
        )


def _build(settings: dict, threads: int, timeout_s: float, max_reply_bytes: int | None) -> LlamaCppBackend:
    return LlamaCppBackend(settings["model"], n_ctx=settings.get("n_ctx", 2048), threads=threads)


def _model_file(settings: dict) -> str | None:
    """A GGUF path; None for an embedded model (crseval.llm.models checks its file)."""
    return None if settings["model"] in EMBEDDED_MODELS else settings["model"]


def _identities(settings: dict) -> set[tuple]:
    """The same GGUF file: a path, or an embedded model and a path to its file name."""
    model = settings["model"]
    identities = {("llamacpp", model)}
    if model in EMBEDDED_MODELS:
        identities.add(("embedded", model))
    else:
        embedded = {spec.filename: name for name, spec in EMBEDDED_MODELS.items()}
        path = Path(model).expanduser()
        identities.add(("file", str(path.resolve())))
        if path.name in embedded:
            identities.add(("embedded", embedded[path.name]))
    return identities


KIND = BackendKind(
    name="llamacpp",
    summary="a GGUF model run by llama.cpp inside the job's own process (an embedded model or a file)",
    in_process=True,
    build=_build,
    model_file=_model_file,
    identities=_identities,
    optional_keys={"n_ctx": {"type": "integer", "minimum": 256, "description": "context length in tokens"}},
)
