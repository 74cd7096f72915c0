"""Score a shard of sessions with the selected metric families, batched per shard.

Each family (crseval.metrics.family) sees all texts of the shard at once (one TF-IDF transform,
one batch of LDA inference or embeddings, each distinct text once) and returns per-session and
per-turn columns. The families share one analysis of each distinct text of the shard (its tokens
and words, crseval.language.tokens.TextAnalyses), dropped when the shard is scored. Output: one
row per session and one row per turn. Families are chosen by name in `scoring.metrics`; their
declarations are crseval.metrics.families.FAMILY_KINDS, and `FAMILIES` maps each name to its scorer
class, in the order their columns appear.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pandas as pd

from crseval.catalog.index import CatalogIndex
from crseval.core.columns import VERDICT_PREFIX, Column
from crseval.core.fields import CONCEPT_FIELDS
from crseval.language.concepts import ConceptMatcher
from crseval.language.tokens import TextAnalyses
from crseval.metrics.families import FAMILY_KINDS, family_kind
from crseval.metrics.family import MetricFamily, ScoringContext
from crseval.metrics.grounded import ConceptSpace
from crseval.metrics.grounded import system_prompt as read_system_prompt
from crseval.metrics.similarity import EmbeddingCache, SentenceEmbedder, TfidfSimilarity

FAMILIES = {name: kind.scorer for name, kind in FAMILY_KINDS.items()}
# What the scorer itself writes for every session, whatever families run.
SESSION_COLUMNS = (
    Column("turns", "turns", "count", dtype="int64", metric=False),
    Column("shifts", "shifts of the simulated user", "count", ground_truth=True),
)


@dataclass
class Scorer:
    families: list[MetricFamily]
    texts: TextAnalyses = field(default_factory=TextAnalyses)  # the families' shared analyses of a shard's texts

    def score(self, records: list[dict]) -> tuple[pd.DataFrame, pd.DataFrame]:
        try:
            scored = [family.score_shard(records) for family in self.families]
        finally:
            self.texts.clear()
        session_rows, turn_rows = [], []
        for number, record in enumerate(records):
            turns = record["turns"]
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
            for family_scores in scored:
                session_columns, turn_columns = family_scores[number]
                session.update(session_columns)
                for row, columns in zip(per_turn, turn_columns):
                    row.update(columns)
            session_rows.append(session)
            turn_rows.extend(per_turn)
        return pd.DataFrame(session_rows), pd.DataFrame(turn_rows)


# The `satisfaction` label of a session record as the `satisfied` column (crseval.core.columns.LABEL_COLUMNS).
SATISFIED = {"satisfied": 1.0, "frustrated": 0.0}


def with_labels(sessions: pd.DataFrame, records: list[dict]) -> pd.DataFrame:
    """The sessions table of `records` (one row each, in order) with the human labels the records carry,
    after the identifiers: `satisfied` is 1.0, 0.0, or NaN for a simulated or unlabelled session; then one
    column `verdict_<name>` per verdict the records carry (`labels.verdicts`, in the order first met; NaN
    where a record has none). Apart from Scorer.score, whose tables hold only what is computed from the
    dialogues."""
    satisfied = [SATISFIED.get((record.get("labels") or {}).get("satisfaction"), math.nan) for record in records]
    labelled = sessions.copy()
    after_ids = list(labelled.columns).index("seed") + 1
    labelled.insert(after_ids, "satisfied", pd.Series(satisfied, labelled.index, "float64"))
    verdicts = [(record.get("labels") or {}).get("verdicts") or {} for record in records]
    for offset, name in enumerate(dict.fromkeys(name for given in verdicts for name in given), start=1):
        values = [math.nan if given.get(name) is None else float(given[name]) for given in verdicts]
        labelled.insert(after_ids + offset, VERDICT_PREFIX + name, pd.Series(values, labelled.index, "float64"))
    return labelled


def build_scorer(
    *,
    films,
    concepts,
    lda_dir,
    settings: dict,
    embedding_cache: str | None,
    llm_factory=None,
    topics_prompt=None,
    threads: int = 1,
    system_prompt: dict | None = None,
) -> Scorer:
    """A scorer of the families named in `settings['metrics']` (the `scoring` config section). `system_prompt`:
    the prompt file of the system whose sessions it scores, under its key (`prompt` or `system_prompt`,
    crseval.metrics.grounded.PROMPT_KEYS), when it has one: what its replies copy from it earns no concept
    credit."""
    index = CatalogIndex.read(films, concepts)
    tas_settings = family_kind("tas").settings(settings)  # the concept space's, shared with adherence
    matcher = ConceptMatcher(index.concepts, index.films, tuple(dict.fromkeys(CONCEPT_FIELDS + tas_settings.fields)))
    texts = TextAnalyses()
    context = ScoringContext(
        index=index,
        settings=settings,
        space=ConceptSpace(index, matcher, tas_settings, texts),
        lda_dir=lda_dir,
        llm_factory=llm_factory,
        topics_prompt=topics_prompt,
        make_tfidf=lambda: TfidfSimilarity(index.films["name"].tolist(), index.films["plot"].tolist()),
        make_embedder=lambda: SentenceEmbedder(
            EmbeddingCache(embedding_cache) if embedding_cache else None, threads=threads
        ),
        texts=texts,
        prompt=read_system_prompt(system_prompt or {}),
    )
    unknown = sorted(set(settings["metrics"]) - set(FAMILIES))
    if unknown:
        raise ValueError(f"scoring.metrics: unknown metric families {unknown}; known: {sorted(FAMILIES)}")
    return Scorer([family(context) for name, family in FAMILIES.items() if name in settings["metrics"]], texts)
