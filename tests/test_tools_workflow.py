"""A `tools` system through the workflow, on a loopback OpenAI-compatible server that answers with tool calls: it
searches, reads the first film found, then commits it and, in the same reply, commits another (the exploit of a
commit protocol). The records keep every call, the exploit's second call is ignored, the scores read the commits,
the viewer shows the calls, and a re-run calls the server no more."""

import json
import re

import pandas as pd
import pytest
from conftest import copy_workflow, run_snakemake, write_config
from fake_servers import FakeOpenAI

pytestmark = pytest.mark.workflow
EXPERIMENT = "tools-loopback"
GENRES = ("comedy", "drama", "crime", "horror", "thriller", "romance", "animation", "action", "mystery", "war")


class ToolCallingServer(FakeOpenAI):
    """Replies with tool calls: a search for the genre the user's last turn names, the details of the first film
    found, then a commit of that film followed by a second commit in the same reply."""

    def reply(self, body: dict) -> dict:
        assert body["tools"] and body["tool_choice"] == "auto"
        last = body["messages"][-1]
        if last["role"] == "user":
            genres = [g for g in GENRES if re.search(rf"\b{g}\b", last["content"].lower())]
            calls = [("search_films", {"genre": genres[:1], "limit": 3})]
        else:
            result = json.loads(last["content"])
            if result.get("films"):
                calls = [("film_details", {"id": result["films"][0]["id"]})]
            elif "id" in result:
                film = result["id"]
                calls = [
                    ("recommend", {"film_ids": [film], "message": f"Try {result['title']}: it fits."}),
                    ("recommend", {"film_ids": [film], "message": "On second thought, nothing."}),
                ]
            else:  # nothing found, or an error
                return self.message(body, "Tell me more about what you like.")
        tool_calls = [
            {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
            for i, (name, args) in enumerate(calls)
        ]
        return self.message(body, None, tool_calls)

    def message(self, body, content, tool_calls=None):
        message = {"role": "assistant", "content": content} | ({"tool_calls": tool_calls} if tool_calls else {})
        reason = "tool_calls" if tool_calls else "stop"
        choice = {"index": 0, "message": message, "finish_reason": reason}
        return {"id": "chatcmpl-1", "object": "chat.completion", "model": body["model"], "choices": [choice]}


@pytest.fixture(scope="module")
def server():
    with ToolCallingServer() as running:
        yield running


def config(base_url: str) -> dict:
    return {
        "experiment": EXPERIMENT,
        "catalog": {"path": "resources/catalog/demo_movies.json"},
        "sessions": {"count": 2, "shard_size": 2, "turns": 4},
        "systems": [
            {
                "name": "served-tools",
                "agent": "tools",
                "prompt": "resources/prompts/crs_tools.txt",
                "backend": {"type": "openai", "model": "served", "base_url": base_url},
                "options": {"temperature": 0.2, "top_p": 0.95, "max_tokens": 64},
            },
            {"name": "template-tools", "agent": "template", "tools": True},
        ],
        "scoring": {"metrics": ["adherence", "tool_use"]},
    }


def test_a_served_tools_system_runs_through_the_workflow(server, tmp_path):
    workdir = copy_workflow(tmp_path)
    configfile = str(write_config(workdir, config(server.base_url)))
    results = workdir / "results" / EXPERIMENT
    run_snakemake(workdir, f"results/{EXPERIMENT}/viewer", "--configfile", configfile)
    calls = server.chat_calls
    assert calls > 0
    shard = results / "sessions" / "served-tools" / "shard-0.jsonl"
    sessions = [json.loads(line) for line in shard.read_text().splitlines()]
    committed_turns = 0
    for session in sessions:
        for turn in session["turns"]:
            names = [(c["name"], c["status"]) for c in turn["tool_calls"]]
            if turn["tool_turn_end"] == "recommend":
                committed_turns += 1
                assert names[-2:] == [("recommend", "ok"), ("recommend", "ignored")]
                assert turn["recommended_titles"] == turn["committed_titles"] and len(turn["committed_titles"]) == 1
                assert turn["system_text"].startswith("Try ")
    assert committed_turns > 0
    # the scores read the commits: every session's recommendation counts come from committed films
    table = pd.read_parquet(results / "tables" / "sessions.parquet").set_index("system")
    assert table.loc["served-tools", "invalid_call_rate"].notna().all()
    assert (table.loc["template-tools", "invalid_call_rate"] == 0).all()
    chunk = (results / "viewer" / "data" / "0.js").read_text()
    assert '"tools"' in chunk and "after the turn's recommend" in chunk
    # a re-run of the shard finds every model call in the cache
    shard.unlink()
    run_snakemake(workdir, str(shard.relative_to(workdir)), "--configfile", configfile)
    assert server.chat_calls == calls
    assert [json.loads(line) for line in shard.read_text().splitlines()][0]["turns"][0]["llm"]["cached"] is True
