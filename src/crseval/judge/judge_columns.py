"""The judges' criteria and the table columns that carry them: one list for the judges, the tables,
the statistics and the figures, so that a criterion added here reaches all of them.

The first judge (`judge.backend`) writes `judge_<criterion>` and the other columns it always had; a
panel judge (`judge.panel`, named `<name>`) writes the same columns as `judge_<name>_<criterion>`,
... Panel names come from the config, so their columns are declared by pattern: `declared` names
the Column of any such name, and `panel_columns("<name>")` lists them for the docs.
"""

from __future__ import annotations

import re

from crseval.core.columns import Column
from crseval.metrics.expectations import ADAPTATION, Expectation, column_named

CRITERIA = ("proactiveness", "coherence", "personalization")


def column(base: str, judge: str | None = None) -> str:
    """`judge_<base>` of the first judge, `judge_<name>_<base>` of the panel judge `judge`."""
    return f"judge_{base}" if judge is None else f"judge_{judge}_{base}"


def score_column(criterion: str, judge: str | None = None) -> str:
    """The mean score over samples: `judge_<criterion>`."""
    return column(criterion, judge)


def spread_column(criterion: str, judge: str | None = None) -> str:
    return column(f"{criterion}_sd", judge)


def rationale_column(criterion: str, judge: str | None = None) -> str:
    return column(f"{criterion}_rationale", judge)


def samples_column(criterion: str, judge: str | None = None) -> str:
    """Every sample's score as a JSON list (null where a sample failed)."""
    return column(f"{criterion}_scores", judge)


def geval_column(criterion: str, judge: str | None = None) -> str:
    """The G-Eval score: the expected score under the judge's probabilities of the digits 1-5."""
    return column(f"{criterion}_geval", judge)


# The mean scores of the first judge, in the order of CRITERIA: the judge's metrics.
SCORE_COLUMNS = tuple(score_column(c) for c in CRITERIA)


def _text(name: str, label: str) -> Column:
    return Column(name, label, "text", dtype="string", metric=False)


def session_columns(judge: str | None = None) -> tuple[Column, ...]:
    """The columns one judge writes (a panel judge leaves out where the preferences came from: the
    same for every judge)."""
    who = "judge" if judge is None else f"judge {judge}"
    about = "" if judge is None else f"{who}: "  # the first judge's columns keep their labels
    return (
        Column(column("samples", judge), f"{who} samples asked", "count", dtype="int64", metric=False),
        Column(column("valid_samples", judge), f"{who} samples that parsed", "count", dtype="int64", metric=False),
        *(() if judge else (_text("judge_preferences_source", "where the judge's summary of preferences came from"),)),
        *(
            declaration
            for c in CRITERIA
            for declaration in (
                # the thesis table names the first judge's means by the bare criterion
                Column(score_column(c, judge), f"{who}: {c}", "1-5", True, thesis_name=None if judge else c),
                Column(spread_column(c, judge), f"{who}: {c} (SD over samples)", "score points", metric=False),
                _text(rationale_column(c, judge), f"{who}: {c}, rationale"),
                _text(samples_column(c, judge), f"{who}: {c}, every sample's score"),
                Column(geval_column(c, judge), f"{who}: {c}, G-Eval (probability-weighted)", "1-5", True),
            )
        ),
        _text(column("missing_reason", judge), f"{about}why no judgement was recorded"),
        _text(
            column("raw_reply", judge),
            "the judge's last unusable reply" if judge is None else f"{about}its last unusable reply",
        ),
        _text(column("geval_missing_reason", judge), f"{about}why G-Eval scores are missing"),
    )


SESSION_COLUMNS = session_columns()
# What the calibration systems should show on the first judge's scores (crseval.checks.validity). Time-aware
# (`pools_foci` False): the judge reads the conversation in order beside what the user wanted turn by turn.
EXPECTATIONS = (
    Expectation(
        column_named(SESSION_COLUMNS, score_column("personalization")),
        ADAPTATION,
        "personalization is judged as following the user's wishes, changes of mind included",
    ),
    Expectation(
        column_named(SESSION_COLUMNS, score_column("coherence")),
        ADAPTATION,
        "a reply that answers the previous request fits the dialogue; one that answers an older request "
        "or none breaks its thread",
    ),
)
# First words after `judge_` of the first judge's columns: a panel judge of such a name would write
# columns of the first judge (`judge_valid_samples`), so its name may be none of them.
RESERVED_NAMES = tuple(sorted({c.name.split("_")[1] for c in SESSION_COLUMNS}))
# A panel judge's name: lower-case letters and digits, no underscore, so that `judge_<name>_...`
# reads back unambiguously, and no reserved name (the config schema's pattern; a test keeps them equal).
_RESERVED, _NAME = "|".join(RESERVED_NAMES), "[a-z][a-z0-9]{0,31}"
PANEL_NAME = f"^(?!({_RESERVED})$){_NAME}$"


def panel_columns(name: str) -> tuple[Column, ...]:
    """The columns the panel judge `name` writes."""
    return session_columns(name)


_PANEL_COLUMN = re.compile(f"^judge_(?!({_RESERVED})_)(?P<name>{_NAME})_(?P<base>.+)$")
# what follows `judge_<name>_` in a panel judge's columns -> position in panel_columns(name)
_PANEL_BASES = {c.name.removeprefix("judge_x_"): i for i, c in enumerate(panel_columns("x"))}


def _panel_match(name: str) -> re.Match | None:
    match = _PANEL_COLUMN.match(name)
    return match if match and match["base"] in _PANEL_BASES else None


def panel_judge_of(name: str) -> str | None:
    """The panel judge whose column `name` is, or None (a column of the first judge, or no judge's)."""
    match = _panel_match(name)
    return match["name"] if match else None


def declared(name: str) -> Column | None:
    """The declaration of a panel judge's column, or None when `name` is none."""
    match = _panel_match(name)
    return panel_columns(match["name"])[_PANEL_BASES[match["base"]]] if match else None


def panel_judges(columns) -> list[str]:
    """The panel judges that wrote some of `columns`, in the order their columns first appear."""
    return list(dict.fromkeys(j for j in map(panel_judge_of, columns) if j is not None))
