"""A reference recommender behind crseval's HTTP API: the project's template agent, one per session.

Run it on an indexed catalog (the folder the `index_catalog` rule writes, e.g. results/demo/catalog):

    python examples/crs_http_server.py --port 8765 --catalog results/demo/catalog

and put it under test with a system
`{name: my-crs, agent: http, url: "http://127.0.0.1:8765/", timeout: 30, retries: 2}`.

The API (what any service under test implements)
------------------------------------------------
One request per user turn: `POST <url>` with a JSON body

    {"session_id": "s0003", "seed": 123456, "turn": 1, "user_text": "I'd like a comedy.",
     "history": [{"role": "user" | "assistant", "content": "..."}, ...]}

`turn` counts from 1; turn 1 starts the session (there is no separate start call), `seed` is the
session's seed (use it for any randomness, so that runs repeat), `history` is the conversation before
this user turn, so a stateless service needs no memory. The answer is 200 with

    {"reply": "text shown to the user",
     "recommended": ["Title", ...],                                  (optional)
     "constraints": [{"field": "genre", "value": "comedy", "negated": false}, ...]}   (optional)

`recommended` lists the catalog titles the reply recommends; `constraints` the preferences the
system says it tracks (fields: genre, actor, director, writer, language, year, plot_keyword). Leave
either out when the system does not expose them: the evaluator then reads titles from the reply text.
A request repeated for the same session and turn (a retry after a lost answer) must get the same
answer. Errors: 5xx, 408 and 429 (with an optional Retry-After) are retried with backoff; any other
status, or a body that is not this JSON, fails the session with the status and the first 200
characters of the body. With `api_key_env` set in the system's config the evaluator sends
`Authorization: Bearer <key>`.

This server keeps one template agent per session_id (created at turn 1 with the session's seed, as
the `simulate` rule creates its agents), answers turn n+1 after turn n and repeats its stored answer
for a repeated turn. A session it does not hold at that turn (the server restarted, or the evaluator
resumed a session cut mid-way) is rebuilt from `history`: a new agent with the session's seed is
replayed through the earlier user turns, and must give back the replies `history` holds; a history
this agent would not have answered that way is refused with 409. Standard library only besides crseval.

Arguments: --catalog DIR (films.parquet and concepts.parquet from index_catalog), --host (default
127.0.0.1), --port (default 8765; 0 picks a free one), --candidates and --track-plot-keywords (the
config's `agent:` section: candidates retrieved per turn, plot keywords tracked), --api-key-env VAR
(require `Authorization: Bearer $VAR`).
"""

from __future__ import annotations

import argparse
import hmac
import json
import logging
import os
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from crseval.catalog.index import CatalogIndex
from crseval.core.fields import CONCEPT_FIELDS, KEYWORD_FIELD
from crseval.language.concepts import ConceptMatcher
from crseval.simulate.systems.agents import AgentSettings, TemplateAgent

log = logging.getLogger("crs_http_server")


@dataclass
class _Session:
    agent: TemplateAgent
    turn: int = 0
    answer: dict | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)


class TemplateRecommender:
    """The template agent of the `simulate` rule, one per session, behind the API's request/answer."""

    def __init__(self, index: CatalogIndex, settings: AgentSettings):
        fields = CONCEPT_FIELDS + (KEYWORD_FIELD,) if settings.track_plot_keywords else CONCEPT_FIELDS
        self.index = index
        self.matcher = ConceptMatcher(index.concepts, index.films, fields)
        self.settings = settings
        self.sessions: dict[str, _Session] = {}
        self._lock = threading.Lock()

    def answer(self, request: dict) -> tuple[int, dict]:
        """(HTTP status, JSON body) for one request body."""
        problem = _request_problem(request)
        if problem:
            return 400, {"error": problem}
        session_id, turn = request["session_id"], request["turn"]
        with self._lock:
            session = self.sessions.get(session_id)
            if session is None or turn not in (session.turn, session.turn + 1):
                session = _Session(TemplateAgent(self.index, self.matcher, self.settings, request["seed"]))
                self.sessions[session_id] = session
        with session.lock:
            if turn == session.turn:
                return 200, session.answer
            if session.turn < turn - 1:
                problem = self._replay(session, request)
                if problem:
                    return 409, {"error": f"session {session_id!r}, turn {turn}: {problem}"}
            session.answer = _answer_of(session.agent.respond(turn, request["user_text"]))
            session.turn = turn
            return 200, session.answer

    @staticmethod
    def _replay(session: _Session, request: dict) -> str | None:
        """Bring a fresh agent to the request's turn by replaying `history`; what is wrong, if it cannot."""
        history, turn = request["history"], request["turn"]
        if len(history) != 2 * (turn - 1):
            return f"'history' holds {len(history)} messages; turn {turn} needs the {2 * (turn - 1)} before it"
        try:
            reply = session.agent.catch_up(history)
        except ValueError as problem:
            return f"{problem}: cannot resume the session"
        session.turn, session.answer = turn - 1, _answer_of(reply)
        return None


