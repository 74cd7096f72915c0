"""The learned voice: user turns read into acts and typed slots (language/user_acts), pooled by act and slot
signature (corpora/voice), split into parts by dialogue id, written and read (simulate/voice), and
spoken by the `learned` profile with its ground truth exact (simulate/user).

Every corpus here is written in this file: the user turns are invented for the tests, never a real corpus's."""

import hashlib
import json
import re
from collections import Counter
from dataclasses import replace

import numpy as np
import pytest
from conftest import REPO
from hypothesis import given
from hypothesis import strategies as st

from crseval.language.tracker import Constraint, extract_statements
from crseval.language.user_acts import read_turn
from crseval.simulate.user.profiles import user_profile
from crseval.simulate.user.simulator import make_user
from crseval.simulate.user.templates import Templates
from crseval.simulate.user.user_plan import SimulatorSettings
from crseval.simulate.user.voice import Voice, VoiceTemplate, part_of, pool_key, spread_position
from crseval.simulate.user.voice_learning import (
    corpus_dialogues,
    fitted_knobs,
    learn_voice,
    split_dialogues,
    voice_key,
    voice_markdown,
)
from crseval.simulate.user.voice_parts import split_template
from crseval.simulate.user.voicing import THIN_POOL

TEMPLATES = Templates.load(REPO / "resources" / "templates" / "user.yaml")
SETTINGS = SimulatorSettings(shift_every=3, contradiction_rate=0.2)
LEARNED, REALISTIC = user_profile("learned"), user_profile("realistic")

# (dialogue id, satisfaction label, the user's turns): each user turn gets a system reply in the file.
CORPUS = [
    (
        "d1",
        "satisfied",
        [
            "Hello there, got any good comedy for tonight?",
            "What is Vertigo about?",
            "Sounds good, I'll watch it. Thanks!",
        ],
    ),
    (
        "d2",
        "frustrated",
        [
            "I'd go for a western, maybe with James Stewart",
            "Nah, I have seen that one already",
            "I keep thinking about Marta Vellacourt lately",  # a person the catalog does not hold
            "this is going nowhere, bye",  # the last turn of a frustrated user: also a way to leave
        ],
    ),
    ("d3", None, ["hiya", "Something with Tom Hanks but no horror please", "Got any good drama for tonight?"]),
    (
        "d4",
        "satisfied",
        [
            "any comdy you like?",  # a typo: no catalog value, a question
            "Got any good comedy for tonight?",  # the same template as d3's third turn, in the same pool
            "Have you got Moonrise Over Kestrel (1987)?",  # a film the catalog does not hold
            "Not that, I don't like war films",
        ],
    ),
    ("d5", "frustrated", ["Hey, I want a {thing} tonight", "no", "Anything else?", "Meh, forget it."]),
]
# More dialogues for the simulated user to speak with: openings and wishes, films taken and asked about, a
# director.
MORE = [
    (
        "d6",
        "satisfied",
        [
            "Evening! I fancy a thriller tonight, nothing too long",
            "Is there a thriller with Tom Hanks maybe?",
            "Rear Window looks good, I'll take it",
        ],
    ),
    (
        "d7",
        None,
        [
            "Show me a drama tonight please",
            "Any drama film with Robert De Niro in it?",
            "Why that one?",
            "Perfect, that is the one for me",
        ],
    ),
    (
        "d8",
        "frustrated",
        [
            "I would like a mystery tonight if possible",
            "Maybe something starring Cary Grant tonight",
            "Not really, I want another one",
            "Good film, thanks",
        ],
    ),
    ("d9", "satisfied", ["A film by Alfred Hitchcock tonight?", "Anything with Cary Grant tonight?", "Sounds great"]),
]
SOURCE = {
    "corpus": "toy.jsonl",
    "corpus_sha256": "ab" * 32,
    "format": "jsonl",
    "parts": 1,
    "learn_part": 1,
    "held_out_dialogues": 0,
}


def write_corpus(path, dialogues=CORPUS, system="toy-crs"):
    """The dialogues as the jsonl import format has them (docs/importing.md), one per line."""
    lines = []
    for dialogue_id, satisfaction, user_turns in dialogues:
        turns = []
        for number, text in enumerate(user_turns, start=1):
            turns += [{"role": "user", "text": text}, {"role": "system", "text": f"Here is answer {number}."}]
        item = {"system": system, "dialogue_id": dialogue_id, "turns": turns}
        if satisfaction:
            item["labels"] = {"satisfaction": satisfaction}
        lines.append(json.dumps(item))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def dialogues(tmp_path_factory):
    return corpus_dialogues(write_corpus(tmp_path_factory.mktemp("corpus") / "toy.jsonl"), "jsonl")


@pytest.fixture(scope="module")
def voice(dialogues, demo_matcher):
    return learn_voice(dialogues, demo_matcher, SOURCE)


@pytest.fixture(scope="module")
def speaking_voice(tmp_path_factory, demo_matcher):
    """The voice of CORPUS and MORE, on the demo catalog, that the simulated user speaks with."""
    path = write_corpus(tmp_path_factory.mktemp("corpus") / "more.jsonl", CORPUS + MORE)
    return learn_voice(corpus_dialogues(path, "jsonl"), demo_matcher, SOURCE)


# ------------------------------------------------------------------ reading a turn


