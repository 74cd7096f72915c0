"""LDA topic model over catalog plots, and the topic-word extractor the legacy CAS uses.

Training uses gensim's single-process `LdaModel` with a fixed `random_state`, which makes the
topics a function of the settings and the corpus (LdaMulticore is not reproducible).
gensim's inference draws its starting point from the model's random state, so the topics of
a text would depend on which texts were inferred before it; `TopicModel` starts every text from
the state just after reseeding, so that a text's topics depend on the text alone. That starting
point is the same for every text, so it is drawn once; the texts of a batch are inferred
together, each as it would be alone (see `_topic_distributions`).

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
from itertools import chain
from pathlib import Path

import numpy as np
import pandas as pd
from gensim.corpora import Dictionary
from gensim.models import CoherenceModel, LdaModel
from gensim.models.ldamodel import dirichlet_expectation
from threadpoolctl import ThreadpoolController

from crseval.core.config_checks import schema_defaults
from crseval.language.text import content_words

MODEL_FILE = "lda.model"
SETTINGS_FILE = "settings.json"
DTYPE = np.float64
# decimals a probability keeps before it is compared: topics that tie but for float64 noise (gaps of
# 1e-12 and less, while CPUs differ by up to 1e-13) tie after rounding on every CPU
DECIMALS = 9
# documents inferred together (bounds the memory of a large batch: entries x topics floats, a few times)
INFERENCE_BATCH = 1000
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
        self._word_topics: np.ndarray | None = None  # expElogbeta transposed, for `_topic_distributions`
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
        """`topics` for many texts; repeated texts (and texts with the same bag of words) are inferred
        once, the new ones together (`_topic_distributions`)."""
        bows = {text: self._bag_of_words(self.settings.tokens(text)) for text in dict.fromkeys(texts)}
        new = [bow for bow in dict.fromkeys(bows.values()) if bow and bow not in self._best_topic]
        with one_blas_thread():
            for first in range(0, len(new), INFERENCE_BATCH):
                chunk = new[first : first + INFERENCE_BATCH]
                self._best_topic.update(zip(chunk, self._best_topics(self._topic_distributions(chunk))))
        words = {
            text: self.topic_words[self._best_topic[bow]] if bow and self._best_topic[bow] is not None else []
            for text, bow in bows.items()
        }
        return [list(words[text]) for text in texts]

    def _best_topics(self, distributions: np.ndarray) -> list[int | None]:
        """Per row, the most probable topic, compared rounded to `DECIMALS`, the lower topic id on a tie;
        None when no topic reaches the minimum probability (gensim's get_document_topics keeps topics at
        or above the minimum, never below 1e-8)."""
        rounded = np.round(distributions, DECIMALS)
        kept = rounded >= max(self.settings.minimum_probability, 1e-8)
        best = np.argmax(np.where(kept, rounded, -np.inf), axis=1)
        return [int(topic) if any_kept else None for topic, any_kept in zip(best.tolist(), kept.any(axis=1).tolist())]

    def _bag_of_words(self, tokens: list[str]) -> tuple[tuple[int, int], ...]:
        """`Dictionary.doc2bow(tokens)` as a tuple ((word id, count) by id, known words only), without its
        per-call bookkeeping."""
        known = self.dictionary.token2id
        return tuple(sorted((known[word], count) for word, count in Counter(tokens).items() if word in known))

    def _topic_distributions(self, bows: list[tuple[tuple[int, int], ...]]) -> np.ndarray:
        """The normalised topic weights of each (non-empty) document, one row each, as gensim's
        `get_document_topics` gives them when the model's random state was just reseeded: the
        operations of `LdaModel.inference` on a chunk of one document, from the same starting point
        (drawn once: building a seeded random state per text costs more than the inference), for
        all documents at once. Each document iterates until its own gamma converges, as it would
        alone; the converged ones drop out of the arrays. The sums run in a fixed order on every
        CPU (numpy's reductions, and sequential ones where gensim's are), not in the order of a
        BLAS kernel: the values differ from a document inferred alone by about 1e-16, which the
        rounding to `DECIMALS` absorbs (benchmarks/cross_cpu_topics.py)."""
        model = self.model
        if self._start is None:
            gamma = np.random.RandomState(self.settings.random_state).gamma(100.0, 1.0 / 100.0, (1, model.num_topics))
            gamma = gamma.astype(model.dtype, copy=False)
            self._start = (gamma[0], np.exp(dirichlet_expectation(gamma))[0])
        if self._word_topics is None:
            self._word_topics = np.ascontiguousarray(model.expElogbeta.T)  # word x topic
        start_gamma, start_theta = self._start
        topics, epsilon = model.num_topics, np.finfo(model.dtype).eps
        lengths = np.fromiter(map(len, bows), dtype=np.int64, count=len(bows))
        entries = np.fromiter(chain.from_iterable(chain.from_iterable(bows)), dtype=np.int64).reshape(-1, 2)
        counts = entries[:, 1].astype(model.dtype)
        beta = self._word_topics[entries[:, 0]]  # one row per (document, word) entry
        gamma = np.tile(start_gamma, (len(bows), 1))  # each document's last gamma
        active = np.arange(len(bows))  # the documents still iterating, and their state
        doc_gamma = np.tile(start_gamma, (len(bows), 1))
        doc_theta = np.tile(start_theta, (len(bows), 1))
        owner = np.repeat(np.arange(len(bows)), lengths)
        phinorm = (doc_theta[owner] * beta).sum(axis=1) + epsilon
        for _ in range(model.iterations):
            firsts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
            last_gamma = doc_gamma
            doc_gamma = model.alpha + doc_theta * np.add.reduceat((counts / phinorm)[:, None] * beta, firsts, axis=0)
            doc_theta = np.exp(dirichlet_expectation(doc_gamma))
            phinorm = (doc_theta[np.repeat(np.arange(len(active)), lengths)] * beta).sum(axis=1) + epsilon
            gamma[active] = doc_gamma
            # gensim's mean_absolute_difference, which sums in order
            converged = (
                np.add.accumulate(np.abs(doc_gamma - last_gamma), axis=1)[:, -1] / topics < model.gamma_threshold
            )
            if converged.any():
                going = ~converged
                kept_entries = np.repeat(going, lengths)
                active, doc_gamma, doc_theta, lengths = (
                    active[going],
                    doc_gamma[going],
                    doc_theta[going],
                    lengths[going],
                )
                beta, counts, phinorm = beta[kept_entries], counts[kept_entries], phinorm[kept_entries]
                if not len(active):
                    break
        return gamma / np.add.accumulate(gamma, axis=1)[:, -1:]  # sum(gammad), in order

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
        # gensim records each object's history with the date and the machine ("lifecycle events") in the files
        # it saves: without it the same training writes the same bytes on every run
        for saved in (self.model, self.model.state, self.model.id2word):
            saved.lifecycle_events = None
        # ignore=(): gensim's default list of attributes it leaves out of the pickle (state, dispatcher,
        # id2word) in a fixed order; passing its default tuple would build the list from a set, in hash order
        self.model.save(str(directory / MODEL_FILE), ignore=())
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
