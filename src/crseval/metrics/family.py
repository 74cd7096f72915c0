"""The interface every metric family implements, and what a family may use to build itself.

A family turns a shard of session records into, per session, its session columns and its per-turn
columns. Families are registered by name in crseval.metrics.scorer (`FAMILIES`); adding one is a module
with a class like those below and one registry line. A family reads a text's tokens from the shared
`ScoringContext.texts`, so that every text of a shard is tokenised once for all families.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Protocol

from crseval.catalog.index import CatalogIndex
from crseval.language.tokens import TextAnalyses
from crseval.llm.prompts import PromptTemplate

SessionScores = tuple[dict, list[dict]]  # session columns, and one dict of columns per turn


class MetricFamily(Protocol):
    name: str

    def score_shard(self, records: list[dict]) -> list[SessionScores]:
        """Scores of every record, in record order; models see the shard's texts in one batch."""


@dataclass
class ScoringContext:
    """Shared by the families of one scorer: the catalog, the scoring settings, and models built
    at most once and only when a selected family asks for them (a job's set-up is part of its time)."""

    index: CatalogIndex
    settings: dict  # the `scoring` config section
    space: object  # grounded.ConceptSpace: catalog concepts in text, shared by TAS and adherence
    lda_dir: str | Path | None
    llm_factory: Callable | None
    topics_prompt: str | Path | None  # the LLM topic extractors' prompt file (crseval.core.experiment.TOPICS_PROMPT)
    make_tfidf: Callable[[], object]
    make_embedder: Callable[[], object]
    texts: TextAnalyses = field(default_factory=TextAnalyses)  # the shard's texts, each analysed once
    _models: dict = field(default_factory=dict)

    def tfidf(self):
        """The catalog TF-IDF similarity, one instance for every family that uses it."""
        if "tfidf" not in self._models:
            self._models["tfidf"] = self.make_tfidf()
        return self._models["tfidf"]

    def llm_topics(self, section: dict):
        """The LLM topic extractor of a family's config section (`llm`: backend and options)."""
        from crseval.metrics.topic_words import LlmTopics

        if self.topics_prompt is None:
            raise ValueError("LLM topic extraction needs the topics prompt file (resources/prompts/topics.txt)")
        return LlmTopics(
            self.llm_factory(section["llm"]["backend"]), section["llm"]["options"], PromptTemplate(self.topics_prompt)
        )

    def embedder(self):
        """The sentence embedder (all-MiniLM-L6-v2), one instance for every family that uses it."""
        if "embedder" not in self._models:
            self._models["embedder"] = self.make_embedder()
        return self._models["embedder"]