def test_a_catalog_value_becomes_a_typed_slot_and_the_turn_a_request(matcher, demo_matcher):
    reading = read_turn("Any good horror for tonight?", matcher)
    assert reading.act == "request" and reading.question and not reading.greets
    assert reading.statements == (("genre", "horror", "wish"),)
    assert reading.template == "Any good {genre} for tonight?" and reading.slots == ("genre:wish",)
    assert reading.untyped == "" and reading.titles == ()

    reading = read_turn("Something with Robert De Niro but no horror please", matcher)
    assert reading.act == "request"
    assert reading.statements == (("actor", "Robert De Niro", "wish"), ("genre", "horror", "exclusion"))
    assert reading.template == "Something with {actor} but no {genre} please"
    assert reading.slots == ("actor:wish", "genre:exclusion")

    reading = read_turn("I'd go for a western, maybe with James Stewart", demo_matcher)
    assert reading.act == "request" and reading.template == "I'd go for a {genre}, maybe with {actor}"
    assert reading.statements == (("genre", "western", "wish"), ("actor", "James Stewart", "wish"))


def test_a_catalog_film_becomes_a_title_slot(demo_matcher):
    reading = read_turn("What is Vertigo about?", demo_matcher)
    assert (reading.act, reading.titles, reading.template, reading.slots) == (
        "ask_about",
        ("Vertigo",),
        "What is {title} about?",
        ("title",),
    )


def test_a_name_or_a_film_outside_the_catalog_is_untyped(matcher, demo_matcher):
    for matcher in (matcher, demo_matcher):
        reading = read_turn("I keep thinking about Marta Vellacourt lately", matcher)
        assert reading.untyped == "a name the catalog does not hold", reading
        assert reading.statements == () and reading.template == reading.text
    reading = read_turn("Have you got Moonrise Over Kestrel (1987)?", demo_matcher)
    assert reading.untyped == "a film the catalog does not hold"
    # a person the catalog holds is typed, not left out
    reading = read_turn("I keep thinking about Orson Welles lately", matcher)
    assert reading.untyped == "" and reading.template == "I keep thinking about {actor} lately"


@pytest.mark.parametrize(
    "text, untyped",
    [
        ("what is harbour of lanterns about", True),  # a film by a name the catalog does not hold, lower case
        ("What's harbour of lanterns about?", True),
        ("what is it about", False),
        ("What is the second movie about?", False),
        ("What's number 3 about", False),
    ],
)
def test_a_film_asked_about_by_a_name_the_rules_cannot_type_is_left_out(demo_matcher, text, untyped):
    reading = read_turn(text, demo_matcher)
    assert reading.act == "ask_about"
    assert reading.untyped == ("a film asked about by a name the catalog does not hold" if untyped else "")


@pytest.mark.parametrize("text", ["hiya", "Hello!", "thanks a lot", "ok"])
def test_a_greeting_or_thanks_alone_is_small_talk(matcher, text):
    reading = read_turn(text, matcher)
    assert reading.act == "small_talk" and reading.slots == () and reading.untyped == ""
    assert reading.greets == text.startswith(("hi", "Hello")) and reading.thanks == text.startswith("thanks")


def test_a_turn_that_turns_a_film_down_is_turn_down(matcher, demo_matcher):
    reading = read_turn("Nah, I have seen that one already", demo_matcher)
    assert reading.act == "turn_down" and reading.slots == ()
    reading = read_turn("Not that, I don't like war films", demo_matcher)
    assert reading.act == "turn_down" and reading.statements == (("genre", "war", "exclusion"),)
    assert reading.template == "Not that, I don't like {genre} films"
    # turning down comes before naming a value or a film: the act is turn_down, the title is still a slot
    reading = read_turn("No, Casino is not for me", matcher)
    assert (reading.act, reading.titles, reading.template) == ("turn_down", ("Casino",), "No, {title} is not for me")
    assert read_turn("Casino sounds great", matcher).act == "take"


# ------------------------------------------------------------------ learning a voice

# The pools of CORPUS on the demo catalog, counted by hand: (where, act, signature) -> the templates in order.
POOLS = {
    "first|request|genre:wish": [("Hello there, got any good {genre} for tonight?", ("genre:wish",))],
    "first|request|actor:wish,genre:wish": [("I'd go for a {genre}, maybe with {actor}", ("genre:wish", "actor:wish"))],
    "first|small_talk|": [("hiya", ())],
    "first|ask|": [("any comdy you like?", ())],
    "later|ask_about|title": [("What is {title} about?", ("title",))],
    "later|take|": [("Sounds good, I'll watch it. Thanks!", ())],
    "later|turn_down|": [("Nah, I have seen that one already", ()), ("no", ())],
    "later|other|": [("this is going nowhere, bye", ()), ("Meh, forget it.", ())],
    "later|request|actor:wish,genre:exclusion": [
        ("Something with {actor} but no {genre} please", ("actor:wish", "genre:exclusion"))
    ],
    "later|request|genre:wish": [("Got any good {genre} for tonight?", ("genre:wish",))],  # d3 and d4: one template
    "later|turn_down|genre:exclusion": [("Not that, I don't like {genre} films", ("genre:exclusion",))],
    "later|ask|": [("Anything else?", ())],
    "leave||": [("this is going nowhere, bye", ()), ("Meh, forget it.", ())],  # the frustrated users' last turns
}


