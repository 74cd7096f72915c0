"""How far simulated user turns are from real users' turns: population statistics, discriminators, flow.

Three views, as ConvApparel measures simulators against real conversations:
- population statistics of the user turns, each with the simulated and the real value and the
  difference between them, with a percentile bootstrap CI over sessions (a session's turns are
  resampled together): words per turn (median); the shares of turns that ask, greet, thank, are only
  small talk, hold a word no English word list knows (a typo, mostly), take a film, turn one down or ask
  about it (the same rules read both sides: crseval.language.user_acts, which the learned voice reads
  turns with too), and, given the catalog, name one of its films or values
  (`TURN_STATISTICS`); per session, the turns and the variety of words (Guiraud's index: distinct
  words / sqrt(words), which depends on a session's length less than their ratio);
- a discriminator: how well a classifier tells a simulated turn from a real one, as the
  cross-validated ROC AUC (0.5: indistinguishable, 1.0: always told apart) of a logistic regression
  on word n-grams, character n-grams, or the turn statistics; its CI comes from DeLong's variance of
  the out-of-fold scores; the n-grams that give each side away most are listed, so that a developer
  of the simulator sees what to change. Both sides show it equal numbers of turns (`equal_samples`), as
  the floor of real users against real users is measured; how often a user repeats a turn word for word
  is a statistic of its own (`distinct_turns`, on the same samples). The word and character
  discriminators run a second time on content-blind text (`content_blind`: every catalog value and title
  replaced by a word naming its slot type, on both sides): how the user talks apart from what it talks about;
- how sessions flow: the share of each act (crseval.language.user_acts.read_turn, `ACTS`), the
  Jensen-Shannon distance between the act-bigram distributions of simulated and real sessions (a start and
  an end marker around each session's acts), turns per session, and how sessions end (the act of the last
  user turn; for simulated sessions also whether the user left or the turn limit ended it).

A profile counts each simulated person once (`simulated_turns`): the sessions one seed had with every
system say much the same, and counted all they would put the same words on the simulated side many times.

Held out by construction: when the learned voice (crseval.simulate.user.voice) learned from the reference
itself, the real side is the dialogues of the other parts, and the voice's part is a further row, real users
against real users (the floor). A reference that shares dialogues with the voice's part in another file is
headed "not held out" (`load_reference`).

Every random choice (bootstrap, folds) takes a seed. AUCs and differences are reported, never
thresholded here. A bootstrap CI over sessions needs at least two sessions on each side (`MIN_SESSIONS`):
with fewer it is NaN (n/a in the report).

Memory is bounded whatever the input: the bootstrap draws its (resamples, sessions) indices a block of at
most `BOOTSTRAP_BLOCK` at a time, from the same Generator in the same order (the same
draws, the same numbers as all at once); words per turn are counted up to `MAX_TURN_WORDS` (a longer turn
counts as that many and is reported, `long_turns`), so no histogram is wider than that however long a turn
is; a reference of more than `MAX_REFERENCE_BYTES` bytes or `MAX_REFERENCE_DIALOGUES` dialogues is refused
(`ReferenceTooLarge`) before it is measured.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import sparse

from crseval.core.io import sha256_file
from crseval.language.user_acts import ACTS, TurnReading, act_flags
from crseval.simulate.user import voice_learning
from crseval.simulate.user.voice import dialogue_part
from crseval.statistics.intervals import draw_counts

_WORD = re.compile(r"[A-Za-z0-9']+")
_LETTERS = re.compile(r"\b[a-z]{3,}\b")

TURN_STATISTICS = (
    "words",
    "question",
    "greeting",
    "thanks",
    "chit_chat",
    "unknown_word",
    "takes",
    "turns_down",
    "asks_about",
)


@lru_cache(maxsize=200_000)
def _unknown(word: str) -> bool:
    from wordfreq import zipf_frequency  # a large word list, loaded only where turns are measured

    return zipf_frequency(word, "en") == 0


def turn_statistics(texts: list[str], names_catalog: Callable[[str], bool] | None = None) -> pd.DataFrame:
    """One row per turn: its words, and whether it asks (a "?"), greets, thanks, is only small talk, holds a
    lower-case word of three letters or more that no English word list knows (wordfreq), takes a film,
    turns one down, asks about one; with `names_catalog` (text -> bool) also whether it names a film or a
    value of the catalog."""
    flags = [act_flags(t) for t in texts]
    frame = pd.DataFrame(
        {
            "words": [len(_WORD.findall(t)) for t in texts],
            **{name: [float(f[name]) for f in flags] for name in ("question", "greeting", "thanks", "chit_chat")},
            "unknown_word": [float(any(_unknown(w) for w in _LETTERS.findall(t))) for t in texts],
            **{name: [float(f[name]) for f in flags] for name in ("takes", "turns_down", "asks_about")},
        }
    )
    if names_catalog is not None:
        frame["names_catalog"] = [float(names_catalog(t)) for t in texts]
    return frame


def guiraud(texts: list[str]) -> float:
    """Distinct words / sqrt(words) of a set of turns (lower case); NaN without words."""
    words = [w.lower() for t in texts for w in _WORD.findall(t)]
    return len(set(words)) / np.sqrt(len(words)) if words else float("nan")


@dataclass(frozen=True)
class UserTurns:
    """The user turns of one user (a profile, a corpus), with the session each belongs to, in the order
    said; for simulated sessions, how each ended (session -> `ending.reason` of its record)."""

    name: str
    texts: list[str]
    sessions: list[str]
    endings: dict[str, str] | None = None

    def __post_init__(self):
        if len(self.texts) != len(self.sessions):
            raise ValueError(f"{self.name}: {len(self.texts)} turns but {len(self.sessions)} session ids")
        if not self.texts:
            raise ValueError(f"{self.name}: no user turns to compare")


SESSION_STATISTICS = ("turns_per_session", "word_variety")
# Words per turn are counted up to this many: a longer turn counts as this many in the median words per turn
# (which moves only when half a side's turns are longer) and is reported: the measure `long_turns`, the turns
# of each side over it. No histogram of words per turn is wider, however long a turn is.
MAX_TURN_WORDS = 1_000
# The bootstrap draws at most this many session indices at once: a block of rows of the (resamples,
# sessions) matrix of draws, from the same Generator in the same order as all at once, so the draws do not
# depend on it. A block takes about 24 bytes per index (the indices, the counts of each session, as floats):
# about 200 MB, whatever resamples x sessions (what drawing them all at once took for 8.4 million). Every
# statistic is then a sum of whole numbers, the same however the rows are blocked, but for `word_variety`:
# its sums of Guiraud's indices are as BLAS adds them, which can depend on the block's shape, so beyond one
# block (over BOOTSTRAP_BLOCK / resamples sessions on a side: 838 at the default 10,000 resamples) its CI
# can differ from one drawn all at once in the last bits (a relative 1e-14 at most).
BOOTSTRAP_BLOCK = 1 << 23
# A bootstrap over sessions needs at least this many sessions on each side: one session resampled is always
# itself, and says nothing of how sessions vary. With fewer, a CI over sessions is NaN (n/a in the report).
MIN_SESSIONS = 2
# The largest reference measured against (load_reference): bytes of its file, checked before it is read,
# and dialogues, checked once read, before anything is measured. The importer's reading of the file, the
# real side's turns, their readings and per-session sums are held in memory, about 17 bytes per byte of the
# file: at 10,000 resamples an invented reference of 50,000 dialogues and 60 MB peaks at 1.4 GB, one of 120
# dialogues at 0.36 GB (benchmarks/bench_user_realism.py). Take a sample of a larger corpus's dialogues.
MAX_REFERENCE_BYTES = 64 << 20
MAX_REFERENCE_DIALOGUES = 50_000

# How a simulated session ended (`ending.reason` of its record, crseval.simulate.sessions.run_session).
ENDINGS = ("abandoned", "turn_limit")
# The real users of the voice's part of the reference, measured as a user against the other parts.
FLOOR = "real users (the voice's part)"


class ReferenceTooLarge(ValueError):
    """A realism reference over MAX_REFERENCE_BYTES or MAX_REFERENCE_DIALOGUES."""


def reference_turns(
    path: str | Path, import_format: str, keep: Callable[[dict], bool] | None = None, name: str = "real users"
) -> UserTurns:
    """The user turns of a corpus of real dialogues in an importing format (crseval.corpora.formats), as
    the importer reads them: the turns it pairs with a system reply; with `keep` (session record -> bool),
    of the dialogues it keeps only. ReferenceTooLarge for a corpus over MAX_REFERENCE_BYTES or
    MAX_REFERENCE_DIALOGUES."""
    return _turns([r for r in _reference_dialogues(path, import_format) if keep is None or keep(r)], name)


def _turns(records: list[dict], name: str) -> UserTurns:
    """The user turns of session records, with the session each belongs to."""
    return UserTurns(
        name,
        [turn["user_text"] for record in records for turn in record["turns"]],
        [record["session_id"] for record in records for _ in record["turns"]],
    )


def _reference_dialogues(path: str | Path, import_format: str) -> list[dict]:
    """The dialogues of a reference as the importer reads them, refused (ReferenceTooLarge) over
    MAX_REFERENCE_BYTES before the file is read, or over MAX_REFERENCE_DIALOGUES once read."""
    size = Path(path).stat().st_size
    if size > MAX_REFERENCE_BYTES:
        raise ReferenceTooLarge(
            f"realism reference {path}: {size:,} bytes, over the {MAX_REFERENCE_BYTES:,} bytes the user_realism "
            "rule reads (crseval.checks.user_realism.MAX_REFERENCE_BYTES); name a sample of its dialogues"
        )
    records = voice_learning.corpus_dialogues(path, import_format)
    if len(records) > MAX_REFERENCE_DIALOGUES:
        raise ReferenceTooLarge(
            f"realism reference {path}: {len(records):,} dialogues, over the {MAX_REFERENCE_DIALOGUES:,} the "
            "user_realism rule measures against (crseval.checks.user_realism.MAX_REFERENCE_DIALOGUES); name a "
            "sample of its dialogues"
        )
    return records


@dataclass(frozen=True)
class Reference:
    """The real side of the comparison and how it stands to the learned voice's corpus."""

    real: UserTurns
    floor: UserTurns | None = None  # the voice's part of the same corpus, measured as a user
    held_out: str = ""  # which dialogues the real side is, when it is held out from the voice
    shared: int = 0  # dialogues of the reference the voice learned from, when it is not held out
    voice_part: str = ""  # the voice's part, for the report
    # held out: dialogues of the real side by a user (the importer's user id) who also speaks in the voice's
    # part, and dialogues whose user turns are word for word those of a dialogue of the voice's part
    same_users: int = 0
    echoed: int = 0


