"""The LLM rewording with people's words as examples (simulator.paraphrase.examples): the prompt shows k turns
of the reworded turn's act from the learned voice, slots as bracketed type words, drawn by the turn's seed; with
k = 0 the prompt and its cache key are what they were before examples existed.

The voice here is invented (no corpus's words)."""

import copy
import json
import re

import pytest
from conftest import REPO, default_config, shard_inputs
from fake_servers import FakeOllama

from crseval.catalog.index import CatalogIndex
from crseval.core.config_checks import ConfigError
from crseval.core.fields import CONCEPT_FIELDS
from crseval.language.concepts import ConceptMatcher
from crseval.language.user_acts import read_turn
from crseval.llm.base import LLMRequest, LLMResponse
from crseval.planning import check_config
from crseval.simulate.shard import build_shard_runner
from crseval.simulate.user.paraphrase import ParaphrasePrompt, Paraphraser
from crseval.simulate.user.voice import Voice, VoiceTemplate, voice_problems

# The prompt of the rewording as it was before examples: a reply cached then must still be found.
PROMPT = ParaphrasePrompt.read(REPO / "resources" / "prompts" / "paraphrase.txt")
PROMPT_BEFORE = (
    "Rewrite the following message from a person asking a movie recommender, in your own words, "
    "as one or two casual sentences. Keep every film title and every name exactly as written. "
    "Reply with the rewritten message only.\n\nMessage: {text}"
)
OPTIONS = {"temperature": 0.7, "top_p": 0.95, "max_tokens": 60}

# Invented turns, pooled as learn_voice pools them: position|act|slot signature.
POOLS = {
    "first|request|genre:wish": [
        ("r1", "hiya, got any {genre} flicks for a rainy night", ("genre:wish",)),
        ("r2", "in the mood for {genre} stuff tbh", ("genre:wish",)),
    ],
    "later|request|genre:wish": [
        ("r3", "hmm maybe more {genre} ish", ("genre:wish",)),
        ("r4", "in the mood for {genre} stuff tbh", ("genre:wish",)),  # the same words as r2: shown once
    ],
    "later|request|actor:wish,genre:wish": [
        ("r5", "smth {genre} w/ {actor} pls", ("genre:wish", "actor:wish")),
    ],
    "later|request|plot_keyword:wish": [("r6", "one about a {plot_keyword} maybe", ("plot_keyword:wish",))],
    "later|small_talk|": [("s1", "cool cool ty", ()), ("s2", "yo!", ())],
    "leave||": [("l1", "meh, bye then", ())],
}
REQUEST_SHOWN = {
    "r1": "hiya, got any [genre] flicks for a rainy night",
    "r2": "in the mood for [genre] stuff tbh",
    "r3": "hmm maybe more [genre] ish",
    "r5": "smth [genre] w/ [actor] pls",
    "r6": "one about a [plot keyword] maybe",
}


def invented_voice() -> Voice:
    pools = {key: [VoiceTemplate(*t) for t in templates] for key, templates in POOLS.items()}
    return Voice(pools, {"invented": True})


@pytest.fixture(scope="module")
def matcher(catalog_files):
    index = CatalogIndex.read(catalog_files / "films.parquet", catalog_files / "concepts.parquet")
    return ConceptMatcher(index.concepts, index.films, CONCEPT_FIELDS)


class FakeClient:
    """An LLM client that records each request and answers with `reply(prompt)`."""

    def __init__(self, reply):
        self.reply = reply
        self.requests: list[LLMRequest] = []
        self.calls = self.cache_hits = 0

    def complete(self, request: LLMRequest) -> LLMResponse:
        self.requests.append(request)
        self.calls += 1
        return LLMResponse(self.reply(request.messages[-1][1]), "fake", "fake-model", 0.0, None, None)


def message(prompt: str) -> str:
    return prompt.split("Message: ", 1)[1]


def shown_examples(prompt: str) -> list[str]:
    head = prompt.split("Message: ", 1)[0]
    return [line[2:] for line in head.splitlines() if line.startswith("- ")]


REQUEST = "I'd like a comedy with Clark Gable."


def test_the_turn_read_as_a_request(matcher):
    assert read_turn(REQUEST, matcher).act == "request"
    assert read_turn("Thanks a lot!", matcher).act == "small_talk"


