"""One POST to a service, with bounds on what comes back: the only way crseval reads from the network.

A recommender under test (`agent: http`) and the LLM servers (`ollama`, `openai` backends: systems, judges,
paraphraser, topic extraction) are answered through `BoundedPoster.post`, so that no service can exhaust
the machine, hold a job forever or receive a credential meant for another:

- **size**: the body is read in chunks and reading stops once it passes `Bounds.max_bytes` (after
  decompression: a small gzip body cannot expand past it either); a Content-Length above the bound fails
  before anything is read. Too large is a permanent failure: asking again gets the same reply.
- **deadline**: `Bounds.deadline_s` is the whole request, resolving the host name to last byte, across
  redirects. httpx bounds each socket operation only (a service that keeps sending is never timed out), and
  nothing bounds the resolver (`socket.getaddrinfo` waits as long as the system's resolver does). So the
  request runs in a worker thread the caller waits for until the deadline; then a watchdog shuts the
  request's sockets down (a read blocked on a trickle, or on a service that keeps sending, ends at once), and a
  request still resolving or connecting is left to its thread (it ends on its own: any socket it opens later
  is shut as it is made) while the caller gets DeadlinePassed. A passed deadline is transient.
- **redirects**: a 3xx is not followed, except a 307 or 308 to the same scheme, host and port (then the
  POST is repeated with its body; a POST never becomes a GET). Anything else fails naming the status and
  the redacted `Location`, so headers, bearer keys and Basic credentials never reach another origin.

httpx does the HTTP/1.1 itself (chunked bodies, header limits, TLS, the environment's proxies).
"""

from __future__ import annotations

import base64
import socket
import threading
import time
import zlib
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit, urlunsplit

import httpx

from crseval.core.redact import redact_url, redact_urls

DEFAULT_MAX_REPLY_BYTES = 1 << 20  # 1 MiB: a recommender's reply is a few kB
LARGEST_REPLY_BYTES = 64 << 20  # what a bound may be set to: the reply is held in memory, parsed and stored
ERROR_BODY_BYTES = 64 << 10  # of a non-2xx reply only the start is read: it is quoted in a message, not used
MAX_REDIRECTS = 5
_CHUNK = 64 << 10
# After the deadline, how long the caller waits for a worker whose sockets were shut to say how far the reply
# got (a shut socket ends its read at once: milliseconds)
_REPORT_S = 0.25


@dataclass(frozen=True)
class Bounds:
    """How large a reply may be (bytes after decompression) and how long the whole request may take."""

    max_bytes: int
    deadline_s: float

    def __post_init__(self):
        if not (isinstance(self.max_bytes, int) and 0 < self.max_bytes <= LARGEST_REPLY_BYTES):
            raise ValueError(f"a reply bound must be 1 to {LARGEST_REPLY_BYTES} bytes, got {self.max_bytes!r}")
        if not self.deadline_s > 0:
            raise ValueError(f"a deadline must be a positive number of seconds, got {self.deadline_s!r}")


@dataclass(frozen=True)
class HttpReply:
    status: int
    reason: str
    headers: httpx.Headers
    body: bytes  # for a status other than 2xx, at most ERROR_BODY_BYTES of it


class HttpFailure(Exception):
    """No usable reply; the message says what happened (callers put system, session and turn before it).
    `transient`: whether another attempt may get past it."""

    transient = True


class ReplyTooLarge(HttpFailure):
    transient = False


class DeadlinePassed(HttpFailure):
    transient = True


class RedirectRefused(HttpFailure):
    transient = False


class UnreadableEncoding(HttpFailure):
    transient = False


class Unreachable(HttpFailure):
    """A request that cannot be sent as configured (no such scheme, a header that is not a header)."""

    transient = False


