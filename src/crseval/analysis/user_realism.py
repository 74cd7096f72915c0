"""How far simulated user turns are from real users' turns: population statistics and a discriminator.

Two views, as ConvApparel measures simulators against real conversations:
- population statistics of the user turns, each with the simulated and the real value and the
  difference between them, with a percentile bootstrap CI over sessions (a session's turns are
  resampled together): words per turn (median), question share, greeting, thanks and chit-chat
  shares (`TURN_STATISTICS`), and turns per session;
- a discriminator: how well a classifier tells a simulated turn from a real one, as the
  cross-validated ROC AUC (0.5: indistinguishable, 1.0: always told apart) of a logistic regression
  on word n-grams, character n-grams, or the turn statistics; its CI is a bootstrap of the out-of-fold
  scores; the n-grams that give each side away most are listed, so that a developer of the
  simulator sees what to change.

Every random choice (bootstrap, folds) takes a seed. AUCs and differences are reported, never
thresholded here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

# A turn that greets, thanks, or is small talk without a request (lower case, whole words).
_GREETING = re.compile(r"^\W*(?:hi|hello|hey|hiya|good (?:morning|afternoon|evening))\b", re.IGNORECASE)
_THANKS = re.compile(r"\b(?:thanks|thank you|thx|cheers)\b", re.IGNORECASE)
_CHIT_CHAT = re.compile(
    r"^\W*(?:hi|hello|hey|ok(?:ay)?|cool|nice|great|thanks|thank you|bye|goodbye|lol|yes|no|sure)\W*$", re.IGNORECASE
)
_WORD = re.compile(r"[A-Za-z0-9']+")

TURN_STATISTICS = ("words", "question", "greeting", "thanks", "chit_chat")


def turn_statistics(texts: list[str]) -> pd.DataFrame:
    """One row per turn: its words, and whether it asks (a "?"), greets, thanks, or is only small talk."""
    return pd.DataFrame(
        {
            "words": [len(_WORD.findall(t)) for t in texts],
            "question": [float("?" in t) for t in texts],
            "greeting": [float(bool(_GREETING.search(t))) for t in texts],
            "thanks": [float(bool(_THANKS.search(t))) for t in texts],
            "chit_chat": [float(bool(_CHIT_CHAT.match(t))) for t in texts],
        }
    )


@dataclass(frozen=True)
class UserTurns:
    """The user turns of one user (a profile, a corpus), with the session each belongs to."""

    name: str
    texts: list[str]
    sessions: list[str]

    def __post_init__(self):
        if len(self.texts) != len(self.sessions):
            raise ValueError(f"{self.name}: {len(self.texts)} turns but {len(self.sessions)} session ids")
        if not self.texts:
            raise ValueError(f"{self.name}: no user turns to compare")


def _statistic(name: str, frame: pd.DataFrame) -> float:
    if name == "turns_per_session":
        return float(frame.groupby("session").size().mean())
    if name == "words":
        return float(frame["words"].median())
    return float(frame[name].mean())


STATISTICS = (*TURN_STATISTICS, "turns_per_session")


def _resample_sessions(frame: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    """The frame's sessions drawn with replacement, each with all its turns."""
    groups = list(frame.groupby("session", sort=True).indices.values())
    picks = rng.integers(len(groups), size=len(groups))
    return frame.iloc[np.concatenate([groups[i] for i in picks])].assign(
        session=np.repeat(np.arange(len(groups)), [len(groups[i]) for i in picks])
    )


def compare_statistics(simulated: UserTurns, real: UserTurns, resamples: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Per statistic: the simulated and the real value, their difference (simulated - real), and its 95%
    percentile bootstrap CI, resampling each side's sessions."""
    frames = {
        side: turn_statistics(turns.texts).assign(session=turns.sessions)
        for side, turns in (("simulated", simulated), ("real", real))
    }
    rng = np.random.default_rng(seed)
    boot = {name: [] for name in STATISTICS}
    for _ in range(resamples):
        drawn = {side: _resample_sessions(frame, rng) for side, frame in frames.items()}
        for name in STATISTICS:
            boot[name].append(_statistic(name, drawn["simulated"]) - _statistic(name, drawn["real"]))
    rows = []
    for name in STATISTICS:
        sim, rea = _statistic(name, frames["simulated"]), _statistic(name, frames["real"])
        low, high = np.percentile(boot[name], [2.5, 97.5]) if resamples else (np.nan, np.nan)
        rows.append(
            {
                "statistic": name,
                "simulated": sim,
                "real": rea,
                "difference": sim - rea,
                "ci_low": float(low),
                "ci_high": float(high),
            }
        )
    return pd.DataFrame(rows)


def _features(kind: str, texts: list[str]):
    from sklearn.feature_extraction.text import TfidfVectorizer

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


def discriminator(
    simulated: list[str], real: list[str], kind: str = "word", folds: int = 5, resamples: int = 1000, seed: int = 0
) -> dict:
    """How well a logistic regression on `kind` features tells simulated turns (label 1) from real ones:
    the out-of-fold ROC AUC over `folds` stratified folds, its 95% bootstrap CI (out-of-fold scores
    resampled), and the features that give each side away most (largest weights of a fit on all turns)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score
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
    auc = float(roc_auc_score(labels, scores))
    rng = np.random.default_rng(seed)
    boot = []
    for _ in range(resamples):
        pick = rng.integers(len(labels), size=len(labels))
        if labels[pick].min() != labels[pick].max():
            boot.append(roc_auc_score(labels[pick], scores[pick]))
    low, high = np.percentile(boot, [2.5, 97.5]) if boot else (np.nan, np.nan)
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
