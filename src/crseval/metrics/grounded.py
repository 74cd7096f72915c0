"""Grounded TAS: catalog concepts in user and system turns, against the simulator's ground truth.

Per turn t (user text U, system text S, concepts E(.) from the catalog matcher):
  CC(t)  = |E(U) & E(S)| / |E(U) | E(S)|                  (0 when both are empty)
  CR(t)  = cosine of TF-IDF concept vectors (tf = mentions, idf = ln((1+N)/(1+df)) + 1 with
           df = films having the concept, N = films)
  I(t)   = max over n in {3, 4} of |G_n(S) & G_n(U)| / |G_n(S)|   (word n-gram sets; 0 if S has
           no n-gram)
  TAS(t) = alpha*CC + beta*CR - gamma*I
TAS on recommended films (`tas_rec`) counts only concepts the films recommended at t carry, so that
words echoed from the user earn nothing: with F(t) the concepts (and, with include_titles, the
titles) of those films, S'(t) = (E(S) | E(U)) & F(t) (what the films carry of what was said or
asked), CC' = Jaccard(E(U), S'), CR' = cosine of the user vector and S' weighted by the same idf
(tf = the reply's mentions, 1 for a concept only the films and the user name), and
TAS_rec(t) = alpha*CC' + beta*CR' - gamma*I; a turn recommending no catalog film scores -gamma*I.
Segments are the simulator's ground-truth segments (split at its shift turns); a segment's CC
and CR use the union of its turns' concepts (summed vectors), its I the mean of its turns'.
A shift at turn s is recovered within window W when CC(s+d) >= tau (Jaccard variant) or
CR(s+d) >= tau (cosine variant) for some d in 0..W-1; its delay is the smallest such d.
Metrics that need ground truth (segments, recovery, missing concepts, tracking accuracy,
recommendation satisfaction) are NaN for sessions that have none (imported logs).
Films a reply names that the catalog does not hold (the turn's `unknown_titles`) are neither
concepts (the matcher reads nothing inside them, their year included) nor hallucinations; the
session counts them, and the share of the films it names that the catalog holds (catalog coverage).
What a reply copies from the system's own prompt earns no credit (`SystemPrompt`): a word of the reply
is copied when it stands in a word 3- or 4-gram the prompt holds too (the rule of I, with the prompt
for the user's text), and a mention of a concept whose words are all copied is the prompt's, not the
reply's. Only the reply's own mentions count as shared with the user: CC = |E(U) & E_own(S)| /
|E(U) | E(S)|, CR's dot product takes the reply's weights from its own mentions (its norm from all),
CR' of TAS on recommended films weighs a concept by the reply's own mentions (1 with none), and a wish
named only in copied words is missing. Everything the reply names still counts as said (the unions,
the norms, hallucinated concepts), so that copying never raises a score. Without a prompt, or when no
concept is copied, every value is what it was without this rule.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from crseval.catalog.index import CatalogIndex
from crseval.core.columns import Column
from crseval.core.config_checks import _at, _is_number, _show, key_path, schema_defaults
from crseval.language.concepts import CONCEPT_FIELDS, ConceptMatcher
from crseval.language.titles import title_key
from crseval.language.tokens import AnalysedText, TextAnalyses, words
from crseval.language.tracker import Constraint
from crseval.llm.prompts import PromptTemplate
from crseval.metrics.basic import cosine_credited, jaccard, jaccard_credited, safe_mean
from crseval.metrics.expectations import (
    ADAPTATION,
    ECHO,
    ECHO_REASON,
    LAGS,
    Expectation,
    column_named,
    prompt_echo,
)
from crseval.metrics.family import FamilyKind, never, no_backends, no_settings
from crseval.simulate.systems.agents import render_prompt

NAN = math.nan

SESSION_COLUMNS = (
    Column("tas", "grounded TAS", "-gamma to alpha + beta", True),
    Column("tas_cc", "TAS: CC (concept Jaccard)", "0-1", True),
    Column("tas_cr", "TAS: CR (concept cosine)", "0-1", True),
    Column("tas_copying", "TAS: copying (I)", "0-1", False),
    Column("tas_rec", "TAS on recommended films", "-gamma to alpha + beta", True),
    Column("hallucinated_concepts", "hallucinated concepts / turn", "concepts per turn", False),
    Column("recommendation_rate", "turns recommending a catalog film", "0-1"),
    Column("repeat_rate", "repeated recommendations", "0-1", False),
    Column("unknown_titles", "films named outside the catalog", "count"),
    Column("catalog_coverage", "films named that the catalog holds", "0-1"),
    # the simulator's segments, shifts and gold constraints: NaN for sessions without them
    Column("tas_segment", "segment TAS", "-gamma to alpha + beta", True, ground_truth=True),
    Column("tas_segment_cc", "segment CC", "0-1", True, ground_truth=True),
    Column("tas_segment_cr", "segment CR", "0-1", True, ground_truth=True),
    Column("segments", "segments", "count", ground_truth=True),
    Column("recovery_rate_jaccard", "recovery rate (Jaccard)", "0-1", True, ground_truth=True),
    Column("recovery_delay_jaccard", "recovery delay (Jaccard, turns)", "turns", False, ground_truth=True),
    Column("recovery_rate_cosine", "recovery rate (cosine)", "0-1", True, ground_truth=True),
    Column("recovery_delay_cosine", "recovery delay (cosine, turns)", "turns", False, ground_truth=True),
    Column("missing_concepts", "missing concepts / turn", "concepts per turn", False, ground_truth=True),
    Column("dst_precision", "tracking precision (DST)", "0-1", True, ground_truth=True),
    Column("dst_recall", "tracking recall (DST)", "0-1", True, ground_truth=True),
    Column("dst_f1", "tracking F1 (DST)", "0-1", True, ground_truth=True),
    Column("dst_joint_accuracy", "tracking joint accuracy (DST)", "0-1", True, ground_truth=True),
    Column("rec_satisfaction", "recommendation satisfaction", "0-1", True, ground_truth=True),
)
TURN_COLUMNS = (
    Column("cc", "CC(t)", "0-1", True),
    Column("cr", "CR(t)", "0-1", True),
    Column("copying", "I(t)", "0-1", False),
    Column("tas", "TAS(t)", "-gamma to alpha + beta", True),
    Column("tas_rec", "TAS on recommended films (t)", "-gamma to alpha + beta", True),
    Column("user_concepts", "concepts in the user turn", "count"),
    Column("system_concepts", "concepts in the reply", "count"),
    Column("recommended", "catalog films recommended", "count"),
    Column("repeated_recommendations", "films recommended again", "count", False),
    Column("unknown_titles", "films named outside the catalog", "count"),
    Column("shift", "the user shifts at this turn", "true/false", ground_truth=True, dtype="bool", metric=False),
    Column("missing_concepts", "missing concepts", "count", False, ground_truth=True),
    Column("hallucinated_concepts", "hallucinated concepts", "count", False),
    Column("dst_tp", "tracked constraints that are gold", "count", ground_truth=True),
    Column("dst_pred", "tracked constraints", "count", ground_truth=True),
    Column("dst_gold", "gold constraints", "count", ground_truth=True),
    Column("dst_joint", "tracked = gold", "0 or 1", True, ground_truth=True),
    Column("rec_satisfaction", "recommendation satisfaction", "0-1", True, ground_truth=True),
)


_DEFAULTS = schema_defaults("scoring", "tas")


@dataclass(frozen=True)
class TasSettings:
    """The `scoring.tas` section of the config; defaults from the schema."""

    alpha: float = _DEFAULTS["alpha"]
    beta: float = _DEFAULTS["beta"]
    gamma: float = _DEFAULTS["gamma"]
    fields: tuple[str, ...] = tuple(_DEFAULTS["fields"])
    include_titles: bool = _DEFAULTS["include_titles"]
    recovery_window: int = _DEFAULTS["recovery_window"]
    recovery_threshold: float = _DEFAULTS["recovery_threshold"]

    @classmethod
    def from_config(cls, section: dict) -> "TasSettings":
        return cls(
            alpha=section["alpha"],
            beta=section["beta"],
            gamma=section["gamma"],
            fields=tuple(section["fields"]),
            include_titles=section["include_titles"],
            recovery_window=section["recovery_window"],
            recovery_threshold=section["recovery_threshold"],
        )


class ConceptSpace:
    """E(x) and the TF-IDF weights of concepts, from the catalog index. Texts are read through
    `texts`, the analyses the scorer shares between families (a fresh set when none is given), so
    that the matcher and the copying measure tokenise each text once."""

    def __init__(
        self, index: CatalogIndex, matcher: ConceptMatcher, settings: TasSettings, texts: TextAnalyses | None = None
    ):
        self.index = index
        self.matcher = matcher
        self.settings = settings
        self.texts = texts if texts is not None else TextAnalyses()
        n_films = len(index.films)
        df = index.concepts.groupby(["field", "value"]).size()
        self.idf = {key: math.log((1 + n_films) / (1 + int(n))) + 1.0 for key, n in df.items()}
        self.title_idf = math.log((1 + n_films) / 2) + 1.0
        self._film_concepts: dict[int, set[tuple[str, str]]] = {}
        self._mentions: dict[str, Counter] = {}
        self._concepts: dict[str, tuple[Counter, frozenset, dict]] = {}
        self._credited: dict[tuple[str, str], tuple[Counter, frozenset, dict]] = {}

    def mentions(self, text: str) -> Counter:
        """Concept -> number of mentions in `text` (memoised: texts repeat across metrics)."""
        if text in self._mentions:
            return self._mentions[text]
        analysed = self.texts(text)
        counts = Counter((m.field, m.value) for m in self.matcher.values(analysed) if m.field in self.settings.fields)
        if self.settings.include_titles:
            counts.update(("title", t) for t in self.matcher.titles(analysed))
        self._mentions[text] = counts
        return counts

    def concepts(self, text: str) -> tuple[Counter, frozenset, dict]:
        """`mentions(text)`, its concepts and their `vector` (memoised as `mentions` is: a text's turns
        read them again; the set and the vector are shared, and no reader changes them)."""
        known = self._concepts.get(text)
        if known is None:
            counts = self.mentions(text)
            known = self._concepts[text] = (counts, frozenset(counts), self.vector(counts))
        return known

    def credited(self, reply: str, prompt: str | None) -> tuple[Counter, frozenset, dict]:
        """`concepts(reply)` counting only the reply's own mentions, not those in words it copies from `prompt`,
        the system's prompt of the turn (module docstring): the same objects as `concepts(reply)` when there is
        no prompt or no concept is copied (memoised by reply and prompt)."""
        if not prompt:
            return self.concepts(reply)
        key = (reply, prompt)
        known = self._credited.get(key)
        if known is None:
            analysed = self.texts(reply)
            copied = copied_words(analysed.words, self.texts(prompt).words)
            known = self.concepts(reply)
            if any(copied):
                counts = self._own_mentions(analysed, [span for span, c in zip(analysed.word_spans, copied) if c])
                if counts != known[0]:
                    known = (counts, frozenset(counts), self.vector(counts))
            self._credited[key] = known
        return known

    def _own_mentions(self, analysed: AnalysedText, copied: list[tuple[int, int]]) -> Counter:
        """`mentions` of the text, leaving out each mention whose words all lie in the `copied` word spans."""

        def own(start: int, end: int) -> bool:
            inside = [span for span in analysed.word_spans if span[0] < end and start < span[1]]
            return not inside or not all(span in copied_set for span in inside)

        copied_set = set(copied)
        counts = Counter(
            (m.field, m.value)
            for m in self.matcher.values(analysed)
            if m.field in self.settings.fields and own(m.start, m.end)
        )
        if self.settings.include_titles:
            references = self.matcher.title_recognizer.recognise(analysed).references
            counts.update(("title", t) for t in dict.fromkeys(r.title for r in references if own(r.start, r.end)))
        return counts

    def vector(self, counts: dict) -> dict:
        return {
            c: n * (self.title_idf if c[0] == "title" else self.idf.get(c, self.title_idf)) for c, n in counts.items()
        }

    def film_concepts(self, title: str) -> set[tuple[str, str]]:
        film_id = self.index.film_id(title)
        if film_id is None:
            return set()
        if film_id not in self._film_concepts:
            self._film_concepts[film_id] = {(f, v) for f in CONCEPT_FIELDS for v in self.index.film_values(film_id, f)}
        return self._film_concepts[film_id]


def copied_words(reply_words: tuple[str, ...] | list[str], source_words: tuple[str, ...] | list[str]) -> list[bool]:
    """Per word of the reply (`words`), whether it stands in a word 3- or 4-gram that `source` holds too: the
    n-grams I counts as copied, here from the system's prompt. (A 4-gram both hold holds 3-grams both hold,
    so the 4-grams add no word; they are read for the rule's sake.)"""
    copied = [False] * len(reply_words)
    for n in (3, 4):
        source = set(zip(*(source_words[i:] for i in range(n))))
        if not source:
            break
        for i, gram in enumerate(zip(*(reply_words[i:] for i in range(n)))):
            if gram in source:
                copied[i : i + n] = [True] * n
    return copied