def test_the_importer_reads_the_written_corpus(dialogues):
    assert [d["session_id"] for d in dialogues] == [f"toy-crs/d{i}" for i in range(1, 6)]
    assert [len(d["turns"]) for d in dialogues] == [3, 4, 3, 4, 4]
    assert [d["labels"]["satisfaction"] for d in dialogues] == [
        "satisfied",
        "frustrated",
        None,
        "satisfied",
        "frustrated",
    ]


def test_learn_voice_pools_the_turns_by_act_and_slot_signature(voice):
    got = {key: [(t.text, t.slots) for t in templates] for key, templates in voice.pools.items()}
    assert got == POOLS
    for key, templates in voice.pools.items():
        assert [t.id for t in templates] == [f"{key}#{k}" for k in range(len(templates))]
        assert all(
            t.signature == tuple(key.split("|")[2].split(",")) if t.slots else key.endswith("|") for t in templates
        )
    assert pool_key("later", "request", ("genre:wish",)) == "later|request|genre:wish"
    # the same words by two people are one template said twice (d3's third turn and d4's second), drawn twice as often
    said = {key: [t.said for t in templates] for key, templates in voice.pools.items()}
    twice = [t.text for t in voice.pools["later|request|genre:wish"] if t.said == 2]
    assert twice == ["Got any good {genre} for tonight?"]
    assert sum(map(sum, said.values())) == voice.summary["turns_kept"] + len(voice.leave_options())


def test_learn_voice_counts_what_it_read_kept_and_left_out(voice):
    summary = voice.summary
    assert {key: summary[key] for key in SOURCE} == SOURCE  # the source is kept
    assert summary["dialogues"] == 5 and summary["turns_read"] == 18 and summary["turns_kept"] == 15
    assert summary["left_out"] == {
        "a film the catalog does not hold": 1,  # d4: Moonrise Over Kestrel (1987)
        "a name the catalog does not hold": 1,  # d2: Marta Vellacourt
        "braces (the slot marks)": 1,  # d5: "{thing}"
    }
    assert summary["acts"] == {
        "request": 5,  # d1.1, d2.1, d3.2, d3.3, d4.2
        "turn_down": 3,  # d2.2, d4.4, d5.2
        "ask": 2,  # d4.1, d5.3
        "other": 2,  # d2.4, d5.4
        "ask_about": 1,
        "take": 1,
        "small_talk": 1,
    }
    assert summary["templates"] == sum(len(templates) for templates in POOLS.values()) == 16


def test_the_fitted_knobs_are_the_shares_counted_by_hand(dialogues, voice):
    fitted = fitted_knobs(dialogues)
    assert voice.summary["fitted"] == fitted
    values = {knob: (fit["value"], fit["n"]) for knob, fit in fitted.items()}
    assert values == {
        "greeting": (round(3 / 5, 4), 5),  # openings: "Hello there, ...", "hiya", "Hey, ..." of five
        "thanks": (round(1 / 18, 4), 18),  # "... Thanks!"
        "question": (round(7 / 18, 4), 18),  # d1.1, d1.2, d3.3, d4.1, d4.2, d4.3, d5.3
        "lowercase": (round(4 / 18, 4), 18),  # "this is going ...", "hiya", "any comdy ...", "no"
        "typo": (round(1 / 18, 4), 18),  # "comdy"
        "patience": (4, 2),  # the frustrated dialogues have 4 and 4 user turns
    }
    assert fitted["greeting"]["statistic"] == "share of opening turns that greet"
    assert fitted_knobs([])["patience"] == {
        "value": None,
        "statistic": "median user turns of the dialogues whose user was frustrated",
        "n": 0,
    }


def test_options_take_the_pool_of_where_the_turn_is_while_it_has_any(voice):
    first = [t.text for t in voice.options("request", ("genre:wish",), first=True)]
    anywhere = [t.text for t in voice.options("request", ("genre:wish",))]
    assert first == ["Hello there, got any good {genre} for tonight?"]
    assert anywhere == ["Got any good {genre} for tonight?"]  # a later turn: the later pool while it has any
    # no opening turn turned a film down: a first turn takes the later ones; the signature is sorted
    assert [t.text for t in voice.options("turn_down", (), first=True)] == ["Nah, I have seen that one already", "no"]
    signature = ("genre:exclusion", "actor:wish")
    assert [t.id for t in voice.options("request", signature)] == ["later|request|actor:wish,genre:exclusion#0"]
    assert voice.options("request", ("director:wish",)) == []
    assert [t.text for t in voice.leave_options()] == ["this is going nowhere, bye", "Meh, forget it."]


def test_voice_markdown_counts_without_the_corpus_words(voice):
    text = voice_markdown(voice)
    assert "5 dialogues of part 1 of 1" in text and "18 user turns read, 15 kept" in text
    assert "| a name the catalog does not hold | 1 |" in text
    assert "| first | request | genre:wish | 1 |" in text and "| leave | (leaving) | - | 2 |" in text
    assert "| patience | 4 |" in text
    for templates in voice.pools.values():
        for template in templates:
            if len(template.text.split()) > 2:
                assert template.text not in text


# ------------------------------------------------------------------ parts, keys and files


