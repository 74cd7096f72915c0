"""Do the metrics agree with people? Every metric against the verdicts of several corpora, beside two
baselines that need no metric: the length of the replies and the identity of the system.

A corpus is a table of its dialogues (one row each: `session_id`, `system`, the metric columns, the
verdict column) with its verdict's scale: `binary` (accepted or not, satisfied or frustrated) or
`ordinal` (a mean of 1-5 scores). Everything is computed over *pairs of dialogues whose verdicts differ*:

- agreement: for a binary verdict the AUC, P(metric of the better dialogue > metric of the worse), ties
  in the metric counting half; for an ordinal verdict Kendall's tau-b. The concordance C (the AUC's
  formula over every pair with different verdicts: Harrell's C) is computed for both scales, and is the
  unit of the pooled estimate and of agreement within a system;
- read in the metric's declared direction (`oriented`): above chance (0.5 for the AUC and C, 0 for tau-b)
  means the metric agrees with people. A metric without a declared direction can only be *associated*
  with the verdict, and its distance from chance is what is compared;
- *beyond length*: the metric's oriented distance from chance minus the distance of mean words per reply
  (`response_words`), whichever direction length takes: the baseline is given its best side;
- *beyond system*: the same against a predictor that knows only which system wrote the dialogue (the mean
  verdict of the system's dialogues), where a corpus has several systems;
- *within system*: C over pairs of dialogues of the same system only, which no system-level
  difference (such as reply length between a chat model and a small one) can explain;
- *votes*: the share of pairwise votes whose preferred side's dialogue the metric scores higher (ties half);
- *pooled*: C over the pairs of every corpus, each pair within one corpus (stratified by corpus).

Intervals are percentile bootstrap intervals with dialogues resampled (within each verdict for a binary
verdict, so both stay present; within each corpus for the pooled estimate), the metric and its baseline
on the same resamples (paired). Every statistic is a ratio of sums of integer pair weights over integer
resample counts, computed in integer arithmetic: the same on every CPU, so no threshold moves.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.stats import norm

from crseval.checks.human_agreement import session_metrics
from crseval.corpora.formats import corpus_format
from crseval.statistics.analysis_plan import adjusted_p_values

NAN = math.nan
LENGTH = "response_words"  # mean words per system reply: the length baseline
SCALES = ("binary", "ordinal")
POOLED = "pooled"
# Columns of the agreement table, in order.
COLUMNS = [
    "metric",
    "label",
    "corpus",
    "scale",
    "between_people",
    "in_pool",
    "higher_is_better",
    "dialogues",
    "pairs",
    "statistic",
    "value",
    "ci_low",
    "ci_high",
    "oriented",
    "oriented_low",
    "oriented_high",
    "concordance",
    "beyond_length",
    "beyond_length_low",
    "beyond_length_high",
    "beyond_system",
    "beyond_system_low",
    "beyond_system_high",
    "within_system",
    "within_system_low",
    "within_system_high",
    "votes",
    "votes_agreed",
    "votes_low",
    "votes_high",
    "p_beyond_length",
    "p_beyond_length_holm",
    "verdict",
]


@dataclass(frozen=True)
class Corpus:
    """One corpus's dialogues with people's verdicts."""

    name: str
    sessions: pd.DataFrame  # one row per dialogue: session_id, system, metric columns, the verdict column
    verdict: str  # the verdict column, e.g. `verdict_accepted`
    scale: str  # binary | ordinal
    between_people: bool  # the recommender is a person, not a system
    votes: pd.DataFrame | None = None  # pairwise votes (crseval.corpora.votes.VOTES_SCHEMA), where it has them
    pooled: bool = True  # part of the pooled estimate (a corpus's primary verdict; its other verdicts are not)

    def __post_init__(self):
        if self.scale not in SCALES:
            raise ValueError(f"corpus {self.name}: scale must be one of {SCALES}, not {self.scale!r}")

    @property
    def labelled(self) -> pd.DataFrame:
        """Its dialogues with a verdict."""
        return self.sessions[self.sessions[self.verdict].notna()].reset_index(drop=True)


class Pairs:
    """The pair structure of one corpus's labelled dialogues and its bootstrap resample counts.

    `better[i, j]` is 1 when dialogue i's verdict is above j's; `same_system` marks pairs of one system.
    `counts` (resamples + 1 rows x dialogues): how often each dialogue is drawn; row 0 is the data itself
    (every count 1). A statistic is a ratio of quadratic forms `counts_r' A counts_r` with A of small
    integers: every partial sum is an integer far below 2**53, so float64 products are exact whatever order
    BLAS sums in, and the statistics are the same on every CPU."""

    def __init__(self, verdicts: np.ndarray, systems: np.ndarray, scale: str, resamples: int, seed: int):
        self.n = len(verdicts)
        self.scale = scale
        self.verdict_sign = np.sign(verdicts[:, None] - verdicts[None, :])
        self.better = (self.verdict_sign > 0).astype(float)
        self.same_system = (systems[:, None] == systems[None, :]).astype(float)
        self.counts = self._draw(verdicts, scale, resamples, seed)
        self._cache: dict = {}

    def _draw(self, verdicts: np.ndarray, scale: str, resamples: int, seed: int) -> np.ndarray:
        """Row 0: the data; then `resamples` rows of counts, drawn within each verdict for a binary scale."""
        rng = np.random.default_rng(seed)
        counts = np.zeros((resamples + 1, self.n))
        counts[0] = 1
        binary = scale == "binary"
        strata = [np.flatnonzero(verdicts == v) for v in np.unique(verdicts)] if binary else [np.arange(self.n)]
        for members in strata:
            drawn = members[rng.integers(0, len(members), (resamples, len(members)))]
            for row in range(resamples):
                counts[row + 1] += np.bincount(drawn[row], minlength=self.n)
        return counts

    def form(self, matrix: np.ndarray) -> np.ndarray:
        """counts_r' A counts_r for every row r."""
        return np.einsum("ri,ri->r", self.counts @ matrix, self.counts)

    def cached_form(self, key: tuple, make) -> np.ndarray:
        """A form that depends only on which dialogues have a value (`key`), computed once."""
        if key not in self._cache:
            self._cache[key] = self.form(make())
        return self._cache[key]