@dataclass(frozen=True)
class SystemPrompt:
    """The prompt a system under test was given, as the scorer knows it: the file its config entry names
    (`prompt` of an `llm` system or a calibration system that has one, `system_prompt` of a `chat` system).
    A template (`rendered`) is the prompt of each turn as crseval.simulate.systems.agents.render_prompt fills it from
    what the turn records (its `system_constraints` and `candidate_titles`): exactly what the system was
    given. A turn that does not record them, or whose candidates are not all catalog films, gets the
    template's text as written. A system message (not `rendered`) is the same at every turn."""

    text: str
    template: PromptTemplate | None = None

    @classmethod
    def read(cls, path, rendered: bool) -> "SystemPrompt":
        if rendered:
            template = PromptTemplate(path)
            return cls(template.text, template)
        return cls(PromptTemplate(path).text.strip())

    def of_turn(self, turn: dict, space: "ConceptSpace") -> str:
        if self.template is None:
            return self.text
        if "system_constraints" not in turn or "candidate_titles" not in turn:
            return self.text
        ids = [space.index.film_id(t) for t in turn["candidate_titles"] or []]
        if any(f is None for f in ids):
            return self.text
        constraints = [Constraint(c["field"], c["value"], c["negated"]) for c in turn["system_constraints"] or []]
        return render_prompt(self.template, space.index, space.matcher.title_recognizer, constraints, ids)


