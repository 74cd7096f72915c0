"""The HTTP system under test: a real session against the reference server, and every way a service can fail."""

from __future__ import annotations

import base64
import importlib.util
import json
import re
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import REPO, default_config  # noqa: E402

from crseval.catalog.index import CatalogIndex  # noqa: E402
from crseval.core.fields import CONCEPT_FIELDS  # noqa: E402
from crseval.language.concepts import ConceptMatcher  # noqa: E402
from crseval.simulate.systems.agents import AgentSettings, TemplateAgent  # noqa: E402
from crseval.simulate.systems.external import ExternalSystemError  # noqa: E402
from crseval.simulate.systems.http_system import HttpSystem  # noqa: E402
from crseval.simulate.user.simulator import UserSimulator  # noqa: E402
from crseval.simulate.user.templates import Templates  # noqa: E402
from crseval.simulate.user.user_plan import SimulatorSettings  # noqa: E402

KEY = "sk-test-7f3a9c2e"


def load_example_server():
    spec = importlib.util.spec_from_file_location("crs_http_server", REPO / "examples" / "crs_http_server.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the file runs
    spec.loader.exec_module(module)
    return module


def serve(server) -> str:
    """Serve `server` in a thread; its URL."""
    server.block_on_close = False  # a handler still sleeping must not hold up the test's end
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/"


@pytest.fixture(scope="module")
def index(catalog_files):
    return CatalogIndex.read(catalog_files / "films.parquet", catalog_files / "concepts.parquet")


@pytest.fixture(scope="module")
def template_server(index):
    module = load_example_server()
    server = module.make_server(module.TemplateRecommender(index, AgentSettings()), "127.0.0.1", 0)
    url = serve(server)
    yield url
    server.shutdown()
    server.server_close()


class FakeService:
    """A loopback service answering each request with the next of `answers`: (status, body, delay_s, headers)."""

    def __init__(self, answers):
        self.answers = list(answers)
        self.requests: list[dict] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                fake.requests.append({"headers": dict(self.headers), "body": json.loads(body)})
                status, payload, delay_s, headers = fake.answers[min(len(fake.requests), len(fake.answers)) - 1]
                time.sleep(delay_s)
                data = payload(self.headers) if callable(payload) else payload
                data = data if isinstance(data, bytes) else json.dumps(data).encode()
                try:
                    self.send_response(status)
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up waiting
                    pass

            def log_message(self, format, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = serve(self.server)

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake():
    services = []

    def start(*answers):
        service = FakeService([a if len(a) == 4 else (*a, 0.0, {})[:4] for a in answers])
        services.append(service)
        return service

    yield start
    for service in services:
        service.close()


def system(url, waits=None, **options):
    settings = {"timeout": 5.0, "retries": 2, "backoff": 0.5, **options}
    http = HttpSystem("my-crs", url, sleep=(waits.append if waits is not None else time.sleep), **settings)
    http.start("s0007", 4242)
    return http


def test_a_real_session_through_the_reference_server_matches_the_template_agent(index, template_server):
    """The user simulator's turns, answered over HTTP and by the template agent in process: the same replies."""
    config = default_config()
    matcher = ConceptMatcher(index.concepts, index.films, CONCEPT_FIELDS)
    seed = 987654
    templates = Templates.load(REPO / config["simulator"]["templates"])
    user = UserSimulator(index, SimulatorSettings.from_config(config["simulator"]), templates, seed, matcher)
    local = TemplateAgent(index, matcher, AgentSettings(), seed)
    http = HttpSystem("template-over-http", template_server, timeout=10.0, retries=0)
    http.start("session-1", seed)
    history, recommended, tracked_fields = [], [], set()
    for turn in range(1, 7):
        text = user.turn(turn, recommended).text
        reply = http.answer(turn, text, list(history))
        expected = local.respond(turn, text)
        assert reply.text == expected.text
        assert reply.recommended == tuple(expected.recommended_titles)
        assert reply.constraints == tuple(c.as_dict() for c in expected.tracked)
        assert http.answer(turn, text, list(history)) == reply  # a repeated turn gets the same answer
        history += [{"role": "user", "content": text}, {"role": "assistant", "content": reply.text}]
        recommended = list(reply.recommended)
        tracked_fields |= {c["field"] for c in reply.constraints}
    assert all(index.film_id(t) is not None for t in recommended) and recommended
    assert len(tracked_fields) >= 2  # the user shifted its focus and the tracker followed
    assert http.requests == 12


def test_a_restarted_server_resumes_a_session_from_its_history(index):
    """The API makes a service stateless through `history`: a server that lost its sessions (a restart)
    rebuilds the session cut mid-way and answers as if it had never stopped; a history it would not
    have answered that way, or of the wrong length, is refused with 409 naming why."""
    module = load_example_server()
    config = default_config()
    matcher = ConceptMatcher(index.concepts, index.films, CONCEPT_FIELDS)
    templates = Templates.load(REPO / config["simulator"]["templates"])
    user = UserSimulator(index, SimulatorSettings.from_config(config["simulator"]), templates, 55, matcher)
    local = TemplateAgent(index, matcher, AgentSettings(), 55)
    history, recommended, servers = [], [], []
    for turn in range(1, 6):
        if turn in (1, 4):  # a fresh server at turn 1 and again at turn 4: the sessions it held are gone
            servers.append(module.make_server(module.TemplateRecommender(index, AgentSettings()), "127.0.0.1", 0))
            http = HttpSystem("template-over-http", serve(servers[-1]), timeout=10.0, retries=0)
            http.start("s0001", 55)
        text = user.turn(turn, recommended).text
        reply = http.answer(turn, text, list(history))
        assert reply.text == local.respond(turn, text).text
        history += [{"role": "user", "content": text}, {"role": "assistant", "content": reply.text}]
        recommended = list(reply.recommended)
    tampered = [*history[:3], {"role": "assistant", "content": "Something I never said."}]
    short = history[:2]
    for wrong, complaint in ((tampered, "holds another reply than this agent"), (short, "holds 2 messages")):
        http.start("another", 55)
        with pytest.raises(ExternalSystemError) as caught:
            http.answer(3, "A comedy, please.", wrong)
        assert "HTTP 409" in str(caught.value) and complaint in str(caught.value) and not caught.value.transient
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(
    "body, complaint",
    [
        (b"<html>Bad gateway</html>", "the reply is not JSON"),
        ({"text": "Try Heat."}, "the reply has no 'reply'; it must be a string"),
        (["Try Heat."], "the reply is a list (['Try Heat.']), not an object with a string 'reply'"),
        ({"reply": 7}, "the reply has 'reply' of type int; it must be a string"),
        ({"reply": "Try Heat.", "recommended": "Heat"}, "'recommended' 'Heat'; it must be a list of title strings"),
        (
            {"reply": "x", "constraints": [{"field": "mood", "value": "dark", "negated": False}]},
            "constraint 1 of 'constraints' with field 'mood'",
        ),
        ({"reply": "x", "constraints": [{"field": "genre", "value": "drama"}]}, "lacks negated"),
        ({"reply": "x", "constraints": [{"field": "genre", "value": "drama", "negated": "no"}]}, "not true or false"),
    ],
)
def test_a_malformed_answer_fails_at_once_naming_what_is_wrong(fake, body, complaint):
    service = fake((200, body))
    waits = []
    with pytest.raises(ExternalSystemError) as caught:
        system(service.url, waits).answer(3, "Something with Al Pacino.", [])
    message = str(caught.value)
    assert complaint in message
    assert "system 'my-crs', session s0007, turn 3" in message and service.url in message
    assert not caught.value.transient
    assert len(service.requests) == 1 and waits == []


def test_the_request_carries_the_session_turn_and_history(fake):
    service = fake((200, {"reply": "Heat (1995).", "recommended": ["Heat"]}))
    history = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]
    reply = system(service.url).answer(2, "Crime films?", history)
    assert (reply.text, reply.recommended, reply.constraints) == ("Heat (1995).", ("Heat",), None)
    assert service.requests[0]["body"] == {
        "session_id": "s0007", "seed": 4242, "turn": 2, "user_text": "Crime films?", "history": history,
    }  # fmt: skip


def test_a_server_error_is_retried_with_growing_waits_then_named(fake):
    service = fake((500, {"error": "model crashed"}))
    waits = []
    with pytest.raises(ExternalSystemError) as caught:
        system(service.url, waits, retries=3).answer(1, "A comedy.", [])
    message = str(caught.value)
    assert caught.value.transient
    assert "HTTP 500" in message and "model crashed" in message and "gave up after 4 attempts" in message
    assert len(service.requests) == 4 and len(waits) == 3
    for attempt, wait in enumerate(waits):  # backoff 0.5 s doubling, each wait between half and all of it
        assert 0.5 * 2**attempt * 0.5 <= wait <= 0.5 * 2**attempt


@pytest.mark.parametrize("status", [500, 503, 429, 408])
def test_a_transient_status_then_an_answer_succeeds(fake, status):
    service = fake((status, {"error": "busy"}, 0.0, {"Retry-After": "3"}), (200, {"reply": "Try Heat."}))
    waits = []
    assert system(service.url, waits).answer(1, "A comedy.", []).text == "Try Heat."
    assert len(service.requests) == 2 and waits == [3.0]  # the server's Retry-After beats a shorter backoff


def test_a_server_slower_than_the_timeout_is_retried_then_named(fake):
    service = fake((200, {"reply": "late"}, 1.5, {}))
    waits = []
    started = time.monotonic()
    with pytest.raises(ExternalSystemError) as caught:
        system(service.url, waits, timeout=0.3, retries=1).answer(2, "A comedy.", [])
    assert caught.value.transient and "no complete reply within the deadline of 0.3 s" in str(caught.value)
    assert "gave up after 2 attempts" in str(caught.value) and len(waits) == 1
    assert time.monotonic() - started < 1.4  # neither attempt waited for the slow answer


def test_a_refused_connection_is_transient(fake):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    waits = []
    with pytest.raises(ExternalSystemError) as caught:
        system(f"http://127.0.0.1:{port}/", waits, retries=2).answer(1, "A comedy.", [])
    assert caught.value.transient and "cannot connect" in str(caught.value) and len(waits) == 2


def test_a_refused_key_is_permanent_and_the_key_is_never_shown(fake, monkeypatch):
    monkeypatch.setenv("MY_CRS_KEY", KEY)
    echo = lambda headers: {"error": f"bad credentials {headers['Authorization']}"}  # noqa: E731
    service = fake((401, echo))
    url = service.url + "chat?token=abc123&lang=en"
    waits = []
    http = system(url, waits, api_key_env="MY_CRS_KEY", headers={"X-Team": "recsys"})
    with pytest.raises(ExternalSystemError) as caught:
        http.answer(1, "A comedy.", [])
    message = str(caught.value)
    assert service.requests[0]["headers"]["Authorization"] == f"Bearer {KEY}"
    assert service.requests[0]["headers"]["X-Team"] == "recsys"
    assert "HTTP 401" in message and "bad credentials Bearer ***" in message
    assert KEY not in message and "abc123" not in message and "token=***&lang=en" in message
    assert not caught.value.transient and len(service.requests) == 1 and waits == []
    described = json.dumps(http.describe())
    assert KEY not in described and "abc123" not in described and "recsys" not in described
    assert http.describe() == {
        "agent": "http",
        "url": url.replace("abc123", "***"),
        "settings": {"headers": ["X-Team"], "authorization": "Bearer"},
        "transport": {"timeout": 5.0, "retries": 2, "backoff": 0.5, "max_reply_bytes": 1048576},
    }


def test_a_password_in_the_url_is_sent_as_basic_auth_and_never_shown(fake):
    echo = lambda headers: {"error": f"no access for {headers['Authorization']}"}  # noqa: E731
    service = fake((403, echo))
    url = service.url.replace("http://", "http://alice:hunter2@")
    with pytest.raises(ExternalSystemError) as caught:
        system(url).answer(1, "A comedy.", [])
    message = str(caught.value)
    sent = service.requests[0]["headers"]["Authorization"]
    assert sent == "Basic " + base64.b64encode(b"alice:hunter2").decode()
    assert "HTTP 403" in message and "no access for Basic ***" in message and "alice:***@" in message
    assert "hunter2" not in message and sent.split()[1] not in message
    assert "hunter2" not in json.dumps(system(url).describe())


def test_two_ways_of_authorising_are_refused(monkeypatch):
    monkeypatch.setenv("MY_CRS_KEY", KEY)
    with pytest.raises(ValueError, match="api_key_env and a user:password in the url") as caught:
        HttpSystem("my-crs", "http://a:b@127.0.0.1:9/", timeout=5.0, retries=1, api_key_env="MY_CRS_KEY")
    assert KEY not in str(caught.value)


def test_a_missing_key_variable_is_named_before_any_request(monkeypatch):
    monkeypatch.delenv("MY_CRS_KEY", raising=False)
    with pytest.raises(ValueError, match="MY_CRS_KEY"):
        HttpSystem("my-crs", "http://127.0.0.1:9/", timeout=5.0, retries=1, api_key_env="MY_CRS_KEY")


@pytest.mark.parametrize(
    "url, options, complaint",
    [
        ("ftp://example.org/crs", {}, "not an http:// or https:// address"),
        ("http://127.0.0.1:9/", {"timeout": 0}, "timeout must be a positive"),
        ("http://127.0.0.1:9/", {"retries": -1}, "retries must be a whole number"),
        ("http://127.0.0.1:9/", {"headers": {"X-Team": "café"}}, "header 'X-Team' cannot be sent"),
        ("http://127.0.0.1:9/", {"headers": {"X-Team": "a\r\nX-Evil: 1"}}, "header 'X-Team' cannot be sent"),
        ("http://127.0.0.1:9/", {"headers": {"X Team": "a"}}, "header 'X Team' cannot be sent"),
    ],
)
def test_settings_that_cannot_work_are_refused(url, options, complaint):
    with pytest.raises(ValueError, match=complaint):
        HttpSystem("my-crs", url, **{"timeout": 5.0, "retries": 1, **options})


def test_answering_before_a_session_started_is_an_error():
    with pytest.raises(ExternalSystemError, match="before start"):
        HttpSystem("my-crs", "http://127.0.0.1:9/", timeout=5.0, retries=0).answer(1, "Hi", [])


def test_the_documented_command_serves_a_catalog_and_checks_the_key(catalog_files, monkeypatch):
    """`python examples/crs_http_server.py --port 0 --catalog DIR --api-key-env VAR`, as a researcher starts it."""
    monkeypatch.setenv("SERVER_KEY", KEY)
    command = [sys.executable, str(REPO / "examples" / "crs_http_server.py"), "--port", "0"]
    command += ["--catalog", str(catalog_files), "--api-key-env", "SERVER_KEY"]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    try:
        found = None
        while found is None:
            line = process.stderr.readline()
            assert line, f"the server stopped before serving (exit {process.poll()})"
            found = re.search(r"template recommender on (http://127\.0\.0\.1:\d+/)", line)
        url = found.group(1)
        monkeypatch.setenv("CLIENT_KEY", KEY)
        reply = system(url, api_key_env="CLIENT_KEY").answer(1, "I would like a comedy, please.", [])
        assert reply.constraints == ({"field": "genre", "value": "comedy", "negated": False},)
        assert reply.recommended and reply.text.count("(") == len(reply.recommended)
        monkeypatch.setenv("CLIENT_KEY", "wrong-key")
        with pytest.raises(ExternalSystemError, match="HTTP 401"):
            system(url, api_key_env="CLIENT_KEY").answer(1, "I would like a comedy, please.", [])
    finally:
        process.terminate()
        process.wait(timeout=10)
        process.stderr.close()


@pytest.mark.parametrize(
    "headers, body, status",
    [
        ({"Content-Length": str(64 << 20)}, b"{}", 413),  # refused unread
        ({"Content-Length": "-5"}, b"{}", 400),
        ({"Content-Length": "twelve"}, b"{}", 400),
        ({"Content-Length": str(200_000)}, b"[" * 100_000 + b"]" * 100_000, 400),
        ({"Content-Length": "4"}, b"\xff\xfe{}", 400),
    ],
)
def test_the_reference_server_bounds_what_it_reads(template_server, headers, body, status):
    host, port = template_server.split("//")[1].rstrip("/").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as connection:
        head = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
        connection.sendall(f"POST / HTTP/1.1\r\nHost: {host}\r\n{head}\r\n".encode() + body[: 1 << 20])
        answer = connection.makefile("rb").readline()
    assert answer.split()[1] == str(status).encode()