def load_reference(
    path: str | Path, import_format: str, voice: dict | None = None, voice_corpus: str | Path | None = None
) -> Reference:
    """The real users to measure against, held out from the learned voice by construction.

    Without a voice corpus: every dialogue of the reference. When the voice learned from the reference
    itself (the same file by sha256, read in the same format): the dialogues outside the voice's part
    (crseval.simulate.user.voice.dialogue_part: by user where the corpus names users; `voice` holding `parts` and
    `learn_part`), and the voice's part as `floor`. When the voice learned from another file: every
    dialogue, and `shared` counts those the voice's part holds too (the same id, or the same user turns
    in the same order), for the report to head its table "not held out".

    A reference over MAX_REFERENCE_BYTES is refused (ReferenceTooLarge) before it is read, one over
    MAX_REFERENCE_DIALOGUES before anything is measured."""

    records = _reference_dialogues(path, import_format)
    if not voice_corpus:
        return Reference(_turns(records, "real users"))
    voice = voice or {}
    # the schema's defaults (simulator.voice)
    parts, learn_part = voice.get("parts", 2), voice.get("learn_part", 1)
    voice_format = voice.get("format", "crsarena")
    voice_part = f"part {learn_part} of {parts} of {Path(voice_corpus).name}"

    def in_part(record: dict) -> bool:
        return dialogue_part(record, parts) == learn_part

    if voice_format == import_format and sha256_file(path) == sha256_file(voice_corpus):
        others = [part for part in range(1, parts + 1) if part != learn_part]
        learned = [record for record in records if in_part(record)]
        users, said = {_user(r) for r in learned} - {None}, {_said(r) for r in learned} - {()}
        held = [record for record in records if not in_part(record)]
        return Reference(
            _turns(held, "real users"),
            floor=_turns(learned, FLOOR),
            held_out=f"the dialogues of {_parts(others)} of {parts}, held out from the voice, which learned "
            f"from part {learn_part}",
            voice_part=voice_part,
            same_users=sum(_user(r) in users for r in held),
            echoed=sum(_said(r) in said for r in held),
        )
    learned = [record for record in voice_learning.corpus_dialogues(voice_corpus, voice_format) if in_part(record)]
    ids, said = {r["session_id"] for r in learned}, {_said(r) for r in learned} - {()}
    shared = sum(r["session_id"] in ids or _said(r) in said for r in records)
    return Reference(_turns(records, "real users"), shared=shared, voice_part=voice_part)


