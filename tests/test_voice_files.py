"""A learned voice and the corpora it is learned from, made hostile: a voice file that passes every check of
its format and still asks one draw to build more than memory holds, and hidden characters (zero-width and
bidi marks, controls, compatibility forms) that let a turn name a value the simulated user does not mean.

The ground truth of a voiced turn is the act's values and films: no spoken turn may name another, as a
reader sees it, and no voice the reader accepts may exhaust memory. Every corpus and voice here is written in
this file with made-up or catalog words."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import unicodedata

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_corpus_and_voice_files import SUMMARY, records, voice_data
from test_voice import SOURCE, run_user, write_corpus

from crseval.simulate.user import voice as voice_module
from crseval.simulate.user.voice import MAX_POOL_SAID, Voice, VoiceError, VoiceTemplate
from crseval.simulate.user.voice_learning import corpus_dialogues, learn_voice

# ---------------------------------------------------------------- what a reader sees

# Characters no reader sees (format Cf: zero-width, joiners, bidi marks and isolates, the byte order mark, a
# soft hyphen, a tag; control Cc), and marks that combine with the letter before them.
HIDDEN = [
    "\u200b",
    "\u200c",
    "\u200d",
    "\u200e",
    "\u200f",
    "\u202a",
    "\u202e",
    "\u2060",
    "\u2066",
    "\u2069",
    "\ufeff",
    "\u00ad",
    "\U000e0041",
    "\x00",
    "\x01",
    "\x07",
    "\x1b",
    "\x7f",
    "\x9f",
]
COMBINING = ["\u0301", "\u0308", "\u0338"]


def seen(text: str) -> str:
    """`text` as a reader sees it, by this test's own reading: format and control characters removed (a
    whitespace control read as a space), NFKC, case folded, spaces collapsed."""

    def drop(text: str) -> str:
        return "".join(c if c.isspace() else "" if unicodedata.category(c) in ("Cf", "Cc") else c for c in text)

    return " ".join(drop(unicodedata.normalize("NFKC", drop(text))).casefold().split())


def named(text: str, vocabulary: set[str]) -> set[str]:
    """The words of `vocabulary` (catalog values and titles, case folded) that `text` names as a reader sees it."""
    visible = seen(text)
    return {word for word in vocabulary if re.search(rf"(?<!\w){re.escape(word)}(?!\w)", visible)}


def spoken_names_only_what_is_meant(said: list, vocabulary: set[str]) -> list[tuple]:
    """The turns of a session (run_user's) that name a value or film of `vocabulary` their act does not mean."""
    wrong = []
    for text, meta, _ in said:
        meant = {s["value"].casefold() for s in meta["stated"]} | {t.casefold() for t in meta["titles"]}
        visible = seen(text)
        for title in meta["titles"]:  # a meant film's title may hold a value word ("western" in a title)
            visible = visible.replace(seen(title), " ")
        extra = named(visible, vocabulary) - meant
        if extra:
            wrong.append((text, sorted(extra), meta["stated"], meta["titles"], meta.get("voice")))
    return wrong


def test_the_visible_text_of_a_turn_is_what_a_reader_sees():
    from crseval.simulate.user.voice import visible_text

    assert visible_text("Got any co\u200bmedy for\u00a0tonight?") == "Got any comedy for tonight?"
    assert visible_text("a dra\x00ma\u202e please") == "a drama please"
    assert visible_text("\uff37\uff45\uff53\uff54\uff45\uff52\uff4e  please\t\n") == "Western please"
    assert visible_text("comedy\tfilms") == "comedy films"  # a whitespace control is a space, not nothing
    assert visible_text("a \ufb01lm") == "a film"  # a ligature is its letters
    assert visible_text("\uff5bgenre\uff5d") == "{genre}"  # fullwidth braces are braces: learning then leaves them out
    assert visible_text("\u200b\x00") == ""


@settings(max_examples=300, deadline=None)
@given(st.text(st.characters(codec="utf-8"), max_size=40))
def test_the_visible_text_holds_no_hidden_character_and_is_its_own_visible_text(text):
    from crseval.simulate.user.voice import visible_text

    visible = visible_text(text)
    assert not any(unicodedata.category(c) in ("Cf", "Cc") for c in visible), ascii(visible)
    assert unicodedata.is_normalized("NFKC", visible) and visible == " ".join(visible.split())
    assert visible_text(visible) == visible


# ---------------------------------------------------------------- learning reads what people see


def test_a_hidden_character_inside_a_value_is_learned_as_the_value(demo_matcher):
    """A zero-width space in "co\\u200bmedy" kept the turn as a template with no slot: spoken for any act, it
    asked for a comedy the user did not want. NUL, a bidi override and fullwidth letters did the same."""
    voice = learn_voice(
        records(
            "Got any co\u200bmedy for tonight?",
            "Got any dra\x00ma for tonight?",
            "Got any \u202ewestern for tonight?",
            "Got any \uff48\uff4f\uff52\uff52\uff4f\uff52 for tonight?",
            "Got any comedy\u2060 for tonight?",
            "What is Ver\u200dtigo about?",
        ),
        demo_matcher,
        SOURCE,
    )
    texts = {t.text for pool in voice.pools.values() for t in pool}
    assert texts == {"Got any {genre} for tonight?", "What is {title} about?"}, texts
    said = {t.text: t.said for pool in voice.pools.values() for t in pool}
    assert said["Got any {genre} for tonight?"] == 5
    assert voice.asked("genre") == {"comedy": 2, "drama": 1, "horror": 1, "western": 1}
    assert voice.said_as("genre", "comedy") == {"comedy": 2}  # the visible words, twice


def test_a_corpus_file_with_hidden_characters_learns_the_visible_turns(tmp_path, demo_matcher):
    path = write_corpus(
        tmp_path / "hidden.jsonl",
        [("h1", None, ["hi\x00ya", "Any co\u00admedy tonight?"]), ("h2", None, ["\u200b\u200b", "ok\x1b[31m"])],
    )
    voice = learn_voice(corpus_dialogues(path, "jsonl"), demo_matcher, SOURCE)
    texts = sorted(t.text for pool in voice.pools.values() for t in pool)
    assert texts == ["Any {genre} tonight?", "hiya", "ok[31m"], texts
    assert voice.summary["left_out"] == {"empty": 1}  # nothing visible is said


# ---------------------------------------------------------------- the reader refuses what learning never writes


def fresh_voice_data() -> dict:
    """test_corpus_and_voice_files's voice as JSON, a copy of its own (voice_data shares its summary's dicts)."""
    return json.loads(json.dumps(voice_data()))


def hidden_template(text: str) -> dict:
    data = fresh_voice_data()
    data["pools"]["first|request|genre:wish"][0]["text"] = text
    return data


@pytest.mark.parametrize(
    "data, message",
    [
        (hidden_template("any co\u200bmedy {genre} flims?"), r"U\+200B"),
        (hidden_template("any {genre} flims?\x00"), r"U\+0000"),
        (hidden_template("any \u202e{genre} flims?"), r"U\+202E"),
        (hidden_template("any {genre} \uff46lims?"), r"U\+FF46"),
        (hidden_template("any {genre}  flims?"), r"spaces"),
    ],
)
def test_a_template_whose_text_a_reader_sees_otherwise_is_refused(tmp_path, data, message):
    path = tmp_path / "voice.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(
        VoiceError, match=rf"voice\.json: pool 'first\|request\|genre:wish', template 0: text .*{message}"
    ):
        Voice.read(path)


