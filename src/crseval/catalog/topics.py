"""LDA topic model over catalog plots, and the topic-word extractor the legacy CAS uses.

Training uses gensim's single-process `LdaModel` with a fixed `random_state`, which makes the
topics a function of the settings and the corpus (LdaMulticore is not reproducible).
gensim's inference draws its starting point from the model's random state, so the topics of
a text would depend on which texts were inferred before it; `TopicModel` starts every text from
the state just after reseeding, so that a text's topics depend on the text alone. That starting
point is the same for every text, so it is drawn once (see `_topic_distribution`).

The same topics on every CPU (docs/reproducibility.md): the model is trained and inferred in
float64, not in gensim's default float32, in which the CPU's BLAS kernel (its order of summation)
moves the trained model's word probabilities by 5e-4 to 1e-1 (relative) and so the topic of a few
texts; in float64 the kernels' models differ by about 1e-12 and topic probabilities by about 1e-14.
Probabilities are rounded to `DECIMALS` before they are compared (with each other and with
`minimum_probability`), because a fifth of the texts tie all but exactly: topics that each hold one
of the text's words (almost) wholly get probabilities equal to 1e-12, and which of them the last
bits favour depends on the CPU; rounded, they tie and the lower topic id wins (among a topic's
words, the lower word id). BLAS runs on one thread while training and inferring, so that no BLAS
library splits a sum by thread count.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from gensim.corpora import Dictionary
from gensim.models import CoherenceModel, LdaModel
from gensim.models.ldamodel import dirichlet_expectation, mean_absolute_difference
from threadpoolctl import ThreadpoolController

from crseval.core.config_checks import schema_defaults
from crseval.language.text import content_words

MODEL_FILE = "lda.model"
SETTINGS_FILE = "settings.json"
DTYPE = np.float64
# decimals a probability keeps before it is compared: topics that tie but for float64 noise (gaps of
# 1e-12 and less, while CPUs differ by up to 1e-13) tie after rounding on every CPU
DECIMALS = 9
_blas: ThreadpoolController | None = None


def one_blas_thread():
    """A context in which numpy's and scipy's BLAS use one thread (the libraries are inspected once)."""
    global _blas
    if _blas is None:
        _blas = ThreadpoolController()
    return _blas.limit(limits=1, user_api="blas")


def ranked(probabilities: np.ndarray, topn: int) -> list[int]:
    """Indices of the `topn` largest probabilities, compared rounded to `DECIMALS`, the lower index
    first on a tie (a stable sort: numpy's default sort orders ties differently on different CPUs)."""
    return np.argsort(-np.round(probabilities, DECIMALS), kind="stable")[:topn].tolist()


_DEFAULTS = schema_defaults("lda")


@dataclass(frozen=True)
class LdaSettings:
    """Every knob of training and inference; the `lda` section of the config (defaults from the schema)."""

    num_topics: int = _DEFAULTS["num_topics"]
    passes: int = _DEFAULTS["passes"]
    iterations: int = _DEFAULTS["iterations"]
    random_state: int = _DEFAULTS["random_state"]
    no_below: int = _DEFAULTS["no_below"]
    no_above: float = _DEFAULTS["no_above"]
    min_token_length: int = _DEFAULTS["min_token_length"]
    lemmatize: bool = _DEFAULTS["lemmatize"]
    top_words: int = _DEFAULTS["top_words"]
    minimum_probability: float = _DEFAULTS["minimum_probability"]
    coherence: str = _DEFAULTS["coherence"]
    coherence_top_n: int = _DEFAULTS["coherence_top_n"]

    @classmethod
    def from_config(cls, section: dict) -> "LdaSettings":
        return cls(**section)

    def tokens(self, text: str) -> list[str]:
        return content_words(text, min_length=self.min_token_length, lemmatize=self.lemmatize)


class TopicModel:
    """A trained LDA model with its dictionary and settings."""

    def __init__(self, model: LdaModel, dictionary: Dictionary, settings: LdaSettings):
        self.model = model
        self.dictionary = dictionary
        self.settings = settings
        self._word_probabilities = model.get_topics()  # topic x word
        self.topic_words = [
            [word for word, _ in self.top_words(topic, settings.top_words)] for topic in range(model.num_topics)
        ]
        self._start: tuple[np.ndarray, np.ndarray] | None = None
        # bag of words -> its topic (texts differing only in stop words share one)
        self._best_topic: dict[tuple, int | None] = {}

    # ------------------------------------------------------------ training

    @classmethod
    def train(cls, documents: list[str], settings: LdaSettings) -> "TopicModel":
        tokenised = [settings.tokens(text) for text in documents]
        dictionary = Dictionary(tokenised)
        dictionary.filter_extremes(no_below=settings.no_below, no_above=settings.no_above, keep_n=None)
        if len(dictionary) == 0:
            raise ValueError(
                f"no word survives the vocabulary filters (no_below={settings.no_below}, "
                f"no_above={settings.no_above}) on {len(documents)} documents; lower lda.no_below"
            )
        corpus = [dictionary.doc2bow(tokens) for tokens in tokenised]
        with one_blas_thread():
            model = LdaModel(
                corpus=corpus,
                id2word=dictionary,
                num_topics=settings.num_topics,
                passes=settings.passes,
                iterations=settings.iterations,
                random_state=settings.random_state,
                dtype=DTYPE,
            )
        return cls(model, dictionary, settings)

    @property
    def precision(self) -> str:
        """The float type the model was trained in ("float64")."""
        return np.dtype(self.model.dtype).name

    def top_words(self, topic: int, topn: int) -> list[tuple[str, float]]:
        """The topic's `topn` most probable words and their probabilities (as gensim's `show_topic`,
        with ties resolved the same way on every CPU)."""
        probabilities = self._word_probabilities[topic]
        return [(self.model.id2word[word], float(probabilities[word])) for word in ranked(probabilities, topn)]

    def coherence(self, documents: list[str]) -> float | None:
        """Topic coherence (c_v, u_mass, c_uci or c_npmi) on the training documents; None
        when the config turns it off."""
        if self.settings.coherence == "none":
            return None
        tokenised = [self.settings.tokens(text) for text in documents]
        scorer = CoherenceModel(
            model=self.model,
            texts=tokenised,
            corpus=[self.dictionary.doc2bow(t) for t in tokenised],
            dictionary=self.dictionary,
            coherence=self.settings.coherence,
            topn=self.settings.coherence_top_n,
            processes=1,
        )
        return float(scorer.get_coherence())

    # ------------------------------------------------------------ inference

    def topics(self, text: str) -> list[str]:
        """Top words of the text's most probable topic (at most `top_words`); an empty list when
        no word of the text is in the vocabulary or no topic reaches `minimum_probability`."""
        return self.topics_batch([text])[0]

    def topics_batch(self, texts: list[str]) -> list[list[str]]:
        """`topics` for many texts; repeated texts are inferred once."""
        unique = dict.fromkeys(texts)
        with one_blas_thread():
            for text in unique:
                best = self._best_topic_of(self._bag_of_words(self.settings.tokens(text)))
                unique[text] = [] if best is None else self.topic_words[best]
        return [list(unique[text]) for text in texts]

    def _best_topic_of(self, bow: tuple[tuple[int, int], ...]) -> int | None:
        if not bow:
            return None
        if bow not in self._best_topic:
            distribution = np.round(self._topic_distribution(bow), DECIMALS)
            # gensim's get_document_topics keeps topics at or above the minimum (never below 1e-8);
            # the most probable wins, the lower topic id on a tie
            kept = distribution >= max(self.settings.minimum_probability, 1e-8)
            self._best_topic[bow] = int(np.argmax(np.where(kept, distribution, -np.inf))) if kept.any() else None
        return self._best_topic[bow]

    def _bag_of_words(self, tokens: list[str]) -> tuple[tuple[int, int], ...]:
        """`Dictionary.doc2bow(tokens)` as a tuple ((word id, count) by id, known words only), without its
        per-call bookkeeping."""
        known = self.dictionary.token2id
        return tuple(sorted((known[word], count) for word, count in Counter(tokens).items() if word in known))

    def _topic_distribution(self, bow: tuple[tuple[int, int], ...]) -> np.ndarray:
        """The normalised topic weights of one document, as gensim's `get_document_topics` gives
        them when the model's random state was just reseeded: the operations of
        `LdaModel.inference` on a chunk of one document, in the same order and precision, from
        the same starting point. Drawing that point once instead of building a seeded random
        state per text saves more time than the inference takes."""
        model = self.model
        if self._start is None:
            gamma = np.random.RandomState(self.settings.random_state).gamma(100.0, 1.0 / 100.0, (1, model.num_topics))
            gamma = gamma.astype(model.dtype, copy=False)
            self._start = (gamma[0], np.exp(dirichlet_expectation(gamma))[0])
        gammad, exp_elog_thetad = self._start
        ids = [word for word, _ in bow]
        counts = np.fromiter((count for _, count in bow), dtype=model.dtype, count=len(bow))
        exp_elog_betad = model.expElogbeta[:, ids]
        epsilon = np.finfo(model.dtype).eps
        phinorm = np.dot(exp_elog_thetad, exp_elog_betad) + epsilon
        for _ in range(model.iterations):
            last_gamma = gammad
            gammad = model.alpha + exp_elog_thetad * np.dot(counts / phinorm, exp_elog_betad.T)
            exp_elog_thetad = np.exp(dirichlet_expectation(gammad))
            phinorm = np.dot(exp_elog_thetad, exp_elog_betad) + epsilon
            if mean_absolute_difference(gammad, last_gamma) < model.gamma_threshold:
                break
        return gammad / sum(gammad)

    def topic_table(self, topn: int = 10) -> pd.DataFrame:
        """One row per (topic, rank): the word and its probability in the topic."""
        rows = [
            (topic, rank, word, float(weight))
            for topic in range(self.model.num_topics)
            for rank, (word, weight) in enumerate(self.top_words(topic, topn), start=1)
        ]
        return pd.DataFrame(rows, columns=["topic", "rank", "word", "weight"])

    # ------------------------------------------------------------ persistence

    def save(self, directory: str | Path) -> None:
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        self.model.save(str(directory / MODEL_FILE))
        (directory / SETTINGS_FILE).write_text(json.dumps(asdict(self.settings), indent=2, sort_keys=True))

    @classmethod
    def load(cls, directory: str | Path) -> "TopicModel":
        directory = Path(directory)
        settings = LdaSettings(**json.loads((directory / SETTINGS_FILE).read_text()))
        model = LdaModel.load(str(directory / MODEL_FILE))
        if np.dtype(model.dtype) != DTYPE:
            raise ValueError(
                f"{directory / MODEL_FILE} was trained in {np.dtype(model.dtype).name}, whose topics differ between "
                f"CPUs; models are trained in {np.dtype(DTYPE).name} now: train it again (rule train_lda)"
            )
        return cls(model, model.id2word, settings)
