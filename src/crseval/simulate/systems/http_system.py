"""A recommender under test that is a JSON HTTP service (`agent: http`).

Each user turn is one POST of {"session_id", "seed", "turn", "user_text", "history"} to the system's
URL; the answer is {"reply": str, "recommended": [title, ...]?, "constraints": [{field, value,
negated}, ...]?}. A session begins with its turn 1 (no separate start call), and the whole history
is sent every turn, so a stateless service needs no memory of its own. examples/crs_http_server.py
is a reference service; docs/own_recommender.md describes the API for researchers.

Failures a later attempt can get past (a passed deadline, refused connections, 5xx, 408, 429) are
retried with the LLM clients' exponential backoff; anything else (another 4xx, a body that is not the
agreed JSON, a reply over `max_reply_bytes`, a redirect) fails at once. `timeout` is the whole request,
connecting to last byte (crseval.core.bounded_http). The API key travels only in the Authorization
header and only to the configured origin: messages name the URL with its secrets redacted and never the key.
"""

from __future__ import annotations

import json
import os
import re
import time
from urllib.parse import urlsplit, urlunsplit

from crseval.core.bounded_http import (
    DEFAULT_MAX_REPLY_BYTES,
    BoundedPoster,
    Bounds,
    HttpFailure,
    ReplyTooLarge,
    split_credentials,
)
from crseval.core.fields import CONCEPT_FIELDS, KEYWORD_FIELD
from crseval.core.redact import redact_url, redact_urls
from crseval.llm.base import retry_after, transient_status
from crseval.llm.client import RetryPolicy
from crseval.simulate.systems.agent_kind import AgentKind, shared_keys
from crseval.simulate.systems.external import ExternalReply, ExternalSystemError, external_agent, reply_from_record

CONSTRAINT_FIELDS = (*CONCEPT_FIELDS, KEYWORD_FIELD)
_EXCERPT = 200  # characters of a bad body quoted in an error
_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_HEADER_VALUE = re.compile(r"[\x20-\x7e\t]*")


class HttpSystem:
    """One system under test behind `url`; `start` per session, then `answer` per user turn."""

    def __init__(
        self,
        name: str,
        url: str,
        *,
        timeout: float,
        retries: int,
        api_key_env: str | None = None,
        headers: dict[str, str] | None = None,
        max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES,
        backoff: float = 2.0,
        sleep=time.sleep,
    ):
        self.name = name
        self.url = url
        self.shown_url = redact_url(url)
        if urlsplit(url).scheme not in ("http", "https") or not urlsplit(url).netloc:
            raise ValueError(f"system {name!r}: url {self.shown_url!r} is not an http:// or https:// address")
        if not timeout > 0:
            raise ValueError(f"system {name!r}: timeout must be a positive number of seconds, got {timeout!r}")
        if not isinstance(retries, int) or retries < 0:
            raise ValueError(f"system {name!r}: retries must be a whole number >= 0, got {retries!r}")
        self.timeout = timeout
        try:
            self.bounds = Bounds(max_bytes=max_reply_bytes, deadline_s=timeout)
        except ValueError as problem:
            raise ValueError(f"system {name!r}: max_reply_bytes: {problem}") from None
        self.retry = RetryPolicy(max_retries=retries, backoff_s=backoff)
        for header, value in (headers or {}).items():
            if not (_HEADER_NAME.fullmatch(str(header)) and isinstance(value, str) and _HEADER_VALUE.fullmatch(value)):
                raise ValueError(
                    f"system {name!r}: header {str(header)[:40]!r} cannot be sent: a name is letters, digits and "
                    "!#$%&'*+-.^_`|~; a value is printable ASCII on one line"
                )
        self.headers = {"Content-Type": "application/json", "Accept": "application/json", **(headers or {})}
        self._auth, self._secrets = self._authorization(urlsplit(url), api_key_env)
        self._request_url = split_credentials(url)[0]
        self._sleep = sleep
        self._poster = BoundedPoster()
        self.session_id: str | None = None
        self.seed: int | None = None
        self.requests = 0  # HTTP attempts made, retries included

    def _authorization(self, parts, api_key_env: str | None) -> tuple[str | None, list[str]]:
        """The Authorization header (a bearer key from `api_key_env`, or Basic from the URL's user part)
        and the secrets no message may show."""
        given = [h for h in self.headers if h.lower() == "authorization"]
        ways = [w for w, used in (("the Authorization header", given), ("api_key_env", api_key_env),
                                  ("a user:password in the url", "@" in parts.netloc)) if used]  # fmt: skip
        if len(ways) > 1:
            raise ValueError(f"system {self.name!r}: give one of {' and '.join(ways)}, not both")
        # values of the researcher's own headers may be keys (X-Api-Key ...): a service echoing one is blanked
        own = [value for value in self.headers.values() if len(value) >= 8 and value != "application/json"]
        if given:
            return None, own
        if api_key_env is not None:
            key = os.environ.get(api_key_env)
            if not key:
                raise ValueError(f"system {self.name!r}: environment variable {api_key_env} (api_key_env) is not set")
            return f"Bearer {key}", [key, *own]
        _, basic, secrets = split_credentials(urlunsplit(parts))
        return basic, secrets + own

    def start(self, session_id: str, seed: int) -> None:
        """Nothing is sent: the service learns of the session from its turn 1."""
        self.session_id = session_id
        self.seed = seed

    def describe(self) -> dict:
        """The URL without secrets, the settings that may change an answer (header names, the kind of
        authorization; header values are left out, they may be keys) and the transport settings that
        cannot (timeout, retries, backoff: recorded, but not part of the reply cache's key)."""
        settings = {
            "headers": sorted(h for h in self.headers if h not in ("Content-Type", "Accept")),
            "authorization": self._auth.split()[0] if self._auth else None,
        }
        transport = {
            "timeout": self.timeout,
            "retries": self.retry.max_retries,
            "backoff": self.retry.backoff_s,
            "max_reply_bytes": self.bounds.max_bytes,
        }
        return {"agent": "http", "url": self.shown_url, "settings": settings, "transport": transport}

    def answer(self, turn: int, user_text: str, history: list[dict]) -> ExternalReply:
        if self.session_id is None:
            raise ExternalSystemError(f"system {self.name!r}: answer() before start(): no session to answer in")
        body = json.dumps(
            {
                "session_id": self.session_id,
                "seed": self.seed,
                "turn": turn,
                "user_text": user_text,
                "history": history,
            }
        ).encode()
        where = f"system {self.name!r}, session {self.session_id}, turn {turn}: POST {self.shown_url}"
        attempt = 0
        while True:
            try:
                return self._parse(self._post(body, where), where)
            except _Transient as failure:
                if attempt >= self.retry.max_retries:
                    raise ExternalSystemError(
                        f"{where}: {failure} (gave up after {attempt + 1} attempts)", transient=True
                    ) from None
                self._sleep(self.retry.delay(attempt, f"{self.name}:{self.session_id}:{turn}", failure.wait))
                attempt += 1

    def _post(self, body: bytes, where: str) -> bytes:
        """One attempt; `_Transient` for what a retry may get past, ExternalSystemError otherwise."""
        headers = dict(self.headers)
        if self._auth is not None:
            headers["Authorization"] = self._auth
        self.requests += 1
        try:
            reply = self._poster.post(self._request_url, body, headers, self.bounds)
        except HttpFailure as failure:
            if failure.transient:
                raise _Transient(self._clean(str(failure))) from None
            hint = "; raise the system's max_reply_bytes if replies this large are expected"
            message = self._clean(str(failure)) + (hint if isinstance(failure, ReplyTooLarge) else "")
            raise ExternalSystemError(f"{where}: {message}", transient=False) from None
        if 200 <= reply.status < 300:
            return reply.body
        text = reply.body[:_EXCERPT].decode(errors="replace").strip()
        status = f"HTTP {reply.status} {reply.reason}".rstrip() + (f": {self._clean(text)!r}" if text else "")
        if transient_status(reply.status):
            raise _Transient(status, retry_after(reply.headers.get("Retry-After")))
        raise ExternalSystemError(f"{where}: {status}", transient=False)

    def _parse(self, raw: bytes, where: str) -> ExternalReply:
        """The agreed JSON, checked field by field; anything else names what is wrong."""

        def wrong(what: str) -> ExternalSystemError:
            return ExternalSystemError(f"{where}: {what}", transient=False)

        try:
            data = json.loads(raw.decode("utf-8"))
        except RecursionError:
            raise wrong("the reply is not JSON (nested too deeply)") from None
        except ValueError as error:  # not UTF-8, not JSON, a number too long to convert
            excerpt = self._clean(raw[:_EXCERPT].decode(errors="replace"))
            raise wrong(f"the reply is not JSON ({error}): {excerpt!r}") from None
        try:
            return reply_from_record(data, text_key="reply")
        except ValueError as problem:
            raise wrong(self._clean(f"the reply {problem}")) from None

    def _clean(self, text: str) -> str:
        """`text` with URLs redacted and the secrets blanked, in case a server echoes them back."""
        text = redact_urls(text)
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text


