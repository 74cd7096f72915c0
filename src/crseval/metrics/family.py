"""The interface every metric family implements, what a family may use to build itself, and what
it declares about itself.

A family turns a shard of session records into, per session, its session columns and its per-turn
columns. A family reads a text's tokens from the shared `ScoringContext.texts`, so that every text
of a shard is tokenised once for all families.

Each family is declared once, as a `FamilyKind` in the module that implements it, and listed in
crseval.metrics.families (`FAMILY_KINDS`): its scorer class and columns, how it reads its settings,
what a score job needs for it (LLM backends, the embedding model, the LDA topic model), the checks
of its settings the schema cannot state, what the calibration systems should show on its columns,
its headline metrics and its figures. Everything that depends on which families run asks there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Protocol

from crseval.catalog.index import CatalogIndex
from crseval.core.columns import Column
from crseval.language.tokens import TextAnalyses
from crseval.llm.prompts import PromptTemplate
from crseval.metrics.expectations import Expectation

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
    topics_prompt: str | Path | None  # the LLM topic extractors' prompt file (crseval.planning.TOPICS_PROMPT)
    make_tfidf: Callable[[], object]
    make_embedder: Callable[[], object]
    texts: TextAnalyses = field(default_factory=TextAnalyses)  # the shard's texts, each analysed once
    # grounded.SystemPrompt of the system whose shard is scored (None: it has no prompt): what its replies copy
    # from their prompt earns no concept credit
    prompt: object = None
    _models: dict = field(default_factory=dict)

    def tfidf(self):
        """The catalog TF-IDF similarity, one instance for every family that uses it."""
        if "tfidf" not in self._models:
            self._models["tfidf"] = self.make_tfidf()
        return self._models["tfidf"]

    def llm_topics(self, section: dict):
        """The LLM topic extractor of a family's config section (`llm`: backend and options)."""
        from crseval.metrics.topic_words import LlmTopics  # it loads gensim: only where LLM topics are asked

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


def no_backends(scoring: dict) -> dict[str, dict]:
    """A family that calls no LLM."""
    return {}


def no_settings(scoring: dict) -> list[str]:
    """A family no setting of which asks for it (no embedding users, no figures, no scatter columns)."""
    return []


def never(scoring: dict) -> bool:
    return False


def no_problems(config: Any) -> Iterator[str]:
    """A family whose settings the schema checks completely."""
    return iter(())


def no_figures(scoring: dict, scatter: list[str]) -> list[str]:
    return []


def no_figure_params(scoring: dict) -> dict[str, dict]:
    return {}


@dataclass(frozen=True)
class FamilyKind:
    """A metric family as the rest of the library sees it: every field is given (no defaults), so that a
    family that forgets one does not import. `scoring` is the `scoring` config section (schema defaults
    filled in); `config` is the whole config, as the checks see it (possibly of the wrong shape)."""

    name: str  # its name in `scoring.metrics` and its section `scoring.<name>`
    summary: str  # one line for the docs
    # The MetricFamily class: `(ScoringContext) -> family`, with `session_columns` and `turn_columns`.
    scorer: type
    parse_settings: Callable[[dict], Any]  # its section `scoring.<name>` -> the settings it scores with
    # scoring -> config key (`scoring.<name>`) -> the LLM backend its score jobs call (only when selected)
    backends: Callable[[dict], dict[str, dict]]
    embedding_users: Callable[[dict], list[str]]  # scoring -> the keys that make it load the embedding model
    reads_lda: Callable[[dict], bool]  # scoring -> whether its score jobs read the LDA topic model
    checks: Callable[[Any], Iterator[str]]  # config -> problems beyond the schema, each starting with its key
    expectations: tuple[Expectation, ...]  # what the calibration systems should show on its columns
    # Its metrics among `stats.metrics`' default, in that order; a family with none is not among the families
    # `scoring.metrics` selects by default (crseval.metrics.families.schema_part).
    headline: tuple[str, ...]
    # (scoring, the experiment's scatter columns: every family's and the judge's) -> its figures
    figures: Callable[[dict, list[str]], list[str]]
    scatter_columns: Callable[[dict], list[str]]  # scoring -> its columns TAS is plotted against
    distribution_columns: tuple[str, ...]  # its columns in the distributions figure
    # scoring -> figure -> the settings the plots rule draws it with (the configured TAS weights)
    figure_params: Callable[[dict], dict[str, dict]]

    @property
    def session_columns(self) -> tuple[Column, ...]:
        return self.scorer.session_columns

    @property
    def turn_columns(self) -> tuple[Column, ...]:
        return self.scorer.turn_columns

    def settings(self, scoring: dict) -> Any:
        """Its settings, parsed from its section of `scoring` (a family without settings has no section)."""
        return self.parse_settings(scoring.get(self.name, {}))
