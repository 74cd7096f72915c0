"""Services that misbehave on purpose, on loopback: a body that never ends, one over the bound, one that
trickles in past the deadline, one that expands when decompressed, and redirects to this and other
origins. Each ends in a named error within the deadline (plus the retries' backoff), with the job's
memory bounded, nothing stored, and no credential sent anywhere but the configured origin: for a
recommender under test (`agent: http`) and for both server LLM backends.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import time
import zlib

import pytest
from conftest import default_config
from hostile_services import (
    Service,
    answer,
    by_path,
    compressed,
    endless,
    head,
    oversized,
    redirect,
    trickle,
    unused_port,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_sessions import arguments, read_jsonl

from crseval.core.bounded_http import BoundedPoster, Bounds, HttpFailure, UnreadableEncoding, _Decoder
from crseval.llm import LLMClient, LLMError, LLMRequest
from crseval.llm.client import RetryPolicy, make_backend
from crseval.llm.server import reply_bound
from crseval.planning import check_config
from crseval.simulate.shard import build_shard_runner
from crseval.simulate.systems.external import ExternalSystemError
from crseval.simulate.systems.http_system import HttpSystem

KEY = "sk-live-d41d8cd98f00"
BOUND = 1 << 20

TOO_LARGE = {
    "endless body": endless(),
    "endless chunked body": endless(chunked=True),
    "declared 300 MB": oversized(300 << 20),
    "undeclared 5 MB": oversized(5 << 20, declare_length=False),
    "gzip that expands to 200 MB": compressed(200 << 20),
    "deflate that expands to 200 MB": compressed(200 << 20, encoding="deflate"),
}
TOO_SLOW = {
    "a byte every 0.25 s of the body": trickle(0.25),
    "a header line every 0.25 s": trickle(0.25, in_headers=True),
}


def http_system(url, waits=None, **options) -> HttpSystem:
    settings = {"timeout": 2.0, "retries": 1, "backoff": 0.5, "api_key_env": "MY_CRS_KEY", **options}
    system = HttpSystem("my-crs", url, sleep=(waits.append if waits is not None else time.sleep), **settings)
    system.start("my-crs/s00004", 77)
    return system


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv("MY_CRS_KEY", KEY)


# --- a recommender under test ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("fault", TOO_LARGE, ids=list(TOO_LARGE))
def test_a_reply_over_the_bound_fails_at_once_naming_turn_bound_and_what_arrived(fault):
    waits = []
    with Service(TOO_LARGE[fault]) as service:
        started = time.monotonic()
        with pytest.raises(ExternalSystemError) as caught:
            http_system(service.url, waits).answer(3, "Something with Tom Hanks?", [])
        elapsed = time.monotonic() - started
    message = str(caught.value)
    assert message.startswith(f"system 'my-crs', session my-crs/s00004, turn 3: POST {service.url}: ")
    assert "bound of 1,048,576 bytes" in message and "max_reply_bytes" in message
    assert "reading stopped after" in message or "nothing of it was read" in message
    assert not caught.value.transient and len(service.requests) == 1 and waits == []  # asking again gets the same
    assert elapsed < 2.0


@pytest.mark.parametrize("fault", TOO_SLOW, ids=list(TOO_SLOW))
def test_a_reply_trickling_past_the_deadline_is_cut_off_and_retried(fault):
    waits = []
    with Service(TOO_SLOW[fault]) as service:
        started = time.monotonic()
        with pytest.raises(ExternalSystemError) as caught:
            http_system(service.url, waits, timeout=1.0).answer(2, "A drama.", [])
        elapsed = time.monotonic() - started
    message = str(caught.value)
    assert "turn 2" in message and "no complete reply within the deadline of 1 s" in message
    assert ("of the body had arrived" in message) == ("body" in fault)
    assert "gave up after 2 attempts" in message and caught.value.transient
    assert len(service.requests) == 2 and len(waits) == 1
    assert 2.0 <= elapsed < 2 * 1.0 + 1.0  # two whole deadlines (the backoff is recorded, not slept)


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_to_another_origin_sends_it_nothing(status):
    with Service(answer({"reply": "stolen"})) as elsewhere:
        target = elsewhere.url.rstrip("/") + "/collect?api_key=abc123def456"
        with Service(redirect(status, target)) as service:
            user_url = service.url.replace("http://", "http://alice:hunter22@")
            with pytest.raises(ExternalSystemError) as caught:
                http_system(user_url, api_key_env=None, headers={"X-Api-Key": "team-key-998877"}).answer(1, "Hi", [])
        assert elsewhere.requests == []
    message = str(caught.value)
    assert f"HTTP {status}" in message and "another origin" in message
    assert f"{elsewhere.url.rstrip('/')}/collect?api_key=***" in message
    assert "abc123def456" not in message and "hunter22" not in message
    assert not caught.value.transient and len(service.requests) == 1
    assert service.requests[0].headers["authorization"].startswith("Basic ")


@pytest.mark.parametrize("status", [307, 308])
def test_a_redirect_within_the_origin_is_followed_with_the_same_post(status):
    routes = {"/old": redirect(status, "/new"), "/new": answer({"reply": "Try Heat.", "recommended": ["Heat"]})}
    with Service(by_path(routes, answer({}, status=404))) as service:
        reply = http_system(service.url + "old").answer(1, "A heist film.", [])
    assert reply.text == "Try Heat." and list(reply.recommended) == ["Heat"]
    first, second = service.requests
    assert (first.method, first.path, second.method, second.path) == ("POST", "/old", "POST", "/new")
    assert second.body == first.body and json.loads(second.body)["user_text"] == "A heist film."
    assert second.headers["authorization"] == f"Bearer {KEY}"


@pytest.mark.parametrize("status", [301, 302, 303])
def test_a_redirect_that_would_turn_the_post_into_a_get_is_refused(status):
    routes = {"/old": redirect(status, "/new"), "/new": answer({"reply": "Try Heat."})}
    with Service(by_path(routes, answer({}, status=404))) as service:
        with pytest.raises(ExternalSystemError, match=rf"HTTP {status}.*/new refused .*turn it into a GET"):
            http_system(service.url + "old").answer(1, "A heist film.", [])
    assert [r.path for r in service.requests] == ["/old"]


def test_a_redirect_loop_ends():
    with Service(redirect(307, "/again")) as service:
        with pytest.raises(ExternalSystemError, match="more than 5 redirects"):
            http_system(service.url).answer(1, "Hi", [])
    assert len(service.requests) == 6


def test_a_small_compressed_reply_is_read():
    with Service(compressed(5000)) as service:
        reply = http_system(service.url).answer(1, "Hi", [])
    assert reply.text == "z" * (5000 - 13)


def test_a_larger_bound_admits_a_larger_reply():
    with Service(oversized(3 << 20)) as service:
        assert len(http_system(service.url, max_reply_bytes=4 << 20).answer(1, "Hi", []).text) == (3 << 20) - 13
        with pytest.raises(ExternalSystemError, match="bound of 2,097,152 bytes"):
            http_system(service.url, max_reply_bytes=2 << 20).answer(1, "Hi", [])


@pytest.mark.parametrize("bound", [0, (64 << 20) + 1, 1.5])
def test_a_bound_outside_its_range_is_refused(bound):
    with pytest.raises(ValueError, match="max_reply_bytes"):
        HttpSystem("my-crs", "http://127.0.0.1:9/", timeout=1.0, retries=0, max_reply_bytes=bound)


# --- the LLM server backends -----------------------------------------------------------------------------------------

REQUEST = LLMRequest.chat([{"role": "user", "content": "A comedy?"}], max_tokens=32, seed=3, tag="bounds@1")


def llm(kind: str, url: str, **runtime) -> LLMClient:
    settings = {"type": kind, "model": "m"}
    settings.update({"base_url": url + "v1", "api_key_env": "MY_CRS_KEY"} if kind == "openai" else {"host": url})
    backend = make_backend(settings, timeout_s=runtime.pop("timeout_s", 2.0), **runtime)
    return LLMClient(backend, None, retry=RetryPolicy(max_retries=1, backoff_s=0.0))


@pytest.mark.parametrize("kind", ["openai", "ollama"])
@pytest.mark.parametrize("fault", ["endless body", "gzip that expands to 200 MB"])
def test_an_llm_reply_over_the_bound_fails_at_once(kind, fault):
    with Service(TOO_LARGE[fault]) as service:
        client = llm(kind, service.url)
        with pytest.raises(LLMError) as caught:
            client.complete(REQUEST)
    bound = reply_bound(REQUEST)
    assert f"{kind} model m at " in str(caught.value) and f"bound of {bound:,} bytes" in str(caught.value)
    assert "max_tokens 32" in str(caught.value) and "llm.max_reply_bytes" in str(caught.value)
    assert client.calls == 1 and len(service.requests) == 1


@pytest.mark.parametrize("kind", ["openai", "ollama"])
def test_an_llm_reply_trickling_past_the_deadline_is_retried_then_named(kind):
    with Service(trickle(0.2)) as service:
        client = llm(kind, service.url, timeout_s=1.0)
        started = time.monotonic()
        with pytest.raises(LLMError, match=r"giving up after 2 attempts: .*deadline of 1 s"):
            client.complete(REQUEST)
        assert time.monotonic() - started < 2 * 1.0 + 1.0
    assert client.calls == 2


@pytest.mark.parametrize("kind", ["openai", "ollama"])
def test_an_llm_server_redirecting_elsewhere_gets_no_key(kind, monkeypatch):
    monkeypatch.setenv("OLLAMA_API_KEY", KEY)  # the key Ollama's hosted service takes
    with Service(answer({"stolen": True})) as elsewhere:
        with Service(redirect(307, elsewhere.url + "v1/chat/completions")) as service:
            with pytest.raises(LLMError, match="HTTP 307 .*another origin") as caught:
                llm(kind, service.url).complete(REQUEST)
        assert elsewhere.requests == []
    assert service.requests[0].headers["authorization"] == f"Bearer {KEY}" and KEY not in str(caught.value)


def test_an_llm_reply_bound_can_be_set():
    with Service(oversized(300_000)) as service:
        with pytest.raises(LLMError, match="bound of 200,000 bytes"):
            llm("openai", service.url, max_reply_bytes=200_000).complete(REQUEST)


def test_the_derived_bound_grows_with_tokens_and_their_probabilities():
    assert reply_bound(REQUEST) == 64 * 1024 + 32 * 512
    asking = LLMRequest(**{**REQUEST.__dict__, "top_logprobs": 5})
    assert reply_bound(asking) == 64 * 1024 + 32 * 512 * 6
    assert reply_bound(LLMRequest(**{**REQUEST.__dict__, "max_tokens": 10**6})) == 64 << 20
    assert reply_bound(REQUEST, configured=5000) == 5000


# --- memory, and what a simulate job keeps ---------------------------------------------------------------------------

CHILD = """
import sys, time
from crseval.simulate.systems.http_system import HttpSystem
system = HttpSystem("my-crs", sys.argv[1], timeout=float(sys.argv[2]), retries=1, backoff=0.1,
                    max_reply_bytes=int(sys.argv[3]))