# The key of a system's config entry that names its prompt file -> whether the file is a template the
# system renders at each turn (crseval.simulate.systems.kinds.ResolvedSystem.prompt_key says which key a system has).
PROMPT_KEYS = {"prompt": True, "system_prompt": False}


def system_prompt(files: dict) -> SystemPrompt | None:
    """The prompt of the system whose prompt file `files` gives under its key (PROMPT_KEYS), or None."""
    for key, rendered in PROMPT_KEYS.items():
        if files.get(key):
            return SystemPrompt.read(files[key], rendered)
    return None


def tas_value(cc: float, cr: float, copy: float, settings: TasSettings) -> float:
    return settings.alpha * cc + settings.beta * cr - settings.gamma * copy


def copying(system_text: str, user_text: str) -> float:
    """I(t): the largest share of the system's word 3- or 4-grams that the user said too."""
    return copying_of_words(words(system_text), words(user_text))


def copying_of_words(s_tokens: list[str], u_tokens: list[str]) -> float:
    """`copying` of the two texts' words (`words`), for a caller that has them already. A 4-gram both
    said holds a 3-gram both said: without a shared 3-gram, I is 0 and the 4-grams need no look."""
    best = 0.0
    for n in (3, 4):
        u_grams = set(zip(*(u_tokens[i:] for i in range(n))))
        s_grams = set(zip(*(s_tokens[i:] for i in range(n)))) if u_grams else None
        if not s_grams:
            break
        shared = len(s_grams & u_grams)
        if not shared:
            break
        best = max(best, shared / len(s_grams))
    return best


