"""Grounded TAS: catalog concepts in user and system turns, against the simulator's ground truth.

Per turn t (user text U, system text S, concepts E(.) from the catalog matcher):
  CC(t)  = |E(U) & E(S)| / |E(U) | E(S)|                  (0 when both are empty)
  CR(t)  = cosine of TF-IDF concept vectors (tf = mentions, idf = ln((1+N)/(1+df)) + 1 with
           df = films having the concept, N = films)
  I(t)   = max over n in {3, 4} of |G_n(S) & G_n(U)| / |G_n(S)|   (word n-gram sets; 0 if S has
           no n-gram)
  TAS(t) = alpha*CC + beta*CR - gamma*I
Segments are the simulator's ground-truth segments (split at its shift turns); a segment's CC
and CR use the union of its turns' concepts (summed vectors), its I the mean of its turns'.
A shift at turn s is recovered within window W when CC(s+d) >= tau (Jaccard variant) or
CR(s+d) >= tau (cosine variant) for some d in 0..W-1; its delay is the smallest such d.
Metrics that need ground truth (segments, recovery, missing concepts, tracking accuracy,
recommendation satisfaction) are NaN for sessions that have none (imported logs).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

import numpy as np

from crseval.catalog.index import CatalogIndex
from crseval.language.concepts import CONCEPT_FIELDS, ConceptMatcher
from crseval.metrics.basic import cosine, jaccard, ngrams, safe_mean, words

NAN = math.nan


@dataclass(frozen=True)
class TasSettings:
    alpha: float = 0.4
    beta: float = 0.4
    gamma: float = 0.2
    fields: tuple[str, ...] = CONCEPT_FIELDS
    include_titles: bool = False
    recovery_window: int = 2
    recovery_threshold: float = 0.5

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
    """E(x) and the TF-IDF weights of concepts, from the catalog index."""

    def __init__(self, index: CatalogIndex, matcher: ConceptMatcher, settings: TasSettings):
        self.index = index
        self.matcher = matcher
        self.settings = settings
        n_films = len(index.films)
        df = index.concepts.groupby(["field", "value"]).size()
        self.idf = {key: math.log((1 + n_films) / (1 + int(n))) + 1.0 for key, n in df.items()}
        self.title_idf = math.log((1 + n_films) / 2) + 1.0
        self._film_concepts: dict[int, set[tuple[str, str]]] = {}
        self._mentions: dict[str, Counter] = {}

    def mentions(self, text: str) -> Counter:
        """Concept -> number of mentions in `text` (memoised: texts repeat across metrics)."""
        if text in self._mentions:
            return self._mentions[text]
        counts = Counter((m.field, m.value) for m in self.matcher.values(text) if m.field in self.settings.fields)
        if self.settings.include_titles:
            counts.update(("title", t) for t in self.matcher.titles(text))
        self._mentions[text] = counts
        return counts

    def vector(self, counts: Counter) -> dict:
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


def tas_value(cc: float, cr: float, copy: float, settings: TasSettings) -> float:
    return settings.alpha * cc + settings.beta * cr - settings.gamma * copy


def copying(system_text: str, user_text: str) -> float:
    """I(t): the largest share of the system's word 3- or 4-grams that the user said too."""
    s_tokens, u_tokens = words(system_text), words(user_text)
    best = 0.0
    for n in (3, 4):
        s_grams = set(ngrams(s_tokens, n))
        if s_grams:
            best = max(best, len(s_grams & set(ngrams(u_tokens, n))) / len(s_grams))
    return best


