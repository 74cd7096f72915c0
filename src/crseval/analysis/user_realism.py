"""How far simulated user turns are from real users' turns: population statistics and a discriminator.

Two views, as ConvApparel measures simulators against real conversations:
- population statistics of the user turns, each with the simulated and the real value and the
  difference between them, with a percentile bootstrap CI over sessions (a session's turns are
  resampled together): words per turn (median); the shares of turns that ask, greet, thank, are only
  small talk, hold a word no English word list knows (a typo, mostly), take a film, turn one down or ask
  about it (the same rules read both sides: crseval.language.user_acts, which the learned voice reads
  turns with too), and, given the catalog, name one of its films or values
  (`TURN_STATISTICS`); per session, the turns and the variety of words (Guiraud's index: distinct
  words / sqrt(words), which depends on a session's length less than their ratio);
- a discriminator: how well a classifier tells a simulated turn from a real one, as the
  cross-validated ROC AUC (0.5: indistinguishable, 1.0: always told apart) of a logistic regression
  on word n-grams, character n-grams, or the turn statistics; its CI comes from DeLong's variance of
  the out-of-fold scores; the n-grams that give each side away most are listed, so that a developer
  of the simulator sees what to change.

Every random choice (bootstrap, folds) takes a seed. AUCs and differences are reported, never
thresholded here.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from crseval.analysis.intervals import draw_counts
from crseval.language.user_acts import act_flags

_WORD = re.compile(r"[A-Za-z0-9']+")
_LETTERS = re.compile(r"\b[a-z]{3,}\b")

TURN_STATISTICS = (
    "words",
    "question",
    "greeting",
    "thanks",
    "chit_chat",
    "unknown_word",
    "takes",
    "turns_down",
    "asks_about",
)


@lru_cache(maxsize=200_000)
def _unknown(word: str) -> bool:
    from wordfreq import zipf_frequency

    return zipf_frequency(word, "en") == 0


def turn_statistics(texts: list[str], names_catalog: Callable[[str], bool] | None = None) -> pd.DataFrame:
    """One row per turn: its words, and whether it asks (a "?"), greets, thanks, is only small talk, holds a
    lower-case word of three letters or more that no English word list knows (wordfreq), takes a film,
    turns one down, asks about one; with `names_catalog` (text -> bool) also whether it names a film or a
    value of the catalog."""
    flags = [act_flags(t) for t in texts]
    frame = pd.DataFrame(
        {
            "words": [len(_WORD.findall(t)) for t in texts],
            **{name: [float(f[name]) for f in flags] for name in ("question", "greeting", "thanks", "chit_chat")},
            "unknown_word": [float(any(_unknown(w) for w in _LETTERS.findall(t))) for t in texts],
            **{name: [float(f[name]) for f in flags] for name in ("takes", "turns_down", "asks_about")},
        }
    )
    if names_catalog is not None:
        frame["names_catalog"] = [float(names_catalog(t)) for t in texts]
    return frame


def guiraud(texts: list[str]) -> float:
    """Distinct words / sqrt(words) of a set of turns (lower case); NaN without words."""
    words = [w.lower() for t in texts for w in _WORD.findall(t)]
    return len(set(words)) / np.sqrt(len(words)) if words else float("nan")


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


SESSION_STATISTICS = ("turns_per_session", "word_variety")


def reference_turns(path: str | Path, import_format: str) -> UserTurns:
    """The user turns of a corpus of real dialogues in an importing format (crseval.corpora.formats), as
    the importer reads them: the turns it pairs with a system reply."""
    from crseval.corpora.formats import reader

    imported, _ = reader(import_format).import_logs([Path(path)], None, "0" * 64, "0" * 64)
    records = [record for records in imported.values() for record in records]
    return UserTurns(
        "real users",
        [turn["user_text"] for record in records for turn in record["turns"]],
        [record["session_id"] for record in records for _ in record["turns"]],
    )


def simulated_turns(
    records: Iterable[dict], profiles: dict[str, str]
) -> tuple[dict[str, UserTurns], dict[tuple[str, str], UserTurns]]:
    """The user turns of simulated sessions by user, and by (user, system). A session's user is the
    profile it records, else `profiles[system]` (sessions written before profiles). Where an LLM reworded
    the user's turns (`simulator.paraphrase`), the profile's own user is the rules' wording (the
    template text) and the reworded turns, as the system read them, are a further user
    `<profile> reworded by <model>`: the table then shows what the LLM changes."""
    texts, sessions = defaultdict(list), defaultdict(list)
    for record in records:
        profile = record.get("profile") or profiles[record["system"]]
        for turn in record["turns"]:
            paraphrase = (turn.get("user_meta") or {}).get("paraphrase")
            spoken = [(profile, turn["user_text"])]
            if paraphrase:
                model = (paraphrase.get("llm") or {}).get("model") or "an LLM"
                spoken = [(profile, paraphrase["template_text"]), (f"{profile} reworded by {model}", turn["user_text"])]
            for user, text in spoken:
                for key in (user, (user, record["system"])):
                    texts[key].append(text)
                    sessions[key].append(record["session_id"])
    users = {key: UserTurns(key, texts[key], sessions[key]) for key in texts if isinstance(key, str)}
    systems = {
        key: UserTurns(f"{key[0]} with {key[1]}", texts[key], sessions[key]) for key in texts if isinstance(key, tuple)
    }
    return users, systems


@dataclass(frozen=True)
class _Sessions:
    """A side's turns summed per session, so that a bootstrap over sessions is a sum over drawn rows:
    turns, the count of each yes/no statistic, a histogram of words per turn, and the variety of each
    session's words."""

    turns: np.ndarray  # (sessions,)
    counts: dict[str, np.ndarray]  # statistic -> (sessions,)
    words: np.ndarray  # (sessions, longest turn + 1)
    variety: np.ndarray  # (sessions,) Guiraud's index, 0 for a session without words
    worded: np.ndarray  # (sessions,) 1 for a session with words

    @classmethod
    def of(cls, turns: UserTurns, names_catalog: Callable[[str], bool] | None = None) -> "_Sessions":
        frame = turn_statistics(turns.texts, names_catalog)
        codes, _ = pd.factorize(pd.Series(turns.sessions), sort=True)
        sessions = codes.max() + 1
        words = np.zeros((sessions, int(frame["words"].max()) + 1))
        np.add.at(words, (codes, frame["words"].to_numpy()), 1)
        texts = [[] for _ in range(sessions)]
        for code, text in zip(codes, turns.texts):
            texts[code].append(text)
        variety = np.array([guiraud(t) for t in texts])
        return cls(
            np.bincount(codes, minlength=sessions).astype(float),
            {name: np.bincount(codes, frame[name].to_numpy(), sessions) for name in frame.columns if name != "words"},
            words,
            np.nan_to_num(variety),
            (~np.isnan(variety)).astype(float),
        )

    def values(self, picks: np.ndarray) -> dict[str, np.ndarray]:
        """Every statistic of each draw: `picks` (draws, sessions) are session indices. A draw is the
        number of times it took each session, so every sum is one matrix product."""
        taken = draw_counts(picks, len(self.turns)).astype(float)
        turns = taken @ self.turns
        values = {"words": _median(taken @ self.words)}
        values.update({name: (taken @ count) / turns for name, count in self.counts.items()})
        values["turns_per_session"] = turns / picks.shape[1]
        with np.errstate(invalid="ignore", divide="ignore"):
            values["word_variety"] = (taken @ self.variety) / (taken @ self.worded)
        return values