def test_part_of_is_a_hash_of_the_id_that_spreads_the_ids():
    ids = [f"sys/dialogue-{i}" for i in range(1000)]
    parts = [part_of(dialogue_id, 2) for dialogue_id in ids]
    assert parts == [part_of(dialogue_id, 2) for dialogue_id in ids]  # deterministic
    assert set(parts) == {1, 2} and 400 <= parts.count(1) <= 600
    fives = [part_of(dialogue_id, 5) for dialogue_id in ids]
    assert set(fives) == {1, 2, 3, 4, 5} and all(150 <= fives.count(p) <= 250 for p in range(1, 6))
    assert all(part_of(dialogue_id, 1) == 1 for dialogue_id in ids)
    # the same on every machine: the first 8 bytes of the id's sha256, big-endian, modulo the parts, plus 1
    for dialogue_id in ("toy-crs/d1", "a", "ünïcode/ß"):
        digest = hashlib.sha256(dialogue_id.encode("utf-8")).digest()
        assert part_of(dialogue_id, 7) == int.from_bytes(digest[:8], "big") % 7 + 1


def test_split_dialogues_partitions_the_corpus_in_order():
    records = [{"session_id": f"sys/d{i}", "n": i} for i in range(60)]
    one, rest = split_dialogues(records, 2, 1)
    two, rest_two = split_dialogues(records, 2, 2)
    assert one == rest_two and two == rest and one and two
    assert sorted(r["n"] for r in one + two) == list(range(60))
    assert [r["n"] for r in one] == sorted(r["n"] for r in one)  # the given order
    assert all(part_of(r["session_id"], 2) == 1 for r in one)  # no user named: by the dialogue's id
    users = [{"session_id": f"sys/d{i}", "provenance": {"user_id": f"u{i // 3}"}} for i in range(30)]
    by_user, _ = split_dialogues(users, 2, 1)
    assert by_user and all(part_of(f"user:{r['provenance']['user_id']}", 2) == 1 for r in by_user)
    # a user's dialogues stay together
    assert all(len([r for r in by_user if r["provenance"]["user_id"] == u]) in (0, 3) for u in {"u0", "u1", "u2"})
    three = [split_dialogues(records, 3, part)[0] for part in (1, 2, 3)]
    assert sorted(r["n"] for part in three for r in part) == list(range(60))
    assert split_dialogues(records, 1, 1) == (records, [])


def test_a_voice_is_written_and_read_back_whole(tmp_path, voice):
    path = tmp_path / "voice.json"
    voice.write(path)
    again = Voice.read(path)
    assert again.pools == voice.pools and again.summary == voice.summary and again.version == voice.version
    assert again.as_json() == voice.as_json() and re.fullmatch(r"[0-9a-f]{16}", voice.version)
    changed = Voice({**voice.pools, "later|ask|": [VoiceTemplate("later|ask|#0", "Anything more?", ())]}, voice.summary)
    assert changed.version != voice.version
    said_more = {key: [replace(t, said=t.said + 1) for t in pool] for key, pool in voice.pools.items()}
    assert Voice(said_more, voice.summary).version != voice.version
    data = json.loads(path.read_text(encoding="utf-8"))
    data["format"] = 99
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ValueError, match="a voice of format 99, not 5; learn it again"):
        Voice.read(path)


def test_voice_key_follows_the_corpus_content_and_the_split_not_the_path():
    settings = {"corpus": "../data/dialogues.jsonl", "format": "jsonl", "parts": 2, "learn_part": 1}
    key = voice_key("1" * 64, settings)
    assert re.fullmatch(r"[0-9a-f]{16}", key) and key == voice_key("1" * 64, dict(settings))
    assert voice_key("1" * 64, {**settings, "corpus": "/elsewhere/copy.jsonl"}) == key
    assert voice_key("2" * 64, settings) != key
    assert voice_key("1" * 64, {**settings, "parts": 3}) != key
    assert voice_key("1" * 64, {**settings, "learn_part": 2}) != key


def template(name, text, *slots):
    return VoiceTemplate(name, text, slots)


# ------------------------------------------------------------------ the simulated user with the voice

_RETYPED = re.compile(r"(.+#\d+)~(.+)")


def template_text(voice, template_id):
    """The text of a template the user drew: a pool's, or one re-typed to other fields (after "~")."""
    by_id = {t.id: t.text for templates in voice.pools.values() for t in templates}
    if template_id in by_id:
        return by_id[template_id]
    match = _RETYPED.fullmatch(template_id)
    assert match and match.group(1) in by_id, template_id
    fields = iter(slot.split(":")[0] for slot in match.group(2).split(";"))
    return re.sub(r"\{(\w+)\}", lambda m: "{" + next(fields) + "}", by_id[match.group(1)])


def core_of(text):
    """A template's core: what the voice keeps of it when it draws another opener and tail (voice_parts)."""
    parts = split_template(text)
    return parts.core.rstrip(",-\u2013\u2014 ") if parts.tail else parts.core


def template_pattern(text):
    """A template's text as a pattern: each slot any words ("a {genre}" may become "an {genre}")."""
    pattern = ""
    for piece in re.split(r"(\{\w+\})", text):
        if re.fullmatch(r"\{\w+\}", piece):
            pattern += ".+?"
        elif re.search(r"(?:^|\s)[Aa] $", piece):
            pattern += re.escape(piece[:-1]) + "n? "
        else:
            pattern += re.escape(piece)
    return pattern