def _signs(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """sign(v_i - v_j) over the pairs where both values exist, and the mask of those pairs."""
    present = ~np.isnan(values)
    filled = np.where(present, values, 0.0)
    both = (present[:, None] & present[None, :]).astype(float)
    return np.sign(filled[:, None] - filled[None, :]) * both, both


@dataclass
class Resampled:
    """A statistic on the data (`point`) and on each resample (`boot`)."""

    point: float
    boot: np.ndarray

    @classmethod
    def of(cls, values: np.ndarray) -> "Resampled":
        return cls(float(values[0]), values[1:])

    def interval(self, level: float) -> tuple[float, float]:
        defined = self.boot[~np.isnan(self.boot)]
        if not len(defined) or math.isnan(self.point):
            return NAN, NAN
        tail = (1 - level) / 2 * 100
        low, high = np.percentile(defined, [tail, 100 - tail])
        return float(low), float(high)


def _ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denominator > 0, numerator / np.where(denominator > 0, denominator, 1), NAN)


class CorpusStatistics:
    """Concordance, AUC, tau-b and within-system C of one predictor on one corpus, on the data and every
    resample, over the pairs where it has values (and, with `present`, where another predictor has too);
    the sums behind C are kept so that corpora pool by adding them."""

    def __init__(self, pairs: Pairs, values: np.ndarray, present: np.ndarray | None = None):
        if present is not None:
            values = np.where(present, values, NAN)
        self.pairs = pairs
        self.present = ~np.isnan(values)
        self.signs, self.both = _signs(values)
        key = self.present.tobytes()
        # twice the concordant weight over pairs with different verdicts: 2 [v_i > v_j] + [v_i = v_j]
        self.c_numerator = pairs.form(pairs.better * (self.both + self.signs))
        self.c_denominator = 2 * pairs.cached_form(("c", key), lambda: pairs.better * self.both)
        self._key = key

    def concordance(self) -> np.ndarray:
        return _ratio(self.c_numerator, self.c_denominator)

    def native(self) -> np.ndarray:
        """AUC for a binary verdict (C itself), tau-b for an ordinal one."""
        if self.pairs.scale == "binary":
            return self.concordance()
        if not hasattr(self, "_tau"):
            pairs = self.pairs
            numerator = pairs.form(self.signs * pairs.verdict_sign)
            untied = pairs.form(np.abs(self.signs))
            verdict_untied = pairs.cached_form(("t", self._key), lambda: np.abs(pairs.verdict_sign) * self.both)
            self._tau = _ratio(numerator, np.sqrt(untied * verdict_untied))
        return self._tau

    def within_system(self) -> np.ndarray:
        pairs = self.pairs
        numerator = pairs.form(pairs.better * (self.both + self.signs) * pairs.same_system)
        denominator = pairs.cached_form(("w", self._key), lambda: pairs.better * self.both * pairs.same_system)
        return _ratio(numerator, 2 * denominator)