def _prf(tp: int, n_pred: int, n_gold: int) -> tuple[float, float, float]:
    precision = tp / n_pred if n_pred else (1.0 if n_gold == 0 else 0.0)
    recall = tp / n_gold if n_gold else (1.0 if n_pred == 0 else 0.0)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def score_session(record: dict, space: ConceptSpace) -> tuple[dict, list[dict]]:
    """Session-level and per-turn grounded metrics of one session record."""
    s = space.settings
    turns = record["turns"]
    has_truth = all(t.get("user_meta") for t in turns)
    rows = []
    user_vectors, system_vectors, user_sets, system_sets = [], [], [], []
    seen_titles: set[str] = set()
    for turn in turns:
        u_counts, s_counts = space.mentions(turn["user_text"]), space.mentions(turn["system_text"])
        u_set, s_set = set(u_counts), set(s_counts)
        u_vec, s_vec = space.vector(u_counts), space.vector(s_counts)
        cc, cr = jaccard(u_set, s_set), cosine(u_vec, s_vec)
        copy = copying(turn["system_text"], turn["user_text"])
        recommended = list(turn.get("recommended_titles") or [])
        row = {
            "turn": turn["turn"],
            "cc": cc,
            "cr": cr,
            "copying": copy,
            "tas": tas_value(cc, cr, copy, s),
            "user_concepts": len(u_set),
            "system_concepts": len(s_set),
            "recommended": len(recommended),
            "repeated_recommendations": sum(1 for t in recommended if t in seen_titles),
        }
        seen_titles.update(recommended)
        named = recommended + list(turn.get("mentioned_titles") or [])
        supported = set().union(*(space.film_concepts(t) for t in named)) if named else set()
        if has_truth:
            meta = turn["user_meta"]
            gold = {(c["field"], c["value"], c["negated"]) for c in meta["constraints"]}
            wanted = {(f, v) for f, v, negated in gold if not negated and f in s.fields}
            unwanted = {(f, v) for f, v, negated in gold if negated}
            tracked = {(c["field"], c["value"], c["negated"]) for c in turn.get("system_constraints") or []}
            satisfied = [
                wanted <= space.film_concepts(t) and not (unwanted & space.film_concepts(t))
                for t in recommended
                if space.index.film_id(t) is not None
            ]
            row.update(
                shift=bool(meta["shift_event"]),
                missing_concepts=len(wanted - s_set),
                hallucinated_concepts=len(s_set - wanted - u_set - supported),
                dst_tp=len(tracked & gold),
                dst_pred=len(tracked),
                dst_gold=len(gold),
                dst_joint=float(tracked == gold),
                rec_satisfaction=float(np.mean(satisfied)) if satisfied else NAN,
            )
        else:
            row.update(
                shift=None,
                missing_concepts=NAN,
                hallucinated_concepts=len(s_set - u_set - supported),
                dst_tp=NAN,
                dst_pred=NAN,
                dst_gold=NAN,
                dst_joint=NAN,
                rec_satisfaction=NAN,
            )
        rows.append(row)
        user_vectors.append(u_vec)
        system_vectors.append(s_vec)
        user_sets.append(u_set)
        system_sets.append(s_set)

    session = {
        "tas": safe_mean(r["tas"] for r in rows),
        "tas_cc": safe_mean(r["cc"] for r in rows),
        "tas_cr": safe_mean(r["cr"] for r in rows),
        "tas_copying": safe_mean(r["copying"] for r in rows),
        "hallucinated_concepts": safe_mean(r["hallucinated_concepts"] for r in rows),
        "recommendation_rate": safe_mean(float(r["recommended"] > 0) for r in rows),
        "repeat_rate": (sum(r["repeated_recommendations"] for r in rows) / n)
        if (n := sum(r["recommended"] for r in rows))
        else NAN,
    }
    if not has_truth:
        session.update(
            {
                key: NAN
                for key in (
                    "tas_segment",
                    "tas_segment_cc",
                    "tas_segment_cr",
                    "segments",
                    "recovery_rate_jaccard",
                    "recovery_delay_jaccard",
                    "recovery_rate_cosine",
                    "recovery_delay_cosine",
                    "missing_concepts",
                    "dst_precision",
                    "dst_recall",
                    "dst_f1",
                    "dst_joint_accuracy",
                    "rec_satisfaction",
                )
            }
        )
        return session, rows

    shift_turns = [i for i, r in enumerate(rows) if r["shift"]]
    bounds = [0, *shift_turns, len(rows)]
    segment_scores = []
    for start, end in zip(bounds, bounds[1:]):
        if end <= start:
            continue
        u_union, s_union = set().union(*user_sets[start:end]), set().union(*system_sets[start:end])
        u_sum, s_sum = Counter(), Counter()
        for vec in user_vectors[start:end]:
            u_sum.update(vec)
        for vec in system_vectors[start:end]:
            s_sum.update(vec)
        cc, cr = jaccard(u_union, s_union), cosine(dict(u_sum), dict(s_sum))
        copy = safe_mean(r["copying"] for r in rows[start:end])
        segment_scores.append((cc, cr, tas_value(cc, cr, copy, s)))
    session.update(
        segments=len(segment_scores),
        tas_segment=safe_mean(x[2] for x in segment_scores),
        tas_segment_cc=safe_mean(x[0] for x in segment_scores),
        tas_segment_cr=safe_mean(x[1] for x in segment_scores),
    )
    for variant, key in (("jaccard", "cc"), ("cosine", "cr")):
        delays = []
        for shift in shift_turns:
            window = rows[shift : shift + s.recovery_window]
            delays.append(next((d for d, r in enumerate(window) if r[key] >= s.recovery_threshold), None))
        recovered = [d for d in delays if d is not None]
        session[f"recovery_rate_{variant}"] = len(recovered) / len(delays) if delays else NAN
        session[f"recovery_delay_{variant}"] = float(np.mean(recovered)) if recovered else NAN
    tp, pred, gold = (sum(r[k] for r in rows) for k in ("dst_tp", "dst_pred", "dst_gold"))
    precision, recall, f1 = _prf(tp, pred, gold)
    session.update(
        missing_concepts=safe_mean(r["missing_concepts"] for r in rows),
        dst_precision=precision,
        dst_recall=recall,
        dst_f1=f1,
        dst_joint_accuracy=safe_mean(r["dst_joint"] for r in rows),
        rec_satisfaction=safe_mean(r["rec_satisfaction"] for r in rows),
    )
    return session, rows


class TasFamily:
    """Grounded TAS and its companions (registered as `tas`)."""

    name = "tas"

    def __init__(self, context):
        self.space = context.space

    def score_shard(self, records: list[dict]) -> list[tuple[dict, list[dict]]]:
        return [score_session(record, self.space) for record in records]