def run_user(index, matcher, voice, seed, profile="learned", system="mixed", turns=10, defined=None, spread=None):
    """A session without a system: each reply recommends a film that fits the user's wishes, a random one or
    two, or asks about the genre, by the turn and the seed ("mixed"), or always a film that does not fit
    ("missing"). `defined`: a UserProfile instead of the built-in `profile`; `spread`: (session index,
    experiment seed). -> [(text, meta, the titles of the reply before)]."""
    user = make_user(index, SETTINGS, TEMPLATES, seed, matcher, voice, defined or user_profile(profile), spread)
    titles = sorted(index.films["title"])
    rng = np.random.default_rng(1000 + seed)
    said, recommended, asks = [], [], frozenset()
    for number in range(1, turns + 1):
        turn = user.turn(number, recommended, last_asks=asks)
        said.append((turn.text, turn.meta, list(recommended)))
        if turn.meta["stage"] == "leave":
            break
        kind = "missing" if system == "missing" else ("fit", "random", "ask", "two")[(seed + number) % 4]
        asks = frozenset({"genre"}) if kind == "ask" else frozenset()
        if kind == "fit":
            recommended = [next(t for t in titles if user.title_satisfies(t))]
        elif kind == "missing":
            recommended = [next(t for t in titles if not user.title_satisfies(t))]
        elif kind == "ask":
            recommended = []
        else:
            recommended = [titles[int(rng.integers(len(titles)))] for _ in range(1 + (kind == "two"))]
    return said


@pytest.mark.parametrize("spread", [False, True], ids=["independent draws", "spread over sessions"])
def test_the_learned_user_says_exactly_what_it_means_in_the_voice_or_the_rules(
    demo_index, demo_matcher, speaking_voice, spread
):
    voice = speaking_voice
    ways = {"learned": 0, "rules": 0, "joined": 0}
    for seed in range(12):
        place = (seed, 5) if spread else None
        for text, meta, previous in run_user(demo_index, demo_matcher, voice, seed, spread=place):
            read = {(m.field, m.value, role) for m, role in extract_statements(demo_matcher, text, previous)}
            assert read == {(s["field"], s["value"], s["role"]) for s in meta["stated"]}, (seed, text)
            titles = demo_matcher.title_recognizer.recognise(text, candidates=previous).all
            assert set(titles) == set(meta["titles"]), (seed, text)
            record = meta["voice"]
            assert set(record) == {"voice", "templates", "redraws", "fallback"}
            assert isinstance(record["redraws"], int) and record["redraws"] >= 0
            ways[record["voice"]] += 1
            if record["voice"] == "learned":
                assert record["fallback"] == "" and record["templates"], record
                ways["joined"] += len(record["templates"]) > 1
                # each real turn's core, in order, with openers and tails of other people's turns around it
                parts = [template_pattern(core_of(template_text(voice, t))) for t in record["templates"]]
                assert re.fullmatch(".*?" + ".*?".join(parts) + ".*", text, re.IGNORECASE), (text, record)
                if meta["stage"] == "leave":
                    assert all(t.startswith("leave||#") for t in record["templates"])
            else:
                assert record["voice"] == "rules" and record["templates"] == [], record
                assert record["fallback"] in ("no template of the act", "no draw read back as meant"), record
    # both ways are taken: the voice has templates for most turns, not for every one; some turns are two real
    # turns joined
    assert ways["learned"] > 2 * ways["rules"] > 0 and ways["joined"] > 0, ways


def test_the_same_seed_says_the_same_and_the_plan_is_the_realistic_users(demo_index, demo_matcher, speaking_voice):
    voice = speaking_voice
    sessions = {seed: run_user(demo_index, demo_matcher, voice, seed) for seed in range(4)}
    in_catalog_wishes = replace(user_profile("learned"), name="learned_catalog", wants="catalog")
    for seed, said in sessions.items():
        assert run_user(demo_index, demo_matcher, voice, seed) == said
        # the voice words the turns; what the user wants, when, and when it leaves are the realistic user's
        # once it opens as the realistic user does (the learned profile opens with what people ask for)
        said = run_user(demo_index, demo_matcher, voice, seed, defined=in_catalog_wishes)
        realistic = run_user(demo_index, demo_matcher, None, seed, profile="realistic")
        assert [m["constraints"] for _, m, _ in said] == [m["constraints"] for _, m, _ in realistic]
        assert [m["disclosure"] for _, m, _ in said] == [m["disclosure"] for _, m, _ in realistic]
        assert all("voice" not in m for _, m, _ in realistic)
    texts = {seed: [text for text, _, _ in said] for seed, said in sessions.items()}
    assert len({tuple(t) for t in texts.values()}) == 4


def test_a_user_that_loses_patience_leaves_in_a_frustrated_users_words(demo_index, demo_matcher, voice):
    leaving = {text for text, _ in POOLS["leave||"]}
    for seed in range(3):
        said = run_user(demo_index, demo_matcher, voice, seed, system="missing", turns=12)
        text, meta, _ = said[-1]
        assert meta["stage"] == "leave" and len(said) <= 1 + user_profile("learned").patience + 1, said
        assert text in leaving and meta["voice"]["voice"] == "learned", meta["voice"]


def test_the_learned_profile_needs_a_voice_and_the_others_ignore_one(demo_index, demo_matcher, voice):
    with pytest.raises(ValueError, match="the learned profile needs a learned voice: set simulator.voice.corpus"):
        make_user(demo_index, SETTINGS, TEMPLATES, 0, demo_matcher, None, LEARNED)
    user = make_user(demo_index, SETTINGS, TEMPLATES, 0, demo_matcher, voice, REALISTIC)
    assert user.voice is None and "voice" not in user.turn(1, []).meta