class _Transient(Exception):
    """One failed attempt a retry may get past; `wait` is the server's Retry-After in seconds, if any."""

    def __init__(self, message: str, wait: float | None = None):
        super().__init__(message)
        self.wait = wait


def _http_system(entry: dict, client, prompt_file: str | None) -> HttpSystem:
    return HttpSystem(
        entry["name"],
        entry["url"],
        timeout=entry["timeout"],
        retries=entry["retries"],
        api_key_env=entry.get("api_key_env"),
        headers=entry.get("headers"),
        max_reply_bytes=entry.get("max_reply_bytes", DEFAULT_MAX_REPLY_BYTES),
    )


KIND = AgentKind(
    "http",
    "a recommender served over HTTP answers each turn (docs/own_recommender.md)",
    make_agent=external_agent,
    asks_a_service=True,
    make_system=_http_system,
    required_keys={
        "url": {
            "type": "string",
            "minLength": 1,
            "description": "`http`: the service's address; each user turn is one POST of JSON "
            "(docs/own_recommender.md)",
        },
        **shared_keys("timeout"),
        "retries": {
            "type": "integer",
            "minimum": 0,
            "description": "`http`: retries of a timeout, refused connection, 5xx, 408 or 429, with exponential "
            "backoff",
        },
    },
    optional_keys={
        "api_key_env": {
            "type": "string",
            "minLength": 1,
            "description": "`http`: environment variable that holds a key sent as `Authorization: Bearer`",
        },
        "headers": {
            "type": "object",
            "propertyNames": {"pattern": "^[-!#$%&'*+.^_`|~0-9A-Za-z]+$"},
            "additionalProperties": {"type": "string", "pattern": "^[\\x20-\\x7e\\t]*$"},
            "description": "`http`: extra request headers (printable ASCII), sent to the system's own origin only",
        },
        "max_reply_bytes": {
            "type": "integer",
            "minimum": 1,
            "maximum": 67108864,
            "description": "`http`: largest reply body in bytes, after decompression (default 1 MiB, at most 64 MiB); "
            "reading stops past it and the turn fails",
        },
    },
)