def _user(record: dict) -> str | None:
    """The id of the dialogue's user, where the importer keeps one."""
    return (record.get("provenance") or {}).get("user_id")


def _said(record: dict) -> tuple[str, ...]:
    """A dialogue's user turns, spaces normalised: two files hold the same dialogue if they say the same."""
    return tuple(" ".join(turn["user_text"].split()) for turn in record["turns"])


def _parts(parts: list[int]) -> str:
    """How parts read in the report: part 2; parts 2 and 3; parts 2, 3 and 4."""
    if len(parts) == 1:
        return f"part {parts[0]}"
    return "parts " + ", ".join(str(p) for p in parts[:-1]) + f" and {parts[-1]}"


def simulated_turns(
    records: Iterable[dict], profiles: dict[str, str]
) -> tuple[dict[str, UserTurns], dict[tuple[str, str], UserTurns]]:
    """The user turns of simulated sessions by user, and by (user, system). A session's user is the
    profile it records, else `profiles[system]` (sessions written before profiles). Where an LLM reworded
    the user's turns (`simulator.paraphrase`), the profile's own user is the rules' wording (the
    template text) and the reworded turns, as the system read them, are a further user
    `<profile> reworded by <model>`: the table then shows what the LLM changes.

    A user counts each simulated person once, as a real corpus holds each person's dialogue once: the
    sessions of one session index (one seed, one plan, one stream of draws) are one person meeting every
    system, and every trial, and they say much the same, so that counting them all would put the same words
    on the simulated side many times over, and a discriminator would learn them in one fold and find them
    in the next. Of a person's sessions the one whose seed and system hash lowest is kept (`_kept_rank`),
    a different system for different people; a record without an index (an imported one) is a person of its
    own. The user as each system met it counts every session."""
    kept: dict[tuple, tuple] = {}  # (user, session index) -> (rank, turns, session id, ending)
    texts, sessions, endings = defaultdict(list), defaultdict(list), defaultdict(dict)
    for record in records:
        profile = record.get("profile") or profiles[record["system"]]
        reason = (record.get("ending") or {}).get("reason")
        spoken = defaultdict(list)
        for turn in record["turns"]:
            paraphrase = (turn.get("user_meta") or {}).get("paraphrase")
            if paraphrase:
                model = (paraphrase.get("llm") or {}).get("model") or "an LLM"
                spoken[profile].append(paraphrase["template_text"])
                spoken[f"{profile} reworded by {model}"].append(turn["user_text"])
            else:
                spoken[profile].append(turn["user_text"])
        for user, said in spoken.items():
            key = (user, record["system"])
            texts[key] += said
            sessions[key] += [record["session_id"]] * len(said)
            if reason:
                endings[key][record["session_id"]] = reason
            person = (user, record.get("session_index", record["session_id"]))
            rank = _kept_rank(record)
            if person not in kept or rank < kept[person][0]:
                kept[person] = (rank, said, record["session_id"], reason)
    for (user, _), (_, said, session_id, reason) in kept.items():  # in the order people were first met
        texts[user] += said
        sessions[user] += [session_id] * len(said)
        if reason:
            endings[user][session_id] = reason
    users = {key: UserTurns(key, texts[key], sessions[key], endings.get(key)) for key in texts if isinstance(key, str)}
    systems = {
        key: UserTurns(f"{key[0]} with {key[1]}", texts[key], sessions[key], endings.get(key))
        for key in texts
        if isinstance(key, tuple)
    }
    return users, systems


def _kept_rank(record: dict) -> bytes:
    """Which of a simulated person's sessions the user's row keeps: the lowest hash of its seed, system and
    trial (the same whatever order the shards are read in)."""
    trial = f"t{record['trial']}" if record.get("trial") else ""
    return hashlib.sha256(f"{record.get('seed')}|{record['system']}|{trial}".encode("utf-8")).digest()