def test_the_prompt_shows_k_examples_of_the_turns_act_with_slots_as_bracketed_words(matcher):
    client = FakeClient(lambda prompt: "so, " + message(prompt).lower())
    paraphraser = Paraphraser(client, OPTIONS, 3, invented_voice(), matcher, prompt=PROMPT)
    text, verdict, llm, ids = paraphraser(REQUEST, ["Comedy", "Clark Gable"], 12345)
    assert verdict == "kept" and text == "so, " + REQUEST.lower() and llm["backend"] == "fake"
    prompt = client.requests[0].messages[-1][1]
    examples = shown_examples(prompt)
    assert len(examples) == len(ids) == len(set(ids)) == 3
    assert examples == [REQUEST_SHOWN[i] for i in ids]  # the request pools' turns only, never small talk or leave
    assert message(prompt) == REQUEST and prompt.startswith(PROMPT_BEFORE.split("Message: ")[0])
    assert client.requests[0].tag == "paraphrase+examples@1" and client.requests[0].seed == 12345
    for example in examples:
        assert "{" not in example and re.search(r"\[[a-z ]+\]", example)
        reading = read_turn(example, matcher)
        assert reading.statements == () and reading.titles == ()  # no catalog value or title in an example
    assert "comedy" not in " ".join(examples).lower() and "gable" not in " ".join(examples).lower()


def test_the_examples_follow_the_act_and_the_seed(matcher):
    client = FakeClient(lambda prompt: message(prompt))
    paraphraser = Paraphraser(client, OPTIONS, 2, invented_voice(), matcher, prompt=PROMPT)
    draws = {seed: paraphraser(REQUEST, [], seed)[3] for seed in range(40)}
    assert all(paraphraser(REQUEST, [], seed)[3] == ids for seed, ids in draws.items())  # the same seed, the same
    assert len({tuple(ids) for ids in draws.values()}) > 3  # other seeds, other examples
    first, again = client.requests[0], client.requests[40]
    assert first == again and first.key("b", "m") == again.key("b", "m")  # the cache key pins the prompt
    thanks = paraphraser("Thanks a lot!", [], 7)[3]
    assert sorted(thanks) == ["s1", "s2"]
    # more examples asked for than the act has: all of them, once each; an act the voice never saw: none
    assert sorted(
        Paraphraser(client, OPTIONS, 20, invented_voice(), matcher, prompt=PROMPT)(REQUEST, [], 1)[3]
    ) == sorted(REQUEST_SHOWN)
    before = len(client.requests)
    assert paraphraser("Is it any good?", [], 3)[3] == []
    assert client.requests[before].messages[-1][1] == PROMPT_BEFORE.format(text="Is it any good?")


def test_a_rewording_that_drops_a_value_is_still_rejected(matcher):
    client = FakeClient(lambda prompt: "got any [genre] flicks")  # copied an example: no value, and brackets
    text, verdict, _, ids = Paraphraser(client, OPTIONS, 3, invented_voice(), matcher, prompt=PROMPT)(
        REQUEST, ["Comedy"], 5
    )
    assert (text, verdict) == (REQUEST, "rejected") and len(ids) == 3


@pytest.mark.parametrize("voice", [None, "invented"])
def test_no_examples_leave_the_prompt_and_its_cache_key_as_before(matcher, voice):
    client = FakeClient(lambda prompt: message(prompt))
    paraphraser = Paraphraser(
        client, OPTIONS, 0, invented_voice() if voice else None, matcher if voice else None, prompt=PROMPT
    )
    for seed, text in enumerate([REQUEST, "Thanks a lot!", 'Any films like "M"?']):
        assert paraphraser(text, [], seed)[3] == []
        before = LLMRequest.chat(
            [{"role": "user", "content": PROMPT_BEFORE.format(text=text)}], **OPTIONS, seed=seed, tag="paraphrase@1"
        )
        assert client.requests[-1] == before
        assert client.requests[-1].key("ollama", "fake:1b") == before.key("ollama", "fake:1b")


def test_examples_need_the_voice():
    with pytest.raises(ValueError, match="learned voice"):
        Paraphraser(FakeClient(str), OPTIONS, 2, prompt=PROMPT)


# --- the config and the shard ----------------------------------------------------------------------


def paraphrase_config(examples, corpus=None):
    config = default_config()
    config["simulator"]["paraphrase"] = {
        "enabled": True,
        "backend": {"type": "ollama", "model": "fake:1b", "host": "http://127.0.0.1:9"},
        "options": OPTIONS,
        **({"examples": examples} if examples is not None else {}),
    }
    if corpus:
        config["simulator"]["voice"]["corpus"] = corpus
    return config


