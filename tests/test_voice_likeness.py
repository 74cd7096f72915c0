"""A mixed corpus's turns kept only where they read like the voice's own corpus (simulate/user/voice_likeness):
the comparison worked by hand on a few turns written here, the person left out of its corpus's counts, and the
rule's place in learning a voice (simulator.voice.mix[].keep).

Every turn here is written for the tests, never a real corpus's."""

from hypothesis import given, settings
from hypothesis import strategies as st
from test_voice import SOURCE, write_corpus

from crseval.simulate.user.voice_learning import (
    LIKE_THE_VOICE,
    UNLIKE_THE_VOICE,
    VoiceCorpus,
    corpus_dialogues,
    learn_voice,
    voice_key,
)
from crseval.simulate.user.voice_likeness import VoiceLikeness, likeness_tokens

OWN = ["can you recommend a {genre} movie?", "recommend a movie"]
MIXED = [("a", "i loved it"), ("b", "i loved that movie"), ("c", "recommend a {genre} movie")]


def test_the_tokens_are_words_slots_marks_and_word_pairs():
    assert likeness_tokens("Recommend a {genre} movie?") == [
        "recommend",
        "a",
        "{genre}",
        "movie",
        "?",
        "recommend a",
        "a {genre}",
        "{genre} movie",
        "movie ?",
    ]


def test_the_comparison_worked_by_hand():
    # own model: 13 tokens of the first template, 5 of the second (18); vocabulary of both sides: 22 tokens
    # "recommend a {genre} movie" (person c), 7 tokens all seen by the own model:
    #   own side 3*3*2*3*3*2*2 = 648 over (18+22)^7; the others (a, b: 12 tokens) hold "movie" once: 2 over (12+22)^7
    #   648 * 34^7 >= 2 * 40^7: kept
    # "i loved it" (person a): "it" and "loved it" neither side holds without a; i, loved, "i loved" once each in
    #   the others (b, c: 14 tokens): own side 1 over (18+22)^3, the others' 2*2*2 = 8 over (14+22)^3
    #   1 * 36^3 = 46,656 < 8 * 40^3 = 512,000: left out
    # "i loved that movie" (person b): i, loved, "i loved" once in a's turn, movie once in c's, and twice in the own
    #   model; "that", "loved that", "that movie" in neither: own 3 over 40^4, the others' (12 tokens) 16 over 34^4
    #   3 * 34^4 = 4,009,008 < 16 * 40^4 = 40,960,000: left out
    assert VoiceLikeness(OWN).keeps(MIXED) == [False, False, True]


def test_a_person_does_not_vouch_for_their_own_words():
    # b says "i loved it" twice: with b's counts the corpus would hold those words; without them it holds none,
    # and the turn's words are in neither model, a tie that keeps it
    turns = [("b", "i loved it"), ("b", "i loved it"), ("c", "recommend a movie")]
    assert VoiceLikeness(OWN).keeps(turns)[:2] == [True, True]
    # another person saying the same words makes them the corpus's, not the voice's
    assert VoiceLikeness(OWN).keeps([("a", "i loved it"), ("b", "i loved it")]) == [False, False]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["i loved it", "any {genre} movie?", "recommend a movie", "saw it twice"]), max_size=8))
def test_a_turn_the_own_corpus_says_that_no_other_person_says_is_kept(others):
    turns = [(f"p{k}", text) for k, text in enumerate(others) if text != "recommend a movie"]
    kept = VoiceLikeness(OWN).keeps([*turns, ("me", "recommend a movie")])
    assert kept[-1]
    assert len(kept) == len(turns) + 1


MAIN = [("m1", None, ["any comedy for tonight?", "can you recommend a western?"]), ("m2", None, ["any western?"])]
SEEKERS = [
    ("s1", None, ["any comedy for tonight?", "i saw it twice with my brother and loved it"]),
    ("s2", None, ["i saw it with my brother, loved it", "any western?"]),
]


def test_a_mix_keeps_the_turns_like_the_voice_only_when_asked(tmp_path, demo_matcher):
    main = corpus_dialogues(write_corpus(tmp_path / "main.jsonl", MAIN), "jsonl")
    seekers = corpus_dialogues(write_corpus(tmp_path / "seekers.jsonl", SEEKERS), "jsonl")
    every = learn_voice(main, demo_matcher, SOURCE, mix=(VoiceCorpus("seekers", seekers, 1),))
    like = learn_voice(main, demo_matcher, SOURCE, mix=(VoiceCorpus("seekers", seekers, 1, keep=LIKE_THE_VOICE),))
    texts = {t.text for pool in like.pools.values() for t in pool}
    assert "i saw it twice with my brother and loved it" in {t.text for pool in every.pools.values() for t in pool}
    assert not any("brother" in text for text in texts)
    assert "any {genre} for tonight?" in texts
    assert like.summary["left_out"][UNLIKE_THE_VOICE] == 2
    assert [c["turns_kept"] for c in like.summary["corpora"]] == [3, 2]


def test_the_voice_key_names_what_a_mix_keeps():
    settings_ = {"corpus": "a.jsonl", "parts": 2, "learn_part": 1, "mix": [{"name": "o", "paths": "x/*.csv"}]}
    key = voice_key("1" * 64, settings_, ("2" * 64,))
    stated = {**settings_, "mix": [{"name": "o", "paths": "x/*.csv", "keep": LIKE_THE_VOICE}]}
    assert voice_key("1" * 64, stated, ("2" * 64,)) == key  # the default, said or not
    every = {**settings_, "mix": [{"name": "o", "paths": "x/*.csv", "keep": "all"}]}
    assert voice_key("1" * 64, every, ("2" * 64,)) != key