@dataclass(frozen=True)
class _Sessions:
    """A side's turns summed per session, so that a bootstrap over sessions is a sum over drawn rows:
    turns, the count of each yes/no statistic, a histogram of words per turn (a sparse matrix, a turn over
    MAX_TURN_WORDS words counted as that many: `long_turns` of them), and the variety of each session's
    words; given each turn's act, also the count of each act, the act of the session's last turn, how the
    session ended, and its act bigrams."""

    turns: np.ndarray  # (sessions,)
    counts: dict[str, np.ndarray]  # statistic -> (sessions,)
    words: sparse.csr_array  # (sessions, min(longest turn, MAX_TURN_WORDS) + 1)
    variety: np.ndarray  # (sessions,) Guiraud's index, 0 for a session without words
    worded: np.ndarray  # (sessions,) 1 for a session with words
    long_turns: int  # turns over MAX_TURN_WORDS words
    acts: np.ndarray | None = None  # (sessions, ACTS): turns of each act
    last_acts: np.ndarray | None = None  # (sessions, ACTS): 1 for the act of the session's last turn
    endings: np.ndarray | None = None  # (sessions, ENDINGS): 1 for how it ended, 0s where not recorded
    bigrams: np.ndarray | None = None  # (sessions, BIGRAMS): act bigrams, start and end marked

    @classmethod
    def of(
        cls,
        turns: UserTurns,
        names_catalog: Callable[[str], bool] | None = None,
        act: Callable[[str], str] | None = None,
    ) -> "_Sessions":
        frame = turn_statistics(turns.texts, names_catalog)
        codes, ids = pd.factorize(pd.Series(turns.sessions), sort=True)
        sessions = codes.max() + 1
        lengths = frame["words"].to_numpy()
        counted = np.minimum(lengths, MAX_TURN_WORDS)
        # duplicate (session, words) entries are summed: each session's histogram of words per turn
        words = sparse.csr_array((np.ones(len(counted)), (codes, counted)), shape=(sessions, counted.max() + 1))
        texts = [[] for _ in range(sessions)]
        for code, text in zip(codes, turns.texts):
            texts[code].append(text)
        variety = np.array([guiraud(t) for t in texts])
        flow = {}
        if act is not None:
            acts = [_ACT_INDEX[act(text)] for text in turns.texts]
            said = [[] for _ in range(sessions)]  # each session's acts, in the order said
            for code, index in zip(codes, acts):
                said[code].append(index)
            flow["acts"] = np.zeros((sessions, len(ACTS)))
            np.add.at(flow["acts"], (codes, acts), 1)
            flow["last_acts"] = np.zeros((sessions, len(ACTS)))
            flow["last_acts"][np.arange(sessions), [session[-1] for session in said]] = 1
            flow["bigrams"] = np.array([_bigram_counts(session) for session in said])
            flow["endings"] = np.zeros((sessions, len(ENDINGS)))
            for code, session in enumerate(ids):
                reason = (turns.endings or {}).get(session)
                if reason in ENDINGS:
                    flow["endings"][code, ENDINGS.index(reason)] = 1
        return cls(
            np.bincount(codes, minlength=sessions).astype(float),
            {name: np.bincount(codes, frame[name].to_numpy(), sessions) for name in frame.columns if name != "words"},
            words,
            np.nan_to_num(variety),
            (~np.isnan(variety)).astype(float),
            int((lengths > MAX_TURN_WORDS).sum()),
            **flow,
        )

    def bootstrap(self, rng: np.random.Generator, resamples: int) -> dict[str, np.ndarray]:
        """Every statistic (`values`) of `resamples` draws of the sessions with replacement from `rng`, drawn
        a block of rows at a time (`_blocks`, as wide as the sessions or the histogram of words per turn): the
        same draws, in the same order, as one (resamples, sessions) matrix, in a memory of BOOTSTRAP_BLOCK."""
        sessions = len(self.turns)
        blocks = [
            self.values(rng.integers(sessions, size=(rows, sessions)))
            for rows in _blocks(resamples, max(sessions, self.words.shape[1]))
        ] or [self.values(np.zeros((0, sessions), dtype=np.int64))]
        return {name: np.concatenate([block[name] for block in blocks]) for name in blocks[0]}

    def values(self, picks: np.ndarray) -> dict[str, np.ndarray]:
        """Every statistic of each draw: `picks` (draws, sessions) are session indices. A draw is the
        number of times it took each session, so every sum is one matrix product."""
        taken = draw_counts(picks, len(self.turns)).astype(float)
        turns = taken @ self.turns
        values = {"words": _median(taken @ self.words)}
        values.update({name: (taken @ count) / turns for name, count in self.counts.items()})
        values["turns_per_session"] = turns / picks.shape[1]
        with np.errstate(invalid="ignore", divide="ignore"):
            values["word_variety"] = (taken @ self.variety) / (taken @ self.worded)
        if self.acts is None:
            return values
        acts, last = taken @ self.acts, taken @ self.last_acts
        values.update({f"act_{name}": acts[:, i] / turns for i, name in enumerate(ACTS)})
        values.update({f"last_act_{name}": last[:, i] / picks.shape[1] for i, name in enumerate(ACTS)})
        ended = taken @ self.endings
        with np.errstate(invalid="ignore", divide="ignore"):
            values.update({f"ending_{name}": ended[:, i] / ended.sum(axis=1) for i, name in enumerate(ENDINGS)})
        return values


_ACT_INDEX = {act: i for i, act in enumerate(ACTS)}
# An act bigram: from the start of a session or an act, to an act or the end of the session.
START, END = "start", "end"
BIGRAMS = tuple((first, then) for first in (START, *ACTS) for then in (*ACTS, END))


