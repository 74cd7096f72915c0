"""The whole-request deadline of the one POST that reads from the network (crseval.core.bounded_http): a name
server that never answers fails the request within it, an answer before it arrives whole; and the strict reader
of outside JSON refuses what JSON has not, saying what."""

from __future__ import annotations

import copy
import json
import re
import socket
import threading
import time

import pytest

from crseval.core.bounded_http import BoundedPoster, Bounds, DeadlinePassed

# --- a resolver that never answers ----------------------------------------------------------------------------------


def test_a_name_server_that_never_answers_fails_the_request_within_its_deadline(monkeypatch):
    released = threading.Event()
    asked = []

    def hanging(host, *args, **kwargs):
        asked.append(host)
        released.wait(30)
        raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")

    for variable in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setattr(socket, "getaddrinfo", hanging)
    poster = BoundedPoster()
    try:
        started = time.monotonic()
        with pytest.raises(DeadlinePassed) as error:
            poster.post("http://crs.example.invalid:8765/", b"{}", {}, Bounds(max_bytes=1024, deadline_s=0.5))
        elapsed = time.monotonic() - started
    finally:
        released.set()
        poster.close()
    assert asked == ["crs.example.invalid"]
    assert 0.5 <= elapsed < 0.5 + 0.3, elapsed  # the deadline, not the resolver's 30 s
    assert str(error.value) == (
        "no complete reply within the deadline of 0.5 s (the whole request): no connection had been made "
        "(resolving the host name 'crs.example.invalid' or connecting to it had not finished)"
    )


def test_an_answer_before_the_deadline_still_arrives_whole():
    """The request runs in a worker thread now: its reply, and its own errors, reach the caller unchanged."""
    from hostile_services import Service, answer

    with Service(answer({"reply": "Try Heat."})) as service:
        poster = BoundedPoster()
        reply = poster.post(service.url, b"{}", {}, Bounds(max_bytes=1024, deadline_s=5))
        assert reply.status == 200 and json.loads(reply.body) == {"reply": "Try Heat."}
        assert copy.copy(service.requests[0].body) == b"{}"
        poster.close()


@pytest.mark.parametrize(
    "text, problem",
    [
        ('{"a": NaN}', "NaN is no JSON value"),
        ("[1, -Infinity]", "-Infinity is no JSON value"),
        ('{"a": 1e400}', "the number 1e400 is out of a double's range"),
        ('{"a": 1, "b": {"c": 2, "c": 3}}', "the key 'c' is given twice in one object"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ("1" * 5_000, "Exceeds the limit"),  # Python's own bound on converting digits, named rather than raised
    ],
)
def test_strict_json_refuses_what_json_has_not(text, problem):
    """The one strict reader of outside JSON (tool calls, corpora, voices): each refusal says what it refused;
    text that is no JSON at all stays json.JSONDecodeError, so that callers can say where."""
    from crseval.core.io import StrictJSONError, strict_json_loads

    with pytest.raises(StrictJSONError, match=re.escape(problem)):
        strict_json_loads(text)
    with pytest.raises(json.JSONDecodeError):
        strict_json_loads('{"a": ')
    assert strict_json_loads('{"a": [1, 2.5, "x"], "b": {"c": null}}') == {"a": [1, 2.5, "x"], "b": {"c": None}}
    with pytest.raises(StrictJSONError, match="a number of 21 digits; at most 20"):
        strict_json_loads("1" * 21, max_int_digits=20)