def _prf(tp: int, n_pred: int, n_gold: int) -> tuple[float, float, float]:
    precision = tp / n_pred if n_pred else (1.0 if n_gold == 0 else 0.0)
    recall = tp / n_gold if n_gold else (1.0 if n_pred == 0 else 0.0)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


@dataclass
class TurnConcepts:
    """One turn's concepts: the sets CC compares and the weighted vectors CR compares. `credited` and
    `credited_vector`: the reply's concepts less what it copies from its prompt (`system` and `system_vector`
    themselves when it has no prompt or copies no concept), which alone count as shared with the user."""

    user: set
    system: set
    user_vector: dict
    system_vector: dict
    credited: set
    credited_vector: dict


def score_turn(
    turn: dict, space: ConceptSpace, seen_titles: set[str], has_truth: bool, prompt: str | None = None
) -> tuple[dict, TurnConcepts]:
    """The per-turn row (CC, CR, I, TAS, recommendation and ground-truth counts) and the turn's concepts.

    `seen_titles` holds the films recommended in earlier turns; this turn's are added to it. `prompt`: the
    system's prompt of the turn, whose words the reply's concepts earn nothing for (module docstring)."""
    u_counts, u_set, u_vector = space.concepts(turn["user_text"])
    s_counts, s_set, s_vector = space.concepts(turn["system_text"])
    own_counts, own_set, own_vector = space.credited(turn["system_text"], prompt)
    concepts = TurnConcepts(u_set, s_set, u_vector, s_vector, own_set, own_vector)
    cc = jaccard_credited(concepts.user, concepts.system, concepts.credited)
    cr = cosine_credited(concepts.user_vector, concepts.system_vector, concepts.credited_vector)
    copy = copying_of_words(space.texts(turn["system_text"]).words, space.texts(turn["user_text"]).words)
    recommended = list(turn.get("recommended_titles") or [])
    row = {
        "turn": turn["turn"],
        "cc": cc,
        "cr": cr,
        "copying": copy,
        "tas": tas_value(cc, cr, copy, space.settings),
        "tas_rec": tas_value(
            *_recommended_overlap(s_counts, own_counts, concepts, recommended, space), copy, space.settings
        ),
        "user_concepts": len(concepts.user),
        "system_concepts": len(concepts.system),
        "recommended": len(recommended),
        "repeated_recommendations": sum(1 for t in recommended if t in seen_titles),
        "unknown_titles": len(turn.get("unknown_titles") or []),
    }
    seen_titles.update(recommended)
    # what the reply says (copied from its prompt or not) that the user did not and no film it names carries
    named = [space.film_concepts(t) for t in recommended + list(turn.get("mentioned_titles") or [])]
    unsupported = {c for c in concepts.system - concepts.user if not any(c in carried for carried in named)}
    if has_truth:
        row.update(_against_gold(turn, space, concepts, recommended, unsupported))
    else:
        row.update(
            shift=None,
            missing_concepts=NAN,
            hallucinated_concepts=len(unsupported),
            dst_tp=NAN,
            dst_pred=NAN,
            dst_gold=NAN,
            dst_joint=NAN,
            rec_satisfaction=NAN,
        )
    return row, concepts


