"""Score a shard of sessions with every metric family, batched per shard.

All texts of the shard go through each model once (one TF-IDF transform, one batch of LDA
inference or embeddings, each distinct text once), then the per-session metrics read the
prepared values. Output: one row per session and one row per turn.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from crseval.catalog_index import CatalogIndex
from crseval.concepts import CONCEPT_FIELDS, ConceptMatcher
from crseval.metrics import adherence, grounded, legacy_cas, response_stats
from crseval.metrics.similarity import (
    EmbeddingCache,
    EmbeddingSimilarity,
    MemoisedSimilarity,
    SentenceEmbedder,
    TfidfSimilarity,
)
from crseval.metrics.topic_words import HeuristicTopics, LdaTopics, LlmTopics
from crseval.topics import TopicModel


@dataclass
class Scorer:
    index: CatalogIndex
    space: grounded.ConceptSpace
    cas: legacy_cas.CasSettings
    similarity: object
    topics: object
    adherence_topics: object | None  # None: the catalog extractor
    lm: response_stats.TrigramLM | None  # None (like the similarities) when its family is not selected
    embedder: SentenceEmbedder | None
    persona_similarity: object
    stats: dict
    families: frozenset = frozenset({"tas", "cas", "adherence", "response_stats"})

    def score(self, records: list[dict]) -> tuple[pd.DataFrame, pd.DataFrame]:
        families = self.families
        texts = [t[k] for r in records for t in r["turns"] for k in ("user_text", "system_text")]
        system_texts = list(dict.fromkeys(t["system_text"] for r in records for t in r["turns"]))
        topic_of, vectors, profiles, llm_topics = {}, {}, {}, {}
        cas_similarity = None
        if "cas" in families:
            cas_similarity = MemoisedSimilarity(self.similarity)
            self.similarity.prepare(texts)
            unique = list(dict.fromkeys(texts))
            topic_of = dict(zip(unique, self.topics(unique)))
            self.similarity.prepare(" ".join(topic_of[t["system_text"]]) for r in records for t in r["turns"])
        if "response_stats" in families:
            vectors = self.embedder.embed([t for t in system_texts if t.strip()]) if self.embedder else {}
            profiles = {r["session_id"]: self._profile(r) for r in records}
            # only sessions with liked films have a persona similarity (imported logs have none)
            liking = [r for r in records if profiles[r["session_id"]]]
            self.persona_similarity.prepare(
                [profiles[r["session_id"]] for r in liking] + [t["system_text"] for r in liking for t in r["turns"]]
            )
        if "response_stats" in families:
            seeds = [self.stats["seed"] + (r.get("session_index") or 0) for r in records]
            statistics = response_stats.score_sessions(
                [[t["system_text"] for t in r["turns"]] for r in records],
                self.lm,
                self.stats["self_bleu_sample"],
                seeds,
            )
        if "adherence" in families and self.adherence_topics is not None:
            llm_topics = dict(zip(system_texts, self.adherence_topics(system_texts)))

        session_rows, turn_rows = [], []
        for number, record in enumerate(records):
            turns = record["turns"]
            users, systems = [t["user_text"] for t in turns], [t["system_text"] for t in turns]
            ids = {
                "system": record["system"],
                "session_id": record["session_id"],
                "session_index": record.get("session_index"),
                "seed": record.get("seed"),
            }
            has_truth = bool(turns) and all(t.get("user_meta") for t in turns)
            session = {
                **ids,
                "turns": len(turns),
                "shifts": sum(1 for t in turns if t["user_meta"]["shift_event"]) if has_truth else math.nan,
            }
            per_turn = [{**ids, "turn": t["turn"]} for t in turns]
            if "tas" in families:
                tas_session, tas_turns = grounded.score_session(record, self.space)
                session.update(tas_session)
                for row, values in zip(per_turn, tas_turns):
                    row.update(values)
            if "cas" in families:
                cas_session, cas_turns = legacy_cas.score_dialogue(
                    users,
                    systems,
                    [topic_of[u] for u in users],
                    [topic_of[s] for s in systems],
                    cas_similarity,
                    self.cas,
                )
                session.update(cas_session)
                for row, values in zip(per_turn, cas_turns):
                    row.update(cas_sim=values["cas_sim"], cas_shift=values["cas_shift"])
            if "adherence" in families:
                if self.adherence_topics is None:
                    system_topics = [set(self.space.mentions(s)) for s in systems]
                else:
                    system_topics = [set(llm_topics[s]) for s in systems]
                session.update(adherence.score_session(turns, system_topics))
            if "response_stats" in families:
                session.update(statistics[number])
                embedded = [vectors[s] for s in systems if s in vectors] if self.embedder else []
                session["embedding_diversity"] = (
                    response_stats.embedding_diversity(embedded) if self.embedder else math.nan
                )
                session.update(
                    response_stats.semantic_clusters(embedded, seeds[number])
                    if self.embedder
                    else dict.fromkeys(response_stats.CLUSTER_KEYS, math.nan)
                )
                profile = profiles[record["session_id"]]
                persona = (
                    [self.persona_similarity(profile, s) for s in systems] if profile else [math.nan] * len(systems)
                )
                session["persona_similarity"] = float(np.nanmean(persona)) if profile and persona else math.nan
                for row, value in zip(per_turn, persona):
                    row["persona_similarity"] = value
            session_rows.append(session)
            turn_rows.extend(per_turn)
        return pd.DataFrame(session_rows), pd.DataFrame(turn_rows)

    def _profile(self, record: dict) -> str:
        """The user's liked items as one text: each liked film's name, genres and plot."""
        parts = []
        for title in record.get("liked_titles") or []:
            film_id = self.index.film_id(title)
            if film_id is not None:
                row = self.index.films.loc[film_id]
                parts.append(f"{row['name']}. {', '.join(row['genre'])}. {row['plot']}")
        return " ".join(parts)


def build_scorer(
    *, films, concepts, lda_dir, settings: dict, embedding_cache: str | None, llm_factory=None, threads: int = 1
) -> Scorer:
    index = CatalogIndex.read(films, concepts)
    tas_settings = grounded.TasSettings.from_config(settings["tas"])
    matcher = ConceptMatcher(index.concepts, index.films, tuple(dict.fromkeys(CONCEPT_FIELDS + tas_settings.fields)))
    space = grounded.ConceptSpace(index, matcher, tas_settings)
    cas_section = settings["cas"]
    embedder = None

    def get_embedder():
        nonlocal embedder
        if embedder is None:
            embedder = SentenceEmbedder(EmbeddingCache(embedding_cache) if embedding_cache else None, threads=threads)
        return embedder

    tfidf = None

    def get_tfidf():
        nonlocal tfidf
        if tfidf is None:
            tfidf = TfidfSimilarity(index.films["name"].tolist(), index.films["plot"].tolist())
        return tfidf

    # each model is built only when a selected family uses it: a job's set-up is part of its time
    families = set(settings["metrics"])
    similarity = None
    if "cas" in families:
        similarity = get_tfidf() if cas_section["similarity"] == "tfidf" else EmbeddingSimilarity(get_embedder())
    if "cas" not in families:
        topics = None
    elif cas_section["topics"] == "lda":
        topics = LdaTopics(TopicModel.load(lda_dir))
    elif cas_section["topics"] == "heuristic":
        topics = HeuristicTopics(index.films["plot"].tolist())
    else:
        topics = LlmTopics(llm_factory(cas_section["llm"]["backend"]), cas_section["llm"]["options"])
    adherence_section = settings["adherence"]
    adherence_topics = None
    if "adherence" in families and adherence_section["extractor"] == "llm":
        adherence_topics = LlmTopics(
            llm_factory(adherence_section["llm"]["backend"]), adherence_section["llm"]["options"]
        )
    stats = settings["response_stats"]
    lm = persona = None
    if "response_stats" in families:
        lm = response_stats.TrigramLM(k=stats["lm"]["k"], lambdas=tuple(stats["lm"]["lambdas"]))
        lm.fit(index.films["plot"].tolist())
        persona = get_tfidf() if stats["persona_similarity"] == "tfidf" else EmbeddingSimilarity(get_embedder())
    return Scorer(
        index,
        space,
        legacy_cas.CasSettings.from_config(cas_section),
        similarity,
        topics,
        adherence_topics,
        lm,
        get_embedder() if stats["embeddings"] and "response_stats" in families else None,
        persona,
        stats,
        frozenset(settings["metrics"]),
    )


def read_sessions(path: str | Path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
