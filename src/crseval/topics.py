"""LDA topic model over catalog plots, and the topic-word extractor the legacy CAS uses.

Training uses gensim's single-process `LdaModel` with a fixed `random_state`, which makes the
topics a function of the settings and the corpus (LdaMulticore is not reproducible).
gensim's inference draws its starting point from the model's random state, so the topics of
a text would depend on which texts were inferred before it; `TopicModel` reseeds per text so
that a text's topics depend on the text alone.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from gensim.corpora import Dictionary
from gensim.models import CoherenceModel, LdaModel

from crseval.text import content_words

MODEL_FILE = "lda.model"
SETTINGS_FILE = "settings.json"


@dataclass(frozen=True)
class LdaSettings:
    """Every knob of training and inference; the `lda` section of the config."""

    num_topics: int = 50
    passes: int = 15
    iterations: int = 50
    random_state: int = 42
    no_below: int = 5
    no_above: float = 0.5
    min_token_length: int = 3
    lemmatize: bool = True
    top_words: int = 5
    minimum_probability: float = 0.1
    coherence: str = "c_v"
    coherence_top_n: int = 10

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
        self.topic_words = [
            [word for word, _ in model.show_topic(topic, topn=settings.top_words)]
            for topic in range(model.num_topics)
        ]

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
        model = LdaModel(
            corpus=corpus,
            id2word=dictionary,
            num_topics=settings.num_topics,
            passes=settings.passes,
            iterations=settings.iterations,
            random_state=settings.random_state,
        )
        return cls(model, dictionary, settings)

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
        bow = self.dictionary.doc2bow(self.settings.tokens(text))
        if not bow:
            return []
        self.model.random_state = np.random.RandomState(self.settings.random_state)
        distribution = self.model.get_document_topics(bow, minimum_probability=self.settings.minimum_probability)
        if not distribution:
            return []
        best = max(distribution, key=lambda pair: (pair[1], -pair[0]))[0]
        return list(self.topic_words[best])

    def topics_batch(self, texts: list[str]) -> list[list[str]]:
        """`topics` for many texts; repeated texts are inferred once."""
        unique = {text: None for text in texts}
        for text in unique:
            unique[text] = self.topics(text)
        return [list(unique[text]) for text in texts]

    def topic_table(self, topn: int = 10) -> pd.DataFrame:
        """One row per (topic, rank): the word and its probability in the topic."""
        rows = [
            (topic, rank, word, float(weight))
            for topic in range(self.model.num_topics)
            for rank, (word, weight) in enumerate(self.model.show_topic(topic, topn=topn), start=1)
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
        return cls(model, model.id2word, settings)
