"""Fuzzing the two places where outside text enters: the judge's reply parser and the HTTP backends' body reader.

Whatever arrives, the outcome must be a documented one: a judgement or JudgeParseError (recorded as
missing with the reason); a non-empty reply text or LLMError. Never another exception.
"""

import json
import math

import pytest
from conftest import REPO
from fake_servers import FakeOpenAI, RawReply, ScriptedOllama
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from crseval.judge.judge_columns import CRITERIA
from crseval.judge.llm_judge import Judge, JudgeParseError, parse_judgement
from crseval.language.concepts import ConceptMatcher
from crseval.llm import LLMClient, LLMError, LLMRequest, LLMResponse
from crseval.llm.cache import ResponseCache
from crseval.llm.client import RetryPolicy
from crseval.llm.ollama_backend import OllamaBackend
from crseval.llm.openai_backend import OpenAIBackend
from crseval.llm.prompts import PromptTemplate

FUZZ = settings(derandomize=True, max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
REQUEST = LLMRequest.chat([{"role": "user", "content": "rate"}], max_tokens=20, tag="fuzz@1")

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(-3, 8),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=12), inner, max_size=4)),
    max_leaves=20,
)
criterion_values = st.one_of(
    st.fixed_dictionaries(
        {"score": st.one_of(st.integers(0, 6), scalars), "rationale": st.one_of(st.text(max_size=90), scalars)}
    ),
    st.fixed_dictionaries({"score": st.integers(1, 5), "rationale": st.text(min_size=1, max_size=80)}),
    json_values,
)
judgements = st.fixed_dictionaries(
    {c: criterion_values for c in CRITERIA}, optional={"extra": json_values, "rationale": st.text(max_size=20)}
)


def dumped(value) -> str:
    return json.dumps(value, ensure_ascii=False)


replies = st.one_of(
    st.text(),
    st.binary(max_size=200).map(lambda b: b.decode("utf-8", "replace")),
    json_values.map(dumped),
    judgements.map(dumped),
    judgements.map(lambda j: json.dumps(j)),  # \u escapes, lone surrogates included
    st.tuples(judgements.map(dumped), st.integers(0, 400)).map(lambda t: t[0][: t[1]]),  # cut short
    judgements.map(lambda j: f"```json\n{dumped(j)}\n```"),
    st.sampled_from(
        [
            "",
            "   ",
            "```",
            "```json",
            "null",
            "NaN",
            "Infinity",
            "-Infinity",
            "1e999",
            '"text"',
            "[]",
            "{}",
            '{"proactiveness": {"score": ' + "9" * 5000 + ', "rationale": "x"}}',  # beyond int's digit limit
            "[" * 100_000 + "]" * 100_000,  # deeper than the recursion limit
            '{"proactiveness": {"score": NaN, "rationale": "x"}}',
            '{"proactiveness": {"score": 4.0, "rationale": "a"}, "coherence": {"score": 5e0, "rationale": "b"}, '
            '"personalization": {"score": 1, "rationale": "c"}}',
            '{"proactiveness": {"score": 4, "rationale": "\\ud800"}, "coherence": {"score": 5, "rationale": "b"}, '
            '"personalization": {"score": 1, "rationale": "c"}}',
            '{"proactiveness": {"score": 4, "rationale": "' + "é" * 100_000 + '"}}',
        ]
    ),
)


def check_judgement(reply: str) -> None:
    try:
        result = parse_judgement(reply)
    except JudgeParseError as error:
        assert 0 < len(str(error)) <= 300
        str(error).encode("utf-8")  # the reason is stored in the results table
        return
    assert set(result) == set(CRITERIA)
    for score, rationale in result.values():
        assert type(score) is int and 1 <= score <= 5
        assert isinstance(rationale, str) and 0 < len(rationale) <= 80
        rationale.encode("utf-8")


@FUZZ
@given(replies)
def test_judge_parser_never_crashes(reply):
    check_judgement(reply)


def test_judge_parser_edge_cases():
    floats = parse_judgement(
        '{"proactiveness": {"score": 4.0, "rationale": "a"}, "coherence": {"score": 5e0, '
        '"rationale": "b"}, "personalization": {"score": 1, "rationale": "c"}}'
    )
    assert floats["coherence"] == (5, "b") and type(floats["proactiveness"][0]) is int
    for reply in ['{"proactiveness": {"score": ' + "9" * 5000 + "}}", "[" * 100_000 + "]" * 100_000]:
        with pytest.raises(JudgeParseError, match="not JSON"):
            parse_judgement(reply)
    with pytest.raises(JudgeParseError) as failure:
        parse_judgement('{"proactiveness": {"score": 4, "rationale": "' + "é" * 100_000 + '"}}')
    assert len(str(failure.value)) <= 300


