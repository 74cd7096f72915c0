"""A loopback HTTP server that speaks Ollama's /api/chat, for backend and resume tests.

Replies are a deterministic function of the request (so an interrupted and a clean run can be
compared), with configurable HTTP failures and a delay per reply. It binds 127.0.0.1 only.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class LoopbackServer(ThreadingHTTPServer):
    """A thread per request, and a listen backlog for many clients connecting at once."""

    request_queue_size = 128
    daemon_threads = True


class FakeOllama:
    def __init__(
        self,
        failures: list[int] | None = None,
        delay_s: float = 0.0,
        titles: list[str] | None = None,
        content=None,
        port: int = 0,
    ):
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

        self._httpd = LoopbackServer(("127.0.0.1", port), Handler)
        self.host = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def reply(self, body: dict) -> dict:
        digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
        title = self.titles[int(digest, 16) % len(self.titles)]
        if self.content is not None:
            content = self.content(body)
        elif body.get("format") and "proactiveness" in body["format"].get("required", []):
            content = json.dumps(
                {
                    name: {"score": int(digest[i], 16) % 5 + 1, "rationale": "a fake judgement"}
                    for i, name in enumerate(("proactiveness", "coherence", "personalization"))
                }
            )
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


@dataclass(frozen=True)
class RawReply:
    """One scripted HTTP reply, sent byte for byte: for bodies no well-behaved server would send.

    `declared_length` overrides Content-Length (larger than the body: a connection cut mid-reply).
    """

    status: int = 200
    content_type: str | None = "application/json"
    body: bytes | str = b""
    declared_length: int | None = None
    headers: tuple[tuple[str, str], ...] = ()


def send_raw(handler: BaseHTTPRequestHandler, reply: RawReply) -> None:
    body = reply.body.encode("utf-8", "surrogatepass") if isinstance(reply.body, str) else reply.body
    handler.send_response(reply.status)
    if reply.content_type is not None:
        handler.send_header("Content-Type", reply.content_type)
    for name, value in reply.headers:
        handler.send_header(name, value)
    handler.send_header("Content-Length", str(len(body) if reply.declared_length is None else reply.declared_length))
    if reply.declared_length is not None:
        handler.send_header("Connection", "close")
        handler.close_connection = True
    handler.end_headers()
    handler.wfile.write(body)


class ScriptedOllama(FakeOllama):
    """FakeOllama that first answers with the scripted `raw` replies, one per request, then as usual."""

    def __init__(self, raw: list[RawReply], **options):
        super().__init__(**options)
        self.raw = list(raw)
        handler = self._httpd.RequestHandlerClass
        normal_post = handler.do_POST
        server = self

        def do_POST(self):
            with server._lock:
                scripted = server.raw.pop(0) if server.raw else None
            if scripted is None:
                return normal_post(self)
            body = self.rfile.read(int(self.headers["Content-Length"]))
            with server._lock:
                server.requests.append({"path": self.path, "body": json.loads(body)})
            send_raw(self, scripted)

        handler.do_POST = do_POST
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,), daemon=True)  # quick shutdown


class FakeOpenAI:
    """A loopback OpenAI-compatible server (POST <base>/chat/completions), like vLLM or llama.cpp's server.

    `raw` replies are sent first, one per request; then deterministic chat completions whose text is
    `content(body)` when given (None gives `"content": null`). Request headers are recorded too, so
    tests can check which API key was sent (header names in lower case). It binds 127.0.0.1 only.
    """

    def __init__(
        self, raw: list[RawReply] | None = None, content=None, failures: list[int] | None = None, delay_s: float = 0.0
    ):
        self.raw = list(raw or [])
        self.failures = list(failures or [])
        self.content = content
        self.delay_s = delay_s  # per reply, like a server decoding; replies are served in parallel
        self.requests: list[dict] = []
        self.in_flight = self.max_in_flight = 0
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server._lock:
                    headers = {name.lower(): value for name, value in self.headers.items()}
                    server.requests.append({"path": self.path, "body": body, "headers": headers})
                    scripted = server.raw.pop(0) if server.raw else None
                    status = server.failures.pop(0) if scripted is None and server.failures else 200
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                try:
                    if scripted is None and status != 200:
                        scripted = RawReply(
                            status, body=json.dumps({"error": {"message": f"simulated failure {status}"}})
                        )
                    if scripted is None:
                        time.sleep(server.delay_s)
                    send_raw(self, scripted or RawReply(body=json.dumps(server.reply(body))))
                finally:
                    with server._lock:
                        server.in_flight -= 1

        self._httpd = LoopbackServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,), daemon=True)

    def reply(self, body: dict) -> dict:
        digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
        content = self.content(body) if self.content is not None else f"Try Heat. (ref {digest[:8]})"
        return {
            "id": f"chatcmpl-{digest[:12]}",
            "object": "chat.completion",
            "created": 1767225600,
            "model": body["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 7, "completion_tokens": len((content or "").split()), "total_tokens": 9},
        }

    @property
    def chat_calls(self) -> int:
        return sum(1 for r in self.requests if r["path"].endswith("/chat/completions"))

    def __enter__(self) -> "FakeOpenAI":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


class ToolOllama(FakeOllama):
    """FakeOllama whose replies may ask for tools: `calls(body)` gives the reply's `message.tool_calls` in
    Ollama's shape ([{"function": {"name", "arguments": <object>}}]), or None for a reply of text only; the
    text is `content(body)` when given (None leaves `content` out), else "" when there are calls and "Try
    Heat." when there are none. Messages without `content` (Ollama's client leaves empty fields out) are fine."""

    def __init__(self, calls, **options):
        super().__init__(**options)
        self.calls = calls

    def reply(self, body: dict) -> dict:
        calls = self.calls(body)
        content = self.content(body) if self.content is not None else "" if calls is not None else "Try Heat."
        message = {"role": "assistant"}
        if calls is not None:
            message["tool_calls"] = calls
        if content is not None:
            message["content"] = content
        return {
            "model": body["model"],
            "created_at": "2026-01-01T00:00:00Z",
            "message": message,
            "done": True,
            "done_reason": "stop",
            "prompt_eval_count": 11,
            "eval_count": 5,
        }


class ToolOpenAI(FakeOpenAI):
    """FakeOpenAI whose replies may ask for tools: `calls(body)` gives `choices[0].message.tool_calls` in
    OpenAI's shape ([{"id", "type": "function", "function": {"name", "arguments": <JSON text>}}]), or None
    for a reply of text only; the text is `content(body)` when given, else null when there are calls."""

    def __init__(self, calls, **options):
        super().__init__(**options)
        self.calls = calls

    def reply(self, body: dict) -> dict:
        calls = self.calls(body)
        if calls is None:
            return super().reply(body)
        content = self.content(body) if self.content is not None else None
        return {
            "id": "chatcmpl-tools",
            "object": "chat.completion",
            "created": 1767225600,
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content, "tool_calls": calls},
                    "finish_reason": "tool_calls",
                }
            ],
            "usage": {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16},
        }


if __name__ == "__main__":
    # For running config/test/rerun.yaml by hand: a fake Ollama at its hosts until Ctrl-C.
    import argparse

    parser = argparse.ArgumentParser(description="A fake Ollama server on 127.0.0.1 (replies made up, deterministic).")
    parser.add_argument("--port", type=int, default=11434)
    with FakeOllama(port=parser.parse_args().port) as server:
        print(f"fake Ollama at {server.host}; Ctrl-C stops it", flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass
