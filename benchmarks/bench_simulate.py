"""Simulation throughput: pipeline generation speed against raw llama.cpp on the same prompts,
and sessions per minute per system of the default config.

    python benchmarks/bench_simulate.py [--sessions 3] [--turns 8] [--threads 2]

Runs on the demo catalog with the embedded models and no response cache (every reply is
generated). The raw baseline replays the exact requests the pipeline made (same messages,
seed and sampling options, so the same tokens) straight into `Llama.create_chat_completion`;
`outside_llm_pct` is the share of the pipeline's wall time spent outside LLM calls (tracking,
retrieval, parsing, validation, writing), measured within the same run.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import yaml

from crseval.catalog.build import build_index
from crseval.core.io import write_json, write_parquet
from crseval.llm.llamacpp_backend import LlamaCppBackend, _load, merge_system_into_user
from crseval.simulate.shard import build_shard_runner

REPO = Path(__file__).resolve().parents[1]


class RecordingBackend:
    """Passes calls through and keeps the requests, for the raw replay."""

    def __init__(self, inner: LlamaCppBackend):
        self.inner, self.name, self.model, self.requests = inner, inner.name, inner.model, []

    def complete(self, request):
        self.requests.append(request)
        return self.inner.complete(request)


def prepare_catalog(folder: Path, config: dict) -> dict:
    films, concepts, summary = build_index(
        REPO / config["catalog"]["path"],
        REPO / config["catalog"]["non_genre_values"],
        config["catalog"]["plot_keywords"],
    )
    write_parquet(films, folder / "films.parquet")
    write_parquet(concepts, folder / "concepts.parquet")
    write_json(summary, folder / "summary.json")
    return {
        "films": folder / "films.parquet",
        "concepts": folder / "concepts.parquet",
        "catalog_summary": folder / "summary.json",
    }


def raw_replay(backend: LlamaCppBackend, requests) -> tuple[int, float]:
    llm = _load(backend._path, backend.n_ctx, backend.threads, backend._chat_format)
    tokens, seconds = 0, 0.0
    for request in requests:
        messages = request.message_dicts() if backend._system_role else merge_system_into_user(request.message_dicts())
        started = time.perf_counter()
        reply = llm.create_chat_completion(
            messages=messages,
            temperature=request.temperature,
            top_p=request.top_p,
            max_tokens=request.max_tokens,
            seed=request.seed,
        )
        seconds += time.perf_counter() - started
        tokens += reply["usage"]["completion_tokens"]
    return tokens, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=3)
    parser.add_argument("--turns", type=int, default=8)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    config["simulator"]["templates"] = str(REPO / config["simulator"]["templates"])
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        files = prepare_catalog(tmp, config)
        for system in config["systems"]:
            if system["agent"] == "llm":
                system = {**system, "prompt": str(REPO / system["prompt"])}
            runner = build_shard_runner(
                system=system,
                simulator=config["simulator"],
                agent=config["agent"],
                experiment_seed=config["sessions"]["seed"],
                turns=args.turns,
                **files,
                schema=REPO / "src" / "crseval" / "core" / "schemas" / "session.schema.yaml",
                llm_runtime={**config["llm"], "cache_dir": None},
                threads=args.threads,
            )
            recorder = None
            if runner.client is not None:
                recorder = RecordingBackend(runner.client.backend)
                runner.client.backend = recorder
                recorder.inner.complete(recorder.requests[0] if recorder.requests else _warmup())  # load the model
            started = time.perf_counter()
            runner.run(
                range(args.sessions),
                progress=tmp / f"{system['name']}.progress",
                output=tmp / f"{system['name']}.jsonl",
            )
            wall = time.perf_counter() - started
            row = {
                "system": system["name"],
                "sessions": args.sessions,
                "turns": args.turns,
                "sessions_per_min": round(60 * args.sessions / wall, 2),
                "s_per_turn": round(wall / (args.sessions * args.turns), 3),
            }
            if recorder is not None:
                sessions = [json.loads(line) for line in (tmp / f"{system['name']}.jsonl").read_text().splitlines()]
                pipeline_tokens = sum(t["llm"]["completion_tokens"] for s in sessions for t in s["turns"])
                in_llm = sum(t["llm"]["latency_s"] for s in sessions for t in s["turns"])
                row["outside_llm_pct"] = round(100 * (1 - in_llm / wall), 2)
                raw_tokens, raw_seconds = raw_replay(recorder.inner, recorder.requests)
                row.update(
                    pipeline_tok_per_s=round(pipeline_tokens / wall, 2),
                    raw_tok_per_s=round(raw_tokens / raw_seconds, 2),
                    overhead_pct=round(100 * (1 - (pipeline_tokens / wall) / (raw_tokens / raw_seconds)), 1),
                    same_tokens=pipeline_tokens == raw_tokens,
                )
            results.append(row)
            print(json.dumps(row), flush=True)


def _warmup():
    from crseval.llm import LLMRequest

    return LLMRequest.chat([{"role": "user", "content": "Hello"}], max_tokens=1)


if __name__ == "__main__":
    main()
