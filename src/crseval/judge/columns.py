"""The judge's criteria and the table columns that carry them: one list for the judge, the tables,
the statistics and the figures, so that a criterion added here reaches all of them."""

from __future__ import annotations

from crseval.core.columns import Column

CRITERIA = ("proactiveness", "coherence", "personalization")


def score_column(criterion: str) -> str:
    """The mean score over samples: `judge_<criterion>`."""
    return f"judge_{criterion}"


def spread_column(criterion: str) -> str:
    return f"judge_{criterion}_sd"


def rationale_column(criterion: str) -> str:
    return f"judge_{criterion}_rationale"


def samples_column(criterion: str) -> str:
    """Every sample's score as a JSON list (null where a sample failed)."""
    return f"judge_{criterion}_scores"


# The mean scores, in the order of CRITERIA: the judge's metrics.
SCORE_COLUMNS = tuple(score_column(c) for c in CRITERIA)


def _text(name: str, label: str) -> Column:
    return Column(name, label, "text", dtype="string", metric=False)


SESSION_COLUMNS = (
    Column("judge_samples", "judge samples asked", "count", dtype="int64", metric=False),
    Column("judge_valid_samples", "judge samples that parsed", "count", dtype="int64", metric=False),
    _text("judge_preferences_source", "where the judge's summary of preferences came from"),
    *(
        column
        for c in CRITERIA
        for column in (
            # the thesis table names the judge's means by the bare criterion
            Column(score_column(c), f"judge: {c}", "1-5", True, thesis_name=c),
            Column(spread_column(c), f"judge: {c} (SD over samples)", "score points", metric=False),
            _text(rationale_column(c), f"judge: {c}, rationale"),
            _text(samples_column(c), f"judge: {c}, every sample's score"),
        )
    ),
    _text("judge_missing_reason", "why no judgement was recorded"),
    _text("judge_raw_reply", "the judge's last unusable reply"),
)