system.start("my-crs/s00000", 1)
started = time.monotonic()
try:
    system.answer(1, "Hi", [])
except Exception as error:
    print(type(error).__name__, round(time.monotonic() - started, 2), error, file=sys.stderr)
# the peak of this process's own memory (ru_maxrss would count the parent's, from before the exec)
peak_kb = next(line for line in open("/proc/self/status") if line.startswith("VmHWM:")).split()[1]
print(int(peak_kb) // 1024)
"""


@pytest.mark.parametrize("fault, deadline, bound", [("endless body", 20.0, 64 << 20), ("trickle", 1.5, 64 << 20)])
def test_the_job_memory_stays_flat_whatever_the_body(fault, deadline, bound):
    """In a process of its own (its peak resident memory is its own): the largest bound there is, against
    a body that never ends (fast: the size bound ends it) and one that trickles (the deadline ends it)."""
    behaviour = endless() if fault == "endless body" else trickle(0.05)
    with Service(behaviour) as service:
        started = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-c", CHILD, service.url, str(deadline), str(bound)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    peak_mb = int(done.stdout.split()[-1])
    assert "ExternalSystemError" in done.stderr
    assert peak_mb < 400, f"peak {peak_mb} MB"  # the bound (64 MiB) twice over, plus the interpreter
    if fault == "trickle":
        assert "deadline of 1.5 s" in done.stderr and elapsed < 2 * 1.5 + 0.1 + 5  # + interpreter start-up
    else:
        assert "bound of 67,108,864 bytes" in done.stderr


def session_of(request) -> int:
    return int(json.loads(request.body)["session_id"].rsplit("s", 1)[1])


def test_a_simulate_job_keeps_the_sessions_before_and_stores_nothing_of_the_bad_reply(catalog_files, tmp_path):
    broken_session, broken_turn = 2, 2

    def behave(write, request):
        data = json.loads(request.body)
        if session_of(request) == broken_session and data["turn"] == broken_turn:
            return endless()(write, request)
        return answer({"reply": f"You could watch Heat (turn {data['turn']}).", "recommended": ["Heat"]})(
            write, request
        )

    with Service(behave) as service:
        system = {"name": "served", "agent": "http", "url": service.url, "timeout": 5, "retries": 2}
        system["max_reply_bytes"] = 4096  # the config's bound reaches the system
        runner = build_shard_runner(**arguments(catalog_files, system, tmp_path, turns=3))
        progress, output = tmp_path / "progress.jsonl", tmp_path / "shard.jsonl"
        at = rf"session served/s0000{broken_session}, turn {broken_turn}: .*bound of 4,096 bytes"
        with pytest.raises(ExternalSystemError, match=at):
            runner.run(range(4), progress=progress, output=output)
    assert not output.exists()
    assert [r["session_index"] for r in read_jsonl(progress)] == [0, 1]
    cached = list((tmp_path / "cache" / "external").rglob("*.json"))
    assert len(cached) == 2 * 3 + (broken_turn - 1)  # the turns answered before, nothing of the bad one
    assert max(path.stat().st_size for path in cached) < 1000
    assert max(len(line) for line in progress.read_text().splitlines()) < 100_000
    assert len(service.requests) == 2 * 3 + broken_turn  # the bad reply was asked for once


# --- the poster alone ------------------------------------------------------------------------------------------------


def test_a_refused_connection_and_a_bad_scheme_are_named():
    poster = BoundedPoster()
    with pytest.raises(HttpFailure, match="cannot connect") as caught:
        poster.post(f"http://127.0.0.1:{unused_port()}/", b"{}", {}, Bounds(BOUND, 2.0))
    assert caught.value.transient
    with pytest.raises(HttpFailure, match="cannot send the request") as caught:
        poster.post("ftp://127.0.0.1/", b"{}", {}, Bounds(BOUND, 2.0))
    assert not caught.value.transient


def test_an_error_status_gives_only_the_start_of_its_body():
    with Service(endless(prefix=b"<html>busy", chunked=True)) as service:

        def busy(write, request):
            write(b"HTTP/1.1 503 Busy\r\nConnection: close\r\n\r\n<html>busy" + b"x" * (10 << 20))

        service.behaviour = busy
        reply = BoundedPoster().post(service.url, b"{}", {}, Bounds(BOUND, 5.0))
    assert reply.status == 503 and reply.body.startswith(b"<html>busy") and len(reply.body) == 64 << 10


# --- any body: a reply or a named error ------------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12,
)
reply_shaped = st.fixed_dictionaries(
    {"reply": st.one_of(st.text(max_size=40), json_values)},
    optional={
        "recommended": st.one_of(st.lists(st.text(max_size=20), max_size=3), json_values),
        "constraints": st.one_of(
            st.lists(
                st.fixed_dictionaries(
                    {"field": st.sampled_from(["genre", "actor", "year", "nope"]), "value": json_values},
                    optional={"negated": json_values},
                ),
                max_size=2,
            ),
            json_values,
        ),
    },
)
reply_bodies = st.one_of(
    st.binary(max_size=300),
    st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass")),
    json_values.map(lambda v: json.dumps(v).encode()),
    reply_shaped.map(lambda v: json.dumps(v).encode()),
    reply_shaped.map(lambda v: json.dumps(v, ensure_ascii=False).encode("utf-8", "surrogatepass")),
    st.tuples(reply_shaped.map(lambda v: json.dumps(v).encode()), st.integers(0, 60)).map(lambda t: t[0][: t[1]]),
    st.sampled_from([b"", b"[" * 100_000, b'{"reply": ' + b"[" * 50_000 + b"]" * 50_000 + b"}", b"\xef\xbb\xbf{}"]),
)
PROPERTY = settings(derandomize=True, max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(body=reply_bodies)
def test_any_body_parses_into_a_reply_or_a_named_error(body):
    system = http_system("http://127.0.0.1:9/")
    try:
        reply = system._parse(body, "system 'my-crs', session my-crs/s00004, turn 1")
    except ExternalSystemError as error:
        assert str(error).startswith("system 'my-crs', session my-crs/s00004, turn 1: ") and not error.transient
        assert len(str(error)) < 2000
        str(error).encode("utf-8")  # writable to a log
        return
    assert isinstance(reply.text, str)  # a blank text is refused by the caller (ExternalCalls), naming the turn
    json.dumps([reply.text, reply.recommended, reply.constraints], ensure_ascii=False).encode("utf-8")


encodings = st.sampled_from(["identity", "gzip", "deflate", "x-gzip", "br", "gzip, gzip", ""])


@settings(derandomize=True, max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=reply_bodies, encoding=encodings, pack=st.booleans(), cut=st.integers(0, 40))
def test_any_body_over_the_wire_ends_in_a_reply_or_a_named_error(body, encoding, pack, cut):
    """Through a loopback service: encoded as its header says (or not: `pack` false sends the bytes as they
    are under any Content-Encoding), cut short by `cut` bytes, with a bound of 2 kB."""
    if pack and encoding in ("gzip", "x-gzip"):
        body = gzip.compress(body)
    elif pack and encoding == "deflate":
        body = zlib.compress(body)
    body = body[: max(len(body) - cut, 0)] if cut < 20 else body
    headers = ("Content-Type", "application/json"), ("Content-Encoding", encoding)

    def behave(write, request):
        write(head(200, *headers) + body)

    with Service(behave) as service:
        try:
            reply = http_system(service.url, max_reply_bytes=2048, retries=0).answer(1, "Hi", [])
        except ExternalSystemError as error:
            assert str(error).startswith("system 'my-crs', session my-crs/s00004, turn 1: POST ")
            return
    assert isinstance(reply.text, str)


@PROPERTY
@given(data=st.binary(max_size=4000), encoding=st.sampled_from(["gzip", "deflate"]), wanted=st.integers(1, 3000))
def test_the_decoder_gives_at_most_what_is_wanted_or_a_named_error(data, encoding, wanted):
    packed = gzip.compress(data) if encoding == "gzip" else zlib.compress(data)
    for body in (packed, data, packed[: len(packed) // 2]):
        decoder = _Decoder(encoding)
        try:
            out = b"".join(decoder.feed(body, wanted))
            if len(out) < wanted:
                decoder.finish()
        except UnreadableEncoding:
            continue
        assert len(out) <= wanted + 65536
        if body is packed:
            assert out == data[: len(out)] and (len(out) >= wanted or out == data)


@pytest.mark.parametrize("kind", ["openai", "ollama"])
def test_an_llm_server_redirecting_within_its_origin_is_followed_with_the_same_post(kind):
    completion = {"choices": [{"message": {"content": "Try Heat."}, "finish_reason": "stop"}]}
    chat = {"message": {"role": "assistant", "content": "Try Heat."}, "done": True}
    routes = {"/moved": answer(completion if kind == "openai" else chat)}
    with Service(by_path(routes, redirect(308, "/moved"))) as service:
        assert llm(kind, service.url).complete(REQUEST).text == "Try Heat."
    first, second = service.requests
    assert (first.method, second.method, second.path) == ("POST", "POST", "/moved") and second.body == first.body
    assert json.loads(second.body)["messages"] == [{"role": "user", "content": "A comedy?"}]


@pytest.mark.parametrize("bound, problem", [(4096, None), (0, "0 is less than the minimum of 1"), (1 << 30, "maximum")])
def test_the_config_takes_a_bound_within_its_range(bound, problem):
    config = default_config()
    config["systems"] = [{"name": "served", "agent": "http", "url": "http://127.0.0.1:9/", "timeout": 5, "retries": 1}]
    config["systems"][0]["max_reply_bytes"] = bound
    config["llm"]["max_reply_bytes"] = bound
    if problem is None:
        check_config(config)
        return
    with pytest.raises(ValueError, match=problem) as caught:
        check_config(config)
    assert "systems[0].max_reply_bytes" in str(caught.value) and "llm.max_reply_bytes" in str(caught.value)
