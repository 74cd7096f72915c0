"""User profiles: the explicit user is the thesis user to the byte; the others follow the same plan,
say a wish only as its disclosure allows, answer questions, and leave when their patience ends."""

import gzip
import json
from dataclasses import replace

import numpy as np
import pytest
from conftest import REPO

from crseval.language.asks import OPEN
from crseval.language.concepts import ConceptMatcher
from crseval.language.tracker import extract_statements
from crseval.simulate.sessions import SessionContext, run_session
from crseval.simulate.systems.agents import AgentSettings, TemplateAgent
from crseval.simulate.systems.calibration import OracleAgent, RandomAgent
from crseval.simulate.user.profiles import PROFILES, UserProfile, defined_profile, user_profile
from crseval.simulate.user.simulator import make_user
from crseval.simulate.user.templates import Templates
from crseval.simulate.user.turn_content import PROFILED, THESIS, conduct_of
from crseval.simulate.user.user_plan import SimulatorSettings
from crseval.simulate.user.wording import joined_parts as _joined

TEMPLATES = Templates.load(REPO / "resources" / "templates" / "user.yaml")
SETTINGS = SimulatorSettings(shift_every=3, contradiction_rate=0.2)
AGENTS = {"template": TemplateAgent, "oracle": OracleAgent, "random": RandomAgent}
# Sessions the explicit user made before profiles existed (template, oracle and random systems, seeds 0-11,
# 10 turns, the demo catalog, the settings above), written by the code of that time.
BEFORE = REPO / "tests" / "data" / "explicit_user" / "sessions_before_profiles.jsonl.gz"


def matcher_of(index, cache={}):
    if id(index) not in cache:
        cache[id(index)] = ConceptMatcher(index.concepts, index.films)
    return cache[id(index)]


# Dialogues invented for these tests (no corpus's words): what the `learned` profile's voice learns from.
INVENTED_DIALOGUES = [
    ["hey there", "any decent Comedy flicks?", "meh, not my thing", "ok thx"],
    ["got a Drama for a rainy night?", "what's that one about?", "nah seen it", "something else maybe"],
    ["hello! i'm after Crime stuff", "hmm why that one", "could you find me another?", "bye"],
    ["Thriller please, something tense", "not really", "anything with Tom Hanks", "whatever you think"],
    ["yo", "looking for a Romance tonight", "nope", "no idea, surprise me"],
    ["any Adventure picks for the weekend?", "is it good?", "other ideas?", "cheers"],
]


def invented_voice(index):
    from crseval.simulate.user.voice_learning import learn_voice

    dialogues = [
        {
            "session_id": f"invented/{i}",
            "turns": [{"user_text": text} for text in turns],
            "labels": {"satisfaction": "frustrated"},
        }
        for i, turns in enumerate(INVENTED_DIALOGUES)
    ]
    return learn_voice(dialogues, matcher_of(index), {"corpus": "invented"})


def simulate(index, profile, agent="template", seed=0, turns=10, settings=SETTINGS, session_index=0):
    matcher = matcher_of(index)
    user = user_profile(profile)
    voice = invented_voice(index) if user.learned else None
    ctx = SessionContext(index, matcher, TEMPLATES, settings, turns, "0" * 64, voice=voice, profile=user)
    system = AGENTS[agent](index, matcher, AgentSettings(), seed) if isinstance(agent, str) else agent(seed)
    return run_session(ctx, str(agent), system, session_index, seed, "0" * 64)


def without_new_fields(new: dict, old: dict):
    """`new` restricted to the keys `old` has, recursively (the fields added since are left out)."""
    if isinstance(old, dict):
        return {key: without_new_fields(new[key], value) for key, value in old.items()}
    if isinstance(old, list) and len(old) == len(new):
        return [without_new_fields(n, o) for n, o in zip(new, old)]
    return new


def test_the_explicit_user_is_the_user_of_before_profiles(demo_index):
    with gzip.open(BEFORE, "rt", encoding="utf-8") as handle:
        before = [json.loads(line) for line in handle]
    assert len(before) == 36
    for old in before:
        new = simulate(demo_index, "explicit", old["system"], old["seed"], session_index=old["session_index"])
        assert without_new_fields(new, old) == old, old["session_id"]
        for turn in new["turns"]:
            meta = turn["user_meta"]
            assert set(meta["disclosure"]) == {"volunteer"} and all(meta["said"])
        assert new["profile"] == "explicit" and new["ending"] == {"reason": "turn_limit", "turn": 10, "farewell": None}


