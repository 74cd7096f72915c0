"""The discriminators of the user realism check: how well a classifier tells a simulated turn from a real one
(the cross-validated ROC AUC of a logistic regression, its CI from DeLong's variance), on equal numbers of
turns of both sides (`equal_samples`), on the turns as said or on content-blind text (`content_blind`).
"""

from __future__ import annotations

import re
from collections import Counter

import numpy as np

from crseval.checks.realism_measures import turn_statistics
from crseval.language.user_acts import TurnReading

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


def discriminator(simulated: list[str], real: list[str], kind: str = "word", folds: int = 5, seed: int = 0) -> dict:
    """How well a logistic regression on `kind` features tells simulated turns (label 1) from real ones:
    the out-of-fold ROC AUC over `folds` stratified folds (shuffled with `seed`), its 95% CI from DeLong's
    variance of the out-of-fold scores, and the features that give each side away most (largest weights
    of a fit on all turns)."""
    # scikit-learn: seconds to load, paid only by the rule that discriminates
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_predict
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    texts = list(simulated) + list(real)
    labels = np.array([1] * len(simulated) + [0] * len(real))
    if min(len(simulated), len(real)) < folds:
        raise ValueError(f"the discriminator needs at least {folds} turns on each side")
    features, names = _features(kind, texts)

    def model():
        classifier = LogisticRegression(max_iter=1000, solver="liblinear")
        return make_pipeline(StandardScaler(), classifier) if kind == "statistics" else classifier

    split = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    scores = cross_val_predict(model(), features, labels, cv=split, method="decision_function")
    auc = _auc(labels, scores)
    low, high = _delong_interval(labels, scores)
    fitted = model().fit(features, labels)
    weights = (fitted[-1] if kind == "statistics" else fitted).coef_[0]
    order = np.argsort(weights)
    return {
        "features": kind,
        "auc": auc,
        "auc_ci_low": float(low),
        "auc_ci_high": float(high),
        "simulated_tells": [names[i] for i in order[::-1][:10] if weights[i] > 0],
        "real_tells": [names[i] for i in order[:10] if weights[i] < 0],
    }


def equal_samples(simulated: int, real: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The turns each side shows a discriminator: all of the smaller side and as many of the larger one,
    drawn without replacement (seeded), in order. A discriminator trained on ten times more turns of one
    side learns that side's every repeat; at equal numbers a user is measured as the floor of real users
    is, and how much it repeats itself is a statistic of its own (`distinct_share`)."""
    n = min(simulated, real)
    rng = np.random.default_rng(seed)

    def pick(size: int) -> np.ndarray:
        return np.arange(size) if size == n else np.sort(rng.choice(size, size=n, replace=False))

    return pick(simulated), pick(real)


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