def _chance(statistic: str) -> float:
    return 0.0 if statistic == "tau-b" else 0.5


def _oriented(values: np.ndarray, direction: bool | None, chance: float) -> np.ndarray:
    """Distance from chance in the declared direction (negative: disagrees); without a direction, in the
    direction the data itself takes (values[0], the statistic on the data), kept in every resample: the
    absolute distance of each resample would be above 0 even for a predictor at chance."""
    if direction is None:
        direction = not values[0] < chance  # NaN or at chance: as if higher were better
    return (values - chance) if direction else (chance - values)


def system_baseline(sessions: pd.DataFrame, verdict: str) -> np.ndarray:
    """Per dialogue, the mean verdict of its system's dialogues: what is known of a dialogue from which system
    wrote it. NaN for a system's only dialogue, whose mean would be its own verdict. (Leaving each dialogue's own
    verdict out would rank a system's satisfied dialogues below its frustrated ones, a pattern of the estimator,
    not of the system.)"""
    groups = sessions.groupby("system")[verdict]
    mean = sessions["system"].map(groups.mean()).to_numpy(dtype=float)
    count = sessions["system"].map(groups.count()).to_numpy(dtype=float)
    return np.where(count > 1, mean, NAN)


def vote_pairs(votes: pd.DataFrame | None, sessions: pd.DataFrame) -> np.ndarray:
    """(winner row, loser row) of each decided vote whose two dialogues are both in `sessions`."""
    if votes is None or not len(votes):
        return np.zeros((0, 2), np.int64)
    position = {session: row for row, session in enumerate(sessions["session_id"])}
    rows = []
    for vote in votes.itertuples():
        if (
            vote.winner is None
            or pd.isna(vote.winner)
            or vote.session_a not in position
            or vote.session_b not in position
        ):
            continue
        a, b = position[vote.session_a], position[vote.session_b]
        rows.append((a, b) if vote.winner == vote.system_a else (b, a))
    return np.array(rows, np.int64).reshape(-1, 2)


