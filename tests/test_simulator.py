"""The user simulator: determinism, shifts with valid bridges, ground truth, clean text."""

from dataclasses import replace

import pytest
from conftest import REPO
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crseval.core.fields import display
from crseval.language.concepts import ConceptMatcher
from crseval.simulate.sessions import SessionContext, run_session
from crseval.simulate.systems.agents import AgentSettings, TemplateAgent
from crseval.simulate.user.paraphrase import has_structure
from crseval.simulate.user.simulator import UserSimulator
from crseval.simulate.user.templates import Templates
from crseval.simulate.user.user_plan import SimulatorSettings

TEMPLATES = Templates.load(REPO / "resources" / "templates" / "user.yaml")
SETTINGS = SimulatorSettings(shift_every=3, contradiction_rate=0.2)


def session(index, seed, settings=SETTINGS, turns=10):
    matcher = ConceptMatcher(index.concepts, index.films)
    ctx = SessionContext(index, matcher, TEMPLATES, settings, turns, "0" * 64)
    return run_session(ctx, "template", TemplateAgent(index, matcher, AgentSettings(), seed), 0, seed, "0" * 64)


def concepts_of(index, title):
    row = index.films[index.films["title"] == title].iloc[0]
    found = {(f, v) for f in ("genre", "actor", "director", "writer", "language") for v in row[f]}
    return found | ({("year", str(int(row["year"])))} if row["year"] == row["year"] else set())


def test_same_seed_same_session(demo_index):
    assert session(demo_index, 11) == session(demo_index, 11)
    assert (
        session(demo_index, 11)["turns"][0]["user_text"] != session(demo_index, 12)["turns"][0]["user_text"]
        or session(demo_index, 11)["turns"][0]["user_meta"] != session(demo_index, 12)["turns"][0]["user_meta"]
    )


def test_first_turn_and_focus_do_not_depend_on_the_system(demo_index):
    matcher = ConceptMatcher(demo_index.concepts, demo_index.films)
    user_a = UserSimulator(demo_index, SETTINGS, TEMPLATES, 5, matcher)
    user_b = UserSimulator(demo_index, SETTINGS, TEMPLATES, 5, matcher)
    assert user_a.turn(1, []).text == user_b.turn(1, ["Heat"]).text


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(min_value=0, max_value=2**31 - 1))
def test_shifts_happen_where_configured_through_valid_bridges(demo_index, seed):
    record = session(demo_index, seed)
    shift_turns = [t["turn"] for t in record["turns"] if t["user_meta"]["shift_event"]]
    assert shift_turns == [e["turn"] for e in record["shift_events"]]
    assert all(SETTINGS.is_shift_turn(turn) for turn in shift_turns)
    assert shift_turns == [4, 7, 10]  # the demo catalog always offers a bridge
    for event in record["shift_events"]:
        bridge = (event["bridge"]["field"], event["bridge"]["value"])
        assert bridge in concepts_of(demo_index, event["from_anchor"])
        assert bridge in concepts_of(demo_index, event["to_anchor"])
        assert (event["to_focus"]["field"], event["to_focus"]["value"]) in concepts_of(demo_index, event["to_anchor"])
        assert event["to_focus"]["field"] != event["from_focus"]["field"]
        turn = record["turns"][event["turn"] - 1]
        assert turn["user_meta"]["stage"] == "shift"
        assert display(*bridge).lower() in turn["user_text"].lower()
        # right after a shift, the new anchor film satisfies every gold constraint
        anchor = concepts_of(demo_index, event["to_anchor"])
        for c in turn["user_meta"]["constraints"]:
            assert ((c["field"], c["value"]) in anchor) != c["negated"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(min_value=0, max_value=2**31 - 1))
def test_user_text_names_the_focus_verbatim_and_carries_no_structure(demo_index, seed):
    for turn in session(demo_index, seed, turns=8)["turns"]:
        text, meta = turn["user_text"], turn["user_meta"]
        assert not has_structure(text), text
        assert display(meta["focus_field"], meta["focus_value"]).lower() in text.lower()
        assert {"field": meta["focus_field"], "value": meta["focus_value"], "negated": False} in meta["constraints"]


def test_contradictions_rule_out_a_value_and_keep_the_anchor_valid(demo_index):
    always = replace(SETTINGS, contradiction_rate=1.0)
    taken_back = foreign = 0
    for seed in range(30):
        record = session(demo_index, seed, settings=always, turns=8)
        for before, turn in zip(record["turns"], record["turns"][1:]):
            meta = turn["user_meta"]
            if meta["stage"] in ("accept", "reject", "ask", "no_title"):
                raise AssertionError(f"at rate 1.0 every ordinary turn is a contradiction, got {meta['stage']}")
            if meta["stage"] != "contradict":
                continue
            new = [c for c in meta["constraints"] if c["negated"] and c not in before["user_meta"]["constraints"]]
            assert len(new) == 1
            value = (new[0]["field"], new[0]["value"])
            if {**new[0], "negated": False} in before["user_meta"]["constraints"]:
                taken_back += 1  # an earlier wish, taken back
            else:
                foreign += 1  # no earlier wish to take back: a value the anchor film does not have
                assert value not in concepts_of(demo_index, meta["anchor_title"])
            assert {"field": value[0], "value": value[1], "role": "exclusion"} in meta["stated"]
            assert display(*value).lower() in turn["user_text"].lower()
    assert taken_back >= 5 and foreign >= 5