def test_examples_need_a_voice_corpus_and_stay_in_bounds():
    check_config(paraphrase_config(None))
    check_config(paraphrase_config(0))
    check_config(paraphrase_config(3, corpus="dialogues.json"))
    assert list(voice_problems(paraphrase_config(3, corpus="dialogues.json"))) == []
    assert [p for p in voice_problems(paraphrase_config(3)) if "simulator.paraphrase.examples" in p]
    assert list(voice_problems(paraphrase_config(0))) == []
    for wrong in (3, 21, -1):
        config = paraphrase_config(wrong)
        with pytest.raises(ConfigError, match=r"simulator\.(voice\.corpus|paraphrase\.examples)"):
            check_config(config)
    off = paraphrase_config(3)
    off["simulator"]["paraphrase"]["enabled"] = False
    assert list(voice_problems(copy.deepcopy(off))) == []


def shard_arguments(catalog_files, tmp_path, host, examples, voice_file=None):
    config = default_config()
    return {
        "system": {"name": "template", "agent": "template"},
        "simulator": {
            **config["simulator"],
            "templates": str(REPO / config["simulator"]["templates"]),
            "paraphrase": {
                "enabled": True,
                "backend": {"type": "ollama", "model": "fake:1b", "host": host},
                "options": OPTIONS,
                "examples": examples,
            },
        },
        "agent": config["agent"],
        "experiment_seed": 99,
        "turns": 4,
        **shard_inputs(catalog_files, tmp_path),
        "voice_file": voice_file,
        "paraphrase_prompt_file": str(REPO / "resources" / "prompts" / "paraphrase.txt"),
    }


def test_a_shard_shows_the_voices_turns_and_records_their_ids(catalog_files, tmp_path):
    voice_file = tmp_path / "voice.json"
    invented_voice().write(voice_file)

    def reword(body):
        return "So, " + message(body["messages"][-1]["content"]).lower()

    with FakeOllama(content=reword) as server:
        with pytest.raises(ValueError, match="examples need a learned voice"):
            build_shard_runner(**shard_arguments(catalog_files, tmp_path, server.host, 2))
        runner = build_shard_runner(**shard_arguments(catalog_files, tmp_path, server.host, 2, voice_file))
        runner.run(range(0, 2), progress=tmp_path / "p", output=tmp_path / "s.jsonl")
        prompts = [r["body"]["messages"][-1]["content"] for r in server.requests]
    known = {template_id for templates in POOLS.values() for template_id, _, _ in templates}
    turns = [t for line in (tmp_path / "s.jsonl").read_text().splitlines() for t in json.loads(line)["turns"]]
    assert len(turns) == len(prompts) > 0
    shown = 0
    for turn, prompt in zip(turns, prompts):
        paraphrase = turn["user_meta"]["paraphrase"]
        assert paraphrase["verdict"] == "kept" and message(prompt) == paraphrase["template_text"]
        ids = paraphrase.get("examples", [])
        assert set(ids) <= known and len(ids) == len(shown_examples(prompt)) <= 2
        shown += len(ids)
    assert shown > 0  # the explicit user's requests met the invented request pools


def test_the_prompt_file_needs_its_message_and_its_examples_block(tmp_path):
    with pytest.raises(ValueError, match=r"\{text\} slot and an \[examples\]"):
        ParaphrasePrompt("Reword this: {text}")
    with pytest.raises(ValueError, match=r"\{examples\} slot"):
        ParaphrasePrompt("Reword.\n\n[examples]\nLike these.\n[/examples]\n\nMessage: {text}")
    big = tmp_path / "paraphrase.txt"
    big.write_text("x" * 70_000 + "\n\n[examples]\n{examples}\n[/examples]\n\nMessage: {text}")
    with pytest.raises(ValueError, match="bytes"):
        ParaphrasePrompt.read(big)


def test_the_prompt_with_examples_shows_the_block_without_its_markers():
    prompt = ParaphrasePrompt("Reword.\n\n[examples]\nLike these:\n{examples}\nSo.\n[/examples]\n\nMessage: {text}")
    assert prompt.render("hi", []) == "Reword.\n\nMessage: hi"
    assert prompt.render("hi", ["a", "b"]) == "Reword.\n\nLike these:\n- a\n- b\nSo.\n\nMessage: hi"
