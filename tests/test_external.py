"""Systems under test from outside (crseval.simulate.systems.external): the reply read like any other,
films outside the catalog counted and reacted to, replies cached, failures named."""

import json

import pytest
from conftest import REPO, default_config

from crseval.simulate.sessions import run_shard
from crseval.simulate.shard import build_shard_runner
from crseval.simulate.systems.external import (
    ExternalAgent,
    ExternalCalls,
    ExternalReply,
    ExternalSystemError,
    ReplyCache,
    reply_from_record,
)

UNKNOWN_FILM = "The Glass Lighthouse of Wendover"


class ScriptedSystem:
    """A recommender that names a catalog film on odd turns and only an unknown film on even turns."""

    name = "scripted"

    def __init__(self, catalog_title: str, fail_at: int | None = None):
        self.catalog_title = catalog_title
        self.fail_at = fail_at
        self.started: list[tuple[str, int]] = []
        self.histories: list[list[dict]] = []

    def start(self, session_id, seed):
        self.started.append((session_id, seed))

    def answer(self, turn, user_text, history):
        self.histories.append(history)
        if turn == self.fail_at:
            raise KeyError("no such user profile")
        if turn % 2:
            return ExternalReply(
                f'You should watch "{self.catalog_title}".',
                recommended=(self.catalog_title,),
                constraints=({"field": "genre", "value": "drama", "negated": False},),
            )
        return ExternalReply(f'Try "{UNKNOWN_FILM}", a hidden gem.', recommended=(UNKNOWN_FILM,))

    def describe(self):
        return {"agent": "python", "entry_point": "tests.test_external:ScriptedSystem", "package_version": "1"}


def runner_for(catalog_files, tmp_path, turns=4):
    config = default_config()
    config["simulator"]["templates"] = str(REPO / config["simulator"]["templates"])
    # no shift and no contradiction: every turn after the first reacts to the reply before it
    config["simulator"].update(shift_every=10, contradiction_rate=0.0)
    return build_shard_runner(
        system={"name": "scripted", "agent": "template"},
        simulator=config["simulator"],
        agent=config["agent"],
        experiment_seed=7,
        turns=turns,
        films=str(catalog_files / "films.parquet"),
        concepts=str(catalog_files / "concepts.parquet"),
        catalog_summary=str(catalog_files / "summary.json"),
        schema=str(REPO / "src" / "crseval" / "core" / "schemas" / "session.schema.yaml"),
        llm_runtime={"cache_dir": None, "timeout_s": 10, "max_retries": 0, "backoff_s": 0.0},
        threads=1,
    )


def simulate(runner, tmp_path, systems, cache, counter, indices=range(0, 2), name="shard"):
    title = runner.ctx.index.title(int(runner.ctx.index.films["film_id"].iloc[0]))

    def make_agent(seed):
        systems.append(ScriptedSystem(title, **systems_options))
        return ExternalAgent(systems[-1], runner.ctx.index, runner.ctx.matcher, seed, cache, counter)

    systems_options = {}
    output = tmp_path / f"{name}.jsonl"
    counts = run_shard(
        runner.ctx, "scripted", make_agent, indices, 7, runner.config_sha, tmp_path / f"{name}.progress", output,
        runner.schema,
    )  # fmt: skip
    return title, counts, [json.loads(line) for line in output.read_text().splitlines()]


def test_catalog_and_unknown_titles_and_the_users_reaction(catalog_files, tmp_path):
    runner = runner_for(catalog_files, tmp_path)
    systems = []
    title, counts, records = simulate(runner, tmp_path, systems, None, ExternalCalls())
    for record in records:
        first, second, third = record["turns"][:3]
        assert first["recommended_titles"] == [title] and first["unknown_titles"] == []
        assert first["system_constraints"] == [{"field": "genre", "value": "drama", "negated": False}]
        assert first["candidate_titles"] == [title] and first["llm"] is None
        assert second["recommended_titles"] == [] and second["unknown_titles"] == [UNKNOWN_FILM]
        assert second["system_constraints"] == []
        # the user cannot judge a film it does not know, says so and asks for another
        assert third["user_meta"]["stage"] == "unknown_title" and third["user_meta"]["cannot_judge"] is True
        assert "don't know" in third["user_text"] or "new to me" in third["user_text"]
        assert not any(t["user_meta"]["cannot_judge"] for t in record["turns"][:2])
        assert record["unknown_title_turns"] == sum(t["user_meta"]["stage"] == "unknown_title" for t in record["turns"])
    assert counts["unknown_title_reactions"] == sum(r["unknown_title_turns"] for r in records) >= 2
    # each system was started once, with the session's id, and saw the whole conversation so far
    assert [s.started[0][0] for s in systems] == ["scripted/s00000", "scripted/s00001"]
    assert [len(h) for h in systems[0].histories] == [0, 2, 4, 6]
    assert systems[0].histories[1][1]["content"] == f'You should watch "{title}".'


def test_a_rerun_asks_the_system_nothing(catalog_files, tmp_path):
    runner = runner_for(catalog_files, tmp_path)
    cache = ReplyCache(tmp_path / "cache")
    first, second = ExternalCalls(), ExternalCalls()
    _, _, records = simulate(runner, tmp_path, [], cache, first, name="first")
    assert (first.calls, first.cache_hits) == (8, 0)
    systems = []
    _, _, again = simulate(runner, tmp_path, systems, cache, second, name="second")
    assert (second.calls, second.cache_hits) == (0, 8)
    assert again == records and all(not s.started for s in systems)