def test_only_the_built_in_explicit_user_has_the_thesis_users_ways(demo_index):
    """One turn for every profile: the thesis user's ways (its Conduct) come with the built-in `explicit`
    alone. A profile defined as based on it has the same settings and builds its turns of parts, so it
    answers a question that the thesis user does not hear."""
    like_explicit = defined_profile("like_explicit", {"based_on": "explicit"})
    assert [conduct_of(user_profile(name)) for name in PROFILES] == [THESIS] + [PROFILED] * (len(PROFILES) - 1)
    assert conduct_of(like_explicit) == PROFILED
    settings = replace(SETTINGS, contradiction_rate=0.0)
    matcher = matcher_of(demo_index)
    thesis, defined = (make_user(demo_index, settings, TEMPLATES, 3, matcher, None, p) for p in (None, like_explicit))
    assert thesis.turn(1, []).meta == defined.turn(1, []).meta  # both open with the focus, a genre
    heard, answered = (user.turn(2, [], last_asks=frozenset({"genre"})).meta for user in (thesis, defined))
    assert heard["stage"] == "no_title" and answered["stage"] == "answer"
    assert heard["stated"] == answered["stated"] == [{"field": "genre", "value": thesis.focus[1], "role": "wish"}]


def gold(turn):
    return [(c["field"], c["value"], c["negated"]) for c in turn["user_meta"]["constraints"]]


@pytest.mark.parametrize("seed", range(8))
def test_every_profile_follows_the_same_plan_and_every_system_meets_the_same_user(demo_index, seed):
    plans = {}
    for profile in PROFILES:
        for agent in ("template", "oracle"):
            record = simulate(demo_index, profile, agent, seed)
            plans[profile, agent] = [(gold(t), t["user_meta"]["shift_event"]) for t in record["turns"]]
            if profile != "explicit":
                disclosed = [t["user_meta"]["disclosure"] for t in record["turns"]]
                plans[profile, agent, "disclosure"] = disclosed
    reference = plans["explicit", "template"]
    for key, plan in plans.items():
        if len(key) == 2 and user_profile(key[0]).wants == "catalog":  # one who left early followed it up to there
            assert plan == reference[: len(plan)], key
    # a user who opens with what people ask for has a plan of its own, the same whatever the system says
    for profile in (name for name in PROFILES if user_profile(name).wants == "people"):
        a, b = plans[profile, "template"], plans[profile, "oracle"]
        assert a[: len(b)] == b[: len(a)]
    for profile in ("implicit", "realistic"):
        a, b = plans[profile, "template", "disclosure"], plans[profile, "oracle", "disclosure"]
        assert a[: len(b)] == b[: len(a)]


def said_when(record):
    """Gold constraint -> the turn it was first said, its disclosure, what the reply before asked, and
    whether the user said it unasked after unsatisfying replies."""
    first = {}
    previous_asks = []
    for turn in record["turns"]:
        meta = turn["user_meta"]
        for constraint, disclosure, said in zip(gold(turn), meta["disclosure"], meta["said"]):
            if said and constraint not in first:
                revealed = {"field": constraint[0], "value": constraint[1], "negated": constraint[2]} in meta[
                    "revealed"
                ]
                first[constraint] = (turn["turn"], disclosure, previous_asks, revealed)
        previous_asks = turn["system_asks"]
    return first


class Asker(TemplateAgent):
    """A system that asks about every field before its first recommendation, one a turn."""

    QUESTIONS = ["What genre would you like?", "Any actor in mind?", "Which director do you like?"]

    def phrase(self, turn, user_text, tracked, candidate_ids):
        if turn <= len(self.QUESTIONS):
            return self.QUESTIONS[turn - 1], None
        return super().phrase(turn, user_text, tracked, candidate_ids)


