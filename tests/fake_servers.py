"""A loopback HTTP server that speaks Ollama's /api/chat, for backend and resume tests.

Replies are a deterministic function of the request (so an interrupted and a clean run can be
compared), with configurable HTTP failures and a delay per reply. It binds 127.0.0.1 only.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeOllama:
    def __init__(self, failures: list[int] | None = None, delay_s: float = 0.0, titles: list[str] | None = None,
                 content=None):
        self.failures = list(failures or [])  # HTTP statuses to answer with before succeeding
        self.delay_s = delay_s
        self.titles = titles or ["Heat", "Casino"]
        self.content = content  # optional: request body -> reply text
        self.requests: list[dict] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server._lock:
                    server.requests.append({"path": self.path, "body": body})
                    status = server.failures.pop(0) if server.failures else 200
                if status != 200:
                    payload = json.dumps({"error": f"simulated failure {status}"}).encode()
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                time.sleep(server.delay_s)
                payload = json.dumps(server.reply(body)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.host = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def reply(self, body: dict) -> dict:
        digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
        title = self.titles[int(digest, 16) % len(self.titles)]
        if self.content is not None:
            content = self.content(body)
        elif body.get("format") and "proactiveness" in body["format"].get("required", []):
            content = json.dumps({name: {"score": int(digest[i], 16) % 5 + 1, "rationale": "a fake judgement"}
                                  for i, name in enumerate(("proactiveness", "coherence", "personalization"))})
        elif body.get("format"):
            content = json.dumps({"score": int(digest, 16) % 5 + 1})
        else:
            content = f"You might enjoy {title}. It matches what you asked for. (ref {digest[:8]})"
        prompt_tokens = sum(len(m["content"].split()) for m in body["messages"])
        return {
            "model": body["model"],
            "created_at": "2026-01-01T00:00:00Z",
            "message": {"role": "assistant", "content": content},
            "done": True,
            "done_reason": "stop",
            "prompt_eval_count": prompt_tokens,
            "eval_count": len(content.split()),
        }

    @property
    def chat_calls(self) -> int:
        return sum(1 for r in self.requests if r["path"] == "/api/chat")

    def __enter__(self) -> "FakeOllama":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
