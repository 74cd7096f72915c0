"""Legacy Context Adaptation Score (CAS), the thesis's metric, in two modes.

`thesis` follows the prototype exactly (see docs/metrics.md, "Legacy CAS"), so that published
numbers can be reproduced; `fixed` (the default) repairs three of its defects:
- a dialogue in which no shift was recovered gets no delay score (NaN), where the prototype
  gave delay 0.0, which the normalisation turns into the best possible delay;
- a dialogue without any detected shift gets NaN recovery metrics (not applicable), where the
  prototype gave 0.0 rate, 0.0 delay and 0.0 interference;
- the scan for recovery and leakage after a shift stops at the next shift, where the prototype
  scanned to the end of the dialogue.
The aggregate CAS is the weighted mean of the components that exist, re-normalised over their
weights.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from crseval.core.columns import Column
from crseval.core.config_checks import _at, _is_number, _numbers, _show, key_path, schema_defaults
from crseval.metrics.basic import jaccard
from crseval.metrics.expectations import ADAPTATION, ECHO, ECHO_REASON, Expectation, column_named, prompt_echo
from crseval.metrics.family import FamilyKind, no_figure_params, no_figures

NAN = math.nan
COMPONENTS = ("recovery", "delay", "interference", "cross_coherence", "context_retention")

# The thesis table uses these names too.
SESSION_COLUMNS = tuple(
    Column(*spec, thesis_name=spec[0])
    for spec in (
        ("cross_coherence", "cross-coherence (legacy)", "0-1", True),
        ("context_retention", "context retention (legacy)", "0-1", True),
        ("topic_recovery_rate", "topic recovery rate (legacy)", "0-1", True),
        ("avg_recovery_delay", "recovery delay (legacy, turns)", "turns", False),
        ("topic_interference", "topic interference (legacy)", "0-1", False),
        ("context_adaptation_score", "CAS (legacy)", "0-1", True),
    )
) + (Column("cas_shifts", "shifts detected (legacy)", "count"),)
TURN_COLUMNS = (
    Column("cas_sim", "similarity of the reply to the user turn (legacy)", "0-1", True),
    Column("cas_shift", "the legacy CAS detects a shift here", "true/false", dtype="bool", metric=False),
)


_DEFAULTS = schema_defaults("scoring", "cas")


@dataclass(frozen=True)
class CasSettings:
    """The `scoring.cas` section of the config; defaults from the schema."""

    mode: str = _DEFAULTS["mode"]
    sim_topic_shift: float = _DEFAULTS["sim_topic_shift"]
    topic_jaccard_shift: float = _DEFAULTS["topic_jaccard_shift"]
    alignment_threshold: float = _DEFAULTS["alignment_threshold"]
    jaccard_fallback: float = _DEFAULTS["jaccard_fallback"]
    interference_cap: int = _DEFAULTS["interference_cap"]
    delay_min: float = float(_DEFAULTS["delay_range"][0])
    delay_max: float = float(_DEFAULTS["delay_range"][1])
    weights: dict = field(default_factory=lambda: dict(_DEFAULTS["weights"]))

    @classmethod
    def from_config(cls, section: dict) -> "CasSettings":
        return cls(
            mode=section["mode"],
            sim_topic_shift=section["sim_topic_shift"],
            topic_jaccard_shift=section["topic_jaccard_shift"],
            alignment_threshold=section["alignment_threshold"],
            jaccard_fallback=section["jaccard_fallback"],
            interference_cap=section["interference_cap"],
            delay_min=section["delay_range"][0],
            delay_max=section["delay_range"][1],
            weights=dict(section["weights"]),
        )

    @property
    def thesis(self) -> bool:
        return self.mode == "thesis"


class Similarity(Protocol):
    def __call__(self, a: str, b: str) -> float: ...


def clip01(value: float) -> float:
    return min(1.0, max(0.0, value))


def _union(lists: list[list[str]]) -> list[str]:
    """Union of topic lists in order of first appearance."""
    seen: dict[str, None] = {}
    for words in lists:
        for word in words:
            seen.setdefault(word, None)
    return list(seen)


def detect_shifts(user_texts: list[str], user_topics: list[list[str]], sim: Similarity, s: CasSettings) -> list[int]:
    """User turns (0-based) that start a new segment: low similarity to the previous user turn,
    or low Jaccard between their topic sets (two empty sets have Jaccard 0: a shift)."""
    shifts = []
    for j in range(1, len(user_texts)):
        if (
            sim(user_texts[j - 1], user_texts[j]) < s.sim_topic_shift
            or jaccard(set(user_topics[j - 1]), set(user_topics[j])) < s.topic_jaccard_shift
        ):
            shifts.append(j)
    return shifts


class _Overlaps:
    """Overlap of system turn k's topics with segment j's topics: Jaccard of the topic sets, or the
    similarity of the joined topic words below the fallback. Each (turn, segment) pair is computed
    once: a segment is the new topic of one shift and the old topic of the next, and the thesis
    mode scans every later turn for each shift."""

    def __init__(self, system_topics: list[list[str]], segments: list[list[str]], sim: Similarity, s: CasSettings):
        self.system_sets, self.system_words = [set(t) for t in system_topics], [" ".join(t) for t in system_topics]
        self.segment_sets, self.segment_words = [set(t) for t in segments], [" ".join(t) for t in segments]
        self.sim, self.fallback = sim, s.jaccard_fallback
        self.values: list[list[float | None]] = [[None] * len(system_topics) for _ in segments]

    def __call__(self, turn: int, segment: int) -> float:
        known = self.values[segment]
        value = known[turn]
        if value is None:
            value = jaccard(self.system_sets[turn], self.segment_sets[segment])
            if value < self.fallback:
                value = self.sim(self.system_words[turn], self.segment_words[segment])
            known[turn] = value
        return value


def score_dialogue(
    user_texts: list[str],
    system_texts: list[str],
    user_topics: list[list[str]],
    system_topics: list[list[str]],
    sim: Similarity,
    s: CasSettings,
) -> tuple[dict, list[dict]]:
    """Session metrics and per-turn values of one dialogue of USER/SYSTEM pairs."""
    pairs = len(user_texts)
    turn_sims = [sim(u, r) for u, r in zip(user_texts, system_texts)]
    retention = [sim(system_texts[i - 1], system_texts[i]) for i in range(1, pairs)]
    cross_coherence = sum(turn_sims) / pairs if pairs else 0.0
    context_retention = sum(retention) / len(retention) if retention else 0.0

    shifts = detect_shifts(user_texts, user_topics, sim, s) if pairs else []
    bounds = [0, *shifts, pairs]
    segments = [_union(user_topics[a:b]) for a, b in zip(bounds, bounds[1:])]
    overlap = _Overlaps(system_topics, segments, sim, s)
    recovered_delays, interference = [], []
    for number, start in enumerate(shifts, start=1):
        stop = pairs if s.thesis else bounds[number + 1]
        seen = hits = 0
        delay = None
        for k in range(start, stop):
            seen += 1
            if overlap(k, number - 1) >= s.alignment_threshold:
                hits += 1
            if overlap(k, number) >= s.alignment_threshold:
                delay = seen
                break
        denominator = delay if delay is not None else min(seen, s.interference_cap)
        interference.append(hits / denominator if denominator else 0.0)
        if delay is not None:
            recovered_delays.append(delay)

    if shifts:
        rate = len(recovered_delays) / len(shifts)
        delay_mean = sum(recovered_delays) / len(recovered_delays) if recovered_delays else (0.0 if s.thesis else NAN)
        interference_mean = sum(interference) / len(interference)
    else:
        rate = delay_mean = interference_mean = 0.0 if s.thesis else NAN

    span = s.delay_max - s.delay_min
    values = {
        "recovery": rate,
        "delay": NAN if math.isnan(delay_mean) else 1.0 - clip01((delay_mean - s.delay_min) / span),
        "interference": NAN if math.isnan(interference_mean) else 1.0 - clip01(interference_mean),
        "cross_coherence": cross_coherence,
        "context_retention": context_retention,
    }
    present = [k for k in COMPONENTS if not math.isnan(values[k]) and s.weights.get(k, 0) > 0]
    total = sum(s.weights[k] for k in present)
    cas = sum(s.weights[k] * values[k] for k in present) / total if total else NAN
    session = {
        "cross_coherence": cross_coherence,
        "context_retention": context_retention,
        "topic_recovery_rate": rate,
        "avg_recovery_delay": delay_mean,
        "topic_interference": interference_mean,
        "context_adaptation_score": cas,
        "cas_shifts": len(shifts),
    }
    shift_set = set(shifts)
    turns = [{"turn": i + 1, "cas_sim": turn_sims[i], "cas_shift": i in shift_set} for i in range(pairs)]
    return session, turns


class CasFamily:
    """The legacy CAS and its components (registered as `cas`): TF-IDF or embedding similarity,
    topic words from LDA, the heuristic extractor or an LLM."""

    name = "cas"
    session_columns = SESSION_COLUMNS
    turn_columns = TURN_COLUMNS

    def __init__(self, context):
        # gensim and the embedding model's libraries load only when the legacy CAS is selected
        from crseval.catalog.topics import TopicModel
        from crseval.metrics.similarity import EmbeddingSimilarity
        from crseval.metrics.topic_words import HeuristicTopics, LdaTopics

        section = context.settings["cas"]
        self.settings = KIND.settings(context.settings)
        self.similarity = (
            context.tfidf() if section["similarity"] == "tfidf" else EmbeddingSimilarity(context.embedder())
        )
        if section["topics"] == "lda":
            self.topics = LdaTopics(TopicModel.load(context.lda_dir))
        elif section["topics"] == "heuristic":
            self.topics = HeuristicTopics(context.index.films["plot"].tolist())
        else:
            self.topics = context.llm_topics(section)

    def score_shard(self, records: list[dict]) -> list[tuple[dict, list[dict]]]:
        from crseval.metrics.similarity import MemoisedSimilarity  # as in __init__: only with this family

        texts = [t[k] for r in records for t in r["turns"] for k in ("user_text", "system_text")]
        similarity = MemoisedSimilarity(self.similarity)
        self.similarity.prepare(texts)
        unique = list(dict.fromkeys(texts))
        topic_of = dict(zip(unique, self.topics(unique)))
        self.similarity.prepare(" ".join(topic_of[t["system_text"]]) for r in records for t in r["turns"])
        scores = []
        for record in records:
            users = [t["user_text"] for t in record["turns"]]
            systems = [t["system_text"] for t in record["turns"]]
            session, turns = score_dialogue(
                users, systems, [topic_of[u] for u in users], [topic_of[s] for s in systems], similarity, self.settings
            )
            scores.append((session, [{"cas_sim": v["cas_sim"], "cas_shift": v["cas_shift"]} for v in turns]))
        return scores


CAS_WEIGHTS = ("scoring", "cas", "weights")
RANGES = (("scoring", "cas", "delay_range"),)  # every [low, high] pair of its settings


def weight_problems(config: Any) -> Iterator[str]:
    """CAS divides by the sum of its weights: with no positive weight it is NaN for every session."""
    weights = _at(config, CAS_WEIGHTS)
    if isinstance(weights, dict) and weights and all(map(_is_number, weights.values())):
        total = math.fsum(weights.values())
        if total <= 0:
            yield (
                f"{key_path(CAS_WEIGHTS)}: they sum to {_show(total)}, but must have a positive sum "
                "(CAS is the mean of its components weighted by them)"
            )


def range_problems(config: Any) -> Iterator[str]:
    """A [low, high] range normalises by high - low: an empty or reversed one divides by 0 or flips."""
    for path in RANGES:
        pair = _numbers(_at(config, path), 2)
        if pair is not None and not pair[0] < pair[1]:
            yield f"{key_path(path)}: {pair} must be strictly increasing (first < second)"


def problems(config: Any) -> Iterator[str]:
    yield from weight_problems(config)
    yield from range_problems(config)


def backends(scoring: dict) -> dict[str, dict]:
    """The LLM that lists topic words with `topics: llm`."""
    section = scoring.get("cas", {})
    return {"scoring.cas": section["llm"]["backend"]} if section.get("topics") == "llm" else {}


def embedding_users(scoring: dict) -> list[str]:
    return ["scoring.cas.similarity"] if scoring.get("cas", {}).get("similarity") == "embedding" else []


def reads_lda(scoring: dict) -> bool:
    """With `topics: lda` its score jobs read the topic model."""
    return scoring.get("cas", {}).get("topics") == "lda"


def scatter_columns(scoring: dict) -> list[str]:
    """TAS is plotted against the legacy CAS."""
    return ["context_adaptation_score"]


# Context retention is the mean similarity of consecutive replies: it never reads the user's turns, so it counts
# how often and how far the replies change, not when; a system k turns late changes as often and as far, and
# under a user whose shifts stay within one field it cannot be told from the oracle (crseval.checks.validity).
# CAS, cross-coherence and the recovery rate hold each reply against its own user turn or a detected shift.
POOLED = ("context_retention",)


def _expect(name: str, order: tuple[str, ...], reason: str, check: str = "adaptation") -> Expectation:
    return Expectation(column_named(SESSION_COLUMNS, name), order, reason, check, pools_foci=name in POOLED)


EXPECTATIONS = (
    _expect("context_adaptation_score", ADAPTATION, "the legacy CAS claims to measure adaptation to topic shifts"),
    _expect(
        "topic_recovery_rate",
        ADAPTATION,
        "the legacy recovery rate claims to measure how often a system follows a detected shift",
    ),
    _expect("cross_coherence", ADAPTATION, "the legacy cross-coherence claims that replies fit the user's turn"),
    _expect(
        "context_retention",
        ADAPTATION,
        "the legacy context retention (similarity of consecutive replies) is weighted into CAS as a merit; "
        "replies that keep the user's current context while following shifts should earn the most, a "
        "system that repeats one topic through every shift should not",
    ),
    _expect("context_adaptation_score", ECHO, ECHO_REASON, "echo"),
    _expect("topic_recovery_rate", ECHO, ECHO_REASON, "echo"),
    _expect("cross_coherence", ECHO, ECHO_REASON, "echo"),
    # the legacy CAS compares the reply's words with the user's, whoever wrote them: not changed for the echo
    prompt_echo(column_named(SESSION_COLUMNS, "context_adaptation_score")),
    prompt_echo(column_named(SESSION_COLUMNS, "cross_coherence")),
)

KIND = FamilyKind(
    name="cas",
    summary="the legacy Context Adaptation Score and its components (the thesis's metric)",
    scorer=CasFamily,
    parse_settings=CasSettings.from_config,
    backends=backends,
    embedding_users=embedding_users,
    reads_lda=reads_lda,
    checks=problems,
    expectations=EXPECTATIONS,
    headline=(
        "cross_coherence",
        "context_retention",
        "topic_recovery_rate",
        "topic_interference",
        "context_adaptation_score",
    ),
    figures=no_figures,
    scatter_columns=scatter_columns,
    distribution_columns=("context_adaptation_score",),
    figure_params=no_figure_params,
)
