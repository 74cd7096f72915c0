"""Prompts laid out for a prefix cache: a recommender's template in two parts, the history window, the judge's
criteria before the conversation. Consecutive prompts of a conversation must begin alike."""

from pathlib import Path

import pytest
from conftest import REPO
from fake_servers import FakeOllama
from test_sessions import arguments, ollama_system

from crseval.llm.prompts import TURN_MARKER, PromptTemplate
from crseval.simulate.shard import build_shard_runner
from crseval.simulate.systems.agents import history_window


def template(tmp_path: Path, text: str) -> PromptTemplate:
    path = tmp_path / "prompt.txt"
    path.write_text(text)
    return PromptTemplate(path)


def test_a_two_part_template_renders_its_system_part_and_its_turn_part(tmp_path):
    text = f"Be brief.\nRules stay here.\n{TURN_MARKER}\n{{message}}\n\n(wants: {{constraints}})\n"
    prompt = template(tmp_path, text)
    assert prompt.has_turn_part
    assert prompt.render_system(constraints="genre drama") == "Be brief.\nRules stay here."
    assert prompt.render_turn("Hi there", constraints="genre drama") == "Hi there\n\n(wants: genre drama)"
    # the whole prompt, as the scorer reads what a reply copies: both parts, no marker, no user words
    assert prompt.render(constraints="genre drama") == "Be brief.\nRules stay here.\n\n(wants: genre drama)"
    single = template(tmp_path, "Wants: {constraints}\n")
    assert not single.has_turn_part and single.render_turn("Hi", constraints="x") == ""
    assert single.render(constraints="x") == single.render_system(constraints="x") == "Wants: x"


def test_the_history_window_keeps_at_least_n_exchanges_and_drops_n_at_a_time():
    history = [{"role": r, "content": f"{r}{k}"} for k in range(1, 7) for r in ("user", "assistant")]

    def kept(held, n):
        return [m["content"] for m in history_window(history[: 2 * held], n) if m["role"] == "user"]

    # n = 2, by hand: turn t is given the exchanges before it
    assert [kept(held, 2) for held in range(7)] == [
        [],
        ["user1"],
        ["user1", "user2"],
        ["user1", "user2", "user3"],
        ["user3", "user4"],
        ["user3", "user4", "user5"],
        ["user5", "user6"],
    ]
    assert [kept(held, 1) for held in (0, 1, 4)] == [[], ["user1"], ["user4"]]
    assert kept(6, 0) == [] and kept(6, 9) == [f"user{k}" for k in range(1, 7)]
    for n in (1, 2, 3):
        for held in range(7):
            assert min(held, n) <= len(kept(held, n)) <= max(2 * n - 1, 1)


def test_consecutive_prompts_of_a_conversation_begin_alike(catalog_files, tmp_path):
    """The shipped grounded template: the system message is the same at every turn of every session, the
    earlier exchanges follow it word for word, the turn's wishes and candidates come last, after the user's
    words; a turn's prompt repeats the previous one up to the previous user's words, except where the window
    drops."""
    with FakeOllama() as server:
        runner = build_shard_runner(**arguments(catalog_files, ollama_system(server.host), tmp_path, turns=6))
        runner.run(range(2), progress=tmp_path / "progress", output=tmp_path / "out.jsonl")
        prompts = [r["body"]["messages"] for r in server.requests if r["path"] == "/api/chat"]
    assert len(prompts) == 12
    systems = {p[0]["content"] for p in prompts}
    assert len(systems) == 1 and "{" not in systems.pop()
    for turn, (before, now) in enumerate(zip(prompts[:6], prompts[1:6]), start=2):
        last = now[-1]["content"]
        assert last.index("(For the recommender. The user now wants: ") > 0 and "Candidates:\n- " in last
        if turn in (2, 3, 4, 6):  # the window grew: the previous prompt's messages, its user's words, then more
            assert now[: len(before) - 1] == before[:-1]
            assert now[len(before) - 1]["content"] == before[-1]["content"].split("\n\n(For the recommender")[0]
        else:  # turn 5: the window dropped two exchanges
            assert len(now) == 1 + 2 * 2 + 1


@pytest.mark.parametrize("name", ["crs_grounded.txt", "crs_ungrounded.txt"])
def test_the_shipped_recommender_prompts_put_the_instructions_first(name):
    prompt = PromptTemplate(REPO / "resources" / "prompts" / name)
    assert prompt.has_turn_part and "{" not in prompt.system_text
    assert prompt.turn_text.lstrip().startswith("{message}")


def test_the_judge_prompt_puts_its_criteria_before_the_session():
    text = PromptTemplate(REPO / "resources" / "prompts" / "judge.txt").text
    criteria = max(text.index(c) for c in ("proactiveness:", "coherence:", "personalization:", "JSON object"))
    assert criteria < text.index("{preferences}") < text.index("{conversation}")