# ------------------------------------------------------------------ what people ask for, and how they write it

ASKING = [
    ("a1", None, ["Any comedies tonight?", "Got comedies for me?", "Got comedies for me?"]),
    ("a2", None, ["A comedy please", "I want a western"]),
    ("a3", None, ["any comedies?"]),
]


@pytest.fixture(scope="module")
def asking_voice(tmp_path_factory, demo_matcher):
    path = write_corpus(tmp_path_factory.mktemp("asking") / "asking.jsonl", ASKING)
    return learn_voice(corpus_dialogues(path, "jsonl"), demo_matcher, SOURCE)


def test_the_voice_counts_the_people_who_ask_for_a_value_and_the_words_they_write_twice(asking_voice):
    # three people ask for a comedy (a1 three times: one person), one for a western
    assert asking_voice.asked("genre") == {"comedy": 3, "western": 1}
    assert asking_voice.asked("actor") == {}
    # "comedies", written in four turns, is kept; "comedy" and "western", written once each, are not
    assert asking_voice.said_as("genre", "comedy") == {"comedies": 4}
    assert asking_voice.said_as("genre", "western") == {}
    # a1 typing the same request twice is one person saying it: drawn as often as a2's request
    said = {t.text: t.said for t in asking_voice.pools["later|request|genre:wish"]}
    assert said == {"Got {genre} for me?": 1, "I want a {genre}": 1}


def test_a_user_that_wants_what_people_ask_for_opens_with_it_as_often(demo_index, demo_matcher, asking_voice):
    openings = [
        make_user(demo_index, SETTINGS, TEMPLATES, seed, demo_matcher, asking_voice, LEARNED).focus
        for seed in range(200)
    ]
    counts = {value: sum(f == ("genre", value) for f in openings) for value in ("comedy", "western")}
    assert sum(counts.values()) == 200  # nothing people never asked for
    assert 120 < counts["comedy"] < 180  # 3 in 4 expected: 150, sd 6.1
    # the catalog user opens with the catalog's genres, most of which nobody asked for
    catalog = {
        make_user(demo_index, SETTINGS, TEMPLATES, s, demo_matcher, None, REALISTIC).focus[1] for s in range(200)
    }
    assert len(catalog - {"comedy", "western"}) > 2


def test_a_user_that_wants_what_people_ask_for_shifts_to_the_fields_and_values_they_ask_for(
    demo_index, demo_matcher, asking_voice
):
    # the people of ASKING ask for genres only, comedy three times as often as westerns
    shifted = {"people": Counter(), "catalog": Counter()}
    values = Counter()
    for seed in range(40):
        for wants, profile in (("people", LEARNED), ("catalog", REALISTIC)):
            user = make_user(demo_index, SETTINGS, TEMPLATES, seed, demo_matcher, asking_voice, profile)
            for _ in range(2):
                before, event = user.focus, user.plan.shift()
                if event is None:
                    continue
                to = event["to_focus"]
                shifted[wants][to["field"]] += 1
                if wants == "people":
                    values[to["value"]] += 1
                else:  # the next field of simulator.field_order, as every user shifts
                    order = SETTINGS.field_order
                    assert to["field"] == order[(order.index(before[0]) + 1) % len(order)], (seed, before, to)
    # a genre where a film bridges to one, else the fields nobody asks for, in field order
    assert shifted["people"]["genre"] > 0.8 * sum(shifted["people"].values()), shifted
    assert shifted["catalog"]["genre"] < 0.2 * sum(shifted["catalog"].values()), shifted
    # among the genres a bridge offers, those people ask for, as often as they ask for them
    assert values["comedy"] + values["western"] > 0.5 * sum(values.values()), values


def test_a_value_comes_as_often_as_people_ask_for_it_however_many_films_offer_it(
    demo_index, demo_matcher, asking_voice
):
    # people ask for comedy three times as often as for westerns; nine films offer a comedy, one a western:
    # drawn per film, comedies would come 27 times as often (96%), drawn per value three times (75%)
    user = make_user(demo_index, SETTINGS, TEMPLATES, 5, demo_matcher, asking_voice, LEARNED)
    options = [(film, "comedy") for film in range(9)] + [(9, "western")]
    drawn = Counter(user.plan._pick_value("genre", options, lambda option: option[1])[1] for _ in range(400))
    assert 0.68 < drawn["comedy"] / 400 < 0.82, drawn  # 0.75 expected, sd 0.022
    films = Counter(user.plan._pick_value("genre", options, lambda option: option[1])[0] for _ in range(900))
    assert all(40 < films[film] < 115 for film in range(9)), films  # a comedy's films alike: 75 each expected