def test_a_spelling_whose_words_a_reader_sees_otherwise_is_refused(tmp_path):
    data = fresh_voice_data()
    data["summary"]["said_as"] = {"genre|drama": {"co\u200bmedy": 3}}
    path = tmp_path / "voice.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(VoiceError, match=r"voice\.json: summary: said_as\.'genre\|drama': .*U\+200B"):
        Voice.read(path)


# ---------------------------------------------------------------- the simulated user never speaks another value

GENRES = ("comedy", "drama", "western", "horror", "thriller", "romance")
TITLES = ("Vertigo", "Casablanca", "Rear Window")
VOCABULARY = {word.casefold() for word in GENRES + TITLES}
# Turns of every act that name a value or a film, and turns that name none.
NAMING = [
    "Got any {v} for tonight?",
    "I'd love a good {v} please",
    "hmm, what else, maybe a {v}?",
    "No {v} for me, thanks",
    "nah, not a {v} fan",
]
ABOUT = ["What is {t} about?", "ok {t} then, thanks", "I have seen {t} already"]
PLAIN = [
    ("p1", None, ["hiya", "Anything else?", "Sounds great"]),
    ("p2", None, ["hello", "no", "ok thanks"]),
    ("p3", None, ["any comedy tonight?", "or a drama maybe"]),  # what people ask for, said plainly
]