def _median(histograms: np.ndarray) -> np.ndarray:
    """The median of each row's values, given as counts of 0, 1, 2, ... (the mean of the two middle
    values for an even count, as numpy's median)."""
    cumulative = histograms.cumsum(axis=1)
    total = cumulative[:, -1]
    lower = np.argmax(cumulative > ((total - 1) // 2)[:, None], axis=1)
    upper = np.argmax(cumulative > (total // 2)[:, None], axis=1)
    return (lower + upper) / 2


def compare_statistics(
    simulated: UserTurns,
    real: UserTurns,
    resamples: int = 1000,
    seed: int = 0,
    names_catalog: Callable[[str], bool] | None = None,
) -> pd.DataFrame:
    """Per statistic: the simulated and the real value, their difference (simulated - real), and its 95%
    percentile bootstrap CI, resampling each side's sessions (all draws at once). With `names_catalog`
    (text -> bool), also the share of turns naming a film or value of the catalog."""
    return _compare(_Sessions.of(simulated, names_catalog), _Sessions.of(real, names_catalog), resamples, seed)


def _compare(simulated: "_Sessions", real: "_Sessions", resamples: int, seed: int) -> pd.DataFrame:
    """compare_statistics on both sides' per-session sums (the real side's are built once for every user)."""
    sides = {"simulated": simulated, "real": real}
    observed = {side: data.values(np.arange(len(data.turns))[None, :]) for side, data in sides.items()}
    rng = np.random.default_rng(seed)
    drawn = {
        side: data.values(rng.integers(len(data.turns), size=(resamples, len(data.turns))))
        for side, data in sides.items()
    }
    rows = []
    for name in observed["simulated"]:
        sim, rea = float(observed["simulated"][name][0]), float(observed["real"][name][0])
        boot = drawn["simulated"][name] - drawn["real"][name]
        low, high = np.percentile(boot, [2.5, 97.5]) if resamples else (np.nan, np.nan)
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


def _placements(labels: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """DeLong's placement values: per positive, the share of negatives it outscores (ties count half);
    per negative, the share of positives that outscore it."""
    from scipy.stats import rankdata

    positive, negative = scores[labels == 1], scores[labels == 0]
    both = rankdata(np.concatenate([positive, negative]))
    over_negatives = (both[: len(positive)] - rankdata(positive)) / len(negative)
    under_positives = 1 - (both[len(positive) :] - rankdata(negative)) / len(positive)
    return over_negatives, under_positives


def _auc(labels: np.ndarray, scores: np.ndarray) -> float:
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


DISCRIMINATORS = ("word", "char", "statistics")


def realism_table(
    users: dict[str, UserTurns],
    systems: dict[tuple[str, str], UserTurns],
    real: UserTurns,
    folds: int = 5,
    resamples: int = 1000,
    seed: int = 0,
    names_catalog: Callable[[str], bool] | None = None,
) -> pd.DataFrame:
    """Every user (a profile) against the real users: its statistics and the discriminators' AUCs
    (`system` "all"), and the statistics of the user as each system met it. One row per measure:
    `simulated`, `real`, `difference` and its CI for a statistic; the AUC and its CI (`simulated`,
    `ci_low`, `ci_high`) and the n-grams that give each side away for a discriminator. `names_catalog`
    (text -> bool) adds the share of turns naming the catalog; it is asked once per distinct text."""
    rows = []
    names = lru_cache(maxsize=None)(names_catalog) if names_catalog is not None else None
    real_sessions = _Sessions.of(real, names)

    def statistics(user: str, system: str, turns: UserTurns) -> None:
        compared = _compare(_Sessions.of(turns, names), real_sessions, resamples, seed)
        for row in compared.itertuples(index=False):
            rows.append({"user": user, "system": system, "measure": row.statistic, **row._asdict()})

    for user, turns in users.items():
        statistics(user, "all", turns)
        for kind in DISCRIMINATORS:
            found = discriminator(turns.texts, real.texts, kind, folds, seed)
            rows.append(
                {
                    "user": user,
                    "system": "all",
                    "measure": f"auc_{kind}",
                    "simulated": found["auc"],
                    "ci_low": found["auc_ci_low"],
                    "ci_high": found["auc_ci_high"],
                    "simulated_tells": _tells(found["simulated_tells"]),
                    "real_tells": _tells(found["real_tells"]),
                }
            )
    for (user, system), turns in systems.items():
        statistics(user, system, turns)
    columns = ["user", "system", "measure", "simulated", "real", "difference", "ci_low", "ci_high"]
    table = pd.DataFrame(rows).drop(columns="statistic", errors="ignore")
    return table.reindex(columns=[*columns, "simulated_tells", "real_tells"])


def _tells(ngrams: list[str]) -> str:
    """N-grams as a table cell: each in backticks, a space shown as "·" (character n-grams begin and end
    with one)."""
    return ", ".join(f"`{ngram.replace(' ', '·')}`" for ngram in ngrams)


def realism_markdown(table: pd.DataFrame, reference: str, real: UserTurns) -> str:
    """The readable report: per user, its statistics beside the real users' and the discriminators."""

    def fmt(x) -> str:
        return "n/a" if x != x else f"{x:.2f}"

    sessions = len(set(real.sessions))
    lines = [
        "# How far is the simulated user from real users?",
        "",
        f"Reference: {len(real.texts)} user turns of {sessions} real dialogues ({reference}). Differences are "
        "simulated minus real, with a 95% bootstrap CI over sessions. Shares are of user turns; `takes`, "
        "`turns_down` and `asks_about` (a film offered) are read by the same rules on both sides, "
        "`unknown_word` is a word no English word list holds (a typo, mostly), `word_variety` is Guiraud's "
        "index per session. A discriminator's AUC is how well a "
        "logistic regression tells a simulated turn from a real one, cross-validated (0.5: indistinguishable, "
        "1.0: always told apart); its tells are the n-grams that give each side away most.",
    ]
    overall = table[table["system"] == "all"]
    for user, own in overall.groupby("user", sort=False):
        stats = own[~own["measure"].str.startswith("auc_")]
        lines += [
            "",
            f"## User `{user}`",
            "",
            "| statistic | simulated | real | difference [95% CI] |",
            "|---|---|---|---|",
        ]
        lines += [
            f"| {r.measure} | {fmt(r.simulated)} | {fmt(r.real)} | "
            f"{fmt(r.difference)} [{fmt(r.ci_low)}, {fmt(r.ci_high)}] |"
            for r in stats.itertuples()
        ]
        lines += ["", "| discriminator | AUC [95% CI] | gives the simulated user away | gives real users away |"]
        lines += ["|---|---|---|---|"]
        lines += [
            f"| {r.measure.removeprefix('auc_')} | {fmt(r.simulated)} [{fmt(r.ci_low)}, {fmt(r.ci_high)}] | "
            f"{r.simulated_tells} | {r.real_tells} |"
            for r in own[own["measure"].str.startswith("auc_")].itertuples()
        ]
        lines += _by_system(table[(table["user"] == user) & (table["system"] != "all")], fmt)
    return "\n".join(lines) + "\n"


BY_SYSTEM = ("words", "question", "turns_down", "asks_about", "turns_per_session")


def _by_system(rows: pd.DataFrame, fmt) -> list[str]:
    """The user as each system met it: a few statistics per system (simulated value; all of them, with
    CIs, are in the CSV). A system that fails the user changes how the user talks."""
    if rows.empty:
        return []
    wide = rows.pivot_table(index="system", columns="measure", values="simulated", sort=False)
    shown = [m for m in BY_SYSTEM if m in wide]
    lines = ["", "As each system met it (the real users: the first table's `real` column):", ""]
    lines += ["| system | " + " | ".join(shown) + " |", "|---" * (len(shown) + 1) + "|"]
    lines += [f"| {system} | " + " | ".join(fmt(row[m]) for m in shown) + " |" for system, row in wide.iterrows()]
    return lines