def _votes_agreed(values, votes: np.ndarray, direction: bool | None, resamples: int, seed: int, level: float) -> dict:
    """The share of decided votes whose preferred side's dialogue the metric scores higher (ties half), in
    its declared direction (undeclared: as if higher were better), with a percentile bootstrap over votes."""
    empty = {"votes": 0, "votes_agreed": NAN, "votes_low": NAN, "votes_high": NAN}
    if not len(votes):
        return empty
    winner, loser = values[votes[:, 0]], values[votes[:, 1]]
    keep = ~np.isnan(winner) & ~np.isnan(loser)
    if not keep.any():
        return empty
    sign = np.sign(winner[keep] - loser[keep]) * (-1 if direction is False else 1)
    agreed = (1 + sign) / 2
    rng = np.random.default_rng(seed)
    boot = agreed[rng.integers(0, len(agreed), (resamples, len(agreed)))].mean(axis=1)
    low, high = Resampled(float(agreed.mean()), boot).interval(level)
    return {"votes": int(keep.sum()), "votes_agreed": float(agreed.mean()), "votes_low": low, "votes_high": high}


def _verdict(low: float, high: float, point: float, direction: bool | None) -> str:
    """agrees / disagrees (declared direction) or associated (undeclared) when the interval of the signed
    distance from chance excludes 0; no evidence otherwise; not measured without a value."""
    if math.isnan(point) or math.isnan(low):
        return "not measured"
    if low > 0 or high < 0:
        if direction is None:
            return "associated"
        return "agrees" if low > 0 else "disagrees"
    return "no evidence"


@dataclass
class Prepared:
    """One corpus ready for the predictors: its labelled dialogues, pairs, baselines and votes."""

    corpus: Corpus
    table: pd.DataFrame
    pairs: Pairs
    length: np.ndarray
    system: np.ndarray | None  # None: one system only
    votes: np.ndarray
    statistic: str

    @classmethod
    def of(cls, corpus: Corpus, resamples: int, seed: int) -> "Prepared":
        table = corpus.labelled
        verdicts = table[corpus.verdict].to_numpy(dtype=float)
        pairs = Pairs(verdicts, table["system"].to_numpy(dtype=str), corpus.scale, resamples, seed)
        length = table[LENGTH].to_numpy(dtype=float) if LENGTH in table else np.full(len(table), NAN)
        system = system_baseline(table, corpus.verdict) if table["system"].nunique() > 1 else None
        statistic = "AUC" if corpus.scale == "binary" else "tau-b"
        return cls(corpus, table, pairs, length, system, vote_pairs(corpus.votes, table), statistic)

    def values(self, name: str) -> np.ndarray | None:
        if name == LENGTH_REFERENCE:
            return self.length
        if name == SYSTEM_REFERENCE:
            return self.system
        return self.table[name].to_numpy(dtype=float) if name in self.table else None


LENGTH_REFERENCE = "reference: words per reply"
SYSTEM_REFERENCE = "reference: system"
REFERENCES = {
    LENGTH_REFERENCE: ("reference: words per reply", None),
    SYSTEM_REFERENCE: ("reference: system (the mean verdict of its dialogues)", True),
}


def agreement_table(
    corpora: list[Corpus],
    metrics: dict[str, tuple[str, bool | None]],
    resamples: int,
    seed: int,
    level: float = 0.95,
) -> pd.DataFrame:
    """One row per predictor and corpus, and one pooled row per predictor (C over every corpus's pairs);
    `metrics`: column -> (label, declared direction: True higher is better, False lower, None undeclared).
    The two baselines are rows too (REFERENCES). A Holm adjustment over the metrics' pooled rows gives the
    p of being ahead of length (one-sided, normal approximation with the bootstrap's standard error)."""
    prepared = [Prepared.of(corpus, resamples, seed + 7919 * position) for position, corpus in enumerate(corpora)]
    rows = []
    for offset, (name, (label, direction)) in enumerate({**metrics, **REFERENCES}.items()):
        parts = []
        for corpus in prepared:
            values = corpus.values(name)
            if values is None:
                continue
            row, part = _corpus_row(name, label, direction, corpus, values, level)
            row |= _votes_agreed(values, corpus.votes, direction, resamples, seed + offset, level)
            rows.append(row)
            if corpus.corpus.pooled:
                parts.append(part)
        if parts:
            rows.append(_pooled_row(name, label, direction, parts, level))
    table = pd.DataFrame(rows).reindex(columns=COLUMNS)
    tested = (table["corpus"] == POOLED) & table["p_beyond_length"].notna() & ~table["metric"].isin(list(REFERENCES))
    if tested.any():
        table.loc[tested, "p_beyond_length_holm"] = adjusted_p_values(table.loc[tested, "p_beyond_length"], "holm")
    return table