def test_the_learned_user_never_asks_for_a_value_it_does_not_want(demo_index, demo_matcher, tmp_path):
    """The turns of people who wrote "co\\u200bmedy" were kept as templates that name nothing and said for any
    act: a user who wanted a drama asked for comedy, its recorded wishes unchanged. Now the value is a slot."""
    hostile = [
        (
            f"z{n}",
            None,
            ["Got any co\u200bmedy for tonight?", f"hmm, a {genre} maybe? or co\u200bmedy?", "Anything else?"],
        )
        for n, genre in enumerate(GENRES)
    ]
    path = write_corpus(tmp_path / "zw.jsonl", hostile + PLAIN)
    voice = learn_voice(corpus_dialogues(path, "jsonl"), demo_matcher, SOURCE)
    wrong = []
    for seed in range(8):
        wrong += spoken_names_only_what_is_meant(run_user(demo_index, demo_matcher, voice, seed), VOCABULARY)
    assert wrong == []


def test_a_voice_made_in_memory_speaks_only_what_a_reader_sees(demo_index, demo_matcher):
    """A voice built by code, not read from a file, with hidden characters in its templates and spellings:
    the user speaks each turn's visible words, read back as meant."""
    pools = {
        "first|request|genre:wish": [
            VoiceTemplate("f#0", "any good {genre}\u200b tonight, maybe a co\u200bmedy?", ("genre:wish",), 3)
        ],
        "later|request|genre:wish": [VoiceTemplate("l#0", "any {genre}\u202e, or a west\x00ern?", ("genre:wish",), 3)],
        "later|ask|": [
            VoiceTemplate("a#0", "what about Ver\u200btigo?", (), 5),
            VoiceTemplate("a#1", "anything \uff48\uff4f\uff52\uff52\uff4f\uff52?", (), 5),
            VoiceTemplate("a#2", "anything else?", (), 1),
        ],
        "later|other|": [VoiceTemplate("o#0", "dra\u00adma, hm", (), 5), VoiceTemplate("o#1", "hm", (), 1)],
    }
    summary = {"asked": {"genre": {"comedy": 2, "drama": 2}}, "said_as": {"genre|comedy": {"co\u200bmedies": 4}}}
    voice = Voice(pools, summary)
    wrong, hidden = [], []
    for seed in range(8):
        said = run_user(demo_index, demo_matcher, voice, seed)
        wrong += spoken_names_only_what_is_meant(said, VOCABULARY)
        hidden += [text for text, _, _ in said if any(unicodedata.category(c) in ("Cf", "Cc") for c in text)]
    assert wrong == [] and hidden == []


def _hostile_word(word: str, draw) -> str:
    """`word` with hidden characters put in, combining marks after letters, or letters in compatibility forms."""
    letters = list(word)
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(letters)))
        kind = draw(st.sampled_from(["hidden", "hidden", "combining", "fullwidth", "bold"]))
        if kind == "hidden":
            letters.insert(at, draw(st.sampled_from(HIDDEN)))
        elif kind == "combining":
            letters.insert(at, draw(st.sampled_from(COMBINING)))
        elif at < len(letters) and letters[at].isascii() and letters[at].isalpha():
            letter = letters[at]
            if kind == "fullwidth":
                letters[at] = chr(ord(letter) + 0xFEE0)
            elif letter.islower():
                letters[at] = chr(0x1D41A + ord(letter) - ord("a"))  # mathematical bold small letter
    return "".join(letters)


@st.composite
def hostile_corpora(draw):
    """A small corpus of turns that name catalog genres and films, with hostile characters in the names."""
    dialogues = []
    for number in range(draw(st.integers(3, 6))):
        turns = []
        for _ in range(draw(st.integers(1, 3))):
            if draw(st.booleans()):
                sentence, word = draw(st.sampled_from(NAMING)), draw(st.sampled_from(GENRES))
                turns.append(sentence.format(v=_hostile_word(word, draw)))
            else:
                sentence, title = draw(st.sampled_from(ABOUT)), draw(st.sampled_from(TITLES))
                turns.append(sentence.format(t=_hostile_word(title, draw)))
        dialogues.append((f"x{number}", None, turns))
    return dialogues


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(corpus=hostile_corpora(), seed=st.integers(0, 2**16))
def test_no_spoken_turn_names_a_value_the_act_does_not_mean(demo_index, demo_matcher, corpus, seed):
    """Property: whatever hidden character, combining mark or compatibility form people's turns hold, no turn
    the learned user speaks names (as a reader sees it: NFKC, no format or control character, case folded) a
    catalog genre or film other than the ones its act means."""
    dialogues = [
        {"session_id": f"t/{name}", "turns": [{"user_text": text, "system_text": "Wim."} for text in turns]}
        for name, _, turns in corpus + PLAIN
    ]
    voice = learn_voice(dialogues, demo_matcher, SOURCE)
    wrong = []
    for session in range(2):
        said = run_user(demo_index, demo_matcher, voice, seed + session, turns=6)
        wrong += spoken_names_only_what_is_meant(said, VOCABULARY)
    assert wrong == []