def test_a_user_that_wants_what_people_ask_for_rules_out_what_they_ask_for(demo_index, demo_matcher, asking_voice):
    # a contradiction with no other wish to take back rules out a value of the focus field the anchor lacks:
    # under `wants: people` one people name (comedy or western), under `wants: catalog` any of the catalog's
    ruled_out = {"people": Counter(), "catalog": Counter()}
    for seed in range(40):
        for wants, profile in (("people", LEARNED), ("catalog", REALISTIC)):
            settings = replace(SETTINGS, contradiction_rate=1.0)
            user = make_user(demo_index, settings, TEMPLATES, seed, demo_matcher, asking_voice, profile)
            excluded = user.plan.maybe_contradict()
            if excluded is not None and excluded.field == "genre":
                assert excluded.negated and excluded.value not in user.plan.film_values(user.plan.anchor, "genre")
                ruled_out[wants][excluded.value] += 1
    people, catalog = ruled_out["people"], ruled_out["catalog"]
    assert people and set(people) <= {"comedy", "western"}, people
    assert len(set(catalog) - {"comedy", "western"}) > 2, catalog


def test_a_voiced_value_is_written_as_people_wrote_it(demo_index, demo_matcher, asking_voice):
    written = {"comedies": 0, "a comedy": 0, "western": 0}
    for seed in range(40):
        user = make_user(demo_index, SETTINGS, TEMPLATES, seed, demo_matcher, asking_voice, LEARNED)
        turn = user.turn(1, [])
        if turn.meta["voice"]["voice"] != "learned":
            continue
        value = {s["value"] for s in turn.meta["stated"]}
        if "comedy" in value:
            # people's plural, but after "a" the catalog's singular ("A comedy please", never "A comedies")
            if re.search(r"\b[Aa]n? \w", turn.text):
                assert re.search(r"\b[Aa] comedy\b", turn.text) and "comedies" not in turn.text, turn.text
                written["a comedy"] += 1
            else:
                assert "comedies" in turn.text and "comedy " not in turn.text, turn.text
                written["comedies"] += 1
        if "western" in value:
            assert "western" in turn.text, turn.text
            written["western"] += 1
    assert written["comedies"] > 0 and written["a comedy"] > 0 and written["western"] > 0, written


def test_a_value_before_the_word_movie_or_film_is_never_a_plural(demo_index, demo_matcher, tmp_path):
    """People write "comedies" as often as "comedy" here, but a value that describes a film stays singular:
    "comedy movies", never "comedies movies"."""
    people = [
        ("c1", None, ["any comedies?", "got comedies?"]),
        ("c2", None, ["comedies tonight?"]),
        ("c3", None, ["some comedy movies please"]),
        ("c4", None, ["good comedy films?"]),
    ]
    voice = learn_voice(corpus_dialogues(write_corpus(tmp_path / "nouns.jsonl", people), "jsonl"), demo_matcher, SOURCE)
    assert voice.said_as("genre", "comedy") == {"comedies": 3, "comedy": 2}
    written = {"before a noun": 0, "plural": 0}
    for seed in range(60):
        user = make_user(demo_index, SETTINGS, TEMPLATES, seed, demo_matcher, voice, LEARNED)
        turn = user.turn(1, [])
        if turn.meta["voice"]["voice"] != "learned" or "comedy" not in {s["value"] for s in turn.meta["stated"]}:
            continue
        described = re.search(r"\b(comed\w+) (movie|film)s?\b", turn.text)
        if described:
            assert described.group(1) == "comedy", turn.text
            written["before a noun"] += 1
        written["plural"] += "comedies" in turn.text
    assert written["before a noun"] > 0 and written["plural"] > 0, written


def test_a_profile_that_wants_what_people_ask_for_needs_values_the_catalog_has(demo_index, demo_matcher, tmp_path):
    path = write_corpus(tmp_path / "none.jsonl", [("n1", None, ["hello", "anything good?"])])
    voice = learn_voice(corpus_dialogues(path, "jsonl"), demo_matcher, SOURCE)
    with pytest.raises(ValueError, match="asks for no genre a catalog film has"):
        make_user(demo_index, SETTINGS, TEMPLATES, 0, demo_matcher, voice, LEARNED)


# ------------------------------------------------------------------ draws spread over the sessions


@given(st.integers(0, 2**64 - 1), st.integers(0, 10**7), st.integers(0, 10**4), st.integers(1, 10**4))
def test_a_spread_position_is_inside_the_pool(start, session, draw, size):
    assert 0 <= spread_position(start, session, draw, size) < size


@pytest.mark.parametrize("size", [1, 2, 3, 7, 10, 31, 97])
def test_sessions_enter_a_pool_about_equally_often(size):
    for sessions in (size, 3 * size, 100):
        counts = np.bincount([spread_position(12345, s, 0, size) for s in range(sessions)], minlength=size)
        # independent draws of 100 sessions from 10 templates leave the most said template about 10 sessions
        # ahead of the least; the golden-ratio steps keep every template within three of any other
        assert counts.max() - counts.min() <= 3, (size, sessions, counts)
        if sessions >= 3 * size:
            assert counts.min() >= 1


def test_a_pool_is_ordered_by_the_experiments_seed_and_its_templates():
    pool = [template(f"later|ask|#{i}", f"question {i}") for i in range(8)]
    order, start = Voice.spread_order(pool, 7)
    assert sorted(t.id for t in order) == sorted(t.id for t in pool)
    assert Voice.spread_order(list(reversed(pool)), 7) == (order, start)  # the pool's order does not matter
    assert Voice.spread_order(pool, 8) != (order, start)
    assert Voice.spread_order(pool[:-1], 7)[1] != start


def test_a_pool_weighed_anew_for_another_reply_is_drawn_by_its_new_weights(demo_index, demo_matcher, speaking_voice):
    # keyed on the reply, one pool's templates come with other counts (voicing.keyed_on_the_reply): the
    # draws that follow take the new counts, not those of the first reply the session met
    voicing = make_user(demo_index, SETTINGS, TEMPLATES, 0, demo_matcher, speaking_voice, LEARNED, (4, 7)).voicing
    even = [template("later|other|#1", "okay then"), template("later|other|#2", "hmm")]
    heavy = [replace(even[0], said=99), even[1]]
    evenly = Counter(voicing._draw_template(even).id for _ in range(40))
    assert abs(evenly[even[0].id] - evenly[even[1].id]) <= 3, evenly
    drawn = Counter(voicing._draw_template(heavy).id for _ in range(50))
    assert drawn[even[0].id] >= 49, drawn


def test_users_of_one_plan_in_different_sessions_open_with_different_real_turns(
    demo_index, demo_matcher, speaking_voice
):
    # the same seed (the same plan and draws) in twenty places: spread, the opening turns go round the pool;
    # drawn independently, every one opens alike
    def openings(spread):
        said = [run_user(demo_index, demo_matcher, speaking_voice, 3, turns=1, spread=spread(i)) for i in range(20)]
        return [tuple(meta["voice"]["templates"]) for [(_, meta, _)] in said]

    independent, spread = openings(lambda i: None), openings(lambda i: (i, 11))
    assert len(set(independent)) == 1
    assert independent[0][0].startswith("first|")
    pool = next(pool for pool in speaking_voice.pools.values() if any(t.id == independent[0][0] for t in pool))
    counts = Counter(ids[0] for ids in spread)
    # a thin pool of requests is joined by other fields' requests, re-typed (Voicing._widened)
    signature = tuple(pool[0].slots)
    supply = len(pool) + (len(speaking_voice.retyped("request", signature, True)) if len(pool) < THIN_POOL else 0)
    assert len(counts) == min(supply, 20) and max(counts.values()) - min(counts.values()) <= 2, counts
    assert openings(lambda i: (i, 11)) == spread  # the same place, the same words


def test_a_way_from_a_well_supplied_pool_goes_ahead_of_a_rare_one(demo_index, demo_matcher, speaking_voice):
    voicing = make_user(demo_index, SETTINGS, TEMPLATES, 0, demo_matcher, speaking_voice, LEARNED).voicing
    rare = [template(f"later|other|#{80 + i}", text) for i, text in enumerate(["that one is odd", "odd pick"])]
    words = ["so so", "hm okay", "not sure", "maybe", "hmm", "ok then", "fair enough", "right", "I see", "got it"]
    words += ["alright", "sure thing", "oh well", "cool cool", "fine by me", "noted", "ah okay", "mm maybe"]
    words += ["who knows", "perhaps"]
    common = [template(f"later|other|#{90 + i}", text) for i, text in enumerate(words)]
    assert len(common) == THIN_POOL
    text, _, _ = voicing.voiced([[(None, rare)], [(None, common)]], [], told=[])
    assert voicing.record["templates"][0] in {t.id for t in common}
    assert any(t.text.lower() in text.lower() for t in common), text
    # a pool one short of THIN_POOL is thin too: where no way is well supplied, the first that fits is taken
    voicing.voiced([[(None, rare)], [(None, common[:-1])]], [], told=[])
    assert voicing.record["templates"][0] in {t.id for t in rare}


@pytest.mark.parametrize(
    "text, value, expected",
    [
        ("I want an {genre} movie", "comedy", "I want a comedy movie"),
        ("got a {genre} one?", "action", "got an action one?"),
        ("An {genre} please", "western", "A western please"),
        ("{genre} please", "action", "action please"),
    ],
)
def test_an_article_before_a_slot_agrees_with_the_value_filled_in(
    demo_index, demo_matcher, asking_voice, text, value, expected
):
    voicing = make_user(demo_index, SETTINGS, TEMPLATES, 0, demo_matcher, asking_voice, LEARNED).voicing
    drawn = [(None, template("later|request|genre:wish#9", text, "genre:wish"))]
    filled = voicing.fill(drawn, told=[Constraint("genre", value)])
    assert filled is not None and filled[0] == expected


def test_a_slot_its_words_bind_to_its_field_is_not_retyped_to_another():
    # "it does not have to star {actor}" would rule out a genre as "it does not have to star comedy"
    def exclusion(k, text):
        return template(f"later|request|actor:exclusion#{k}", text, "actor:exclusion")

    voice = Voice(
        {
            "later|request|actor:exclusion": [
                exclusion(0, "it does not have to star {actor}"),
                exclusion(1, "no {actor} movies please"),
                exclusion(2, "nothing with the {actor}"),
                exclusion(3, "skip anything directed by {actor}"),
            ],
            "later|request|year:wish": [template("later|request|year:wish#0", "something in {year}", "year:wish")],
        },
        {},
    )
    assert [t.text for t in voice.retyped("request", ("genre:exclusion",))] == ["no {genre} movies please"]
    # "directed by" binds the slot to a director, not to an actor: kept for a director
    assert [t.text for t in voice.retyped("request", ("director:exclusion",))] == [
        "no {director} movies please",
        "skip anything directed by {director}",
    ]
    # a word that binds the slot to its new field too keeps the template ("in" a year, "in" a language)
    assert [t.text for t in voice.retyped("request", ("language:wish",))] == ["something in {language}"]