def _summary(name, label, direction, statistic: str, values: np.ndarray, level: float) -> dict:
    """The columns every row shares: the statistic with its interval, oriented, and the verdict."""
    chance = _chance(statistic)
    native = Resampled.of(values)
    oriented = Resampled.of(_oriented(values, direction, chance))
    signed = Resampled.of(_oriented(values, direction is not False, chance))
    low, high = native.interval(level)
    o_low, o_high = oriented.interval(level)
    return {
        "metric": name,
        "label": label,
        "higher_is_better": direction,
        "statistic": statistic,
        "value": native.point,
        "ci_low": low,
        "ci_high": high,
        "oriented": oriented.point,
        "oriented_low": o_low,
        "oriented_high": o_high,
        "verdict": _verdict(*signed.interval(level), signed.point, direction),
    }


def _margin(own: np.ndarray, base: np.ndarray, direction: bool | None, chance: float, base_direction) -> np.ndarray:
    """The metric's oriented distance from chance minus the baseline's (length: in the direction it takes on
    these dialogues, its better side)."""
    return _oriented(own, direction, chance) - _oriented(base, base_direction, chance)


def _corpus_row(name, label, direction, corpus: Prepared, values: np.ndarray, level: float) -> tuple[dict, dict]:
    statistic, chance = corpus.statistic, _chance(corpus.statistic)
    own = CorpusStatistics(corpus.pairs, values)
    row = _summary(name, label, direction, statistic, own.native(), level)
    row |= {
        "corpus": corpus.corpus.name,
        "scale": corpus.corpus.scale,
        "between_people": corpus.corpus.between_people,
        "in_pool": corpus.corpus.pooled,
        "dialogues": int(own.present.sum()),
        "pairs": int(own.c_denominator[0] // 2),
        "concordance": float(own.concordance()[0]),
    }
    within = Resampled.of(own.within_system())
    row["within_system"] = within.point
    row["within_system_low"], row["within_system_high"] = within.interval(level)
    part = {"own": own}
    for column, reference, baseline in (
        ("beyond_length", LENGTH_REFERENCE, corpus.length),
        ("beyond_system", SYSTEM_REFERENCE, corpus.system),
    ):
        if baseline is None or name == reference:
            continue
        present = own.present & ~np.isnan(baseline)
        paired = (
            own
            if present.all() == own.present.all() and (present == own.present).all()
            else CorpusStatistics(corpus.pairs, values, present)
        )
        base = CorpusStatistics(corpus.pairs, baseline, present)
        margin = Resampled.of(_margin(paired.native(), base.native(), direction, chance, REFERENCES[reference][1]))
        row[column] = margin.point
        row[f"{column}_low"], row[f"{column}_high"] = margin.interval(level)
        part[column] = (paired, base)
    return row, part


def _pooled_row(name, label, direction, parts: list[dict], level: float) -> dict:
    """C over every corpus's pairs (each pair within one corpus), and its margin beyond length."""

    def pooled(stats: list[CorpusStatistics]) -> np.ndarray:
        return _ratio(sum(s.c_numerator for s in stats), sum(s.c_denominator for s in stats))

    own = pooled([part["own"] for part in parts])
    row = _summary(name, label, direction, "C", own, level)
    row |= {
        "corpus": POOLED,
        "scale": "pooled",
        "dialogues": int(sum(part["own"].present.sum() for part in parts)),
        "pairs": int(sum(part["own"].c_denominator[0] // 2 for part in parts)),
        "concordance": row["value"],
    }
    with_length = [part["beyond_length"] for part in parts if "beyond_length" in part]
    if with_length:
        paired, base = pooled([p for p, _ in with_length]), pooled([b for _, b in with_length])
        margin = Resampled.of(_margin(paired, base, direction, 0.5, None))
        row["beyond_length"] = margin.point
        row["beyond_length_low"], row["beyond_length_high"] = margin.interval(level)
        spread = float(np.nanstd(margin.boot, ddof=1)) if len(margin.boot) > 1 else NAN
        if spread > 0 and not math.isnan(margin.point):
            row["p_beyond_length"] = float(norm.sf(margin.point / spread))  # one-sided: ahead of length
    return row


def corpora_of(entries: list[dict], tables: dict[str, tuple[pd.DataFrame, pd.DataFrame]]) -> tuple[list[Corpus], dict]:
    """The corpora to judge the metrics against: one per verdict each corpus's format declares (the first,
    its primary verdict, pooled; the others beside it), from `entries` (human_agreement.corpora) and their
    tables (name -> (sessions, votes)); and the metrics with a value in any of them (column -> (label,
    declared direction))."""
    judged, metrics = [], {}
    for entry in entries:
        sessions, votes = tables[entry["name"]]
        kind = corpus_format(entry["format"])
        wanted = entry.get("verdicts")
        declared = [v for v in kind.verdicts if wanted is None or v.name in wanted]
        for position, verdict in enumerate(declared):
            column = f"verdict_{verdict.name}"
            if column not in sessions or sessions[column].notna().sum() < 2:
                continue
            primary = position == 0
            judged.append(
                Corpus(
                    name=entry["name"] if primary else f"{entry['name']}: {verdict.name}",
                    sessions=sessions,
                    verdict=column,
                    scale=verdict.scale,
                    between_people=kind.between_people,
                    votes=votes if primary and len(votes) else None,
                    pooled=primary,
                )
            )
        labelled = sessions[[c for c in sessions if c.startswith("verdict_")]].notna().any(axis=1)
        metrics |= {n: m for n, m in session_metrics(sessions[labelled]).items() if n not in metrics}
    return judged, metrics


def _number(value, digits: int = 2) -> str:
    return "–" if value is None or pd.isna(value) else f"{value:+.{digits}f}" if digits < 0 else f"{value:.{digits}f}"


def _interval(row: dict, column: str, low: str | None = None, high: str | None = None, signed: bool = False) -> str:
    low, high = low or f"{column}_low", high or f"{column}_high"
    if pd.isna(row.get(column)):
        return "–"
    form = "{:+.2f}" if signed else "{:.2f}"
    bounds = "" if pd.isna(row.get(low)) else f" [{form.format(row[low])}, {form.format(row[high])}]"
    return form.format(row[column]) + bounds


def shown_ahead(table: pd.DataFrame, alpha: float) -> pd.DataFrame:
    """The pooled rows of metrics shown ahead of reply length (Holm-adjusted p below `alpha`) that agree with
    people (or are associated with them), best first."""
    pooled = table[(table["corpus"] == POOLED) & ~table["metric"].isin(list(REFERENCES))]
    ahead = pooled[(pooled["p_beyond_length_holm"] < alpha) & pooled["verdict"].isin(["agrees", "associated"])]
    return ahead.sort_values("beyond_length", ascending=False)


def markdown(table: pd.DataFrame, corpora: list[Corpus], alpha: float = 0.05) -> str:
    """stats/people_agreement.md: what is shown first, then the pooled table and the table per corpus."""
    lines = ["# Agreement with people", ""]
    if not len(table):
        return "\n".join(lines + ["No corpus with people's verdicts was judged.", ""])
    lines += ["| corpus | dialogues with a verdict | verdict | scale | recommender |", "|---|---|---|---|---|"]
    for corpus in corpora:
        labelled = corpus.labelled
        who = "a person (two people talking)" if corpus.between_people else f"{labelled['system'].nunique()} system(s)"
        lines.append(f"| {corpus.name} | {len(labelled)} | `{corpus.verdict}` | {corpus.scale} | {who} |")
    pooled_names = ", ".join(c.name for c in corpora if c.pooled)
    ahead = shown_ahead(table, alpha)
    tested = int(((table["corpus"] == POOLED) & table["p_beyond_length_holm"].notna()).sum())
    lines += [
        "",
        "Agreement is computed over pairs of dialogues whose verdicts differ: the AUC for a binary verdict, Kendall's "
        "tau-b for an ordinal one, and the concordance C (the AUC's formula over every such pair) pooled over "
        f"the corpora ({pooled_names}; each pair within one corpus). *Oriented*: in the metric's declared direction, "
        "so above chance (0.5, or 0 for tau-b) means it agrees with people; a metric without a declared direction "
        "is *associated* with the verdict when its interval excludes chance either way. *Beyond length*: its "
        "oriented distance from chance minus that of mean words per reply (length given its better side); *beyond "
        "system*: the same against the mean verdict of the system's dialogues, where a corpus has several "
        "systems; *within system*: C over pairs of dialogues of one system. Intervals: 95% percentile bootstrap, "
        "dialogues resampled (within each verdict for a binary one), metric and baseline on the same resamples. "
        f"Holm p: one-sided, ahead of length pooled, adjusted over the {tested} metrics tested.",
        "",
        "## What is shown",
        "",
    ]
    if len(ahead):
        names = ", ".join(
            f"{row['label']} (C {row['value']:.2f}, {_interval(row, 'beyond_length', signed=True)} beyond length)"
            for row in ahead.to_dict("records")
        )
        lines.append(f"Shown ahead of reply length over the pooled corpora (Holm p < {alpha}): {names}.")
    else:
        lines.append(f"No metric is shown ahead of reply length over the pooled corpora (Holm p < {alpha}).")
    lines += [
        "",
        "## Pooled over the corpora",
        "",
        "| metric | C [95% CI] | oriented | beyond length [95% CI] | Holm p | verdict |",
        "|---|---|---|---|---|---|",
    ]
    pooled = table[table["corpus"] == POOLED].sort_values("oriented", ascending=False)
    for row in pooled.to_dict("records"):
        lines.append(
            f"| {row['label']} | {_interval(row, 'value', 'ci_low', 'ci_high')} | {_number(row['oriented'])} | "
            f"{_interval(row, 'beyond_length', signed=True)} | {_number(row['p_beyond_length_holm'], 3)} | "
            f"{row['verdict']} |"
        )
    lines += [
        "",
        "## Per corpus",
        "",
        "| metric | corpus | statistic [95% CI] | verdict | beyond length | beyond system | within system (C) "
        "| votes agreed |",
        "|---|---|---|---|---|---|---|---|",
    ]
    order = {name: position for position, name in enumerate(pooled["metric"])}
    per_corpus = (
        table[table["corpus"] != POOLED].assign(order=lambda t: t["metric"].map(order)).sort_values(["order", "corpus"])
    )
    for row in per_corpus.to_dict("records"):
        votes = (
            "–"
            if not row["votes"]
            else f"{_interval(row, 'votes_agreed', 'votes_low', 'votes_high')} of {int(row['votes'])}"
        )
        lines.append(
            f"| {row['label']} | {row['corpus']} | {row['statistic']} {_interval(row, 'value', 'ci_low', 'ci_high')} | "
            f"{row['verdict']} | {_interval(row, 'beyond_length', signed=True)} | "
            f"{_interval(row, 'beyond_system', signed=True)} | "
            f"{_interval(row, 'within_system')} | {votes} |"
        )
    return "\n".join(lines) + "\n"