def _recommended_overlap(
    s_counts: Counter, own_counts: Counter, concepts: TurnConcepts, recommended: list, space: ConceptSpace
) -> tuple[float, float]:
    """CC' and CR' of TAS on recommended films: the user's concepts against what the recommended films carry
    of the concepts said or asked (module docstring). In CR's dot product a concept weighs by the reply's own
    mentions (`own_counts`: less those copied from its prompt; 1 when none is its own)."""
    carried = set().union(*(space.film_concepts(t) for t in recommended)) if recommended else set()
    if space.settings.include_titles:
        carried |= {("title", t) for t in recommended}
    # sorted: a set's order follows the process's string hashing, and the norm's sum would follow it by a bit
    kept = sorted((concepts.system | concepts.user) & carried)
    vector = space.vector({c: s_counts.get(c) or 1 for c in kept})
    own = vector if own_counts is s_counts else space.vector({c: own_counts.get(c) or 1 for c in kept})
    return jaccard(concepts.user, set(kept)), cosine_credited(concepts.user_vector, vector, own)


def _against_gold(turn: dict, space: ConceptSpace, concepts: TurnConcepts, recommended: list, unsupported: set) -> dict:
    """A turn's reply against the simulator's gold constraints: missing, hallucinated (`unsupported`: the
    reply's concepts that neither the user nor a film it names carries, less the wanted ones), tracked,
    satisfied."""
    meta = turn["user_meta"]
    gold = {(c["field"], c["value"], c["negated"]) for c in meta["constraints"]}
    wanted = {(f, v) for f, v, negated in gold if not negated and f in space.settings.fields}
    unwanted = {(f, v) for f, v, negated in gold if negated}
    tracked = {(c["field"], c["value"], c["negated"]) for c in turn.get("system_constraints") or []}
    satisfied = [
        wanted <= space.film_concepts(t) and not (unwanted & space.film_concepts(t))
        for t in recommended
        if space.index.film_id(t) is not None
    ]
    return {
        "shift": bool(meta["shift_event"]),
        "missing_concepts": len(wanted - concepts.credited),
        "hallucinated_concepts": len(unsupported - wanted),
        "dst_tp": len(tracked & gold),
        "dst_pred": len(tracked),
        "dst_gold": len(gold),
        "dst_joint": float(tracked == gold),
        "rec_satisfaction": float(np.mean(satisfied)) if satisfied else NAN,
    }


