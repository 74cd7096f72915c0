"""The judge's criteria and the table columns that carry them: one list for the judge, the tables,
the statistics and the figures, so that a criterion added here reaches all of them."""

from __future__ import annotations

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


SCORE_COLUMNS = tuple(score_column(c) for c in CRITERIA)
# the thesis table names the judge's means by the bare criterion
THESIS_NAMES = {score_column(c): c for c in CRITERIA}
COUNT_COLUMNS = ("judge_samples", "judge_valid_samples")
TEXT_COLUMNS = frozenset(
    {
        *(rationale_column(c) for c in CRITERIA),
        *(samples_column(c) for c in CRITERIA),
        "judge_missing_reason",
        "judge_raw_reply",
        "judge_preferences_source",
    }
)