def _blocks(resamples: int, width: int) -> Iterable[int]:
    """Row counts of successive blocks of a (resamples, width) matrix of draws, each of at most
    BOOTSTRAP_BLOCK entries (at least one row)."""
    rows = max(1, BOOTSTRAP_BLOCK // max(width, 1))
    for start in range(0, resamples, rows):
        yield min(rows, resamples - start)


def _bigram_counts(acts: list[int]) -> np.ndarray:
    """The act bigrams of one session (acts as indices into ACTS) as counts over BIGRAMS: start -> first
    act, each act -> the next, last act -> end."""
    counts = np.zeros(len(BIGRAMS))
    steps = [-1, *acts, len(ACTS)]  # start is row 0 of (START, *ACTS); end is the last of (*ACTS, END)
    for first, then in zip(steps, steps[1:]):
        counts[(first + 1) * (len(ACTS) + 1) + then] += 1
    return counts


def act_bigrams(sessions: list[list[str]]) -> dict[tuple[str, str], int]:
    """The act bigrams of sessions (each a list of acts, in order), counted: (start, first act), each
    pair of consecutive acts, (last act, end)."""
    counts = sum(_bigram_counts([_ACT_INDEX[a] for a in acts]) for acts in sessions)
    return {bigram: int(n) for bigram, n in zip(BIGRAMS, np.atleast_1d(counts)) if n}


def js_distance(p, q) -> np.ndarray | float:
    """The Jensen-Shannon distance, base 2, between two distributions given as counts (or weights) along
    the last axis: the square root of the mean of each one's Kullback-Leibler divergence from their mean.
    0 for the same distribution, 1 for two without a value in common; row by row for matrices."""
    p, q = np.asarray(p, float), np.asarray(q, float)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = p / p.sum(axis=-1, keepdims=True)
        q = q / q.sum(axis=-1, keepdims=True)
        mean = (p + q) / 2
        divergence = (
            np.where(p > 0, p * np.log2(p / mean), 0).sum(axis=-1)
            + np.where(q > 0, q * np.log2(q / mean), 0).sum(axis=-1)
        ) / 2
    distance = np.sqrt(np.clip(divergence, 0.0, 1.0))
    return float(distance) if distance.ndim == 0 else distance


def _bigram_distance(
    simulated: "_Sessions", real: "_Sessions", resamples: int, seed: int
) -> tuple[float, float, float]:
    """The Jensen-Shannon distance between both sides' act-bigram distributions (pooled over sessions) and
    its 95% percentile bootstrap CI, resampling each side's sessions as `_compare` does (the same draws, a
    block at a time); NaN without resamples or with fewer than MIN_SESSIONS sessions on a side."""
    observed = js_distance(simulated.bigrams.sum(axis=0), real.bigrams.sum(axis=0))
    if not resamples or min(len(simulated.turns), len(real.turns)) < MIN_SESSIONS:
        return observed, float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    pooled = []
    for side in (simulated, real):
        sessions = len(side.turns)
        blocks = [
            draw_counts(rng.integers(sessions, size=(rows, sessions)), sessions).astype(float) @ side.bigrams
            for rows in _blocks(resamples, max(sessions, len(BIGRAMS)))
        ]
        pooled.append(np.concatenate(blocks))
    low, high = np.percentile(js_distance(*pooled), [2.5, 97.5])
    return observed, float(low), float(high)


def act_bigram_distance(
    simulated: UserTurns, real: UserTurns, act: Callable[[str], str], resamples: int = 1000, seed: int = 0
) -> dict:
    """How differently simulated and real sessions flow: the Jensen-Shannon distance (base 2) between the
    act-bigram distributions of both sides' sessions (`act`: text -> one of ACTS), with its 95% bootstrap
    CI over sessions (both sides resampled, seeded with `seed`)."""
    found = _bigram_distance(_Sessions.of(simulated, act=act), _Sessions.of(real, act=act), resamples, seed)
    return dict(zip(("distance", "ci_low", "ci_high"), found))


def _median(histograms: np.ndarray) -> np.ndarray:
    """The median of each row's values, given as counts of 0, 1, 2, ... (the mean of the two middle
    values for an even count, as numpy's median)."""
    cumulative = histograms.cumsum(axis=1)
    total = cumulative[:, -1]
    lower = np.argmax(cumulative > ((total - 1) // 2)[:, None], axis=1)
    upper = np.argmax(cumulative > (total // 2)[:, None], axis=1)
    return (lower + upper) / 2


def compare_statistics(
    simulated: UserTurns,
    real: UserTurns,
    resamples: int = 1000,
    seed: int = 0,
    names_catalog: Callable[[str], bool] | None = None,
    act: Callable[[str], str] | None = None,
) -> pd.DataFrame:
    """Per statistic: the simulated and the real value, their difference (simulated - real), and its 95%
    percentile bootstrap CI, resampling each side's sessions (NaN with fewer than MIN_SESSIONS sessions on
    a side). Where a side has turns over MAX_TURN_WORDS words, a further row `long_turns` counts them on
    each side (`simulated`, `real`; each counts as MAX_TURN_WORDS in `words`). With `names_catalog`
    (text -> bool), also the share of turns naming a film or value of the catalog; with `act` (text -> one
    of ACTS), also how sessions flow: the share of turns of each act (`act_<act>`), the share of sessions
    whose last turn is of each act (`last_act_<act>`) and, of the sessions whose record says how they ended,
    the share that ended each way (`ending_<reason>`, NaN for a side without such records)."""
    return _compare(
        _Sessions.of(simulated, names_catalog, act), _Sessions.of(real, names_catalog, act), resamples, seed
    )


def _compare(simulated: "_Sessions", real: "_Sessions", resamples: int, seed: int) -> pd.DataFrame:
    """compare_statistics on both sides' per-session sums (the real side's are built once for every user)."""
    sides = {"simulated": simulated, "real": real}
    observed = {side: data.values(np.arange(len(data.turns))[None, :]) for side, data in sides.items()}
    drawn = None
    if resamples and min(len(data.turns) for data in sides.values()) >= MIN_SESSIONS:
        rng = np.random.default_rng(seed)  # the simulated side's draws, then the real side's
        drawn = {side: data.bootstrap(rng, resamples) for side, data in sides.items()}
    rows = []
    for name in observed["simulated"]:
        sim, rea = float(observed["simulated"][name][0]), float(observed["real"][name][0])
        low, high = np.nan, np.nan
        if drawn is not None:
            boot = drawn["simulated"][name] - drawn["real"][name]
            if not np.isnan(boot).all():
                low, high = np.percentile(boot, [2.5, 97.5])
        rows.append(
            {
                "statistic": name,
                "simulated": sim,
                "real": rea,
                "difference": sim - rea,
                "ci_low": float(low),
                "ci_high": float(high),
            }
        )
    if simulated.long_turns or real.long_turns:
        rows.append({"statistic": "long_turns", "simulated": simulated.long_turns, "real": real.long_turns})
    return pd.DataFrame(rows)


def _features(kind: str, texts: list[str]):
    from sklearn.feature_extraction.text import TfidfVectorizer  # scikit-learn: seconds to load, for this rule only

    if kind == "statistics":
        values = turn_statistics(texts)
        return values.to_numpy(float), list(values.columns)
    if kind == "word":
        vectorizer = TfidfVectorizer(analyzer="word", ngram_range=(1, 2), lowercase=True, min_df=1)
    elif kind == "char":
        vectorizer = TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 4), lowercase=True, min_df=1)
    else:
        raise ValueError(f"unknown discriminator features {kind!r}; known: word, char, statistics")
    matrix = vectorizer.fit_transform(texts)
    return matrix, list(vectorizer.get_feature_names_out())


def _placements(labels: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """DeLong's placement values: per positive, the share of negatives it outscores (ties count half);
    per negative, the share of positives that outscore it."""
    from scipy.stats import rankdata  # scipy.stats: seconds to load, for this rule only

    positive, negative = scores[labels == 1], scores[labels == 0]
    both = rankdata(np.concatenate([positive, negative]))
    over_negatives = (both[: len(positive)] - rankdata(positive)) / len(negative)
    under_positives = 1 - (both[len(positive) :] - rankdata(negative)) / len(positive)
    return over_negatives, under_positives


def _auc(labels: np.ndarray, scores: np.ndarray) -> float:
    return float(_placements(labels, scores)[0].mean())


def _delong_interval(labels: np.ndarray, scores: np.ndarray) -> tuple[float, float]:
    """The AUC's 95% CI from DeLong's variance (normal approximation), kept within [0, 1]."""
    over, under = _placements(labels, scores)
    spread = 1.959964 * np.sqrt(over.var(ddof=1) / len(over) + under.var(ddof=1) / len(under))
    auc = over.mean()
    return float(max(0.0, auc - spread)), float(min(1.0, auc + spread))


def discriminator(simulated: list[str], real: list[str], kind: str = "word", folds: int = 5, seed: int = 0) -> dict:
    """How well a logistic regression on `kind` features tells simulated turns (label 1) from real ones:
    the out-of-fold ROC AUC over `folds` stratified folds (shuffled with `seed`), its 95% CI from DeLong's
    variance of the out-of-fold scores, and the features that give each side away most (largest weights
    of a fit on all turns)."""
    # scikit-learn: seconds to load, paid only by the rule that discriminates
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_predict
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    texts = list(simulated) + list(real)
    labels = np.array([1] * len(simulated) + [0] * len(real))
    if min(len(simulated), len(real)) < folds:
        raise ValueError(f"the discriminator needs at least {folds} turns on each side")
    features, names = _features(kind, texts)

    def model():
        classifier = LogisticRegression(max_iter=1000, solver="liblinear")
        return make_pipeline(StandardScaler(), classifier) if kind == "statistics" else classifier

    split = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    scores = cross_val_predict(model(), features, labels, cv=split, method="decision_function")
    auc = _auc(labels, scores)
    low, high = _delong_interval(labels, scores)
    fitted = model().fit(features, labels)
    weights = (fitted[-1] if kind == "statistics" else fitted).coef_[0]
    order = np.argsort(weights)
    return {
        "features": kind,
        "auc": auc,
        "auc_ci_low": float(low),
        "auc_ci_high": float(high),
        "simulated_tells": [names[i] for i in order[::-1][:10] if weights[i] > 0],
        "real_tells": [names[i] for i in order[:10] if weights[i] < 0],
    }


DISCRIMINATORS = ("word", "char", "statistics")
# The discriminators that also run on content-blind text (`content_blind`): measures `auc_<kind>_blind`.
BLIND_DISCRIMINATORS = ("word", "char")
_SLOT = re.compile(r"\{(\w+)\}")


def equal_samples(simulated: int, real: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The turns each side shows a discriminator: all of the smaller side and as many of the larger one,
    drawn without replacement (seeded), in order. A discriminator trained on ten times more turns of one
    side learns that side's every repeat; at equal numbers a user is measured as the floor of real users
    is, and how much it repeats itself is a statistic of its own (`distinct_share`)."""
    n = min(simulated, real)
    rng = np.random.default_rng(seed)

    def pick(size: int) -> np.ndarray:
        return np.arange(size) if size == n else np.sort(rng.choice(size, size=n, replace=False))

    return pick(simulated), pick(real)


def distinct_share(texts: list[str]) -> float:
    """The share of turns no other turn of the list says word for word (case and spacing aside): people
    seldom repeat one another at length; a template set does."""
    said = Counter(" ".join(text.lower().split()) for text in texts)
    return sum(1 for text in texts if said[" ".join(text.lower().split())] == 1) / len(texts) if texts else np.nan


def content_blind(text: str, reading: TurnReading) -> str:
    """The turn with every catalog value and title replaced by one word naming its slot type ("{genre}"
    becomes "slotgenre", "{title}" "slottitle"): what is left is how the user talks, not what about. The
    template of `reading` (crseval.language.user_acts.read_turn); a turn that holds the slot marks itself
    cannot be read that way and stays as it is."""
    if "{" in text or "}" in text:
        return text
    return _SLOT.sub(lambda slot: f"slot{slot.group(1)}", reading.template)


def realism_table(
    users: dict[str, UserTurns],
    systems: dict[tuple[str, str], UserTurns],
    real: UserTurns,
    folds: int = 5,
    resamples: int = 1000,
    seed: int = 0,
    names_catalog: Callable[[str], bool] | None = None,
    read: Callable[[str], TurnReading] | None = None,
    floor: UserTurns | None = None,
) -> pd.DataFrame:
    """Every user (a profile) against the real users: its statistics and the discriminators' AUCs
    (`system` "all"), and the statistics of the user as each system met it. One row per measure:
    `simulated`, `real`, `difference` and its CI for a statistic; the AUC and its CI (`simulated`,
    `ci_low`, `ci_high`) and the n-grams that give each side away for a discriminator. `names_catalog`
    (text -> bool) adds the share of turns naming the catalog; it is asked once per distinct text.

    `read` (text -> TurnReading, crseval.language.user_acts.read_turn with the catalog's matcher; asked
    once per distinct text) adds the other two views: the word and character discriminators on
    content-blind text (`auc_word_blind`, `auc_char_blind`), and how sessions flow: the statistics
    `act_<act>`, `last_act_<act>` and `ending_<reason>` (compare_statistics) and, per user, the
    Jensen-Shannon distance between the act-bigram distributions (`act_bigram_js`, in `simulated`, with
    its bootstrap CI). `floor`, real users of another part of the reference, is measured as a user (the
    FLOOR row: what real users score against real users). Where either side has turns over MAX_TURN_WORDS
    words, `long_turns` counts them (`simulated`, `real`). A CI over sessions is NaN where a side has fewer
    than MIN_SESSIONS sessions."""
    rows = []
    names = lru_cache(maxsize=None)(names_catalog) if names_catalog is not None else None
    reading = lru_cache(maxsize=None)(read) if read is not None else None

    def act(text: str) -> str:
        return reading(text).act

    def blind(texts: list[str]) -> list[str]:
        return [content_blind(text, reading(text)) for text in texts]

    flow = act if reading is not None else None
    real_sessions = _Sessions.of(real, names, flow)
    real_blind = blind(real.texts) if reading is not None else None

    def statistics(user: str, system: str, turns: UserTurns) -> "_Sessions":
        sessions = _Sessions.of(turns, names, flow)
        compared = _compare(sessions, real_sessions, resamples, seed)
        for row in compared.itertuples(index=False):
            rows.append({"user": user, "system": system, "measure": row.statistic, **row._asdict()})
        return sessions

    def discriminate(user: str, measure: str, kind: str, simulated: list[str], real_texts: list[str]) -> None:
        found = discriminator(simulated, real_texts, kind, folds, seed)
        rows.append(
            {
                "user": user,
                "system": "all",
                "measure": measure,
                "simulated": found["auc"],
                "ci_low": found["auc_ci_low"],
                "ci_high": found["auc_ci_high"],
                "simulated_tells": _tells(found["simulated_tells"]),
                "real_tells": _tells(found["real_tells"]),
            }
        )

    for user, turns in {**users, **({FLOOR: floor} if floor is not None else {})}.items():
        sessions = statistics(user, "all", turns)
        picked, real_picked = equal_samples(len(turns.texts), len(real.texts), seed)
        simulated_texts = [turns.texts[i] for i in picked]
        real_texts = [real.texts[i] for i in real_picked]
        distinct, real_distinct = distinct_share(simulated_texts), distinct_share(real_texts)
        rows.append(
            {
                "user": user,
                "system": "all",
                "measure": "distinct_turns",
                "simulated": distinct,
                "real": real_distinct,
                "difference": distinct - real_distinct,
            }
        )
        for kind in DISCRIMINATORS:
            discriminate(user, f"auc_{kind}", kind, simulated_texts, real_texts)
        if reading is None:
            continue
        for kind in BLIND_DISCRIMINATORS:
            discriminate(user, f"auc_{kind}_blind", kind, blind(simulated_texts), [real_blind[i] for i in real_picked])
        distance, low, high = _bigram_distance(sessions, real_sessions, resamples, seed)
        rows.append(
            {
                "user": user,
                "system": "all",
                "measure": "act_bigram_js",
                "simulated": distance,
                "ci_low": low,
                "ci_high": high,
            }
        )
    for (user, system), turns in systems.items():
        statistics(user, system, turns)
    columns = ["user", "system", "measure", "simulated", "real", "difference", "ci_low", "ci_high"]
    table = pd.DataFrame(rows).drop(columns="statistic", errors="ignore")
    return table.reindex(columns=[*columns, "simulated_tells", "real_tells"])


def _tells(ngrams: list[str]) -> str:
    """N-grams as a table cell: each in backticks, a space shown as "·" (character n-grams begin and end
    with one)."""
    return ", ".join(f"`{ngram.replace(' ', '·')}`" for ngram in ngrams)


def _view(measure: str) -> str:
    """Which view a measure belongs to: "words" (the statistics and discriminators of the turns as said),
    "style" (the discriminators on content-blind text) or "flow" (acts, bigrams, endings)."""
    if measure.startswith("auc_") and measure.endswith("_blind"):
        return "style"
    if measure.startswith(("act_", "last_act_", "ending_")):
        return "flow"
    return "words"


# The overview's columns: measure -> heading.
OVERVIEW = {
    "words": "median words",
    "question": "question share",
    "distinct_turns": "distinct turns",
    "turns_per_session": "turns per session",
    "auc_word": "AUC word",
    "auc_char": "AUC char",
    "auc_statistics": "AUC statistics",
    "auc_word_blind": "AUC word, content-blind",
    "auc_char_blind": "AUC char, content-blind",
    "act_bigram_js": "act bigrams JS distance",
}


def realism_markdown(table: pd.DataFrame, reference: str, real: UserTurns, split: Reference | None = None) -> str:
    """The readable report: an overview of every user, then per user its three views: words (its
    statistics beside the real users' and the discriminators), style apart from content (the
    discriminators on content-blind text) and flow (acts, act bigrams, how sessions end). `split` (from
    `load_reference`) says which dialogues the real side is, held out from the learned voice or not."""

    def fmt(x) -> str:
        return "n/a" if x != x else f"{x:.2f}"

    def with_ci(r) -> str:
        return f"{fmt(r.simulated)} [{fmt(r.ci_low)}, {fmt(r.ci_high)}]"

    def statistics_table(rows: pd.DataFrame, heading: str, user: str) -> list[str]:
        side = "the voice's part" if user == FLOOR else "simulated"
        lines = ["", f"| {heading} | {side} | real | difference [95% CI] |", "|---|---|---|---|"]
        return lines + [
            f"| {r.measure} | {fmt(r.simulated)} | {fmt(r.real)} | "
            f"{fmt(r.difference)} [{fmt(r.ci_low)}, {fmt(r.ci_high)}] |"
            for r in rows.itertuples()
            if r.measure != "long_turns"
        ]

    def long_turns(rows: pd.DataFrame, user: str) -> list[str]:
        over = rows[rows["measure"] == "long_turns"]
        if over.empty:
            return []
        side = "the voice's part's" if user == FLOOR else "this user's"
        return [
            "",
            f"{over['simulated'].iloc[0]:,.0f} of {side} turns and {over['real'].iloc[0]:,.0f} of the real users' "
            f"are over {MAX_TURN_WORDS:,} words: each counts as {MAX_TURN_WORDS:,} in the median words per turn "
            "(which moves only if half a side's turns are over it).",
        ]

    def discriminator_table(rows: pd.DataFrame) -> list[str]:
        lines = ["", "| discriminator | AUC [95% CI] | gives the simulated user away | gives real users away |"]
        lines += ["|---|---|---|---|"]
        return lines + [
            f"| {r.measure.removeprefix('auc_').removesuffix('_blind')} | {with_ci(r)} | "
            f"{r.simulated_tells} | {r.real_tells} |"
            for r in rows.itertuples()
        ]

    split = split or Reference(real)
    not_held_out = " (not held out)" if split.shared else ""
    sessions = len(set(real.sessions))
    lines = [f"# How far is the simulated user from real users?{not_held_out}", ""]
    if split.shared:
        lines += [
            f"**Not held out**: {split.shared} of the reference's {sessions} dialogues are also in the "
            f"learned voice's part ({split.voice_part}): the voice learned from them, so a user that speaks "
            "with it is measured partly against its own source. Name the voice's corpus as the reference to "
            "measure against the dialogues it did not learn from.",
            "",
        ]
    held_out = f": {split.held_out}" if split.held_out else ""
    lines += [
        f"Reference: {len(real.texts)} user turns of {sessions} real dialogues ({reference}){held_out}. "
        "Differences are "
        "simulated minus real, with a 95% bootstrap CI over sessions (the CIs need at least "
        f"{MIN_SESSIONS} sessions on each side, one session resampled being always itself: n/a with fewer). "
        "Shares are of user turns; `takes`, "
        "`turns_down` and `asks_about` (a film offered) are read by the same rules on both sides, "
        "`unknown_word` is a word no English word list holds (a typo, mostly), `word_variety` is Guiraud's "
        "index per session. A user's row counts each simulated person once, as the corpus holds each "
        "person's dialogue once: of the sessions one seed had with every system (and in every trial) it keeps "
        "one, a different system for different people; the rows per system count all of theirs. "
        "A discriminator's AUC is how well a "
        "logistic regression tells a simulated turn from a real one, cross-validated (0.5: indistinguishable, "
        "1.0: always told apart); its tells are the n-grams that give each side away most. Each discriminator "
        "sees as many turns of a user as there are real turns (drawn without replacement, seeded), so every "
        "user is measured as the floor is; `distinct_turns` is the share of those turns that no other turn of "
        "the same side says word for word (a user that repeats itself shows it there, not hidden in the AUC).",
    ]
    if sessions < MIN_SESSIONS:
        lines += [
            "",
            f"**One real dialogue**: a CI over sessions needs at least {MIN_SESSIONS} sessions on each side, so "
            "no difference and no act-bigram distance has one here (n/a); each user is compared with one "
            "person's dialogue.",
        ]
    if split.floor is not None:
        floor_sessions = len(set(split.floor.sessions))
        lines += [
            "",
            f"`{FLOOR}` is the part the voice learned from ({len(split.floor.texts)} user turns of "
            f"{floor_sessions} dialogues), measured as a user against the held-out dialogues the same way: what "
            "real users score against other real users, the floor beside every simulated user.",
        ]
    if split.same_users or split.echoed:
        lines += [
            "",
            f"The parts split dialogues, not users: {split.same_users} of the held-out dialogues are by a user "
            f"who also speaks in the voice's part, and {split.echoed} say word for word what a dialogue of the "
            "voice's part says.",
        ]
    overall = table[table["system"] == "all"]
    measures = set(overall["measure"])
    if measures & {"auc_word_blind", "act_bigram_js"}:
        lines += [
            "",
            "Three views per user. **Words**: the statistics and the discriminators of the turns as said. "
            "**Style apart from content**: the word and character discriminators on content-blind text, every "
            "catalog value and title replaced by a word naming its type (`slotgenre`, `slottitle`) on both sides: "
            "how the user talks, not what about. **Flow**: the share of turns of each act (the first that "
            "applies of take, turn_down, ask_about, request, small_talk, ask, other), the Jensen-Shannon "
            "distance between the distributions of act bigrams within a session (a start and an end marker "
            "included; base 2, 0: the same, 1: nothing in common) with a 95% bootstrap CI over sessions (two "
            "samples of the same users are some distance apart, resampled ones further, so the CI can lie above "
            "the distance: read it against the floor of real users against real users), turns per session, and "
            "how sessions end: the act of the last user turn the system answered "
            "(`last_act_<act>`, a share of sessions) and, for simulated sessions, whether the user left "
            "(`ending_abandoned`) or the turn limit ended it (`ending_turn_limit`).",
        ]
    shown = [m for m in OVERVIEW if m in measures]
    first = overall.drop_duplicates("measure").set_index("measure")
    lines += ["", f"## All users{not_held_out}", ""]
    lines += ["| user | " + " | ".join(OVERVIEW[m] for m in shown) + " |", "|---" * (len(shown) + 1) + "|"]
    lines += ["| real users | " + " | ".join(fmt(first["real"].get(m, np.nan)) for m in shown) + " |"]
    users = list(dict.fromkeys(overall["user"]))
    if FLOOR in users:
        users = [FLOOR] + [user for user in users if user != FLOOR]
    cells = {
        (r.user, r.measure): (with_ci(r) if r.measure == "act_bigram_js" else fmt(r.simulated))
        for r in overall.itertuples()
    }
    lines += [f"| {user} | " + " | ".join(cells.get((user, m), "n/a") for m in shown) + " |" for user in users]
    for user, own in overall.groupby("user", sort=False):
        views = own["measure"].map(_view)
        words, style, flow = own[views == "words"], own[views == "style"], own[views == "flow"]
        auc = words["measure"].str.startswith("auc_")
        lines += ["", f"## User `{user}`", "", "### Words"]
        lines += statistics_table(words[~auc], "statistic", user)
        lines += long_turns(words, user)
        lines += discriminator_table(words[auc])
        if not style.empty:
            lines += ["", "### Style apart from content"]
            lines += discriminator_table(style)
        if not flow.empty:
            shares = flow[flow["measure"].str.startswith("act_") & (flow["measure"] != "act_bigram_js")]
            lines += ["", "### Flow"]
            lines += statistics_table(pd.concat([shares, words[words["measure"] == "turns_per_session"]]), "act", user)
            for r in flow[flow["measure"] == "act_bigram_js"].itertuples():
                lines += ["", f"Act bigrams, Jensen-Shannon distance to the real users' [95% CI]: {with_ci(r)}."]
            ends = flow[flow["measure"].str.startswith(("last_act_", "ending_"))]
            lines += statistics_table(ends[ends[["simulated", "real"]].notna().any(axis=1)], "how sessions end", user)
        lines += _by_system(table[(table["user"] == user) & (table["system"] != "all")], fmt)
    return "\n".join(lines) + "\n"


BY_SYSTEM = ("words", "question", "turns_down", "asks_about", "turns_per_session")


def _by_system(rows: pd.DataFrame, fmt) -> list[str]:
    """The user as each system met it: a few statistics per system (simulated value; all of them, with
    CIs, are in the CSV). A system that fails the user changes how the user talks."""
    if rows.empty:
        return []
    wide = rows.pivot_table(index="system", columns="measure", values="simulated", sort=False)
    shown = [m for m in BY_SYSTEM if m in wide]
    lines = ["", "As each system met it (the real users: the first table's `real` column):", ""]
    lines += ["| system | " + " | ".join(shown) + " |", "|---" * (len(shown) + 1) + "|"]
    lines += [f"| {system} | " + " | ".join(fmt(row[m]) for m in shown) + " |" for system, row in wide.iterrows()]
    return lines
