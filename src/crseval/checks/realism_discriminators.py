"""The discriminators of the user realism check: how well a classifier tells a simulated turn from a real one
(the ROC AUC of a logistic regression cross-validated over folds grouped by person, its CI from a bootstrap of
people), on equal numbers of turns of both sides drawn as whole people (`equal_samples`), on the turns as said
or on content-blind text (`content_blind`).

A person's turns share words (a film they ask about, a way of greeting): split over folds, a discriminator
would learn the person in one fold and recognise them in the next, and a CI that takes turns as independent
would be too narrow. So the folds never split a person (`person_folds`) and the CI draws people
(`person_auc_interval`); DeLong's CI, which takes turns as independent, is kept beside it.
"""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
import pandas as pd
from scipy import sparse

from crseval.checks.realism_measures import turn_statistics
from crseval.language.user_acts import TurnReading
from crseval.statistics.intervals import draw_counts

DISCRIMINATORS = ("word", "char", "statistics")
# The discriminators that also run on content-blind text (`content_blind`): measures `auc_<kind>_blind`.
BLIND_DISCRIMINATORS = ("word", "char")
_SLOT = re.compile(r"\{(\w+)\}")


def _features(kind: str, texts: list[str]):
    """The features a discriminator of `kind` reads, and their names (the n-grams, or the turn statistics)."""
    from sklearn.feature_extraction.text import TfidfVectorizer  # scikit-learn: seconds to load, for this rule only

    if kind == "statistics":
        values = turn_statistics(texts)
        return values.to_numpy(float), list(values.columns)
    if kind == "word":
        vectorizer = TfidfVectorizer(analyzer="word", ngram_range=(1, 2), lowercase=True, min_df=1)
    elif kind == "char":
        vectorizer = TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 4), lowercase=True, min_df=1)
    else:
        raise ValueError(f"unknown discriminator features {kind!r}; known: word, char, statistics")
    matrix = vectorizer.fit_transform(texts)
    return matrix, list(vectorizer.get_feature_names_out())