@pytest.mark.parametrize("profile", ["implicit", "realistic"])
def test_a_wish_is_said_only_as_its_disclosure_allows(demo_index, profile):
    matcher = matcher_of(demo_index)
    seen = {"volunteer": 0, "on_ask": 0, "hidden": 0, "asked": 0}
    for seed in range(40):
        for agent in ("template", lambda s: Asker(demo_index, matcher, AgentSettings(), s)):
            record = simulate(demo_index, profile, agent, seed)
            for turn in record["turns"]:
                for disclosure, said in zip(turn["user_meta"]["disclosure"], turn["user_meta"]["said"]):
                    seen[disclosure] += 1
                    assert not (disclosure == "hidden" and said), turn
            for constraint, (number, disclosure, asks, revealed) in said_when(record).items():
                assert disclosure != "hidden"
                if disclosure == "on_ask":
                    asked = constraint[0] in asks or OPEN in asks
                    seen["asked"] += asked
                    assert asked != revealed, (constraint, number, asks)
    assert min(seen.values()) > 0, seen


def test_a_question_about_a_field_gets_the_wish_on_that_field(demo_index):
    """The asker's first question is about the genre: an on-ask genre wish is said at once."""
    matcher = matcher_of(demo_index)
    answered = 0
    for seed in range(60):
        record = simulate(demo_index, "implicit", lambda s: Asker(demo_index, matcher, AgentSettings(), s), seed)
        first, second = record["turns"][:2]
        genre = [c for c in gold(first) if c[0] == "genre"]
        disclosure = first["user_meta"]["disclosure"][0]
        if disclosure == "on_ask" and genre and not first["user_meta"]["stated"]:
            assert first["system_asks"] == ["genre"]
            assert {"field": "genre", "value": genre[0][1], "role": "wish"} in second["user_meta"]["stated"]
            assert second["user_meta"]["stage"] in ("answer", "contradict")  # a volunteered exclusion comes first
            answered += 1
    assert answered >= 5


class GenreAsker(TemplateAgent):
    """A system that asks for the genre again and again."""

    def phrase(self, turn, user_text, tracked, candidate_ids):
        return "What genre would you like?", None


def test_asked_again_the_user_says_its_wish_not_every_exclusion_it_said_before(demo_index):
    """Asked the same question turn after turn, the user states its genre wish each time; an exclusion it
    has said is not listed again beside that wish, one it has not said yet is."""
    matcher = matcher_of(demo_index)
    restated = new_exclusions = 0
    for seed in range(30):
        record = simulate(demo_index, "implicit", lambda s: GenreAsker(demo_index, matcher, AgentSettings(), s), seed)
        said_before = set()
        for turn in record["turns"]:
            meta = turn["user_meta"]
            stated = {(s["field"], s["value"], s["role"]) for s in meta["stated"]}
            if meta["stage"] == "answer" and any(s[0] == "genre" and s[2] == "wish" for s in stated):
                assert not {s for s in stated if s[2] == "exclusion"} & said_before, (seed, turn["turn"])
                restated += 1
                new_exclusions += any(s[2] == "exclusion" for s in stated)
            said_before |= stated
    assert restated >= 20 and new_exclusions >= 1, (restated, new_exclusions)


def test_the_user_leaves_when_its_patience_ends(demo_index):
    """Under `realistic` (patience n) a system that recommends random films loses most users; the session
    ends after the last reply, the farewell is recorded, and the n replies before it all missed."""
    patience = user_profile("realistic").patience
    left = 0
    for seed in range(30):
        record = simulate(demo_index, "realistic", "random", seed, turns=12)
        ending = record["ending"]
        assert len(record["turns"]) == ending["turn"]
        if ending["reason"] == "abandoned":
            left += 1
            assert ending["farewell"] and ending["turn"] >= patience
            for turn in record["turns"][-(patience - 1) :]:  # the user's reactions to the replies before the last
                assert turn["user_implies"]["accepts"] == []
        else:
            assert ending == {"reason": "turn_limit", "turn": 12, "farewell": None}
    assert left >= 20


