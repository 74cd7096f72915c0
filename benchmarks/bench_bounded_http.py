"""What the bounds cost per request: crseval's bounded POST against plain clients, on loopback.

    python benchmarks/bench_bounded_http.py [--requests 500] [--reply-bytes 2000]

A loopback server answers every POST with a JSON reply of `--reply-bytes`; each client posts a small
JSON body `--requests` times in a row and the median and 95th percentile per request are printed:
- `bounded`: crseval.core.bounded_http.BoundedPoster (a connection per request, a watchdog timer,
  the body read in chunks);
- `urllib`: urllib.request.urlopen (a connection per request; what `agent: http` used before);
- `httpx keep-alive`: one httpx.Client reusing its connection (what the LLM client libraries do).
On loopback the connection set-up is all there is to compare; next to a model's reply (seconds) or a
service on a network (milliseconds) it is noise.
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx

from crseval.core.bounded_http import BoundedPoster, Bounds


def serve(reply: bytes) -> tuple[ThreadingHTTPServer, str]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive for the client that wants it
        disable_nagle_algorithm = True  # headers and body leave at once

        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


def timed(post, requests: int) -> list[float]:
    seconds = []
    for _ in range(requests):
        started = time.perf_counter()
        post()
        seconds.append(time.perf_counter() - started)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--reply-bytes", type=int, default=2000)
    args = parser.parse_args()
    reply = json.dumps({"reply": "x" * max(args.reply_bytes - 13, 0)}).encode()
    body = json.dumps({"session_id": "s/s00001", "turn": 1, "user_text": "A comedy?", "history": []}).encode()
    headers = {"Content-Type": "application/json"}
    server, url = serve(reply)
    poster, keep_alive = BoundedPoster(), httpx.Client()
    clients = {
        "bounded": lambda: poster.post(url, body, headers, Bounds(1 << 20, 30.0)),
        "urllib": lambda: urllib.request.urlopen(urllib.request.Request(url, body, headers), timeout=30).read(),
        "httpx keep-alive": lambda: keep_alive.post(url, content=body, headers=headers).read(),
    }
    for client in clients.values():  # warm up
        timed(client, 20)
    print(f"{args.requests} POSTs of {len(body)} bytes, replies of {len(reply)} bytes, loopback")
    for name, client in clients.items():
        seconds = sorted(timed(client, args.requests))
        median, p95 = statistics.median(seconds), seconds[int(0.95 * len(seconds)) - 1]
        print(f"{name:>17}: median {median * 1000:.2f} ms, p95 {p95 * 1000:.2f} ms")
    server.shutdown()


if __name__ == "__main__":
    main()
