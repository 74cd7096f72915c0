"""The measures of the user realism check that compare populations of turns: the statistics of each turn and
session, summed per session so that a bootstrap over sessions is a sum over drawn rows, and how sessions flow
(act bigrams and the Jensen-Shannon distance between them; the acts given the case of the system's reply before
them, `reply_act_distance`, with a bootstrap over people).

A bootstrap CI over sessions needs at least two sessions on each side (`MIN_SESSIONS`): with fewer it is NaN
(n/a in the report). Memory is bounded whatever the input: the bootstrap draws its (resamples, sessions)
indices a block of at most `BOOTSTRAP_BLOCK` at a time, from the same Generator in the same order (the same
draws, the same numbers as all at once); words per turn are counted up to `MAX_TURN_WORDS` (a longer turn
counts as that many and is reported, `long_turns`), so no histogram is wider than that however long a turn is.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pandas as pd
from scipy import sparse

from crseval.checks.realism_turns import UserTurns
from crseval.language.user_acts import ACTS, act_flags
from crseval.replies.cases import REPLY_CASES
from crseval.replies.cases import START as REPLY_START
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

# How a simulated session ended (`ending.reason` of its record, crseval.simulate.sessions.run_session).
ENDINGS = ("abandoned", "turn_limit")


@dataclass(frozen=True)
class SessionSums:
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
    ) -> SessionSums:
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


def bigram_distance_of_sums(
    simulated: SessionSums, real: SessionSums, resamples: int, seed: int
) -> tuple[float, float, float]:
    """The Jensen-Shannon distance between both sides' act-bigram distributions (pooled over sessions) and
    its 95% percentile bootstrap CI, resampling each side's sessions as `compare_sums` does (the same draws, a
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
    found = bigram_distance_of_sums(SessionSums.of(simulated, act=act), SessionSums.of(real, act=act), resamples, seed)
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
    return compare_sums(
        SessionSums.of(simulated, names_catalog, act), SessionSums.of(real, names_catalog, act), resamples, seed
    )


def compare_sums(simulated: SessionSums, real: SessionSums, resamples: int, seed: int) -> pd.DataFrame:
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


# ------------------------------------------------------------------ acts given the system's reply


def reply_act_counts(turns: UserTurns, act: Callable[[str], str], cases: list[str]) -> np.ndarray:
    """(people, cases, ACTS): each person's turns of each act after each case of system reply (`turns.replies`,
    one of `cases`), the people in the order first met."""
    if turns.replies is None:
        raise ValueError(f"{turns.name}: the reply case of each turn was not read (UserTurns.replies)")
    people = pd.factorize(pd.Series(turns.people))[0]
    case_index = {case: i for i, case in enumerate(cases)}
    counts = np.zeros((people.max() + 1, len(cases), len(ACTS)))
    acts = [_ACT_INDEX[act(text)] for text in turns.texts]
    np.add.at(counts, (people, [case_index[case] for case in turns.replies], acts), 1)
    return counts


def reply_distances(simulated: np.ndarray, real: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """From (draws, cases, ACTS) counts of each side: the Jensen-Shannon distance between the sides' act
    distributions in each case (draws, cases; NaN where a side has no turn in it), and overall their mean
    weighted by how often each case comes, the mean of the two sides' shares of turns in it, over the cases
    with turns on both sides (draws; NaN where there are none)."""
    in_simulated, in_real = simulated.sum(axis=-1), real.sum(axis=-1)
    distance = js_distance(simulated, real)
    both = (in_simulated > 0) & (in_real > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        shares = (
            np.where(both, in_simulated, 0) / np.where(both, in_simulated, 0).sum(axis=-1, keepdims=True)
            + np.where(both, in_real, 0) / np.where(both, in_real, 0).sum(axis=-1, keepdims=True)
        ) / 2
        overall = np.where(both, shares * np.nan_to_num(distance), 0).sum(axis=-1)
    return np.where(both, distance, np.nan), np.where(both.any(axis=-1), overall, np.nan)


def reply_act_distance(
    simulated: UserTurns, real: UserTurns, act: Callable[[str], str], resamples: int = 1000, seed: int = 0
) -> dict:
    """How differently the two sides react to the same kind of system reply: per case of reply
    (`UserTurns.replies`) the Jensen-Shannon distance between the distributions of the user's act after it
    (`act`: text -> one of ACTS), and overall their mean weighted by how often each case comes
    (`reply_distances`), each with its 95% percentile bootstrap CI over people (a person's turns drawn
    together, each side from its own Generator seeded with `seed`; NaN with fewer than MIN_SESSIONS people on
    a side, or without resamples). What the systems say differs between a simulation and a corpus; given the
    reply, what the user does should not. Returns `distance`, `ci_low`, `ci_high`, the turns of each side in
    cases both sides have (`simulated_turns`, `real_turns`) and `cases`: one dict per case with the same."""
    cases = _case_order(set(simulated.replies or []) | set(real.replies or []))
    sides = [reply_act_counts(turns, act, cases) for turns in (simulated, real)]
    per_case, overall = reply_distances(*(counts.sum(axis=0, keepdims=True) for counts in sides))
    drawn_case, drawn = np.full((0, len(cases)), np.nan), np.full(0, np.nan)
    if resamples and min(len(counts) for counts in sides) >= MIN_SESSIONS:
        generators = [np.random.default_rng([seed, side]) for side in (1, 0)]
        blocks = []
        for rows in _blocks(resamples, max(len(sides[0]), len(sides[1]), len(cases) * len(ACTS))):
            taken = [
                np.tensordot(draw_counts(rng.integers(len(c), size=(rows, len(c))), len(c)).astype(float), c, 1)
                for c, rng in zip(sides, generators)
            ]
            blocks.append(reply_distances(*taken))
        drawn_case = np.concatenate([block[0] for block in blocks])
        drawn = np.concatenate([block[1] for block in blocks])
    turns = [counts.sum(axis=(0, 2)) for counts in sides]
    both = (turns[0] > 0) & (turns[1] > 0)
    return {
        "distance": float(overall[0]),
        **dict(zip(("ci_low", "ci_high"), _percentiles(drawn))),
        "simulated_turns": int(turns[0][both].sum()),
        "real_turns": int(turns[1][both].sum()),
        "cases": [
            {
                "case": case,
                "distance": float(per_case[0, i]),
                **dict(zip(("ci_low", "ci_high"), _percentiles(drawn_case[:, i]))),
                "simulated_turns": int(turns[0][i]),
                "real_turns": int(turns[1][i]),
            }
            for i, case in enumerate(cases)
        ],
    }


def _case_order(cases: set[str]) -> list[str]:
    """The reply cases in the order of crseval.replies.cases (the start first), any other after, sorted."""
    known = [REPLY_START, *REPLY_CASES]
    return [case for case in known if case in cases] + sorted(cases - set(known))


def _percentiles(drawn: np.ndarray) -> tuple[float, float]:
    """The 2.5th and 97.5th percentiles of the draws that have a value; NaN where none has."""
    drawn = drawn[~np.isnan(drawn)]
    if not len(drawn):
        return float("nan"), float("nan")
    low, high = np.percentile(drawn, [2.5, 97.5])
    return float(low), float(high)