def _placements(labels: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """DeLong's placement values: per positive, the share of negatives it outscores (ties count half);
    per negative, the share of positives that outscore it."""
    from scipy.stats import rankdata  # scipy.stats: seconds to load, for this rule only

    positive, negative = scores[labels == 1], scores[labels == 0]
    both = rankdata(np.concatenate([positive, negative]))
    over_negatives = (both[: len(positive)] - rankdata(positive)) / len(negative)
    under_positives = 1 - (both[len(positive) :] - rankdata(negative)) / len(positive)
    return over_negatives, under_positives


def _auc(labels: np.ndarray, scores: np.ndarray) -> float:
    """The ROC AUC of `scores` for `labels` (1 the positives), ties counting half."""
    return float(_placements(labels, scores)[0].mean())


def _delong_interval(labels: np.ndarray, scores: np.ndarray) -> tuple[float, float]:
    """The AUC's 95% CI from DeLong's variance (normal approximation), kept within [0, 1]."""
    over, under = _placements(labels, scores)
    spread = 1.959964 * np.sqrt(over.var(ddof=1) / len(over) + under.var(ddof=1) / len(under))
    auc = over.mean()
    return float(max(0.0, auc - spread)), float(min(1.0, auc + spread))


class TooFewPeople(ValueError):
    """A discriminator asked for more folds than a side has people: its AUC is not measured (n/a, with why)."""


def person_folds(labels: np.ndarray, people: np.ndarray, folds: int, seed: int) -> np.ndarray:
    """The fold of each turn: stratified by side and grouped by person (StratifiedGroupKFold, shuffled with
    `seed`), so that no person's turns are in two folds, on either side, and a discriminator never meets in
    its test fold a person it learned in training. TooFewPeople where a side has fewer people than folds, or
    a training part would lack a side."""
    from sklearn.model_selection import StratifiedGroupKFold  # scikit-learn: seconds to load, for this rule only

    for side, name in ((1, "simulated"), (0, "real")):
        found = len(set(people[labels == side]))
        if found < folds:
            who = "person" if found == 1 else "people"
            raise TooFewPeople(f"{found} {name} {who}, fewer than the {folds} folds (a person is in one fold)")
    groups = pd.factorize(people)[0]
    fold = np.empty(len(labels), dtype=int)
    split = StratifiedGroupKFold(n_splits=folds, shuffle=True, random_state=seed)
    for k, (_, test) in enumerate(split.split(np.zeros(len(labels)), labels, groups)):
        fold[test] = k
    for k in range(folds):
        if len(set(labels[fold != k])) < 2:
            raise TooFewPeople(f"fold {k + 1} holds every person of one side: its training part has one side")
    return fold


# The folds of the last few samples of people (`_folds_of`): the discriminators of one sample share them.
_FOLDS: dict[tuple, np.ndarray] = {}


def _folds_of(labels: np.ndarray, people: np.ndarray, folds: int, seed: int) -> np.ndarray:
    """person_folds, computed once for the same turns' sides and people (StratifiedGroupKFold deals people
    one at a time: seconds for thousands of them), remembered for the last eight samples."""
    key = (folds, seed, labels.tobytes(), tuple(people))
    if key not in _FOLDS:
        if len(_FOLDS) >= 8:
            _FOLDS.pop(next(iter(_FOLDS)))
        _FOLDS[key] = person_folds(labels, people, folds, seed)
    return _FOLDS[key]


def discriminator(
    simulated: list[str],
    real: list[str],
    kind: str = "word",
    folds: int = 5,
    seed: int = 0,
    simulated_people: list[str] | None = None,
    real_people: list[str] | None = None,
    balanced: bool = False,
    resamples: int = 1000,
    tells: bool = True,
) -> dict:
    """How well a logistic regression on `kind` features tells simulated turns (label 1) from real ones:
    the out-of-fold ROC AUC over `folds` folds stratified by side and grouped by person (`person_folds`;
    without people, each turn is a person of its own), its 95% CI from a bootstrap of people
    (`person_auc_interval`, `resamples` draws) and DeLong's (`delong_low`, `delong_high`, which takes the
    turns as independent), how many people each side has, and, with `tells`, the features that give each
    side away most (largest weights of a fit on all turns). `balanced` weighs each side's turns by the
    inverse of its share (a side with more turns does not count more). TooFewPeople where a side has fewer
    people than folds."""
    # scikit-learn: seconds to load, paid only by the rule that discriminates
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import cross_val_predict
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    texts = list(simulated) + list(real)
    labels = np.array([1] * len(simulated) + [0] * len(real))
    people = np.array(
        [*_people_of(simulated, simulated_people, "simulated"), *_people_of(real, real_people, "real")], dtype=object
    )
    if min(len(simulated), len(real)) < folds:
        raise TooFewPeople(f"the discriminator needs at least {folds} turns on each side")
    fold = _folds_of(labels, people, folds, seed)
    features, names = _features(kind, texts)

    def model():
        classifier = LogisticRegression(
            max_iter=1000, solver="liblinear", class_weight="balanced" if balanced else None
        )
        return make_pipeline(StandardScaler(), classifier) if kind == "statistics" else classifier

    split = [(np.flatnonzero(fold != k), np.flatnonzero(fold == k)) for k in range(folds)]
    scores = cross_val_predict(model(), features, labels, cv=split, method="decision_function")
    low, high = person_auc_interval(labels, scores, people, resamples, seed)
    delong_low, delong_high = _delong_interval(labels, scores)
    found = {
        "features": kind,
        "auc": _auc(labels, scores),
        "auc_ci_low": low,
        "auc_ci_high": high,
        "delong_low": delong_low,
        "delong_high": delong_high,
        "simulated_people": len(set(people[labels == 1])),
        "real_people": len(set(people[labels == 0])),
        "simulated_tells": [],
        "real_tells": [],
    }
    if tells:
        fitted = model().fit(features, labels)
        weights = (fitted[-1] if kind == "statistics" else fitted).coef_[0]
        order = np.argsort(weights)
        found["simulated_tells"] = [names[i] for i in order[::-1][:10] if weights[i] > 0]
        found["real_tells"] = [names[i] for i in order[:10] if weights[i] < 0]
    return found


def _people_of(texts: list[str], people: list[str] | None, side: str) -> list[str]:
    """The person of each turn of one side; without people, each turn a person of its own."""
    if people is None:
        return [f"{side} turn {i}" for i in range(len(texts))]
    if len(people) != len(texts):
        raise ValueError(f"{len(texts)} {side} turns but {len(people)} people")
    return list(people)


def person_auc_interval(
    labels: np.ndarray, scores: np.ndarray, people: np.ndarray, resamples: int, seed: int
) -> tuple[float, float]:
    """The 95% percentile bootstrap CI of the AUC of `scores` (`person_auc_draws`); NaN without resamples or
    with fewer than two people on a side."""
    drawn = person_auc_draws(labels, scores, people, resamples, seed)
    if not len(drawn):
        return float("nan"), float("nan")
    low, high = np.percentile(drawn, [2.5, 97.5])
    return float(low), float(high)


def person_auc_draws(
    labels: np.ndarray, scores: np.ndarray, people: np.ndarray, resamples: int, seed: int
) -> np.ndarray:
    """The AUC of `scores` for `labels` (1 the positives) in each of `resamples` draws of people with
    replacement (all of a person's turns together), each side as many people as it has, from a Generator
    of its own (`side_rng`). From ranks: each side's turns are counted per person and tie group of scores
    (`_merged_ties`), so a draw's weight per tie group is a matrix product, and its AUC the positives'
    weight times the negatives' weight below (ties half) over the product of the sides' weights. Drawn a
    block of at most AUC_BLOCK entries at a time: the same draws whatever the block. Empty without
    resamples or with fewer than two people on a side."""
    from scipy.stats import rankdata  # scipy.stats: seconds to load, for this rule only

    people = np.asarray(people, dtype=object)
    if not resamples or min(len(set(people[labels == side])) for side in (1, 0)) < 2:
        return np.zeros(0)
    ties = _merged_ties((rankdata(scores, method="dense") - 1).astype(np.int64), labels)
    width = int(ties.max()) + 1
    sides = []
    for side in (1, 0):
        mask = labels == side
        codes = pd.factorize(people[mask])[0]
        sides.append(sparse.csr_array((np.ones(mask.sum()), (codes, ties[mask])), shape=(codes.max() + 1, width)))
    generators = [side_rng(seed, side) for side in (1, 0)]
    found = []
    for rows in _rows(resamples, max(width, *(turns.shape[0] for turns in sides))):
        positive, negative = (
            (turns.T @ draw_counts(rng.integers(turns.shape[0], size=(rows, turns.shape[0])), turns.shape[0]).T).T
            for turns, rng in zip(sides, generators)
        )
        below = np.cumsum(negative, axis=1) - negative / 2
        found.append((positive * below).sum(axis=1) / (positive.sum(axis=1) * negative.sum(axis=1)))
    return np.concatenate(found)


def _merged_ties(ties: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Tie groups of scores (0, 1, ... in score order) with each run of consecutive groups that hold one
    side only made one group: a positive compares the same with every negative of a run below it, so the
    AUC is the same, and the bootstrap's arrays are as wide as the runs, not the distinct scores."""
    groups = ties.max() + 1
    has = [np.bincount(ties[labels == side], minlength=groups) > 0 for side in (1, 0)]
    kind = np.where(has[0] & has[1], 2, has[0].astype(int))  # 2: both sides, 1: positives only, 0: negatives only
    starts = np.ones(groups, dtype=bool)
    starts[1:] = (kind[1:] == 2) | (kind[1:] != kind[:-1])
    return (np.cumsum(starts) - 1)[ties]


# The people bootstrap of an AUC draws at most this many (resample, tie group) entries at once: a few
# arrays of them, about 16 MB each, whatever the resamples and the turns.
AUC_BLOCK = 1 << 21


def _rows(resamples: int, width: int):
    """Row counts of successive blocks of a (resamples, width) matrix, each of at most AUC_BLOCK entries."""
    rows = max(1, AUC_BLOCK // max(width, 1))
    for start in range(0, resamples, rows):
        yield min(rows, resamples - start)


def side_rng(seed: int, side: int) -> np.random.Generator:
    """The Generator of one side's draws (1 simulated, 0 real): the real side is drawn alike for every user."""
    return np.random.default_rng([seed, side])


def draw_people(people, n: int, rng: np.random.Generator, rounds: np.ndarray | None = None) -> np.ndarray:
    """`n` turns of whole people (`people`: the person of each turn, or a count of turns each a person of
    its own), in order: the people in an order drawn from `rng`, each taken with all their turns until `n`
    are reached, of the last one as many of its turns as are still needed (drawn). With `rounds` (the round
    of each turn's session, crseval.checks.realism_volumes.session_rounds) a person is taken a round at a
    time: every person's first round in the drawn order, then every person's second, and so on. All turns
    where there are no more than `n`."""
    codes = np.arange(people) if isinstance(people, int) else pd.factorize(np.asarray(people, dtype=object))[0]
    if n >= len(codes):
        return np.arange(len(codes))
    order = rng.permutation(codes.max() + 1)
    place = np.empty_like(order)
    place[order] = np.arange(len(order))
    unit = place[codes] if rounds is None else np.asarray(rounds) * len(order) + place[codes]
    by_unit = np.argsort(unit, kind="stable")
    ends = np.flatnonzero(np.diff(unit[by_unit], append=unit.max() + 1)) + 1  # where each unit's turns end
    whole = int(np.searchsorted(ends, n, side="right"))
    taken = int(ends[whole - 1]) if whole else 0
    picked = [by_unit[:taken]]
    if n > taken:
        picked.append(rng.choice(by_unit[taken : ends[whole]], size=n - taken, replace=False))
    return np.sort(np.concatenate(picked))


def equal_samples(simulated, real, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The turns each side shows a discriminator: all of the smaller side and as many of the larger one,
    drawn as whole people (`draw_people`; a side given as a count of turns: each turn a person), seeded,
    in order. A discriminator trained on ten times more turns of one side learns that side's every repeat;
    at equal numbers a user is measured as the floor of real users is, and how much it repeats itself is a
    statistic of its own (`distinct_share`). Each side draws from its own Generator (`side_rng`): the real
    side's draw is the same for every user measured at the same size."""
    sizes = [people if isinstance(people, int) else len(people) for people in (simulated, real)]
    n = min(sizes)
    return draw_people(simulated, n, side_rng(seed, 1)), draw_people(real, n, side_rng(seed, 0))


def distinct_share(texts: list[str]) -> float:
    """The share of turns no other turn of the list says word for word (case and spacing aside): people
    seldom repeat one another at length; a template set does."""
    said = Counter(" ".join(text.lower().split()) for text in texts)
    return sum(1 for text in texts if said[" ".join(text.lower().split())] == 1) / len(texts) if texts else np.nan


def content_blind(text: str, reading: TurnReading) -> str:
    """The turn with every catalog value and title replaced by one word naming its slot type ("{genre}"
    becomes "slotgenre", "{title}" "slottitle"): what is left is how the user talks, not what about. The
    template of `reading` (crseval.language.user_acts.read_turn); a turn that holds the slot marks itself
    cannot be read that way and stays as it is."""
    if "{" in text or "}" in text:
        return text
    return _SLOT.sub(lambda slot: f"slot{slot.group(1)}", reading.template)
