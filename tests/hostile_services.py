"""Loopback services that misbehave on purpose: bodies that never end, that are too large, that trickle
in, that expand when decompressed, and redirects. Each speaks raw HTTP/1.1 over a socket, so it can send
what no well-behaved server library would; each records the requests it received. Binds 127.0.0.1 only.
"""

from __future__ import annotations

import gzip
import json
import socket
import socketserver
import threading
import time
import zlib
from dataclasses import dataclass, field


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]  # names lowered
    body: bytes


@dataclass
class Service:
    """`behaviour(write, request)` answers each request; `requests` lists what arrived."""

    behaviour: object
    requests: list[Received] = field(default_factory=list)

    def __post_init__(self):
        service = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self):
                request = read_request(self.rfile)
                if request is None:
                    return
                service.requests.append(request)
                try:
                    service.behaviour(self.wfile.write, request)
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError, OSError):  # the client stopped reading
                    pass

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True
            block_on_close = False

        self._server = Server(("127.0.0.1", 0), Handler)
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/"
        threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> "Service":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def read_request(rfile) -> Received | None:
    line = rfile.readline(65537)
    if not line:
        return None
    method, path, _ = line.decode("latin-1").split(" ", 2)
    headers = {}
    while (header := rfile.readline(65537)) not in (b"\r\n", b"\n", b""):
        name, _, value = header.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    body = rfile.read(int(headers.get("content-length", "0")))
    return Received(method, path, headers, body)


def head(status: int = 200, *headers: tuple[str, str], reason: str = "OK") -> bytes:
    lines = [f"HTTP/1.1 {status} {reason}", "Connection: close"] + [f"{n}: {v}" for n, v in headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


JSON = ("Content-Type", "application/json")


# --- behaviours -----------------------------------------------------------------------------------------------------


def answer(data: dict, status: int = 200):
    """A well-formed JSON reply."""
    body = json.dumps(data).encode()

    def behave(write, request):
        write(head(status, JSON, ("Content-Length", str(len(body)))) + body)

    return behave


def endless(prefix: bytes = b'{"reply": "', chunked: bool = False, piece: bytes = b"a" * 65536):
    """A 200 whose body starts like a reply and never ends (until the client hangs up)."""

    def behave(write, request):
        if chunked:
            write(head(200, JSON, ("Transfer-Encoding", "chunked")))
            frame = lambda data: f"{len(data):x}\r\n".encode() + data + b"\r\n"  # noqa: E731
            write(frame(prefix))
            while True:
                write(frame(piece))
        write(head(200, JSON) + prefix)
        while True:
            write(piece)

    return behave


def oversized(total: int, declare_length: bool = True):
    """A well-formed reply of `total` bytes, with or without a Content-Length saying so."""

    def behave(write, request):
        filler = total - len(b'{"reply": ""}')
        length = (("Content-Length", str(total)),) if declare_length else ()
        write(head(200, JSON, *length) + b'{"reply": "')
        for start in range(0, filler, 65536):
            write(b"b" * min(65536, filler - start))
        write(b'"}')

    return behave


def trickle(every_s: float, in_headers: bool = False):
    """One byte every `every_s` seconds, forever: in the body, or before the headers are even complete."""

    def behave(write, request):
        if in_headers:
            write(b"HTTP/1.1 200 OK\r\n")
            while True:
                write(b"X-Wait: 1\r\n")
                time.sleep(every_s)
        write(head(200, JSON) + b'{"reply": "')
        while True:
            write(b"c")
            time.sleep(every_s)

    return behave


def compressed(decoded_size: int, encoding: str = "gzip"):
    """A small body that expands to `decoded_size` bytes of reply when decompressed."""
    text = b'{"reply": "' + b"z" * (decoded_size - 13) + b'"}'
    packed = gzip.compress(text, 9) if encoding == "gzip" else zlib.compress(text, 9)

    def behave(write, request):
        write(head(200, JSON, ("Content-Encoding", encoding), ("Content-Length", str(len(packed)))) + packed)

    return behave


def redirect(status: int, location: str):
    def behave(write, request):
        write(head(status, ("Location", location), ("Content-Length", "0"), reason="Moved"))

    return behave


def by_path(routes: dict, otherwise):
    """A behaviour per request path (the start of it), for a service that redirects to itself."""

    def behave(write, request):
        for prefix, behaviour in routes.items():
            if request.path.startswith(prefix):
                return behaviour(write, request)
        return otherwise(write, request)

    return behave


def unused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