def test_transport_settings_are_recorded_but_do_not_key_the_cache(catalog_files, tmp_path):
    """A longer timeout or more retries fetch the same answer: the cache keeps serving it. Anything
    else the system describes (its URL, its settings) asks again."""
    runner = runner_for(catalog_files, tmp_path)
    index, matcher = runner.ctx.index, runner.ctx.matcher
    title = index.title(int(index.films["film_id"].iloc[0]))
    cache = ReplyCache(tmp_path / "cache")

    def ask(describe: dict) -> ExternalCalls:
        system = ScriptedSystem(title)
        system.describe = lambda: describe
        counter = ExternalCalls()
        ExternalAgent(system, index, matcher, 3, cache, counter).respond(1, "A drama, please.")
        return counter

    base = {"agent": "http", "url": "http://127.0.0.1:9/crs", "settings": {"headers": []}}
    assert ask({**base, "transport": {"timeout": 5.0, "retries": 1}}).calls == 1
    assert ask({**base, "transport": {"timeout": 60.0, "retries": 4}}).cache_hits == 1
    assert ask({**base, "settings": {"headers": ["X-Model"]}, "transport": {"timeout": 5.0}}).calls == 1
    assert ask({**base, "url": "http://127.0.0.1:9/crs2", "transport": {"timeout": 5.0}}).calls == 1


def test_a_failing_system_is_named_and_the_finished_sessions_are_kept(catalog_files, tmp_path):
    runner = runner_for(catalog_files, tmp_path)
    title = runner.ctx.index.title(int(runner.ctx.index.films["film_id"].iloc[0]))
    calls = {"n": 0}

    def make_agent(seed):
        calls["n"] += 1
        system = ScriptedSystem(title, fail_at=3 if calls["n"] == 2 else None)
        return ExternalAgent(system, runner.ctx.index, runner.ctx.matcher, seed)

    progress = tmp_path / "shard.progress"
    with pytest.raises(ExternalSystemError, match=r"system 'scripted', session scripted/s00001, turn 3: KeyError") as e:
        run_shard(runner.ctx, "scripted", make_agent, range(0, 2), 7, runner.config_sha, progress,
                  tmp_path / "shard.jsonl", runner.schema)  # fmt: skip
    assert e.value.transient is False
    kept = [json.loads(line) for line in progress.read_text().splitlines()]
    assert [r["session_index"] for r in kept] == [0]


def test_malformed_replies_are_errors_naming_the_field():
    with pytest.raises(ValueError, match="has no 'text'"):
        reply_from_record({"recommended": []})
    with pytest.raises(ValueError, match="has 'recommended' 'Heat'"):
        reply_from_record({"text": "hi", "recommended": "Heat"})
    with pytest.raises(ValueError, match="with field 'mood'"):
        reply_from_record({"text": "hi", "constraints": [{"field": "mood", "value": "dark", "negated": False}]})
    with pytest.raises(ValueError, match="it lacks negated"):
        reply_from_record({"text": "hi", "constraints": [{"field": "actor", "value": "Al Pacino"}]})
    with pytest.raises(ValueError, match=r"unknown keys \['score'\]"):
        reply_from_record({"text": "hi", "score": 3}, strict=True)
    reply = reply_from_record(
        {"reply": "hi", "constraints": [{"field": "actor", "value": "Al Pacino", "negated": True}]}, "reply"
    )
    assert reply == ExternalReply("hi", None, ({"field": "actor", "value": "Al Pacino", "negated": True},))


def test_an_empty_reply_is_an_error(catalog_files, tmp_path):
    runner = runner_for(catalog_files, tmp_path)

    class Silent(ScriptedSystem):
        def answer(self, turn, user_text, history):
            return ExternalReply("  ")

    agent = ExternalAgent(Silent("x"), runner.ctx.index, runner.ctx.matcher, 1)
    agent.begin_session("scripted/s00009")
    with pytest.raises(ExternalSystemError, match="session scripted/s00009, turn 1: the reply has no text"):
        agent.respond(1, "I'd like a drama.")


def test_an_error_that_already_says_where_is_not_prefixed_twice(catalog_files, tmp_path):
    runner = runner_for(catalog_files, tmp_path)
    where = "system 'scripted', session scripted/s00009, turn 1"

    class Placed(ScriptedSystem):
        def answer(self, turn, user_text, history):
            raise ExternalSystemError(f"{where}: POST http://127.0.0.1/ failed: HTTP 401", transient=False)

    class Unplaced(ScriptedSystem):
        def answer(self, turn, user_text, history):
            raise ExternalSystemError("HTTP 401", transient=False)

    for system, expected in (
        (Placed("x"), f"{where}: POST http://127.0.0.1/ failed: HTTP 401"),
        (Unplaced("x"), f"{where}: HTTP 401"),
    ):
        agent = ExternalAgent(system, runner.ctx.index, runner.ctx.matcher, 1)
        agent.begin_session("scripted/s00009")
        with pytest.raises(ExternalSystemError) as error:
            agent.respond(1, "I'd like a drama.")
        assert str(error.value) == expected
