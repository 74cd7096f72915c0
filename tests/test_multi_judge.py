"""Several judges and the G-Eval score: token probabilities weighed by hand, panel judges' columns,
settings, agreement between judges, and a workflow in which changing one judge re-runs only its jobs."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pandas as pd
import pytest
from conftest import REPO, default_config, load_test_config, planned_jobs, run_snakemake, write_config
from fake_servers import FakeOllama, FakeOpenAI
from test_judge import SESSION, make_judge, reply

from crseval import planning
from crseval.core.config_checks import ConfigError, load_schema
from crseval.judge import judge_columns, reliability
from crseval.judge.geval import GEvalError, expected_score, geval_scores, score_offsets, token_at
from crseval.judge.llm_judge import Judge
from crseval.llm import LLMClient, LLMResponse
from crseval.llm.cache import ResponseCache
from crseval.llm.client import RetryPolicy
from crseval.llm.openai_backend import OpenAIBackend
from crseval.llm.prompts import PromptTemplate
from crseval.planning import check_config
from crseval.statistics import aggregate, column_registry

# --- G-Eval on stubbed token probabilities ---------------------------------------------------------

# Hand-made probabilities of the digits where each score is written, and the score each reply writes.
DIGITS = {
    "proactiveness": ({3: 0.2, 4: 0.5, 5: 0.3}, 4),  # G = 0.6 + 2.0 + 1.5 = 4.1
    "coherence": ({1: 0.1, 2: 0.1, 5: 0.6}, 5),  # G = (0.1 + 0.2 + 3.0) / 0.8 = 4.125
    "personalization": ({2: 0.5, 3: 0.25}, 3),  # G = (1.0 + 0.75) / 0.75 = 2.3333...
}
EXPECTED = {"proactiveness": 4.1, "coherence": 4.125, "personalization": 7 / 3}


def tokenise(text: str) -> list[str]:
    """A reply cut the way BPE tokenizers cut JSON: words, single digits, runs of punctuation, spaces."""
    return re.findall(r"[A-Za-z]+|\d| |[^A-Za-z\d ]+", text)


def stub_logprobs(text: str, digits: dict = DIGITS, other: float = 0.1) -> list[dict]:
    """OpenAI-format token probabilities for `text`: at each score digit the hand-made ones plus a
    non-digit token of probability `other` (which the normalisation leaves out); elsewhere certainty."""
    tokens, entries = tokenise(text), []
    offsets = {offset: criterion for criterion, offset in score_offsets(text).items()}
    position = 0
    for token in tokens:
        if position in offsets:
            probabilities, _ = digits[offsets[position]]
            top = [{"token": str(s), "logprob": math.log(p)} for s, p in probabilities.items()]
            top.append({"token": '"', "logprob": math.log(other)})
            chosen = next(t for t in top if t["token"] == token) if token in {t["token"] for t in top} else None
            entries.append({"token": token, "logprob": chosen["logprob"] if chosen else -9.0, "top_logprobs": top})
        else:
            entries.append({"token": token, "logprob": 0.0, "top_logprobs": [{"token": token, "logprob": 0.0}]})
        position += len(token)
    return entries


def scored_reply() -> str:
    return reply(p=DIGITS["proactiveness"][1], c=DIGITS["coherence"][1], s=DIGITS["personalization"][1])


def test_geval_is_the_expected_score_over_the_digits_at_the_score_position():
    text = scored_reply()
    scores, reasons = geval_scores(text, stub_logprobs(text))
    assert reasons == {}
    assert scores == pytest.approx(EXPECTED, abs=1e-12)


def test_the_score_position_is_found_whatever_the_key_order_whitespace_or_fence():
    text = (
        '```json\n{ "coherence" : {"rationale": "says \\"score\\": 1 here", "score":5},\n'
        '"personalization": {"score": 3, "rationale": "{\\"score\\": 2}"},'
        '"proactiveness":{"rationale":"names films","score":  4} }\n```'
    )
    offsets = score_offsets(text)
    assert {c: text[offset] for c, offset in offsets.items()} == {
        "coherence": "5",
        "personalization": "3",
        "proactiveness": "4",
    }
    scores, reasons = geval_scores(text, stub_logprobs(text))
    assert reasons == {} and scores == pytest.approx(EXPECTED, abs=1e-12)


def test_a_digit_with_a_space_in_its_token_counts_as_that_digit():
    entry = {
        "token": " 4",
        "logprob": math.log(0.4),
        "top_logprobs": [
            {"token": " 4", "logprob": math.log(0.4)},
            {"token": "4", "logprob": math.log(0.2)},  # the same score written without the space
            {"token": " 2", "logprob": math.log(0.3)},
            {"token": " 7", "logprob": math.log(0.1)},  # off the scale: not counted
        ],
    }
    assert expected_score(entry) == pytest.approx((4 * 0.6 + 2 * 0.3) / 0.9)
    # the token written there counts even when a server leaves it out of the top tokens
    assert expected_score({"token": "5", "logprob": math.log(0.5), "top_logprobs": []}) == 5.0


def test_missing_geval_scores_say_why():
    text = scored_reply()
    assert geval_scores(text, None) == (
        {},
        {c: "the reply came without token probabilities" for c in judge_columns.CRITERIA},
    )
    merged = [{"token": t} for t in tokenise(text)]
    i = next(i for i, t in enumerate(merged) if t["token"] == "4")
    merged[i : i + 2] = [{"token": "4,", "logprob": -0.1, "top_logprobs": [{"token": "4,", "logprob": -0.1}]}]
    for entry in merged:
        entry.setdefault("logprob", 0.0)
    scores, reasons = geval_scores(text, merged)
    assert reasons == {"proactiveness": "the score shares its token '4,' with other text"}
    assert set(scores) == {"coherence", "personalization"}  # no digit probabilities there: certainty of 5 and 3
    with pytest.raises(GEvalError, match="do not spell the reply"):
        token_at(text, 5, [{"token": "something else", "logprob": 0.0}])
    cut = stub_logprobs(text)[:10]  # a reply cut at max_tokens: no probabilities past the cut
    assert geval_scores(text, cut)[1]["personalization"] == "the score lies past the tokens that have probabilities"


class StubBackend:
    """A backend whose replies carry the hand-made token probabilities; counts its calls."""

    name, model, gives_token_logprobs = "stub", "stub-judge", True

    def __init__(self):
        self.requests = []

    def complete(self, request):
        self.requests.append(request)
        text = scored_reply()
        return LLMResponse(text, self.name, self.model, 0.01, 10, 20, token_logprobs=stub_logprobs(text))


def stub_judge(client, matcher, name=None, top_logprobs=5, samples=1) -> Judge:
    return Judge(
        client,
        PromptTemplate(REPO / "resources" / "prompts" / "judge.txt"),
        matcher,
        {"temperature": 0.2, "top_p": 0.95, "max_tokens": 150},
        samples,
        2,
        seed=7,
        name=name,
        top_logprobs=top_logprobs,
    )


def test_the_judge_writes_geval_columns_and_the_cache_keeps_the_probabilities(matcher, tmp_path):
    backend = StubBackend()
    client = LLMClient(backend, ResponseCache(tmp_path), RetryPolicy(0, 0.0))
    row = stub_judge(client, matcher, samples=2).judge_session(SESSION)
    assert backend.requests[0].top_logprobs == 5 and client.calls == 2
    assert {c: row[judge_columns.geval_column(c)] for c in judge_columns.CRITERIA} == pytest.approx(EXPECTED, abs=1e-12)
    assert row["judge_geval_missing_reason"] is None and row["judge_coherence"] == 5
    again = LLMClient(StubBackend(), ResponseCache(tmp_path), RetryPolicy(0, 0.0))
    assert stub_judge(again, matcher, samples=2).judge_session(SESSION) == row
    assert again.calls == 0 and again.cache_hits == 2  # a re-run makes no call and weighs the same


def test_top_logprobs_zero_asks_for_none_and_says_so(matcher):
    backend = StubBackend()
    row = stub_judge(LLMClient(backend, None, RetryPolicy(0, 0.0)), matcher, top_logprobs=0).judge_session(SESSION)
    assert backend.requests[0].top_logprobs == 0
    assert math.isnan(row["judge_coherence_geval"]) and "top_logprobs is 0" in row["judge_geval_missing_reason"]


def test_ollama_gives_no_probabilities_so_geval_is_nan_with_the_reason(matcher):
    with FakeOllama(content=lambda body: reply()) as server:
        judge = make_judge(server, matcher)
        judge.top_logprobs = 10
        row = judge.judge_session(SESSION)
        assert "logprobs" not in json.dumps(server.requests[0]["body"])
    assert all(math.isnan(row[judge_columns.geval_column(c)]) for c in judge_columns.CRITERIA)
    assert row["judge_geval_missing_reason"] == "the ollama backend gives no token probabilities"
    assert row["judge_coherence"] == 5  # the scores themselves are there


class LogprobOpenAI(FakeOpenAI):
    """A fake OpenAI-compatible server that answers `logprobs: true` with the hand-made probabilities."""

    def reply(self, body: dict) -> dict:
        data = super().reply(body)
        if body.get("logprobs"):
            data["choices"][0]["logprobs"] = {"content": stub_logprobs(data["choices"][0]["message"]["content"])}
        return data


def test_openai_backend_asks_for_and_reads_token_probabilities(matcher):
    with LogprobOpenAI(content=lambda body: scored_reply()) as server:
        client = LLMClient(OpenAIBackend("judge-model", base_url=server.base_url), None, RetryPolicy(0, 0.0))
        row = stub_judge(client, matcher, name="served", top_logprobs=7).judge_session(SESSION)
        body = server.requests[0]["body"]
    assert body["logprobs"] is True and body["top_logprobs"] == 7
    assert {c: row[judge_columns.geval_column(c, "served")] for c in judge_columns.CRITERIA} == pytest.approx(EXPECTED)
    with FakeOpenAI(content=lambda body: scored_reply()) as server:  # a server that ignores logprobs
        client = LLMClient(OpenAIBackend("judge-model", base_url=server.base_url), None, RetryPolicy(0, 0.0))
        row = stub_judge(client, matcher).judge_session(SESSION)
    assert math.isnan(row["judge_coherence_geval"])
    assert row["judge_geval_missing_reason"].endswith("the reply came without token probabilities")


def test_unusable_token_probabilities_are_left_out_and_the_reply_kept():
    backend = OpenAIBackend("m", base_url="http://127.0.0.1:1/v1")
    body = {
        "choices": [
            {
                "message": {"content": "4"},
                "logprobs": {"content": [{"token": "4", "logprob": float("nan"), "top_logprobs": []}]},
            }
        ]
    }
    response = backend.parse_reply(200, "application/json", json.dumps(body).encode(), 0.1)
    assert response.text == "4" and response.token_logprobs is None
    body["choices"][0]["logprobs"]["content"][0]["logprob"] = -0.5
    response = backend.parse_reply(200, "application/json", json.dumps(body).encode(), 0.1)
    assert response.token_logprobs == [{"token": "4", "logprob": -0.5, "top_logprobs": []}]


# --- a panel judge's columns -----------------------------------------------------------------------


def test_a_panel_judge_writes_exactly_its_declared_columns(matcher):
    client = LLMClient(StubBackend(), None, RetryPolicy(0, 0.0))
    row = stub_judge(client, matcher, name="gemma").judge_session(SESSION)
    assert set(row) - {"system", "session_id", "session_index"} == {
        c.name for c in judge_columns.panel_columns("gemma")
    }
    assert row["judge_gemma_coherence"] == 5 and row["judge_gemma_coherence_geval"] == pytest.approx(4.125)
    assert not any(c.name in row for c in judge_columns.SESSION_COLUMNS)  # none of the first judge's columns
    declared = column_registry.session_column("judge_gemma_coherence")
    assert declared.metric and declared.label == "judge gemma: coherence" and declared.thesis_name is None
    assert not column_registry.session_column("judge_gemma_coherence_rationale").metric
    assert column_registry.undeclared(["judge_gemma_coherence", "judge_gemma_bonus", "judge_bonus_coherence"]) == [
        "judge_gemma_bonus"
    ]  # `bonus` could be a panel judge's name; `judge_gemma_bonus` is no judge's column


def test_panel_names_cannot_write_the_first_judges_columns():
    pattern = load_schema()["properties"]["judge"]["properties"]["panel"]["items"]["properties"]["name"]["pattern"]
    assert pattern == judge_columns.PANEL_NAME
    assert "valid" in judge_columns.RESERVED_NAMES  # `valid` would write judge_valid_samples, the first judge's
    assert all(not re.match(judge_columns.PANEL_NAME, name) for name in judge_columns.RESERVED_NAMES)
    for name in ("gemma", "qwen2", "judge", "validx", "raw2"):
        assert (
            re.match(judge_columns.PANEL_NAME, name) and judge_columns.panel_judge_of(f"judge_{name}_coherence") == name
        )
        assert {c.name for c in judge_columns.panel_columns(name)}.isdisjoint(column_registry.SESSION_COLUMNS)
    for first in column_registry.SESSION_COLUMNS:
        assert judge_columns.panel_judge_of(first) is None, first


def test_aggregate_types_panel_columns_and_averages_them_per_system():
    frame = pd.DataFrame(
        {
            "system": ["a", "a"],
            "session_id": ["a/0", "a/1"],
            "judge_coherence": [4.0, 5.0],
            "judge_gemma_coherence": [2.0, 3.0],
            "judge_gemma_valid_samples": [1, 1],
            "judge_gemma_geval_missing_reason": [None, "x"],
        }
    )
    schema = aggregate.to_table(frame).schema
    assert schema.field("judge_gemma_valid_samples").type == "int64"
    assert schema.field("judge_gemma_geval_missing_reason").type == "string"
    metrics = aggregate.model_metrics(frame, resamples=200, seed=0)
    assert metrics.loc[0, "coherence"] == 4.5 and metrics.loc[0, "judge_gemma_coherence"] == 2.5


# --- settings, threads, concurrency ----------------------------------------------------------------

SERVED = {"type": "openai", "model": "j2", "base_url": "http://127.0.0.1:1/v1"}


def panel_config(**entry) -> dict:
    config = default_config()
    config["judge"]["panel"] = [{"name": "served", "backend": SERVED, **entry}]
    return config


def test_a_panel_judge_takes_the_first_judges_settings_where_it_gives_none():
    config = panel_config()
    check_config(config)
    first = planning.judge_settings(config)
    assert "panel" not in first and first["backend"] == config["judge"]["backend"]
    served = planning.judge_settings(config, "served")
    assert served == {
        "prompt": first["prompt"],
        "samples": first["samples"],
        "retries": first["retries"],
        "seed": first["seed"],
        "name": "served",
        "backend": SERVED,
        "options": first["options"],
        "top_logprobs": first["top_logprobs"],
    }
    own = panel_config(options={"temperature": 0.0, "top_p": 1, "max_tokens": 99}, top_logprobs=0)
    assert planning.judge_settings(own, "served")["options"]["max_tokens"] == 99
    assert planning.judge_settings(own, "served")["top_logprobs"] == 0
    with pytest.raises(KeyError, match="no judge named 'other'"):
        planning.judge_settings(config, "other")


def test_each_judge_job_has_its_own_threads_concurrency_and_provenance_entry():
    config = panel_config(concurrency=6)
    config["llm"]["threads"] = 4
    assert planning.judge_backends(config) == {"judge": config["judge"]["backend"], "judge.panel.served": SERVED}
    assert planning.judge_threads(config) == 4 and planning.judge_threads(config, "served") == 1
    assert planning.judge_concurrency(config) == 1 and planning.judge_concurrency(config, "served") == 6
    config["judge"]["panel"][0].pop("concurrency")
    config["llm"]["concurrency"] = 3
    assert planning.judge_concurrency(config, "served") == 3  # llm.concurrency, not the first judge's
    assert [user for user, _ in planning.backends_used(config)][-2:] == ["judge", "judge.panel.served"]
    config["judge"]["enabled"] = False
    assert planning.panel_names(config) == [] and planning.judge_backends(config) == {}


def test_panel_config_errors_name_their_key():
    config = panel_config()
    config["judge"]["panel"].append({"name": "served", "backend": {**SERVED, "model": "other"}})
    with pytest.raises(ConfigError, match=r"judge\.panel\[1\]\.name: 'served' is also the name of judge\.panel\[0\]"):
        check_config(config)
    config["judge"]["panel"] = [{"name": "valid", "backend": SERVED}]
    with pytest.raises(ConfigError, match=r"judge\.panel\[0\]\.name: 'valid' does not match"):
        check_config(config)
    config["judge"]["panel"] = [{"name": "local", "backend": default_config()["judge"]["backend"], "concurrency": 2}]
    with pytest.raises(ConfigError, match=r"judge\.panel\[0\]\.concurrency: 2 requests in flight need a server"):
        check_config(config)
    config["judge"]["panel"] = [{"name": "gguf", "backend": {"type": "llamacpp", "model": "/no/such/model.gguf"}}]
    assert planning.model_paths(config) == {"judge.panel[0].backend.model": "/no/such/model.gguf"}


# --- agreement between judges ----------------------------------------------------------------------


def two_judges(first: list, second: list, systems: list | None = None) -> pd.DataFrame:
    systems = systems or ["a"] * len(first)
    frame = pd.DataFrame({"system": systems, "session_index": range(len(first))})
    for criterion in judge_columns.CRITERIA:
        frame[judge_columns.score_column(criterion)] = np.array(first, float)
        frame[judge_columns.samples_column(criterion)] = [json.dumps([v]) for v in first]
        frame[judge_columns.score_column(criterion, "gemma")] = np.array(second, float)
        frame[judge_columns.samples_column(criterion, "gemma")] = [json.dumps([v]) for v in second]
    return frame


def test_interval_alpha_between_judges_on_hand_values():
    # two judges, five sessions: D_o = 2 (5 - 4)^2 / 10 = 0.2; the ten values 1,1,2,2,3,3,4,4,5,4 have
    # sum 29 and sum of squares 101, so D_e = 2 (10 * 101 - 29^2) / (10 * 9) = 338 / 90: alpha = 1 - 18/338
    frame = two_judges([1, 2, 3, 4, 5], [1, 2, 3, 4, 4])
    assert reliability.interval_alpha(reliability.judge_matrix(frame, "coherence")) == pytest.approx(320 / 338)
    row = reliability.between_judges(frame, "coherence", resamples=200, seed=0)
    assert row["judges"] == 2 and row["sessions_with_two_judges"] == 5
    assert row["between_judges_ci_low"] <= row["between_judges_alpha"] <= row["between_judges_ci_high"]
    # means of several samples are no categories of the scale: interval alpha takes them as they are
    halves = two_judges([1.5, 2, 3.5, 4, 5], [1, 2.5, 3, 4, 4.5])
    assert 0.8 < reliability.interval_alpha(reliability.judge_matrix(halves, "coherence")) < 1


def test_reliability_table_has_a_row_per_judge_and_the_agreement_between_them():
    frame = two_judges([1, 2, 3, 4, 5, 1, 2, 3], [2, 2, 3, 5, 5, 1, 1, 3], systems=list("aaaabbbb"))
    table = reliability.reliability_table(frame, alpha=0.05, resamples=50, seed=0)
    assert list(table["judge"]) == ["judge"] * 3 + ["judge_gemma"] * 3
    assert table.groupby("criterion")["between_judges_alpha"].nunique().eq(1).all()
    assert table.loc[0, "judges"] == 2 and 0.7 < table.loc[0, "between_judges_alpha"] < 1
    text = reliability.reliability_markdown(table, 0.05)
    assert "## Agreement between judges" in text and "Krippendorff's alpha, interval" in text
    assert "| `judge_gemma` | coherence | 1 |" in text and "Judge `judge_gemma` does not discriminate" in text
    single = reliability.reliability_table(frame[[c for c in frame if "gemma" not in c]], 0.05, 50, 0)
    assert len(single) == 3 and single.loc[0, "judges"] == 1 and math.isnan(single.loc[0, "between_judges_alpha"])
    alone = reliability.reliability_markdown(single, 0.05)
    assert "Agreement between judges" not in alone and alone.startswith("# Judge reliability\n\nAgreement between")


# --- the workflow: one job per judge, system and shard ---------------------------------------------


@pytest.mark.workflow
def test_changing_one_judge_reruns_only_its_own_jobs(workflow_copy):
    with FakeOllama() as server:
        config = load_test_config("rerun")
        next(s for s in config["systems"] if s["name"] == "fake-llm")["backend"]["host"] = server.host
        config["judge"]["backend"]["host"] = server.host
        second = {"type": "ollama", "model": "fake-judge:2b", "host": server.host}
        config["judge"]["panel"] = [{"name": "second", "backend": second, "options": dict(config["judge"]["options"])}]
        run_snakemake(workflow_copy, "--configfile", str(write_config(workflow_copy, config)))
    results = workflow_copy / "results" / "rerun"
    sessions = pd.read_parquet(results / "tables" / "sessions.parquet")
    assert sessions["judge_second_coherence"].between(1, 5).all() and sessions["judge_coherence"].between(1, 5).all()
    assert sessions["judge_second_coherence_geval"].isna().all()
    assert (sessions["judge_second_geval_missing_reason"] == "the ollama backend gives no token probabilities").all()
    table = pd.read_csv(results / "stats" / "judge_reliability.csv")
    assert list(table["judge"].unique()) == ["judge", "judge_second"] and (table["judges"] == 2).all()
    assert "## Agreement between judges" in (results / "stats" / "judge_reliability.md").read_text()
    record = json.loads((results / "provenance.json").read_text())
    assert "judge.panel.second" in json.dumps(record)

    def dry_run(mutate):
        changed = json.loads(json.dumps(config))
        mutate(changed)
        path = write_config(workflow_copy, changed, "changed.yaml")
        return planned_jobs(run_snakemake(workflow_copy, "-n", "--configfile", str(path)))

    after = {
        "aggregate": 1,
        "stats": 1,
        "plots": 1,
        "scorecard": 1,
        "viewer": 1,
        "findings": 1,
        "provenance": 1,
        "all": 1,
    }
    assert dry_run(lambda c: c["judge"]["panel"][0]["options"].update(top_p=0.9)) == {"panel_judge": 4, **after}
    assert dry_run(lambda c: c["judge"]["options"].update(top_p=0.9)) == {"judge": 4, **after}
    # what the panel judge takes from the first judge re-runs both when it changes
    assert dry_run(lambda c: c["judge"].update(seed=8)) == {"judge": 4, "panel_judge": 4, **after}
    inherited = {"judge": 4, "panel_judge": 4, **after}  # a panel judge without options of its own
    assert (
        dry_run(lambda c: (c["judge"]["panel"][0].pop("options"), c["judge"]["options"].update(top_p=0.9))) == inherited
    )
    assert dry_run(lambda c: c["judge"]["panel"][0].update(concurrency=3)) == {"provenance": 1, "all": 1}