def test_no_contradiction_at_rate_zero(demo_index):
    never = replace(SETTINGS, contradiction_rate=0.0)
    stages = {t["user_meta"]["stage"] for s in range(10) for t in session(demo_index, s, settings=never)["turns"]}
    assert "contradict" not in stages and {"open", "shift"} <= stages


def test_shift_schedule():
    every_three = SimulatorSettings(shift_every=3)
    assert [t for t in range(1, 12) if every_three.is_shift_turn(t)] == [4, 7, 10]


class SilentAgent(TemplateAgent):
    """A system that never names a film: the user's reactions differ, its plan must not."""

    def phrase(self, turn, user_text, tracked, candidate_ids):
        return "Tell me more about what you like.", None


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_the_users_plan_does_not_depend_on_the_system(demo_index, seed):
    matcher = ConceptMatcher(demo_index.concepts, demo_index.films)
    ctx = SessionContext(demo_index, matcher, TEMPLATES, replace(SETTINGS, contradiction_rate=0.3), 10, "0" * 64)
    talkative = run_session(ctx, "a", TemplateAgent(demo_index, matcher, AgentSettings(), seed), 0, seed, "0" * 64)
    silent = run_session(ctx, "b", SilentAgent(demo_index, matcher, AgentSettings(), seed), 0, seed, "0" * 64)
    reaction = ("stage", "stated", "titles")  # how the user words its reaction to the replies

    def plan(record):
        return [{k: v for k, v in t["user_meta"].items() if k not in reaction} for t in record["turns"]]

    def events(record):  # whether an old anchor was new to the conversation depends on the replies
        return [{k: v for k, v in e.items() if k != "anchor_new"} for e in record["shift_events"]]

    assert plan(talkative) == plan(silent)
    assert events(talkative) == events(silent)
    assert {t["user_meta"]["stage"] for t in silent["turns"]} <= {"open", "shift", "contradict", "no_title"}


@settings(
    max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(seed=st.integers(min_value=0, max_value=2**31 - 1))
def test_the_user_says_exactly_what_it_means_on_the_full_catalog(full_index, seed):
    """150 seeds x 2 systems x 12 turns = 3,600 utterances on the 2,164-film catalog: the
    extractors read back exactly the concepts (with their roles) and titles the user means;
    bridges are context and never the new focus; a shift names an anchor the dialogue has
    seen or says the film is new; the reference tracker follows the user exactly."""
    from crseval.language.tracker import extract_statements

    matcher = full_matcher(full_index)
    ctx = SessionContext(
        full_index, matcher, TEMPLATES, SimulatorSettings(shift_every=3, contradiction_rate=0.2), 12, "0" * 64
    )
    for agent in (
        TemplateAgent(full_index, matcher, AgentSettings(), seed),
        SilentAgent(full_index, matcher, AgentSettings(), seed),
    ):
        record = run_session(ctx, "s", agent, 0, seed, "0" * 64)
        previous, dialogue = [], set()
        for turn in record["turns"]:
            text, meta = turn["user_text"], turn["user_meta"]
            read = {(m.field, m.value, role) for m, role in extract_statements(matcher, text, previous)}
            assert read == {(s["field"], s["value"], s["role"]) for s in meta["stated"]}, text
            assert set(matcher.title_recognizer.recognise(text, candidates=previous).all) == set(meta["titles"]), text
            gold = {(c["field"], c["value"], c["negated"]) for c in meta["constraints"]}
            stated = {
                (s["field"], s["value"], s["role"] == "exclusion") for s in meta["stated"] if s["role"] != "context"
            }
            assert stated <= gold
            assert {(c["field"], c["value"], c["negated"]) for c in turn["system_constraints"]} == gold, text
            if meta["shift_event"]:
                event = next(e for e in record["shift_events"] if e["turn"] == turn["turn"])
                assert event["bridge"] != event["to_focus"]
                assert {**event["bridge"], "role": "context"} in meta["stated"]
                assert meta["titles"] == [event["from_anchor"]]
                assert event["anchor_new"] == (event["from_anchor"] not in dialogue)
            dialogue |= set(meta["titles"]) | set(turn["recommended_titles"]) | set(turn["mentioned_titles"])
            previous = turn["recommended_titles"]


_MATCHERS = {}


def full_matcher(index):
    if id(index) not in _MATCHERS:
        _MATCHERS[id(index)] = ConceptMatcher(index.concepts, index.films)
    return _MATCHERS[id(index)]
