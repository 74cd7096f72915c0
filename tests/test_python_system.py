"""A recommender under test as a Python class (`agent: python`): loading by import path, the reply
protocol, errors that name system, session and turn, and the example class reproducing the template agent."""

from __future__ import annotations

import json
from importlib.metadata import version
from pathlib import Path

import pytest
from conftest import NON_GENRES, REPO, SMALL_CATALOG, default_config, shard_inputs

from crseval.simulate.shard import build_shard_runner
from crseval.simulate.systems.external import ExternalReply, ExternalSystemError
from crseval.simulate.systems.python_system import PythonSystem, package_version

TOY_MODULE = '''
import time


class Echo:
    """Answers in str on odd turns and in a dict on even ones; remembers what it was given."""

    def __init__(self, greeting="Try"):
        self.greeting = greeting
        self.seen = []

    def start_session(self, session_id, seed):
        self.seen.append(("start", session_id, seed))

    def respond(self, turn, user_text, history):
        self.seen.append(("respond", turn, user_text, history))
        history.append({"role": "assistant", "content": "changing the copy changes nothing"})
        if turn % 2:
            return f"{self.greeting} Heat."
        return {
            "reply": f"{self.greeting} Casino.",
            "recommended": ["Casino"],
            "constraints": [{"field": "genre", "value": "Crime", "negated": False}],
        }


class Raises(Echo):
    def respond(self, turn, user_text, history):
        raise ValueError("no films for you")


class FailsToStart(Echo):
    def start_session(self, session_id, seed):
        raise KeyError("profile")


class FortyTwo(Echo):
    def respond(self, turn, user_text, history):
        return 42


class Returns(Echo):
    """Returns whatever its `reply` option holds."""

    def __init__(self, reply):
        super().__init__()
        self.reply = reply

    def respond(self, turn, user_text, history):
        return self.reply


class Hangs(Echo):
    def respond(self, turn, user_text, history):
        time.sleep(10)
        return "too late"


class NoRespond:
    def start_session(self, session_id, seed):
        pass


NOT_A_CLASS = 3
'''


