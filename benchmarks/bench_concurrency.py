"""Simulation throughput with sessions in flight (`llm.concurrency`) against a server.

    python benchmarks/bench_concurrency.py [--latency 0.5] [--turns 6] [--levels 1 4 16 64]
    python benchmarks/bench_concurrency.py --llama-server    # also the embedded model behind llama_cpp.server

Part 1: a loopback OpenAI-compatible server that answers every request after a fixed latency and
serves any number at once (what vLLM or a hosted API does within its capacity). One grounded LLM
system on the demo catalog; each level simulates enough sessions to keep its requests in flight
(4 x concurrency, at least 8), with an empty response cache. Reports sessions/minute and the
ratio to concurrency 1, and checks that every level wrote the same sessions (latencies aside).

Part 2 (--llama-server): the same against `python -m llama_cpp.server` with the embedded
Qwen2.5-Coder-0.5B (two threads): no speed-up is expected on two cores; it shows that a real
server works at concurrency > 1 and how it behaves.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import yaml

from crseval.catalog.build import build_index
from crseval.core.io import write_json, write_parquet
from crseval.simulate.shard import build_shard_runner

REPO = Path(__file__).resolve().parents[1]
LATENCY = re.compile(rb'"latency_s": ?[0-9.eE+-]+')


class FixedLatencyServer(ThreadingHTTPServer):
    """POST /v1/chat/completions: a deterministic reply naming the prompt's first candidate, after `latency_s`."""

    daemon_threads = True
    request_queue_size = 256

    def __init__(self, latency_s: float):
        self.latency_s = latency_s
        self.in_flight = self.max_in_flight = 0
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as real servers

    def log_message(self, *args):
        pass

    def do_POST(self):
        server: FixedLatencyServer = self.server
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with server.lock:
            server.in_flight += 1
            server.max_in_flight = max(server.max_in_flight, server.in_flight)
        time.sleep(server.latency_s)
        prompt = body["messages"][0]["content"]
        candidates = [line[2:].rsplit(" (", 1)[0] for line in prompt.splitlines() if line.startswith("- ")]
        digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
        pick = candidates[int(digest, 16) % len(candidates)] if candidates else None
        content = f"You might enjoy {pick}: it fits what you asked for." if pick else "Tell me more."
        payload = json.dumps(
            {
                "id": digest[:12],
                "object": "chat.completion",
                "model": body["model"],
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
                ],
                "usage": {"prompt_tokens": 50, "completion_tokens": 12},
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
        with server.lock:
            server.in_flight -= 1


def prepare_catalog(folder: Path) -> dict:
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    films, concepts, summary = build_index(
        REPO / config["catalog"]["path"],
        REPO / config["catalog"]["non_genre_values"],
        config["catalog"]["plot_keywords"],
    )
    write_parquet(films, folder / "films.parquet")
    write_parquet(concepts, folder / "concepts.parquet")
    write_json(summary, folder / "summary.json")
    config["simulator"]["templates"] = str(REPO / config["simulator"]["templates"])
    return config


def run_level(config: dict, folder: Path, system: dict, concurrency: int, sessions: int, turns: int, tag: str) -> dict:
    runner = build_shard_runner(
        system=system,
        simulator=config["simulator"],
        agent=config["agent"],
        experiment_seed=7,
        turns=turns,
        films=folder / "films.parquet",
        concepts=folder / "concepts.parquet",
        catalog_summary=folder / "summary.json",
        schema=REPO / "src" / "crseval" / "core" / "schemas" / "session.schema.yaml",
        llm_runtime={
            "cache_dir": str(folder / f"cache-{tag}-{concurrency}"),
            "timeout_s": 600,
            "max_retries": 2,
            "backoff_s": 1.0,
        },
        threads=1,
        concurrency=concurrency,
    )
    output = folder / f"{tag}-{concurrency}.jsonl"
    started = time.perf_counter()
    runner.run(range(sessions), progress=folder / f"{tag}-{concurrency}.progress", output=output)
    elapsed = time.perf_counter() - started
    return {
        "concurrency": concurrency,
        "sessions": sessions,
        "turns": turns,
        "seconds": round(elapsed, 2),
        "sessions_per_min": round(60 * sessions / elapsed, 1),
        "calls": runner.calls,
        "output": output,
    }


def same_sessions(paths: list[Path], count: int) -> bool:
    """Whether the first `count` sessions of every file are byte-identical, latencies aside."""
    heads = [b"\n".join(LATENCY.sub(b"", path.read_bytes()).split(b"\n")[:count]) for path in paths]
    return all(head == heads[0] for head in heads)


def loopback(args, config: dict, folder: Path) -> list[dict]:
    server = FixedLatencyServer(args.latency)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    system = {
        "name": "served",
        "agent": "llm",
        "prompt": str(REPO / "resources" / "prompts" / "crs_grounded.txt"),
        "backend": {"type": "openai", "model": "fixed-latency", "base_url": server.base_url},
        "options": {"temperature": 0.7, "top_p": 0.95, "max_tokens": 48},
    }
    rows = []
    for level in args.levels:
        server.max_in_flight = 0
        row = run_level(config, folder, system, level, max(8, 4 * level), args.turns, "loopback")
        row["max_in_flight"] = server.max_in_flight
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "output"}), flush=True)
    server.shutdown()
    base = rows[0]["sessions_per_min"]
    for row in rows:
        row["speedup"] = round(row["sessions_per_min"] / base, 2)
    rows[0]["identical"] = same_sessions([r["output"] for r in rows], rows[0]["sessions"])
    return rows


