"""Prompt-prefix reuse in the embedded llama.cpp models: prompt tokens evaluated and seconds per call
of the default experiment's LLM calls, and whether reusing a prefix changes the replies.

    python benchmarks/bench_llm_prefix.py [--sessions 1] [--modes previous fresh aligned] [--tile 16]
                                          [--threads 1] [--out FILE]

First the default config's LLM systems (config/config.yaml) each simulate `--sessions` sessions on the
demo catalog, and its judge judges them, all through crseval's own code and the product backend,
which records every request (no response cache: every reply is generated). Then each model's requests
are replayed, in the order the pipeline made them, through three Llama instances of that model, one
per way of reusing the KV cache, interleaved call by call (same load on the machine for all three):

- `previous`: what the product does (llama-cpp-python's Llama.generate keeps the longest prefix the
  prompt shares with the previous call's tokens and evaluates the rest);
- `fresh`: nothing reused (the state reset before each call): what a new process computes;
- `aligned`: a prototype that reuses only a prefix that is a multiple of `--tile` tokens, within the
  part of the previous prompt that was evaluated in whole tiles, with at least `--tile` tokens left
  to evaluate, and cuts evaluation batches at the same absolute positions as a fresh evaluation.

"Prompt tokens evaluated" counts the tokens of the first Llama.eval of each call (the prompt's
suffix after the reused prefix; generation then evaluates one token at a time in every mode).
Replies are compared as texts with the recorded ones (`previous` must reproduce them exactly) and
with `fresh`. Prints one JSON row per model and mode, then a summary; --out also writes per-call rows.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import llama_cpp

from crseval.catalog.index import CatalogIndex
from crseval.core.config_checks import effective_config
from crseval.judge.llm_judge import Judge
from crseval.language.concepts import ConceptMatcher
from crseval.llm import LLMClient, LLMRequest
from crseval.llm.client import RetryPolicy
from crseval.llm.lazy_grammar import LazyGrammarLlama
from crseval.llm.llamacpp_backend import LlamaCppBackend, _load
from crseval.llm.prompts import PromptTemplate
from crseval.planning import config_schema
from crseval.simulate.shard import build_shard_runner

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
from bench_simulate import prepare_catalog  # noqa: E402

MODES = ("previous", "fresh", "aligned")


class Recording:
    """Passes calls to the product backend and keeps (request, reply text)."""

    def __init__(self, inner: LlamaCppBackend):
        self.inner, self.name, self.model, self.calls = inner, inner.name, inner.model, []
        self.gives_token_logprobs = inner.gives_token_logprobs

    def complete(self, request: LLMRequest):
        response = self.inner.complete(request)
        self.calls.append((request, response.text))
        return response


class Replay(LlamaCppBackend):
    """The product backend on a Llama instance of its own, counting what Llama.eval evaluates."""

    def __init__(self, model: str, n_ctx: int, threads: int, mode: str, tile: int):
        super().__init__(model, n_ctx=n_ctx, threads=threads)
        self.mode, self.tile, self.evals = mode, tile, []
        self._llm = LazyGrammarLlama(
            model_path=self._path,
            n_ctx=n_ctx,
            n_threads=self.threads,
            n_threads_batch=self.threads,
            chat_format=self._chat_format,
            seed=0,
            verbose=False,
        )
        self._trusted = 0  # aligned: positions whose KV a fresh evaluation would compute alike
        self._llm.eval = self._eval  # instance attributes: Llama.generate calls self.eval, self.generate
        if mode == "aligned":
            self._llm.generate = self._generate_aligned

    def llama(self):
        return self._llm

    def complete(self, request: LLMRequest):
        if self.mode == "fresh":
            self._llm.reset()
        return super().complete(request)

    def _eval(self, tokens) -> None:
        tokens, llm = list(tokens), self._llm
        self.evals.append(len(tokens))
        if self.mode != "aligned":
            return llama_cpp.Llama.eval(llm, tokens)
        while tokens:  # batches end where a fresh evaluation's end: at multiples of n_batch
            start = llm.n_tokens
            batch = tokens[: (start // llm.n_batch + 1) * llm.n_batch - start]
            llama_cpp.Llama.eval(llm, batch)
            if start == self._trusted and len(batch) >= self.tile:  # whole tiles from an aligned start
                self._trusted = llm.n_tokens // self.tile * self.tile
            tokens = tokens[len(batch) :]

    def _generate_aligned(self, tokens, **options):
        llm, tokens = self._llm, list(tokens)
        common = llama_cpp.Llama.longest_token_prefix(llm._input_ids[: self._trusted].tolist(), tokens)
        keep = min(common, len(tokens) - self.tile) // self.tile * self.tile
        keep = max(keep, 0)
        self._trusted = min(self._trusted, keep)
        llm._ctx.kv_cache_seq_rm(-1, keep, -1)
        llm.n_tokens = keep  # Llama.generate then finds exactly this prefix and evaluates the rest
        if keep == 0:
            llm.reset()
        return llama_cpp.Llama.generate(llm, tokens, **options)


def record(config: dict, sessions: int, threads: int, folder: Path) -> dict[str, dict]:
    """model group -> {"backend": settings, "calls": [(request, text)]}: the systems' calls, then the judge's."""
    files = prepare_catalog(folder, config)
    groups, records = {}, []
    for system in config["systems"]:
        if system["agent"] != "llm":
            continue
        system = {**system, "prompt": str(REPO / system["prompt"])}
        _load.cache_clear()  # every system's shard is a job of its own, with the model loaded anew
        runner = build_shard_runner(
            system=system,
            simulator={**config["simulator"], "templates": str(REPO / config["simulator"]["templates"])},
            agent=config["agent"],
            experiment_seed=config["sessions"]["seed"],
            turns=config["sessions"]["turns"],
            **files,
            schema=REPO / "src" / "crseval" / "core" / "schemas" / "session.schema.yaml",
            llm_runtime={**config["llm"], "cache_dir": None},
            threads=threads,
        )
        recorder = Recording(runner.client.backend)
        runner.client.backend = recorder
        output = folder / f"{system['name']}.jsonl"
        runner.run(range(sessions), progress=folder / f"{system['name']}.progress", output=output)
        records += [json.loads(line) for line in output.read_text().splitlines()]
        groups[system["name"]] = {"backend": system["backend"], "calls": recorder.calls}
    settings = config["judge"]
    _load.cache_clear()
    index = CatalogIndex.read(files["films"], files["concepts"])
    backend = settings["backend"]
    recorder = Recording(LlamaCppBackend(backend["model"], n_ctx=backend.get("n_ctx", 2048), threads=threads))
    judge = Judge(
        LLMClient(recorder, None, RetryPolicy(0, 0.0)),
        PromptTemplate(REPO / settings["prompt"]),
        ConceptMatcher(index.concepts, index.films),
        settings["options"],
        settings["samples"],
        settings["retries"],
        settings["seed"],
        top_logprobs=settings["top_logprobs"],
    )
    for session in records:
        judge.judge_session(session)
    groups["judge"] = {"backend": backend, "calls": recorder.calls}
    return groups


def replay(
    group: str, backend: dict, calls: list, threads: int, tile: int, modes=MODES
) -> tuple[list[dict], list[dict]]:
    """Per mode one row of totals, and one row per call and mode."""
    replays = {mode: Replay(backend["model"], backend.get("n_ctx", 2048), threads, mode, tile) for mode in modes}
    per_call = []
    for number, (request, recorded) in enumerate(calls):
        texts = {}
        for mode, replayer in replays.items():
            before = len(replayer.evals)
            started = time.perf_counter()
            response = replayer.complete(request)
            seconds = time.perf_counter() - started
            texts[mode] = response.text
            per_call.append(
                {
                    "group": group,
                    "call": number,
                    "mode": mode,
                    "prompt_tokens": response.prompt_tokens,
                    "prompt_tokens_evaluated": replayer.evals[before] if len(replayer.evals) > before else 0,
                    "completion_tokens": response.completion_tokens,
                    "s": round(seconds, 3),
                    "same_as_recorded": response.text == recorded,
                }
            )
        for row in per_call[-len(modes) :]:
            row["same_as_fresh"] = texts[row["mode"]] == texts["fresh"] if "fresh" in texts else None
    totals = []
    for mode in modes:
        rows = [r for r in per_call if r["mode"] == mode]
        totals.append(
            {
                "group": group,
                "model": backend["model"],
                "mode": mode,
                "calls": len(rows),
                "prompt_tokens": sum(r["prompt_tokens"] or 0 for r in rows),
                "prompt_tokens_evaluated": sum(r["prompt_tokens_evaluated"] for r in rows),
                "evaluated_per_call": round(sum(r["prompt_tokens_evaluated"] for r in rows) / len(rows), 1),
                "s_per_call": round(sum(r["s"] for r in rows) / len(rows), 3),
                "replies_as_recorded": sum(r["same_as_recorded"] for r in rows),
                "replies_as_fresh": sum(r["same_as_fresh"] for r in rows) if "fresh" in modes else None,
            }
        )
    return totals, per_call


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=1, help="sessions per LLM system (default 1)")
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES), help="ways of reusing the cache")
    parser.add_argument("--tile", type=int, default=16, help="the aligned mode's tile, in tokens (default 16)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, help="also write every call's rows here (JSON lines)")
    args = parser.parse_args()
    config = effective_config(REPO / "config" / "config.yaml", schema=config_schema())
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        groups = record(config, args.sessions, args.threads, Path(folder))
    print(json.dumps({"recorded_calls": {g: len(d["calls"]) for g, d in groups.items()}}), flush=True)
    everything, all_calls = [], []
    for group, data in groups.items():
        totals, per_call = replay(group, data["backend"], data["calls"], args.threads, args.tile, args.modes)
        for row in totals:
            print(json.dumps(row), flush=True)
        everything += totals
        all_calls += per_call
    if args.out:
        args.out.write_text("".join(json.dumps(row) + "\n" for row in all_calls))
    summary = {"wall_s": round(time.perf_counter() - started, 1), "tile": args.tile, "threads": args.threads}
    for mode in args.modes:
        rows = [r for r in everything if r["mode"] == mode]
        summary[mode] = {
            "prompt_tokens_evaluated": sum(r["prompt_tokens_evaluated"] for r in rows),
            "of_prompt_tokens": sum(r["prompt_tokens"] for r in rows),
            "replies_as_recorded": f"{sum(r['replies_as_recorded'] for r in rows)}/{sum(r['calls'] for r in rows)}",
            "replies_as_fresh": (
                f"{sum(r['replies_as_fresh'] for r in rows)}/{sum(r['calls'] for r in rows)}"
                if "fresh" in args.modes
                else None
            ),
        }
    print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