def film_coverage(turns: list[dict]) -> dict:
    """The distinct films the session's replies name outside the catalog, and the share of all the
    distinct films they name (recommended, mentioned or outside) that the catalog holds (NaN when
    they name none)."""
    catalog = {
        t for turn in turns for t in (turn.get("recommended_titles") or []) + (turn.get("mentioned_titles") or [])
    }
    unknown = {title_key(t) for turn in turns for t in turn.get("unknown_titles") or []}
    named = len(catalog) + len(unknown)
    return {"unknown_titles": len(unknown), "catalog_coverage": len(catalog) / named if named else NAN}


def session_means(rows: list[dict]) -> dict:
    """The session columns every session has, ground truth or not: means over turns, repeat rate."""
    recommended = sum(r["recommended"] for r in rows)
    return {
        "tas": safe_mean(r["tas"] for r in rows),
        "tas_cc": safe_mean(r["cc"] for r in rows),
        "tas_cr": safe_mean(r["cr"] for r in rows),
        "tas_copying": safe_mean(r["copying"] for r in rows),
        "tas_rec": safe_mean(r["tas_rec"] for r in rows),
        "hallucinated_concepts": safe_mean(r["hallucinated_concepts"] for r in rows),
        "recommendation_rate": safe_mean(float(r["recommended"] > 0) for r in rows),
        "repeat_rate": sum(r["repeated_recommendations"] for r in rows) / recommended if recommended else NAN,
    }


def segment_scores(rows: list[dict], concepts: list[TurnConcepts], settings: TasSettings) -> dict:
    """TAS over the simulator's segments: a segment's CC and CR compare the union of its turns'
    concepts (summed vectors), its I is the mean of its turns' I."""
    bounds = [0, *(i for i, r in enumerate(rows) if r["shift"]), len(rows)]
    scores = []
    for start, end in zip(bounds, bounds[1:]):
        if end <= start:
            continue
        segment = concepts[start:end]
        u_union, s_union = set().union(*(c.user for c in segment)), set().union(*(c.system for c in segment))
        u_sum, s_sum = Counter(), Counter()
        for c in segment:
            u_sum.update(c.user_vector)
        for c in segment:
            s_sum.update(c.system_vector)
        u_vector, s_vector = dict(u_sum), dict(s_sum)
        own_union, own_vector = s_union, s_vector  # unless a reply copied concepts from its prompt
        if any(c.credited is not c.system for c in segment):
            own_union, own_sum = set().union(*(c.credited for c in segment)), Counter()
            for c in segment:
                own_sum.update(c.credited_vector)
            own_vector = dict(own_sum)
        cc, cr = jaccard_credited(u_union, s_union, own_union), cosine_credited(u_vector, s_vector, own_vector)
        copy = safe_mean(r["copying"] for r in rows[start:end])
        scores.append((cc, cr, tas_value(cc, cr, copy, settings)))
    return {
        "segments": len(scores),
        "tas_segment": safe_mean(x[2] for x in scores),
        "tas_segment_cc": safe_mean(x[0] for x in scores),
        "tas_segment_cr": safe_mean(x[1] for x in scores),
    }