def llama_server(args, config: dict, folder: Path) -> list[dict]:
    from crseval.llm.models import model_path

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(model_path("qwen2.5-coder-0.5b-instruct")),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_threads",
        "2",
        "--n_ctx",
        "4096",
        "--model_alias",
        "qwen2.5-coder-0.5b-instruct",
    ]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 120
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2)
                break
            except OSError:
                if time.time() > deadline or process.poll() is not None:
                    raise RuntimeError("llama_cpp.server did not start")
                time.sleep(0.5)
        system = {
            "name": "llama-server",
            "agent": "llm",
            "prompt": str(REPO / "resources" / "prompts" / "crs_grounded.txt"),
            "backend": {
                "type": "openai",
                "model": "qwen2.5-coder-0.5b-instruct",
                "base_url": f"http://127.0.0.1:{port}/v1",
            },
            "options": {"temperature": 0.7, "top_p": 0.95, "max_tokens": 32},
        }
        rows = []
        for level in (1, 4):
            row = run_level(config, folder, system, level, 4, 3, "llama-server")
            rows.append(row)
            print(json.dumps({k: v for k, v in row.items() if k != "output"}), flush=True)
        return rows
    finally:
        process.terminate()
        process.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.5)
    parser.add_argument("--turns", type=int, default=6)
    parser.add_argument("--levels", type=int, nargs="+", default=[1, 4, 16, 64])
    parser.add_argument("--llama-server", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        config = prepare_catalog(folder)
        rows = loopback(args, config, folder)
        print(
            f"\nLoopback server, {args.latency} s per reply, {args.turns} turns per session; "
            f"sessions identical across levels: {rows[0]['identical']}"
        )
        print("| concurrency | sessions | seconds | sessions/min | x concurrency 1 | max requests in flight |")
        print("|---|---|---|---|---|---|")
        for row in rows:
            print(
                f"| {row['concurrency']} | {row['sessions']} | {row['seconds']} | {row['sessions_per_min']} | "
                f"{row['speedup']} | {row['max_in_flight']} |"
            )
        if args.llama_server:
            served = llama_server(args, config, folder)
            print("\nllama_cpp.server, embedded Qwen2.5-Coder-0.5B, 2 threads, 4 sessions x 3 turns")
            print("| concurrency | seconds | sessions/min | LLM calls |")
            print("|---|---|---|---|")
            for row in served:
                print(f"| {row['concurrency']} | {row['seconds']} | {row['sessions_per_min']} | {row['calls']} |")


if __name__ == "__main__":
    main()
