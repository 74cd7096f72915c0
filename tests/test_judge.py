"""The LLM judge: strict parsing, repair and retries, missing judgements, samples."""

import json
import math

import pytest
from conftest import REPO
from fake_servers import FakeOllama

from crseval.judge.llm_judge import Judge, JudgeParseError, parse_judgement, preference_summary
from crseval.llm import LLMClient
from crseval.llm.client import RetryPolicy
from crseval.llm.ollama_backend import OllamaBackend
from crseval.llm.prompts import PromptTemplate


def reply(p=4, c=5, s=3):
    return json.dumps(
        {
            "proactiveness": {"score": p, "rationale": "names films"},
            "coherence": {"score": c, "rationale": "on point"},
            "personalization": {"score": s, "rationale": "follows wishes"},
        }
    )


def test_good_reply_parses():
    assert parse_judgement(reply()) == {
        "proactiveness": (4, "names films"),
        "coherence": (5, "on point"),
        "personalization": (3, "follows wishes"),
    }
    assert parse_judgement("```json\n" + reply() + "\n```")["coherence"] == (5, "on point")


@pytest.mark.parametrize(
    "text, reason",
    [
        ("Scores: 4, 5, 3", r"not JSON"),
        (reply()[:-20], r"not JSON"),  # truncated
        (reply(p=6), r"proactiveness/score: 6 is greater than the maximum of 5"),
        (reply(c=0), r"coherence/score: 0 is less than the minimum of 1"),
        (reply(s=3.5), r"personalization/score: 3.5 is not of type 'integer'"),
        (
            reply().replace('"coherence"', '"coherance"'),
            r"'coherance' was unexpected|'coherence' is a required property",
        ),
        (
            json.dumps(
                {
                    "proactiveness": {"score": True, "rationale": "x"},
                    "coherence": {"score": 2, "rationale": "x"},
                    "personalization": {"score": 2, "rationale": "x"},
                }
            ),
            r"True is not of type 'integer'|boolean",
        ),
        ('{"proactiveness": {"score": "4", "rationale": "x"}}', r"'4' is not of type 'integer'|required"),
    ],
)
def test_bad_replies_are_rejected_with_a_reason(text, reason):
    with pytest.raises(JudgeParseError, match=reason):
        parse_judgement(text)


SESSION = {
    "system": "s",
    "session_id": "s/s00000",
    "session_index": 0,
    "turns": [
        {"turn": 1, "user_text": "I'd like a crime movie starring Robert De Niro.", "system_text": "Try Heat."},
        {"turn": 2, "user_text": "Now a movie directed by Martin Scorsese.", "system_text": ""},
    ],
}


def make_judge(server, matcher, samples=1, retries=2):
    client = LLMClient(OllamaBackend("judge:1b", host=server.host), cache=None, retry=RetryPolicy(0, 0.0))
    return Judge(
        client,
        PromptTemplate(REPO / "resources" / "prompts" / "judge.txt"),
        matcher,
        {"temperature": 0.2, "top_p": 0.95, "max_tokens": 150},
        samples,
        retries,
        seed=7,
    )


def gold(*constraints, bridge=None):
    return {"constraints": [{"field": f, "value": v, "negated": n} for f, v, n in constraints], "bridge": bridge}


def test_simulated_sessions_are_summarised_from_the_gold_constraints(matcher):
    crime, horror = ("genre", "crime", False), ("genre", "horror", True)
    turns = [
        {"turn": 1, "user_text": "I'd love to watch a crime movie.", "user_meta": gold(crime)},
        {"turn": 2, "user_text": "Heat sounds great. Still a crime movie?", "user_meta": gold(crime)},
        {
            "turn": 3,
            "user_text": "Casino reminds me of Robert De Niro. Now a mystery film, no horror.",
            "user_meta": gold(
                ("genre", "mystery", False), horror, bridge={"field": "actor", "value": "Robert De Niro"}
            ),
        },
    ]
    assert preference_summary(turns, matcher) == (
        "- turn 1: wants genre crime\n- turn 3: wants genre mystery | does not want genre horror"
    )