def _answer_of(reply) -> dict:
    return {
        "reply": reply.text,
        "recommended": reply.recommended_titles,
        "constraints": [c.as_dict() for c in reply.tracked],
    }


def _request_problem(request) -> str | None:
    if not isinstance(request, dict):
        return "the body must be a JSON object"
    types = {"session_id": str, "seed": int, "turn": int, "user_text": str, "history": list}
    for key, kind in types.items():
        if key not in request:
            return f"the body lacks {key!r}"
        if not isinstance(request[key], kind) or isinstance(request[key], bool):
            return f"{key!r} must be a {kind.__name__}"
    if request["turn"] < 1:
        return "'turn' counts from 1"
    for message in request["history"]:
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            return "'history' must hold {role: user|assistant, content} objects"
        if not isinstance(message.get("content"), str):
            return "every 'history' message needs a string 'content'"
    return None


MAX_REQUEST_BYTES = 16 << 20  # a whole conversation's history is a few hundred kB at most
REQUEST_TIMEOUT_S = 60


def make_server(recommender: TemplateRecommender, host: str, port: int, api_key: str | None = None):
    """A threading HTTP server answering the API on every path; port 0 binds a free port."""

    class Handler(BaseHTTPRequestHandler):
        timeout = REQUEST_TIMEOUT_S  # a client that stops sending mid-request does not hold a thread for ever

        def do_POST(self):
            if api_key is not None:
                given = self.headers.get("Authorization", "")
                if not hmac.compare_digest(given.encode(), f"Bearer {api_key}".encode()):
                    return self._send(401, {"error": "missing or wrong bearer token"})
            length = self.headers.get("Content-Length") or "0"
            if not length.isdigit():
                return self._send(400, {"error": "a request needs a Content-Length of whole bytes"})
            if int(length) > MAX_REQUEST_BYTES:
                self.close_connection = True  # the body is left unread
                return self._send(413, {"error": f"a request is at most {MAX_REQUEST_BYTES} bytes"})
            try:
                request = json.loads(self.rfile.read(int(length)).decode("utf-8"))
            except RecursionError:
                return self._send(400, {"error": "the body is not JSON: nested too deeply"})
            except ValueError as error:  # not UTF-8, not JSON
                return self._send(400, {"error": f"the body is not JSON: {error}"})
            try:
                status, body = recommender.answer(request)
            except Exception as error:  # the agent failed: say so instead of dropping the connection
                log.exception("answering %s", request.get("session_id") if isinstance(request, dict) else request)
                status, body = 500, {"error": f"{type(error).__name__}: {error}"}
            self._send(status, body)

        def _send(self, status: int, body: dict):
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format, *args):
            log.info("%s %s", self.address_string(), format % args)

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    return server


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--catalog", type=Path, required=True, help="folder with films.parquet and concepts.parquet")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--candidates", type=int, default=AgentSettings.candidates)
    parser.add_argument("--track-plot-keywords", action="store_true")
    parser.add_argument("--api-key-env", help="environment variable holding the bearer token to require")
    args = parser.parse_args(argv)
    films, concepts = args.catalog / "films.parquet", args.catalog / "concepts.parquet"
    for path in (films, concepts):
        if not path.is_file():
            parser.error(f"{path} does not exist: --catalog takes the folder the index_catalog rule writes")
    api_key = None
    if args.api_key_env:
        api_key = os.environ.get(args.api_key_env)
        if not api_key:
            parser.error(f"environment variable {args.api_key_env} is not set")
    settings = AgentSettings(candidates=args.candidates, track_plot_keywords=args.track_plot_keywords)
    recommender = TemplateRecommender(CatalogIndex.read(films, concepts), settings)
    server = make_server(recommender, args.host, args.port, api_key)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    log.info("template recommender on http://%s:%d/", *server.server_address[:2])
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