# ---------------------------------------------------------------- memory: what one draw may build

# The acts a film that fits is answered with (crseval.simulate.user.voicing): one draw combines their pools, with
# and without the film.
REACTING = ("take", "small_talk", "ask_about", "ask", "other")


def combined_voice(said_each: int) -> dict:
    """A voice whose later pools of REACTING, with and without a film, each hold one template said
    `said_each` times: within the bound of one pool."""
    pools = {}
    for act in REACTING:
        pools[f"later|{act}|"] = [VoiceTemplate(f"{act}#0", "zorp", (), said_each)]
        pools[f"later|{act}|title"] = [VoiceTemplate(f"{act}#1", "zorp {title}", ("title",), said_each)]
    return Voice(pools, SUMMARY).as_json()


def test_a_voice_whose_one_draw_would_build_more_than_a_draw_may_is_refused(tmp_path):
    """A 4 KB voice that passed every check ran out of memory (2.2 GB) in Voice.spread_order: the bound was
    per pool, and one draw combines the pools of several acts."""
    path = tmp_path / "voice.json"
    path.write_text(json.dumps(combined_voice(MAX_POOL_SAID)), encoding="utf-8")
    assert path.stat().st_size < 4096
    with pytest.raises(VoiceError) as refused:
        Voice.read(path)
    message = str(refused.value)
    assert message.startswith(f"{path}: ") and "100,000,000" in message, message
    assert all(act in message for act in REACTING), message
    assert f"{voice_module.MAX_DRAW_SAID:,}" in message, message


def test_pools_one_draw_never_combines_are_bounded_each_on_its_own(tmp_path):
    """The bound is on what one draw combines, not on the voice: pools whose slots have other roles, and the
    pool a user leaves with, are never drawn together; each at the bound of a pool, the voice is read."""
    pools = {
        f"first|request|genre:{role}": [VoiceTemplate(f"{role}#0", "zorp {genre}", (f"genre:{role}",), MAX_POOL_SAID)]
        for role in ("wish", "exclusion")
    }
    pools["leave||"] = [VoiceTemplate("leave#0", "bye", (), MAX_POOL_SAID)]
    path = tmp_path / "voice.json"
    Voice(pools, SUMMARY).write(path)
    assert Voice.read(path).pools.keys() == pools.keys()


_DRAW_UNDER_A_CAP = """
import resource, sys
from crseval.simulate.user.voice import Voice, VoiceError
with open("/proc/self/status") as status:
    size = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize:"))
resource.setrlimit(resource.RLIMIT_AS, (size + (1 << 30), resource.RLIM_INFINITY))
try:
    voice = Voice.read(sys.argv[1])
except VoiceError as refused:
    print("refused:", refused)
    sys.exit(0)
everything = [t for pool in voice.pools.values() for t in pool]
order, _ = Voice.spread_order(everything, 7)
print("spread", len(order))
"""


@pytest.mark.parametrize("kind", ["hostile", "at the bound"])
def test_no_voice_the_reader_accepts_exhausts_memory_in_a_draw(tmp_path, kind):
    """Under a cap of 1 GiB over what the interpreter holds once started, the hostile voice is refused by
    name, and a voice at the bound (every template of it in one draw) is spread."""
    bound = voice_module.MAX_DRAW_SAID if kind == "at the bound" else None
    data = combined_voice(MAX_POOL_SAID if bound is None else bound // (2 * len(REACTING)))
    path = tmp_path / "voice.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    run = subprocess.run(
        [sys.executable, "-c", _DRAW_UNDER_A_CAP, str(path)], capture_output=True, text=True, timeout=120, env=env
    )
    assert run.returncode == 0, run.stderr[-2000:]
    if bound is None:
        assert run.stdout.startswith(f"refused: {path}: "), run.stdout
    else:
        assert run.stdout.strip() == f"spread {bound // (2 * len(REACTING)) * 2 * len(REACTING)}", run.stdout