def test_imported_sessions_are_summarised_by_the_tracker_with_negation(matcher):
    turns = [
        {"turn": 1, "user_text": "I'd love to watch a crime movie.", "user_meta": None},
        {
            "turn": 2,
            "user_text": "Actually, no crime movies after all. Something starring Robert De Niro.",
            "user_meta": None,
        },
    ]
    assert preference_summary(turns, matcher) == (
        "- turn 1: wants genre crime\n- turn 2: wants actor Robert De Niro | does not want genre crime"
    )


def test_prompt_carries_the_conversation_and_the_preferences(small_index, matcher):
    assert preference_summary(SESSION["turns"], matcher) == (
        "- turn 1: wants actor Robert De Niro; genre crime\n- turn 2: wants actor Robert De Niro; "
        "director Martin Scorsese; genre crime"
    )
    with FakeOllama(content=lambda body: reply()) as server:
        make_judge(server, matcher).judge_session(SESSION)
        prompt = server.requests[0]["body"]["messages"][0]["content"]
        assert server.requests[0]["body"]["format"]["required"] == ["proactiveness", "coherence", "personalization"]
    assert "User: Now a movie directed by Martin Scorsese.\nSystem: (empty reply)" in prompt
    assert "- turn 2: wants actor Robert De Niro; director Martin Scorsese; genre crime" in prompt


def test_the_row_says_where_the_preferences_came_from(matcher):
    simulated = {**SESSION, "turns": [{**t, "user_meta": gold(("genre", "crime", False))} for t in SESSION["turns"]]}
    with FakeOllama(content=lambda body: reply()) as server:
        judge = make_judge(server, matcher)
        assert judge.judge_session(SESSION)["judge_preferences_source"] == "tracker"
        assert judge.judge_session(simulated)["judge_preferences_source"] == "simulator"


def test_repair_prompt_rescues_a_malformed_reply(matcher):
    answers = iter(["I think it is good.", reply(2, 3, 4)])
    with FakeOllama(content=lambda body: next(answers)) as server:
        row = make_judge(server, matcher).judge_session(SESSION)
        repair = server.requests[1]["body"]["messages"]
    assert [m["role"] for m in repair] == ["user", "assistant", "user"] and "not valid (not JSON" in repair[2][
        "content"
    ]
    assert (row["judge_proactiveness"], row["judge_coherence"], row["judge_personalization"]) == (2, 3, 4)
    assert row["judge_missing_reason"] is None and row["judge_valid_samples"] == 1


def test_persistently_bad_replies_are_missing_with_reason_and_raw_reply(matcher):
    with FakeOllama(content=lambda body: reply(p=9)) as server:
        row = make_judge(server, matcher, retries=2).judge_session(SESSION)
        calls = server.chat_calls
    assert calls == 4  # first attempt, repair prompt, two retries
    assert all(math.isnan(row[f"judge_{c}"]) for c in ("proactiveness", "coherence", "personalization"))
    assert row["judge_valid_samples"] == 0
    assert "greater than the maximum of 5" in row["judge_missing_reason"] and '"score": 9' in row["judge_raw_reply"]


def test_samples_give_mean_and_spread(matcher):
    answers = iter([reply(2, 4, 5), reply(4, 4, 1), "garbage", "garbage", "garbage", "garbage"])
    with FakeOllama(content=lambda body: next(answers)) as server:
        row = make_judge(server, matcher, samples=3, retries=1).judge_session(SESSION)
        seeds = [r["body"]["options"]["seed"] for r in server.requests]
    assert row["judge_valid_samples"] == 2 and row["judge_proactiveness"] == 3.0
    assert row["judge_proactiveness_sd"] == pytest.approx(math.sqrt(2)) and row["judge_coherence_sd"] == 0.0
    assert len(set(seeds[:3])) == 3  # each sample asks with its own seed