def recovery(rows: list[dict], settings: TasSettings) -> dict:
    """Per variant (CC: Jaccard, CR: cosine), the share of shifts recovered within the window and the
    mean delay of those recovered (NaN without shifts, or without a recovered one)."""
    shift_turns = [i for i, r in enumerate(rows) if r["shift"]]
    columns = {}
    for variant, key in (("jaccard", "cc"), ("cosine", "cr")):
        delays = []
        for shift in shift_turns:
            window = rows[shift : shift + settings.recovery_window]
            delays.append(next((d for d, r in enumerate(window) if r[key] >= settings.recovery_threshold), None))
        recovered = [d for d in delays if d is not None]
        columns[f"recovery_rate_{variant}"] = len(recovered) / len(delays) if delays else NAN
        columns[f"recovery_delay_{variant}"] = float(np.mean(recovered)) if recovered else NAN
    return columns


def tracking(rows: list[dict]) -> dict:
    """Missing concepts, the tracker's precision/recall/F1 (micro over turns), joint accuracy, satisfaction."""
    tp, pred, gold = (sum(r[k] for r in rows) for k in ("dst_tp", "dst_pred", "dst_gold"))
    precision, recall, f1 = _prf(tp, pred, gold)
    return {
        "missing_concepts": safe_mean(r["missing_concepts"] for r in rows),
        "dst_precision": precision,
        "dst_recall": recall,
        "dst_f1": f1,
        "dst_joint_accuracy": safe_mean(r["dst_joint"] for r in rows),
        "rec_satisfaction": safe_mean(r["rec_satisfaction"] for r in rows),
    }


def score_session(record: dict, space: ConceptSpace, prompt: SystemPrompt | None = None) -> tuple[dict, list[dict]]:
    """Session columns (SESSION_COLUMNS, in that order) and per-turn rows of one session record; `prompt`:
    the system's prompt, when it has one."""
    turns = record["turns"]
    has_truth = all(t.get("user_meta") for t in turns)
    seen_titles: set[str] = set()
    rows, concepts = [], []
    for turn in turns:
        text = prompt.of_turn(turn, space) if prompt is not None else None
        row, turn_concepts = score_turn(turn, space, seen_titles, has_truth, text)
        rows.append(row)
        concepts.append(turn_concepts)
    session = {**session_means(rows), **film_coverage(turns)}
    if has_truth:
        session.update(segment_scores(rows, concepts, space.settings), **recovery(rows, space.settings))
        session.update(tracking(rows))
    else:
        session.update({column.name: NAN for column in SESSION_COLUMNS if column.ground_truth})
    return {column.name: session[column.name] for column in SESSION_COLUMNS}, rows


class TasFamily:
    """Grounded TAS and its companions (registered as `tas`)."""

    name = "tas"
    session_columns = SESSION_COLUMNS
    turn_columns = TURN_COLUMNS

    def __init__(self, context):
        self.space = context.space
        self.prompt = context.prompt

    def score_shard(self, records: list[dict]) -> list[tuple[dict, list[dict]]]:
        return [score_session(record, self.space, self.prompt) for record in records]


TAS = ("scoring", "tas")


def weight_problems(config: Any) -> Iterator[str]:
    """TAS = alpha CC + beta CR - gamma I: without alpha and beta it rewards no adherence at all."""
    alpha, beta = _at(config, (*TAS, "alpha")), _at(config, (*TAS, "beta"))
    if _is_number(alpha) and _is_number(beta) and alpha + beta <= 0:
        yield (
            f"{key_path(TAS)}: alpha + beta is {_show(alpha + beta)}, but must be positive "
            "(TAS = alpha CC + beta CR - gamma I would be 0 or below for every system)"
        )