@pytest.fixture
def toy(tmp_path, monkeypatch):
    """The module `toy_recommenders` (the classes above) on the import path."""
    (tmp_path / "toy_recommenders.py").write_text(TOY_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    return "toy_recommenders"


def error_of(call) -> ExternalSystemError:
    with pytest.raises(ExternalSystemError) as caught:
        call()
    assert caught.value.transient is False
    return caught.value


def started(entry_point: str, **kwargs) -> PythonSystem:
    system = PythonSystem("mine", entry_point, **kwargs)
    system.start("mine/s00003", 17)
    return system


def test_str_and_dict_replies_are_read_and_the_class_gets_options_seed_and_a_copy_of_history(toy):
    system = started(f"{toy}:Echo", options={"greeting": "Watch"}, timeout=5)
    history = [{"role": "user", "content": "crime please"}, {"role": "assistant", "content": "Try Heat."}]
    assert system.answer(1, "something else", []) == ExternalReply("Watch Heat.")
    assert system.answer(2, "a crime film", history) == ExternalReply(
        "Watch Casino.", ("Casino",), ({"field": "genre", "value": "Crime", "negated": False},)
    )
    assert len(history) == 2
    appended = {"role": "assistant", "content": "changing the copy changes nothing"}  # by the class, to its copy
    assert system.instance.seen == [
        ("start", "mine/s00003", 17),
        ("respond", 1, "something else", [appended]),
        ("respond", 2, "a crime film", history + [appended]),
    ]


def test_without_a_timeout_the_call_runs_in_the_callers_thread(toy):
    assert started(f"{toy}:Echo").answer(1, "hi", []) == ExternalReply("Try Heat.")


def test_describe_names_entry_point_version_and_options(toy):
    system = PythonSystem("mine", f"{toy}:Echo", options={"greeting": "Watch"})
    assert system.describe() == {
        "agent": "python",
        "entry_point": "toy_recommenders:Echo",
        "package_version": None,
        "options": {"greeting": "Watch"},
    }


def test_package_version_finds_the_distribution_of_the_top_level_package():
    assert package_version("yaml:YAMLObject") == version("PyYAML")  # import name differs from distribution name
    assert package_version("crseval.simulate.systems.agents:TemplateAgent") == version("crseval")


def test_a_method_that_raises_names_system_session_turn_and_cause(toy):
    error = error_of(lambda: started(f"{toy}:Raises", timeout=5).answer(2, "hi", []))
    assert str(error) == (
        "system 'mine' (toy_recommenders:Raises), session mine/s00003, turn 2: "
        "respond() raised ValueError: no films for you"
    )
    error = error_of(lambda: started(f"{toy}:Raises").answer(1, "hi", []))
    assert str(error) == (
        "system 'mine' (toy_recommenders:Raises), session mine/s00003, turn 1: "
        "respond() raised ValueError: no films for you"
    )
    error = error_of(lambda: started(f"{toy}:FailsToStart"))
    assert str(error) == (
        "system 'mine' (toy_recommenders:FailsToStart), session mine/s00003, at session start: "
        "start_session() raised KeyError: 'profile'"
    )


def test_a_reply_of_the_wrong_type_is_an_error(toy):
    error = error_of(lambda: started(f"{toy}:FortyTwo").answer(1, "hi", []))
    assert str(error) == (
        "system 'mine' (toy_recommenders:FortyTwo), session mine/s00003, turn 1: "
        "respond() returned int (42); expected a str or a dict with a str 'reply'"
    )


WHERE = "system 'mine' (toy_recommenders:Returns), session mine/s00003, turn 1: respond() returned"


@pytest.mark.parametrize(
    "reply, message",
    [
        ({"text": "Heat"}, "a dict that has unknown keys ['text']; allowed: reply, recommended, constraints"),
        ({"recommended": ["Heat"]}, "a dict that has no 'reply'; it must be a string"),
        ({"reply": ["Heat"]}, "a dict that has 'reply' of type list; it must be a string"),
        (
            {"reply": "Heat", "recommended": "Heat"},
            "a dict that has 'recommended' 'Heat'; it must be a list of title strings",
        ),
        (
            {"reply": "Heat", "recommended": [1995]},
            "a dict that has 'recommended' [1995]; it must be a list of title strings",
        ),
        (
            {"reply": "Heat", "constraints": {"field": "genre"}},
            "a dict that has 'constraints' {'field': 'genre'}; it must be a list of {field, value, negated}",
        ),
        (
            {"reply": "Heat", "constraints": [{"field": "mood", "value": "dark", "negated": False}]},
            "a dict that has constraint 1 of 'constraints' with field 'mood'; the fields are "
            "genre, actor, director, writer, language, year, plot_keyword",
        ),
        (
            {"reply": "Heat", "constraints": [{"field": "genre", "value": "Crime"}]},
            "a dict that has constraint 1 of 'constraints' {'field': 'genre', 'value': 'Crime'}: it lacks negated",
        ),
    ],
)
def test_a_dict_reply_outside_the_protocol_is_an_error(toy, reply, message):
    error = error_of(lambda: started(f"{toy}:Returns", options={"reply": reply}).answer(1, "hi", []))
    assert str(error) == f"{WHERE} {message}"


def test_a_call_that_hangs_beyond_the_timeout_fails_and_the_instance_is_not_used_again(toy):
    system = started(f"{toy}:Hangs", timeout=0.2)
    error = error_of(lambda: system.answer(1, "hi", []))
    assert str(error) == (
        "system 'mine' (toy_recommenders:Hangs), session mine/s00003, turn 1: respond() did not return within "
        "0.2 s (the call cannot be stopped; it keeps running until the process ends)"
    )
    error = error_of(lambda: system.answer(2, "hi", []))
    assert str(error) == (
        "system 'mine' (toy_recommenders:Hangs), session mine/s00003, turn 2: "
        "an earlier call timed out and may still be running"
    )


@pytest.mark.parametrize(
    "entry_point, message",
    [
        (
            "no_such_pkg.recommender:Thing",
            "system 'mine': entry_point 'no_such_pkg.recommender:Thing': module 'no_such_pkg.recommender' "
            "does not exist (no module named 'no_such_pkg')",
        ),
        (
            "toy_recommenders:Nothing",
            "system 'mine': entry_point 'toy_recommenders:Nothing': module 'toy_recommenders' "
            "has no attribute 'Nothing'",
        ),
        (
            "toy_recommenders:Echo.Inner",
            "system 'mine': entry_point 'toy_recommenders:Echo.Inner': module 'toy_recommenders' "
            "has no attribute 'Echo.Inner'",
        ),
        (
            "toy_recommenders.Echo",
            "system 'mine': entry_point 'toy_recommenders.Echo' is not of the form 'package.module:Class'",
        ),
        (
            "toy_recommenders:NOT_A_CLASS",
            "system 'mine': entry_point 'toy_recommenders:NOT_A_CLASS': 'NOT_A_CLASS' is a int, not a class",
        ),
        ("toy_recommenders:NoRespond", "system 'mine': toy_recommenders:NoRespond has no method respond()"),
    ],
)
def test_an_entry_point_that_cannot_be_loaded_names_the_key_and_what_is_missing(toy, entry_point, message):
    assert str(error_of(lambda: PythonSystem("mine", entry_point))) == message


def test_a_constructor_that_rejects_the_options_is_an_error(toy):
    error = error_of(lambda: PythonSystem("mine", f"{toy}:Echo", options={"colour": "red"}))
    assert str(error) == (
        "system 'mine': toy_recommenders:Echo(**options) raised TypeError: "
        "Echo.__init__() got an unexpected keyword argument 'colour' (options: ['colour'])"
    )


def test_answer_before_start_is_an_error(toy):
    error = error_of(lambda: PythonSystem("mine", f"{toy}:Echo").answer(1, "hi", []))
    assert str(error) == "system 'mine': turn 1 asked before start() began a session"


@pytest.fixture(scope="module")
def small_catalog_files(tmp_path_factory):
    """The eight-film catalog of conftest, indexed into files as index_catalog writes them."""
    from crseval.catalog.build import build_index
    from crseval.core.io import write_json, write_parquet

    folder = tmp_path_factory.mktemp("small_catalog")
    (folder / "catalog.json").write_text(json.dumps(SMALL_CATALOG))
    films, concepts, summary = build_index(
        folder / "catalog.json", NON_GENRES, {"per_film": 3, "min_df": 1, "max_df": 1.0, "lemmatize": True}
    )
    write_parquet(films, folder / "films.parquet")
    write_parquet(concepts, folder / "concepts.parquet")
    write_json(summary, folder / "summary.json")
    return folder


def template_sessions(catalog: Path, tmp_path: Path, sessions: int, turns: int) -> list[dict]:
    """Sessions of the built-in template agent, as the simulate rule makes them."""
    config = default_config()
    config["simulator"]["templates"] = str(REPO / config["simulator"]["templates"])
    runner = build_shard_runner(
        system={"name": "template", "agent": "template"},
        simulator=config["simulator"],
        agent=config["agent"],
        experiment_seed=7,
        turns=turns,
        **shard_inputs(catalog, tmp_path),
    )
    runner.run(range(sessions), progress=tmp_path / "template.progress", output=tmp_path / "template.jsonl")
    return [json.loads(line) for line in (tmp_path / "template.jsonl").read_text().splitlines()]


def test_the_example_class_gives_the_template_agents_replies(small_catalog_files, tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(REPO))
    recorded = template_sessions(small_catalog_files, tmp_path, sessions=4, turns=6)
    options = {
        "films": str(small_catalog_files / "films.parquet"),
        "concepts": str(small_catalog_files / "concepts.parquet"),
        **default_config()["agent"],
    }
    system = PythonSystem("my-recommender", "examples.my_recommender:MyRecommender", options=options, timeout=60)
    compared = 0
    for session in recorded:
        system.start(session["session_id"], session["seed"])
        history: list[dict] = []
        for turn in session["turns"]:
            reply = system.answer(turn["turn"], turn["user_text"], history)
            assert reply.text == turn["system_text"]
            assert list(reply.recommended) == turn["recommended_titles"]
            assert list(reply.constraints) == turn["system_constraints"]
            history += [{"role": "user", "content": turn["user_text"]}, {"role": "assistant", "content": reply.text}]
            compared += 1
    assert compared == 24
    assert len({t["system_text"] for s in recorded for t in s["turns"]}) > 4  # replies that differ, not one stock text
    assert any(t["recommended_titles"] for s in recorded for t in s["turns"])
    assert any(t["system_constraints"] for s in recorded for t in s["turns"])


def test_a_fresh_instance_picks_a_session_up_from_its_history(small_catalog_files, tmp_path, monkeypatch):
    """A resumed run asks a new instance for turn n > 1: the example class catches up on `history` and
    answers as the instance that never stopped; a history it would not have had is an error."""
    monkeypatch.syspath_prepend(str(REPO))
    session = template_sessions(small_catalog_files, tmp_path, sessions=1, turns=5)[0]
    options = {
        "films": str(small_catalog_files / "films.parquet"),
        "concepts": str(small_catalog_files / "concepts.parquet"),
        **default_config()["agent"],
    }
    history = []
    for turn in session["turns"]:
        fresh = PythonSystem("my-recommender", "examples.my_recommender:MyRecommender", options=options, timeout=60)
        fresh.start(session["session_id"], session["seed"])
        reply = fresh.answer(turn["turn"], turn["user_text"], list(history))
        assert reply.text == turn["system_text"] and list(reply.recommended) == turn["recommended_titles"]
        history += [{"role": "user", "content": turn["user_text"]}, {"role": "assistant", "content": reply.text}]
    tampered = [*history[:3], {"role": "assistant", "content": "A reply this agent never gave."}]
    fresh = PythonSystem("my-recommender", "examples.my_recommender:MyRecommender", options=options, timeout=60)
    fresh.start(session["session_id"], session["seed"])
    with pytest.raises(ExternalSystemError, match="holds another reply than this agent's at turn 2"):
        fresh.answer(3, "A comedy, please.", tampered)
