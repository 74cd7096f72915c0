"""What a column of the experiment's tables is, declared once by the stage that writes it.

Every metric family, the scorer and the judge declare their columns with `Column`; the column registry
(crseval.statistics.column_registry) gathers them, and the tables, statistics, checks and figures read
label, range, direction, whether the column needs the simulator's ground truth and its name in the
thesis table from there, so that
none of these facts is written down twice. The identifier columns every table shares are here, and
the human labels an imported session carries.
"""

from __future__ import annotations

from dataclasses import dataclass

DTYPES = ("float64", "int64", "int32", "bool", "string")


@dataclass(frozen=True)
class Column:
    """One column of `sessions.parquet` or `turns.parquet`.

    `metric`: a measurement that is averaged per system (model_metrics.csv) and may be compared
    across systems; identifiers, counts of bookkeeping, spreads and texts are not. `higher_is_better`
    is None for descriptive statistics that have no better direction (reply length, distinct-n).
    `ground_truth`: computed from the simulator's ground truth, so NaN for imported sessions.
    """

    name: str
    label: str
    unit: str  # the range ("0-1", "1-5") or unit ("turns", "bits per word") of a value
    higher_is_better: bool | None = None
    ground_truth: bool = False
    thesis_name: str | None = None
    dtype: str = "float64"
    metric: bool = True

    def __post_init__(self):
        if self.dtype not in DTYPES:
            raise ValueError(f"column {self.name}: dtype {self.dtype!r} is not one of {DTYPES}")
        if self.metric and self.dtype not in ("float64", "int64"):
            raise ValueError(f"column {self.name}: a metric is numeric")


def identifier(name: str, label: str, dtype: str) -> Column:
    return Column(name, label, "identifier", dtype=dtype, metric=False)


# Columns of every table: which session (and turn) a row belongs to.
SESSION_ID_COLUMNS = (
    identifier("system", "system", "string"),
    identifier("session_id", "session", "string"),
    identifier("session_index", "session index", "int64"),
    identifier("seed", "session seed", "int64"),
    identifier("shard", "shard", "int32"),
    # which meeting of the same user and system (sessions.trials): only in an experiment with several
    identifier("trial", "trial", "int32"),
)
TURN_ID_COLUMNS = (*SESSION_ID_COLUMNS, identifier("turn", "turn", "int32"))
# Human labels an imported session carries (its `labels`), beside its identifiers in the sessions
# table: NaN for a simulated session and for a dialogue its corpus left unlabelled. Not metrics: what
# the metrics may be checked against.
LABEL_COLUMNS = (Column("satisfied", "user satisfied (human label)", "1 satisfied, 0 frustrated", metric=False),)
# People's verdicts on an imported dialogue, one column per verdict its format declares
# (crseval.corpora.format_kind.Verdict): `verdict_<name>`, declared by pattern. Labels, not metrics.
VERDICT_PREFIX = "verdict_"


def verdict_column(name: str) -> Column | None:
    """The declaration of the verdict column `name` (`verdict_<verdict>`), or None when `name` is none."""
    verdict = name.removeprefix(VERDICT_PREFIX)
    if verdict == name or not verdict:
        return None
    return Column(
        name,
        f"people's verdict: {verdict.replace('_', ' ')} (human label)",
        "binary 1 or 0, or the mean of ordinal scores",
        metric=False,
    )