def figures(scoring: dict, scatter: list[str]) -> list[str]:
    """TAS over turns and over other weights; TAS against the experiment's other scores when it has some."""
    return ["tas_over_turns", "weight_sensitivity"] + (["tas_scatter"] if scatter else [])


def figure_params(scoring: dict) -> dict[str, dict]:
    """The configured weights, which the weight-sensitivity grid holds and marks."""
    return {"weight_sensitivity": {key: scoring["tas"][key] for key in ("alpha", "beta", "gamma")}}


def _expect(name: str, order: tuple[str, ...], reason: str, check: str = "adaptation") -> Expectation:
    return Expectation(column_named(SESSION_COLUMNS, name), order, reason, check)


# Every column checked here is time-aware (`pools_foci` False): TAS, CC, CR, TAS on recommended films, missing
# concepts, tracking F1 and satisfaction hold each turn against that turn's user text or gold constraints, segment
# TAS each segment against its own turns, recovery each shift against the turns after it.
EXPECTATIONS = (
    _expect(
        "tas",
        ADAPTATION,
        "TAS rewards replies that restate the current wishes: the oracle always does, lag-k does k turns late "
        "(later = fewer turns aligned), stubborn only in the first segment, random never",
    ),
    _expect("tas_cc", ADAPTATION, "concept overlap with the user's turn, as for TAS"),
    _expect("tas_cr", ADAPTATION, "weighted concept similarity with the user's turn, as for TAS"),
    _expect("tas_segment", ADAPTATION, "TAS over the simulator's segments, as for TAS"),
    _expect(
        "tas_rec",
        ADAPTATION,
        "TAS counting only the concepts the recommended films carry: films of the current wishes for the oracle, "
        "of older ones for lag-k and stubborn, of none for random",
    ),
    _expect(
        "dst_f1",
        ADAPTATION,
        "the calibration systems report the constraints they serve: current, k turns old, first, none",
    ),
    _expect(
        "rec_satisfaction",
        ADAPTATION,
        "recommended films satisfy the constraints served: current for the oracle, older ones for the others",
    ),
    _expect("missing_concepts", ADAPTATION, "wished concepts the reply does not name, as for TAS"),
    _expect(
        "recovery_rate_cosine",
        ("oracle", LAGS, "stubborn=random"),
        "within a window longer than two turns the oracle recovers first, lag-k k turns later; stubborn and "
        "random never follow a shift (random matches one by chance only)",
    ),
    _expect(
        "tas_copying",
        (f"oracle={LAGS}=stubborn=random", "parrot"),
        "the parrot echoes the user's message (copying is penalised: it ranks last); the others write their own "
        "sentence",
    ),
    _expect("tas", ECHO, ECHO_REASON + " (TAS subtracts gamma x copying for this)", "echo"),
    _expect("rec_satisfaction", ECHO, ECHO_REASON, "echo"),
    _expect("tas_rec", ECHO, ECHO_REASON + " (words echoed from the user count only if its films carry them)", "echo"),
    *(
        prompt_echo(column_named(SESSION_COLUMNS, name))
        for name in (
            "tas",
            "tas_cc",
            "tas_cr",
            "tas_segment",
            "tas_rec",
            "missing_concepts",
            "recovery_rate_cosine",
            "rec_satisfaction",
        )
    ),
)

KIND = FamilyKind(
    name="tas",
    summary="grounded TAS and its companions: catalog concepts in user and system turns, against the ground truth",
    scorer=TasFamily,
    parse_settings=TasSettings.from_config,
    backends=no_backends,
    embedding_users=no_settings,
    reads_lda=never,
    checks=weight_problems,
    expectations=EXPECTATIONS,
    headline=(
        "tas",
        "tas_segment",
        "recovery_rate_cosine",
        "missing_concepts",
        "hallucinated_concepts",
        "rec_satisfaction",
        "repeat_rate",
    ),
    figures=figures,
    scatter_columns=no_settings,
    distribution_columns=("tas", "rec_satisfaction"),
    figure_params=figure_params,
)