class ReplayClient:
    """Stands in for LLMClient: every call gets the same reply."""

    def __init__(self, reply: str):
        self.reply = reply

    def complete(self, request):
        return LLMResponse(self.reply, "stub", "judge", 0.0, None, None)


SESSION = {
    "system": "s",
    "session_id": "s/s00000",
    "session_index": 0,
    "turns": [{"turn": 1, "user_text": "I'd like a crime movie.", "system_text": "Try Heat."}],
}


@settings(derandomize=True, max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(reply=replies)
@example(reply='{"proactiveness": {"score": ' + "9" * 5000 + "}}").via("beyond int's digit limit")
@example(reply="[" * 100_000).via("deeper than the recursion limit")
def test_junk_judge_replies_end_in_a_row_with_scores_or_a_reason(small_index, reply):
    judge = Judge(
        ReplayClient(reply),
        PromptTemplate(REPO / "resources" / "prompts" / "judge.txt"),
        ConceptMatcher(small_index.concepts, small_index.films),
        {"temperature": 0.2, "top_p": 0.95, "max_tokens": 150},
        samples=1,
        retries=1,
        seed=7,
    )
    row = judge.judge_session(SESSION)
    if row["judge_valid_samples"]:
        assert all(1 <= row[f"judge_{c}"] <= 5 for c in CRITERIA) and row["judge_missing_reason"] is None
    else:
        assert all(math.isnan(row[f"judge_{c}"]) for c in CRITERIA)
        assert isinstance(row["judge_missing_reason"], str) and row["judge_missing_reason"]
        assert row["judge_raw_reply"] == reply


# --- HTTP bodies, fed straight to each backend's body reader --------------------------------------------------------

BACKENDS = {
    "openai": OpenAIBackend("fuzz-model", base_url="http://127.0.0.1:9/v1"),
    "ollama": OllamaBackend("fuzz-model", host="http://127.0.0.1:9"),
}
statuses = st.one_of(
    st.just(200), st.sampled_from([201, 204, 301, 400, 401, 404, 408, 429, 500, 502, 503]), st.integers(100, 599)
)
content_types = st.one_of(
    st.none(),
    st.sampled_from(
        [
            "application/json",
            "application/json; charset=utf-8",
            "text/html",
            "text/plain",
            "application/x-ndjson",
            "",
            "application/json; charset=utf-16",
            "text/html; charset=rot13",
            "text/plain; charset=base64",
            "text/plain; charset=nonsense",
        ]
    ),
    st.text(max_size=20),
    st.text(max_size=12).map(lambda t: f"text/plain; charset={t}"),
)
texts = st.one_of(st.none(), st.just(""), st.just("  "), st.text(), json_values)
messages = st.one_of(json_values, st.fixed_dictionaries({"role": st.just("assistant"), "content": texts}))
counts = st.one_of(st.none(), st.integers(), st.floats(), st.text(max_size=5), st.booleans())
openai_shaped = st.fixed_dictionaries(
    {
        "choices": st.one_of(
            json_values,
            st.lists(
                st.one_of(
                    json_values,
                    st.fixed_dictionaries({"message": messages, "finish_reason": st.one_of(scalars, json_values)}),
                ),
                max_size=2,
            ),
        )
    },
    optional={
        "usage": st.one_of(json_values, st.fixed_dictionaries({"prompt_tokens": counts, "completion_tokens": counts})),
        "error": json_values,
    },
)
ollama_shaped = st.fixed_dictionaries(
    {"message": messages},
    optional={
        "done": st.one_of(st.just(True), scalars),
        "done_reason": scalars,
        "prompt_eval_count": counts,
        "eval_count": counts,
        "error": json_values,
    },
)
bodies = st.one_of(
    st.binary(max_size=300),
    st.text().map(lambda t: t.encode("utf-8", "surrogatepass")),
    json_values.map(lambda v: json.dumps(v).encode()),
    openai_shaped.map(lambda v: json.dumps(v).encode()),
    openai_shaped.map(lambda v: dumped(v).encode("utf-8", "surrogatepass")),
    ollama_shaped.map(lambda v: json.dumps(v).encode()),
    st.tuples(openai_shaped.map(lambda v: json.dumps(v).encode()), st.integers(0, 200)).map(lambda t: t[0][: t[1]]),
    st.sampled_from(
        [
            b"",
            b"\xff\xfe\x00",
            b"[" * 100_000,
            b'{"choices": [{"message": {"content": "' + b"9" * 5000 + b'"}}]}',
            b'{"prompt_eval_count": ' + b"9" * 5000 + b', "message": {"content": "hi"}}',
        ]
    ),
)


@FUZZ
@given(status=statuses, content_type=content_types, body=bodies)
def test_http_body_reader_ends_in_text_or_llm_error(tmp_path_factory, status, content_type, body):
    cache = ResponseCache(tmp_path_factory.mktemp("cache", numbered=True))
    for name, backend in BACKENDS.items():
        try:
            response = backend.parse_reply(status, content_type, body, latency_s=0.01)
        except LLMError as error:
            assert f"{name} model fuzz-model at http://127.0.0.1:9" in str(error) and len(str(error)) < 1000
            str(error).encode("utf-8")
            continue
        assert isinstance(response, LLMResponse) and isinstance(response.text, str) and response.text.strip()
        for tokens in (response.prompt_tokens, response.completion_tokens):
            assert tokens is None or (type(tokens) is int and tokens >= 0)
        cache.put("ab" * 32, response)  # whatever parsed must also survive the cache
        assert cache.get("ab" * 32).text == response.text


def test_body_reader_keeps_good_replies():
    body = json.dumps(
        {
            "choices": [{"message": {"content": "Try Heat."}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 3},
        }
    ).encode()
    response = BACKENDS["openai"].parse_reply(200, "application/json", body, latency_s=0.5)
    assert (response.text, response.prompt_tokens, response.completion_tokens) == ("Try Heat.", 5, 3)
    assert response.extra == {"finish_reason": "stop"} and response.latency_s == 0.5
    body = json.dumps(
        {
            "message": {"role": "assistant", "content": "Try Heat."},
            "done": True,
            "done_reason": "stop",
            "prompt_eval_count": 5,
            "eval_count": 3,
        }
    ).encode()
    response = BACKENDS["ollama"].parse_reply(200, "application/json", body, latency_s=0.5)
    assert (response.text, response.prompt_tokens, response.completion_tokens) == ("Try Heat.", 5, 3)


# --- a few odd servers end to end ---------------------------------------------------------------------------------

ODD_REPLIES = [
    RawReply(204, None, b""),
    RawReply(301, "text/html", b"<a>moved</a>"),
    RawReply(418, "text/plain", b"I'm a teapot"),
    RawReply(429, "application/json", b'{"error": "slow down"}'),
    RawReply(502, "text/html", b"<html>bad gateway</html>"),
    RawReply(200, "application/json; charset=utf-16", '{"choices": []}'.encode("utf-16")),
    RawReply(200, "application/x-ndjson", b'{"message": {"content": "a"}, "done": false}\n{"done": true}\n'),
    RawReply(200, "application/json", b'{"choices": [{"message": {"content": "cut'),
    RawReply(200, "application/json", b'{"choices": [{"message": {"content": "cut short"}}]}', declared_length=5000),
    RawReply(200, "application/json", b"\x1f\x8b\x08\x00garbage"),
    RawReply(
        200,
        "application/json",
        b'{"choices": [{"message": {"content": "\\ud800 lone"}}], "message": {"content": "\\udfff lone"}}',
    ),
]


@pytest.mark.parametrize("raw", ODD_REPLIES, ids=lambda r: f"{r.status}-{r.content_type}-{bytes(r.body)[:12]!r}")
def test_odd_servers_end_in_text_or_llm_error(tmp_path, raw):
    retry = RetryPolicy(max_retries=1, backoff_s=0.0)
    with FakeOpenAI(raw=[raw] * 2) as openai_server, ScriptedOllama(raw=[raw] * 2) as ollama_server:
        for backend in (
            OpenAIBackend("m", base_url=openai_server.base_url, timeout_s=5),
            OllamaBackend("m", host=ollama_server.host, timeout_s=5),
        ):
            try:
                response = LLMClient(backend, ResponseCache(tmp_path), retry=retry).complete(REQUEST)
            except LLMError as error:
                assert f"{backend.name} model m" in str(error)
                continue
            assert response.text.strip() and not math.isnan(response.latency_s)