def test_the_realistic_user_talks_shorter_and_in_its_own_style(demo_index):
    def words(profile):
        lengths = sorted(
            len(t["user_text"].split())
            for seed in range(30)
            for t in simulate(demo_index, profile, "oracle", seed)["turns"]
        )
        return lengths[len(lengths) // 2]

    assert words("realistic") < words("implicit") < words("explicit")
    texts = [t["user_text"] for seed in range(30) for t in simulate(demo_index, "realistic", "oracle", seed)["turns"]]
    assert any(text[:1].islower() for text in texts)
    assert any(text.startswith(("Hi", "Hello", "Hey", "Good evening", "hi", "hello", "hey")) for text in texts)


def test_a_voice_has_its_own_templates_and_the_common_ones_where_it_has_none():
    templates = Templates(
        {"thanks": ["Thank you."], "leave": ["Goodbye."], "voices": {"casual": {"thanks": ["thx"]}}}, "v"
    )
    rng = np.random.default_rng(0)
    assert templates.pick(rng, "thanks", voice="casual") == "thx"
    assert templates.pick(rng, "leave", voice="casual") == "Goodbye."  # the voice has no group of its own
    assert templates.pick(rng, "thanks") == "Thank you."
    assert TEMPLATES.data["voices"]["casual"]["accept_short"]  # the realistic user's voice is shipped


def test_a_turns_parts_join_as_sentences_or_with_a_comma():
    assert _joined(["Hi!", "any comedy movies?"]) == "Hi! any comedy movies?"
    assert _joined(["hi", "any comedy movies?", "thanks"]) == "hi, any comedy movies? thanks"
    assert _joined(["not that one"]) == "not that one" and _joined([]) == ""


def test_details_are_disclosed_as_the_field_says():
    realistic = user_profile("realistic")
    # genre: 45% volunteer, 40% on ask, 15% hidden; a director: 15% / 50% / 35%
    assert [realistic.disclose(d, "genre") for d in (0.44, 0.46, 0.84, 0.86)] == [
        "volunteer",
        "on_ask",
        "on_ask",
        "hidden",
    ]
    assert [realistic.disclose(d, "director") for d in (0.14, 0.16, 0.64, 0.66)] == [
        "volunteer",
        "on_ask",
        "on_ask",
        "hidden",
    ]
    assert realistic.settings()["field_disclosure"]["writer"] == {"volunteer": 0.15, "on_ask": 0.5, "hidden": 0.35}
    with pytest.raises(ValueError, match="sum to 1"):
        replace(realistic, field_disclosure={"actor": (0.5, 0.5, 0.5)})


def test_the_realistic_user_ends_a_sentence_as_often_as_its_profile_says(demo_index):
    """With `full_stop` 0.15, most of the realistic user's turns end without a full stop; the implicit
    user (1.0) ends every sentence."""
    realistic = [
        t["user_text"] for seed in range(30) for t in simulate(demo_index, "realistic", "random", seed)["turns"]
    ]
    implicit = [t["user_text"] for seed in range(10) for t in simulate(demo_index, "implicit", "random", seed)["turns"]]
    assert all(text[-1] in ".?!" for text in implicit)
    full_stops = sum(text.endswith(".") for text in realistic) / len(realistic)
    assert full_stops < 0.3, full_stops


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_every_profile_says_exactly_what_it_means_over_10000_turns(demo_index, profile):
    """10,000 user turns per profile, against a system that recommends and one that asks: every
    utterance reads back as exactly the statements and titles the ground truth records, and what it
    states is gold (a context is the shift's bridge)."""
    matcher = matcher_of(demo_index)
    agents = ("oracle", lambda s: Asker(demo_index, matcher, AgentSettings(), s), "random")
    turns = seed = 0
    while turns < 10_000:
        record = simulate(demo_index, profile, agents[seed % 3], seed, turns=12)
        previous = []
        for turn in record["turns"]:
            text, meta = turn["user_text"], turn["user_meta"]
            read = {(m.field, m.value, role) for m, role in extract_statements(matcher, text, previous)}
            assert read == {(s["field"], s["value"], s["role"]) for s in meta["stated"]}, text
            assert set(matcher.title_recognizer.recognise(text, candidates=previous).all) == set(meta["titles"])
            wishes = {
                (s["field"], s["value"], s["role"] == "exclusion") for s in meta["stated"] if s["role"] != "context"
            }
            assert wishes <= set(gold(turn)), text
            previous = turn["recommended_titles"]
            turns += 1
        seed += 1


def test_profiles_are_documented_and_checked():
    for profile in PROFILES.values():
        assert profile.summary and set(profile.settings()["disclosure"]) == {"volunteer", "on_ask", "hidden"}
        assert "summary" not in profile.settings()  # a reworded summary re-runs nothing
    with pytest.raises(ValueError, match="did you mean 'implicit'"):
        user_profile("implict")
    with pytest.raises(ValueError, match="sum to 1"):
        replace(PROFILES["implicit"], disclosure=(0.5, 0.4, 0.2))
    assert isinstance(PROFILES["explicit"], UserProfile) and PROFILES["explicit"].is_explicit


@pytest.mark.workflow
def test_a_workflow_with_systems_under_two_profiles(workflow_copy):
    """config/test/user_profiles_demo.yaml: calibration systems under `implicit` and three under `explicit`.
    The validity table has a section per profile, the sessions and provenance carry the profile, and moving
    one system to another profile re-simulates that system only."""
    import pandas as pd
    import yaml
    from conftest import planned_jobs, run_snakemake

    config = workflow_copy / "config" / "test" / "user_profiles_demo.yaml"
    with_reference = yaml.safe_load(config.read_text())
    with_reference["simulator"]["realism"] = {"reference": "reference.json", "folds": 3}
    (workflow_copy / "reference.json").write_text(json.dumps(REAL_DIALOGUES))
    config.write_text(yaml.safe_dump(with_reference))
    run_snakemake(workflow_copy, "--configfile", str(config))
    results = workflow_copy / "results" / "user-profiles-demo"
    table = pd.read_csv(results / "stats" / "validity.csv")
    assert list(dict.fromkeys(table["profile"])) == ["implicit", "explicit"]
    verdicts = table.set_index(["profile", "metric", "check"])["verdict"]
    assert verdicts["explicit", "success", "elicitation"].startswith("not measured")
    assert verdicts["implicit", "elicitation_rate", "elicitation"] in ("pass", "fail")  # measured
    summary = (results / "stats" / "validity.md").read_text()
    assert "## User profile `implicit`" in summary and "## User profile `explicit`" in summary
    with open(results / "sessions" / "asker-explicit" / "shard-0.jsonl") as handle:
        assert {json.loads(line)["profile"] for line in handle} == {"explicit"}
    provenance = json.loads((results / "provenance.json").read_text())
    assert set(provenance["user_profiles"]) == {"implicit", "explicit"}
    assert provenance["user_profiles"]["implicit"] == PROFILES["implicit"].settings()

    realism = pd.read_csv(results / "stats" / "user_realism.csv")
    overall = realism[realism["system"] == "all"].set_index(["user", "measure"])
    assert set(overall.index.get_level_values("user")) == {"implicit", "explicit"}
    assert overall.loc[("explicit", "words"), "real"] == 3  # the median words of the reference turns above
    assert 0.5 <= overall.loc[("explicit", "auc_word"), "simulated"] <= 1
    assert set(realism["system"]) == {"all", *(s["name"] for s in with_reference["systems"])}
    assert "## User `implicit`" in (results / "stats" / "user_realism.md").read_text()
    assert (results / "figures" / "user_realism.png").stat().st_size > 0

    edited = yaml.safe_load(config.read_text())
    edited["simulator"]["realism"]["folds"] = 4  # the comparison only
    config.write_text(yaml.safe_dump(edited))
    assert planned_jobs(run_snakemake(workflow_copy, "-n", "--configfile", str(config)))["user_realism"] == 1
    assert "simulate" not in planned_jobs(run_snakemake(workflow_copy, "-n", "--configfile", str(config)))
    edited["systems"][2]["profile"] = "realistic"  # literal: implicit -> realistic
    config.write_text(yaml.safe_dump(edited))
    plan = planned_jobs(run_snakemake(workflow_copy, "-n", "--configfile", str(config)))
    assert plan["simulate"] == 1 and plan["score"] == 1


# Twelve short dialogues written for this test, in CRSArena-Dial's format: the reference users.
_USER_TURNS = [
    ["hi", "a scary movie please", "seen it"],
    ["any comedy from the nineties?", "why that one?", "ok thanks"],
    ["something with a dog in it", "no not that"],
    ["recommend me a western", "more like that", "great"],
]
REAL_DIALOGUES = [
    {
        "conversation ID": f"test-{i}",
        "agent": {"id": "some_crs", "type": "AGENT"},
        "user": {"id": f"user-{i}", "type": "USER"},
        "conversation": [
            message
            for turn, text in enumerate(_USER_TURNS[i % 4])
            for message in (
                {"participant": "USER", "utterance": text, "utterance ID": f"{i}-{turn}-u"},
                {"participant": "AGENT", "utterance": "How about Heat?", "utterance ID": f"{i}-{turn}-a"},
            )
        ],
    }
    for i in range(12)
]
