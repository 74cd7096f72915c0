"""How many requests a simulate or judge job keeps in flight against its LLM server.

Concurrency is a runtime setting like the cache folder or the timeout: it changes how fast a
job runs, never what it produces (same seeds, same cache keys, same records in the same order).
So it is kept out of the settings that identify results (`without_runtime`) and out of the
rules' params, and a change of it re-runs nothing.

A job runs one request at a time when any of its backends is llama.cpp inside the job's own
process (one model instance decodes one stream; its threads are the job's cores) and when it
makes no LLM call at all (threads would only contend for the interpreter).
"""

from __future__ import annotations

RUNTIME_KEYS = ("concurrency",)


def without_runtime(section: dict) -> dict:
    """`section` without the keys that change speed only: what identifies a system's results."""
    return {key: value for key, value in section.items() if key not in RUNTIME_KEYS}


def effective(requested: int, backends: list[dict]) -> int:
    """The concurrency a job really uses, given the backends it calls."""
    if not backends or any(backend.get("type") == "llamacpp" for backend in backends):
        return 1
    return max(1, int(requested))


def simulate_concurrency(system: dict, config: dict) -> int:
    """Sessions in flight in one simulate job of `system` (an entry of config['systems'])."""
    backends = [system["backend"]] if system.get("agent") == "llm" else []
    paraphrase = config["simulator"]["paraphrase"]
    if paraphrase.get("enabled"):
        backends.append(paraphrase["backend"])
    return effective(system.get("concurrency", config["llm"].get("concurrency", 1)), backends)


def judge_concurrency(config: dict) -> int:
    """Sessions judged at once in one judge job."""
    judge = config["judge"]
    requested = judge.get("concurrency", config["llm"].get("concurrency", 1))
    return effective(requested, [judge["backend"]] if judge.get("enabled") else [])