def split_credentials(url: str) -> tuple[str, str | None, list[str]]:
    """`url` without its user part, the Basic Authorization header that user part stands for (None
    without one), and the secrets no message may show. Credentials go in a header the poster sends to
    this origin only, never in the address a library might log or follow elsewhere."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, None, []
    user, password = unquote(parts.username or ""), unquote(parts.password or "")
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    bare = urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
    return bare, f"Basic {token}", [s for s in (password, token) if s]


def size(count: int) -> str:
    return f"{count:,} bytes"


def same_origin(a: httpx.URL, b: httpx.URL) -> bool:
    """Same scheme, host and port (a missing port is the scheme's default)."""
    defaults = {"http": 80, "https": 443}
    return (a.scheme, a.host.lower(), a.port or defaults.get(a.scheme)) == (
        b.scheme,
        b.host.lower(),
        b.port or defaults.get(b.scheme),
    )


class BoundedPoster:
    """A thread-safe poster; one per service. Connections are not kept alive: each request opens its own,
    which is what lets the watchdog find and shut its socket (a few milliseconds per request)."""

    def __init__(self):
        self._client = httpx.Client(
            follow_redirects=False,
            limits=httpx.Limits(max_keepalive_connections=0),
            trust_env=True,  # HTTP(S)_PROXY and NO_PROXY, as any HTTP client honours them
        )

    def close(self) -> None:
        self._client.close()

    def post(self, url: str, body: bytes, headers: dict[str, str], bounds: Bounds) -> HttpReply:
        """POST `body` to `url` (no credentials in it: pass them in `headers`); the reply within `bounds`.

        A 2xx body is read whole (ReplyTooLarge past the bound); of any other status only the start is
        read. Raises HttpFailure for every failure of the transport, never another exception."""
        deadline = time.monotonic() + bounds.deadline_s
        try:
            target = httpx.URL(url)
        except httpx.InvalidURL as error:
            raise Unreachable(
                f"cannot send the request (the address is not a URL: {redact_urls(str(error))})"
            ) from None
        watchdog = _Watchdog()
        outcome: dict = {}

        def exchange():
            try:
                outcome["reply"] = self._exchange(target, body, headers, bounds, deadline, watchdog)
            except BaseException as error:  # raised again in the caller's thread
                outcome["error"] = error

        worker = threading.Thread(target=exchange, name="bounded-post", daemon=True)
        worker.start()
        try:
            worker.join(max(deadline - time.monotonic(), 0))
        except BaseException:  # the caller gives up (an interrupt): the request ends with it
            watchdog.fire()
            raise
        if worker.is_alive():
            connected = watchdog.fire()  # the request's sockets shut: a read blocked on one ends at once
            if connected:  # the worker names how far the reply got
                worker.join(_REPORT_S)
            if worker.is_alive():
                raise DeadlinePassed(_late(bounds, watchdog.arrived, connected, target.host))
        if "error" in outcome:
            raise outcome["error"]
        return outcome["reply"]

    def _exchange(self, target, body, headers, bounds, deadline, watchdog) -> HttpReply:
        """The request and the redirects it may follow, in the worker thread."""
        for _ in range(MAX_REDIRECTS + 1):
            reply = self._attempt(target, body, headers, bounds, deadline, watchdog)
            if not (300 <= reply.status < 400 and "location" in reply.headers):
                return reply
            target = self._redirect_target(target, reply)
        raise RedirectRefused(f"more than {MAX_REDIRECTS} redirects (last to {redact_url(str(target))})")

    def _attempt(self, target, body, headers, bounds, deadline, watchdog) -> HttpReply:
        headers = {**headers, "Accept-Encoding": "gzip, deflate"}
        remaining = max(deadline - time.monotonic(), 0.001)
        arrived = watchdog.arrived = _Arrived()
        try:
            with self._client.stream(
                "POST",
                target,
                content=body,
                headers=headers,
                timeout=httpx.Timeout(remaining),
                extensions={"trace": watchdog.trace},
            ) as response:
                arrived.headers = True
                if 300 <= response.status_code < 400 and "location" in response.headers:
                    return HttpReply(response.status_code, response.reason_phrase, response.headers, b"")
                if response.is_success:
                    content = _read_body(response, bounds.max_bytes, True, deadline, arrived, bounds)
                else:
                    content = _error_body(response, min(bounds.max_bytes, ERROR_BODY_BYTES), deadline, arrived, bounds)
                if watchdog.fired:  # the body "ended" because the watchdog shut the connection
                    raise DeadlinePassed(_late(bounds, arrived))
                return HttpReply(response.status_code, response.reason_phrase, response.headers, content)
        except HttpFailure:
            raise
        except (httpx.HTTPError, httpx.InvalidURL, httpx.StreamError) as error:
            if watchdog.fired or time.monotonic() >= deadline:
                raise DeadlinePassed(_late(bounds, arrived)) from None
            raise _transport_failure(error) from None
        except (UnicodeError, TypeError) as error:  # a header httpx cannot write (not ASCII, not a string)
            raise Unreachable(f"cannot send the request ({type(error).__name__}: {error})") from None

    def _redirect_target(self, target: httpx.URL, reply: HttpReply) -> httpx.URL:
        try:
            location = target.join(reply.headers["location"])
        except (httpx.InvalidURL, ValueError, UnicodeError):
            location = None
        shown = redact_url(str(location)) if location is not None else "an unreadable address"
        status = f"HTTP {reply.status} {reply.reason}".rstrip()
        if location is None or not same_origin(location, target):
            raise RedirectRefused(
                f"{status}: redirect to {shown} refused (another origin: requests, and the credentials they carry, "
                "go to the configured scheme, host and port only)"
            )
        if reply.status not in (307, 308):
            raise RedirectRefused(
                f"{status}: redirect to {shown} refused (only 307 and 308 repeat a POST with its body; "
                "this status would turn it into a GET)"
            )
        return location.copy_with(username=None, password=None)


@dataclass
class _Arrived:
    """How far a request got, for the message when it fails."""

    headers: bool = False
    raw: int = 0
    decoded: int = 0

    def __str__(self) -> str:
        if not self.headers:
            return "no response had arrived"
        packed = f" ({size(self.raw)} compressed)" if self.raw != self.decoded else ""
        return f"{size(self.decoded)} of the body had arrived{packed}"


def _late(bounds: Bounds, arrived: _Arrived, connected: bool = True, host: str = "") -> str:
    if not connected:  # no socket yet: the resolver, or a connect, had not returned
        return (
            f"no complete reply within the deadline of {bounds.deadline_s:g} s (the whole request): no connection "
            f"had been made (resolving the host name {host[:100]!r} or connecting to it had not finished)"
        )
    return f"no complete reply within the deadline of {bounds.deadline_s:g} s (the whole request): {arrived}"


def _read_body(response: httpx.Response, limit: int, strict: bool, deadline: float, arrived, bounds) -> bytes:
    """The body, decompressed, in chunks; past `limit`: ReplyTooLarge if `strict`, else the start only."""
    announced = response.headers.get("content-length", "")
    encoding = response.headers.get("content-encoding", "identity").strip().lower()
    if strict and encoding in ("", "identity") and announced.isdigit() and int(announced) > limit:
        raise ReplyTooLarge(
            f"the reply announces {size(int(announced))} (Content-Length), more than the bound of "
            f"{size(limit)}; nothing of it was read"
        )
    try:
        decoder = _Decoder(encoding)
    except UnreadableEncoding:
        if strict:
            raise
        decoder = _Decoder("identity")  # an error body is only quoted: its bytes as they came
    parts: list[bytes] = []
    for chunk in response.iter_raw():  # as the network gives it, at most 64 kB a read
        arrived.raw += len(chunk)
        for piece in decoder.feed(chunk, limit - arrived.decoded + 1):
            arrived.decoded += len(piece)
            parts.append(piece)
        if arrived.decoded > limit:
            if not strict:
                return b"".join(parts)[:limit]
            raise ReplyTooLarge(
                f"the reply is larger than the bound of {size(limit)}: reading stopped after "
                f"{size(arrived.decoded)}" + (f" ({size(arrived.raw)} compressed)" if decoder.packed else "")
            )
        if time.monotonic() >= deadline:
            raise DeadlinePassed(_late(bounds, arrived))
    if strict and arrived.raw:
        decoder.finish()
    return b"".join(parts)


def _error_body(response: httpx.Response, limit: int, deadline: float, arrived, bounds) -> bytes:
    """The start of a non-2xx body, for the message; a body that cannot be decompressed is left out."""
    try:
        return _read_body(response, limit, False, deadline, arrived, bounds)
    except UnreadableEncoding:
        return b""


class _Decoder:
    """Content-Encoding gzip or deflate undone with a bound on the output of every step (a few kB of
    zeros can expand to gigabytes: a decompressor that is not told how much to give may fill memory)."""

    def __init__(self, encoding: str):
        self.packed = encoding not in ("", "identity")
        if encoding in ("gzip", "x-gzip"):
            self._new = lambda: zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif encoding == "deflate":  # zlib-wrapped as the standard says, or raw as some servers send it
            self._new = None
        elif self.packed:
            raise UnreadableEncoding(f"the reply is encoded as {encoding[:40]!r}, which was not asked for")
        self._inflate = self._new() if self.packed and self._new else None
        self._head = b""

    def feed(self, data: bytes, wanted: int):
        """Decoded pieces of `data`, together at most a little over `wanted` bytes."""
        if not self.packed:
            yield data
            return
        if self._inflate is None:  # deflate: which kind shows in the first two bytes
            self._head += data
            if len(self._head) < 2:
                return
            zlib_wrapped = (self._head[0] & 0x0F) == 8 and int.from_bytes(self._head[:2], "big") % 31 == 0
            self._inflate = zlib.decompressobj(zlib.MAX_WBITS if zlib_wrapped else -zlib.MAX_WBITS)
            data, self._head = self._head, b""
        try:
            while data and wanted > 0:
                piece = self._inflate.decompress(data, min(wanted, _CHUNK))
                data = self._inflate.unconsumed_tail
                wanted -= len(piece)
                yield piece
                if self._inflate.eof and self._inflate.unused_data and self._new:  # a further gzip member
                    data, self._inflate = self._inflate.unused_data, self._new()
                elif self._inflate.eof:
                    return
        except zlib.error as error:
            raise UnreadableEncoding(f"the reply's compressed body is corrupt ({error})") from None

    def finish(self) -> None:
        """The body has ended: a compressed stream must have ended with it."""
        if self.packed and (self._inflate is None or not self._inflate.eof):
            raise UnreadableEncoding("the reply's compressed body ends before its compressed stream does")


def _transport_failure(error: Exception) -> HttpFailure:
    """What went wrong below HTTP, without the library's URLs (they may hold a key)."""
    cause = error.__cause__ or error.__context__
    detail = str(error) or (str(cause) if cause else "") or type(error).__name__
    if isinstance(error, httpx.ConnectError):
        return HttpFailure(f"cannot connect ({redact_urls(detail)})")
    if isinstance(error, httpx.TimeoutException):
        return DeadlinePassed(f"no reply ({type(error).__name__}: {redact_urls(detail)})")
    if isinstance(error, httpx.UnsupportedProtocol | httpx.InvalidURL | httpx.LocalProtocolError):
        return Unreachable(f"cannot send the request ({type(error).__name__}: {redact_urls(detail)})")
    return HttpFailure(f"connection broken ({type(error).__name__}: {redact_urls(detail)})")


class _Watchdog:
    """Shuts the request's sockets down when the caller's wait for the worker passes the deadline (`fire`): a
    read blocked on a trickle of bytes, or on a service that keeps sending, then ends at once. The sockets are
    found through httpcore's `trace` extension as each connection (or TLS layer) is made; one made after
    `fire` (a resolver that returned late) is shut as it is made, so the abandoned request sends nothing."""

    def __init__(self):
        self.fired = False
        self.arrived = _Arrived()  # the attempt's, for the caller's message when the worker is left behind
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()

    def trace(self, event: str, info: dict) -> None:
        stream = info.get("return_value") if event.endswith(".complete") else None
        sock = stream.get_extra_info("socket") if hasattr(stream, "get_extra_info") else None
        if isinstance(sock, socket.socket):
            with self._lock:
                self._sockets.append(sock)
                if self.fired:
                    _shut(sock)

    def fire(self) -> bool:
        """Shut every socket of the request, and those it makes later; whether it had made any."""
        with self._lock:
            self.fired = True
            for sock in self._sockets:
                _shut(sock)
            return bool(self._sockets)


def _shut(sock: socket.socket) -> None:
    try:  # the plain socket's shutdown, also for a TLS socket: it ends a read blocked in another thread
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except OSError:  # already closed
        pass
