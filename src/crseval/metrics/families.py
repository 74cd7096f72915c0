"""The metric families, by the name `scoring.metrics` gives them (crseval.metrics.family.FamilyKind).

Each family is declared in the module that implements it; a new family is that module and one entry
in FAMILY_KINDS, whose order is the order of the families' columns in the tables (the config schema gets
their names and the defaults that name them from `schema_part`). Everything that
depends on which families an experiment selects (the LLMs and models a score job loads, the topic
model it reads, the config checks, the calibration expectations, the headline metrics, the figures)
asks here. Every function but `config_problems` takes the `scoring` config section (schema defaults
filled in); `config_problems` takes the whole config, of any shape.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from crseval.core.config_checks import SchemaPart
from crseval.core.registry import look_up
from crseval.metrics import adherence, conduct, goals, grounded, legacy_cas, response_stats, tool_use
from crseval.metrics.expectations import Expectation
from crseval.metrics.family import FamilyKind

FAMILY_KINDS: dict[str, FamilyKind] = {
    kind.name: kind
    for kind in (
        grounded.KIND,
        legacy_cas.KIND,
        adherence.KIND,
        goals.KIND,
        response_stats.KIND,
        conduct.KIND,
        tool_use.KIND,
    )
}


def family_kind(name: str) -> FamilyKind:
    """The family named `name`; a ValueError naming the known ones (and the closest) otherwise."""
    return look_up(FAMILY_KINDS, name, "metric family")


def selected(scoring: dict) -> list[FamilyKind]:
    """The families `scoring.metrics` selects, in FAMILY_KINDS order (a ValueError for an unknown name)."""
    names = [family_kind(name).name for name in scoring.get("metrics", [])]
    return [kind for name, kind in FAMILY_KINDS.items() if name in names]


def scoring_backends(scoring: dict) -> dict[str, dict]:
    """The LLMs a score job calls, by the config key that uses them (`scoring.cas`): only those of the
    selected families."""
    backends: dict[str, dict] = {}
    for kind in selected(scoring):
        backends |= kind.backends(scoring)
    return backends


def embedding_users(scoring: dict) -> list[str]:
    """The settings that make scoring load the all-MiniLM-L6-v2 sentence embedding model (in-process,
    torch): only those of the selected families."""
    return [key for kind in selected(scoring) for key in kind.embedding_users(scoring)]


def reads_lda(scoring: dict) -> bool:
    """Whether a score job reads the LDA topic model (the legacy CAS with `topics: lda`)."""
    return any(kind.reads_lda(scoring) for kind in selected(scoring))


def config_problems(config: Any) -> list[str]:
    """The problems of every family's settings beyond the schema, selected or not (a setting is checked
    whenever it is written), each starting with its key path; values of the wrong shape are skipped
    (the schema reports them)."""
    return [problem for kind in FAMILY_KINDS.values() for problem in kind.checks(config)]


def scatter_columns(scoring: dict) -> list[str]:
    """The selected families' columns TAS is plotted against (the judge adds its scores)."""
    return [column for kind in selected(scoring) for column in kind.scatter_columns(scoring)]


def figures(scoring: dict, scatter: list[str] | None = None) -> list[str]:
    """The selected families' figures. `scatter`: every column of the experiment TAS is plotted against
    (the families' and the judge's); None for the families' alone."""
    scatter = scatter_columns(scoring) if scatter is None else list(scatter)
    return [figure for kind in selected(scoring) for figure in kind.figures(scoring, scatter)]


def distribution_columns(scoring: dict) -> list[str]:
    """The selected families' columns in the distributions figure."""
    return [column for kind in selected(scoring) for column in kind.distribution_columns]


def figure_params(scoring: dict) -> dict[str, dict]:
    """Figure -> the settings the plots rule draws it with, of the selected families (TAS: the
    configured weights the weight-sensitivity grid holds and marks)."""
    params: dict[str, dict] = {}
    for kind in selected(scoring):
        params |= kind.figure_params(scoring)
    return params


def headline_metrics(metrics_selected: Iterable[str]) -> list[str]:
    """The headline metrics (`stats.metrics`' default) of the families named in `metrics_selected`
    (`scoring.metrics`), in FAMILY_KINDS order."""
    names = {family_kind(name).name for name in metrics_selected}
    return [metric for name, kind in FAMILY_KINDS.items() if name in names for metric in kind.headline]


def schema_part() -> SchemaPart:
    """The families' part of the config schema (crseval.core.config_checks.compose_schema): their names, in
    FAMILY_KINDS order; `scoring.metrics`' default, the families with headline metrics; `stats.metrics`'
    default, their headline metrics."""
    return SchemaPart(
        settings={
            ("properties", "scoring", "properties", "metrics", "items"): {"enum": list(FAMILY_KINDS)},
            ("properties", "scoring", "properties", "metrics"): {
                "default": [name for name, kind in FAMILY_KINDS.items() if kind.headline]
            },
            ("properties", "stats", "properties", "metrics"): {"default": headline_metrics(FAMILY_KINDS)},
        }
    )


def expectations() -> tuple[Expectation, ...]:
    """Every family's calibration expectations, in FAMILY_KINDS order and each family's own."""
    return tuple(e for kind in FAMILY_KINDS.values() for e in kind.expectations)
