"""Corpus statistics of a system's responses (raw values: no rescaling, no defaults on error).

Per session, over its system turns:
- distinct-n: distinct word n-grams / all word n-grams (n = 1, 2);
- TTR = types/tokens, root TTR = types/sqrt(tokens), corrected TTR = types/sqrt(2*tokens);
- entropy: Shannon entropy (bits) of the word distribution;
- self-BLEU: mean BLEU-4 of each response against the session's other responses (up to
  `sample` responses drawn with the seed), with add-one smoothing of the 2- to 4-gram
  precisions (Lin and Och 2004) and the brevity penalty;
- surprisal (bits per word) and perplexity (2**surprisal) under a word trigram model of the
  catalog plots, interpolating add-k estimates of the trigram, bigram and unigram
  probabilities (unknown words share one <unk> type);
- embedding diversity: mean pairwise cosine distance of the responses' sentence embeddings;
- semantic clusters of the responses' embeddings (the source documents' analysis): KMeans for
  k = 2 .. min(5, responses // 2), seeded, keeping the k with the best silhouette; reported are
  that k (`semantic_clusters`), its silhouette (`cluster_silhouette`, raw, -1..1: how clearly
  the replies fall into groups), and 1 - mean cosine within and between clusters
  (`intra_cluster_diversity`, `inter_cluster_diversity`). Fewer than 4 responses, or fewer
  distinct responses than clusters, leave them NaN (the source reported 0.0, a made-up value);
- persona similarity: mean cosine between each response and the user's liked-item profile.
A value that cannot be computed (no words, fewer than two responses) is NaN.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

import numpy as np

from crseval.metrics.basic import ngram_counts, ngrams, words

NAN = math.nan
BOS, EOS, UNK = "<s>", "</s>", "<unk>"


def distinct_n(responses: list[list[str]], n: int) -> float:
    grams = [g for tokens in responses for g in ngrams(tokens, n)]
    return len(set(grams)) / len(grams) if grams else NAN


def richness(tokens: list[str]) -> dict:
    if not tokens:
        return {"ttr": NAN, "root_ttr": NAN, "corrected_ttr": NAN}
    types = len(set(tokens))
    return {"ttr": types / len(tokens), "root_ttr": types / math.sqrt(len(tokens)),
            "corrected_ttr": types / math.sqrt(2 * len(tokens))}


def entropy_bits(tokens: list[str]) -> float:
    if not tokens:
        return NAN
    counts = np.array(list(Counter(tokens).values()), dtype=float)
    p = counts / counts.sum()
    return float(-(p * np.log2(p)).sum())


def bleu4(hypothesis: list[str], references: list[list[str]]) -> float:
    if not hypothesis or not references:
        return NAN
    log_precision = 0.0
    for n in range(1, 5):
        hyp = ngram_counts(hypothesis, n)
        total = sum(hyp.values())
        max_ref: Counter = Counter()
        for ref in references:
            for gram, count in ngram_counts(ref, n).items():
                max_ref[gram] = max(max_ref[gram], count)
        clipped = sum(min(c, max_ref[g]) for g, c in hyp.items())
        if n == 1:
            if clipped == 0:
                return 0.0
            precision = clipped / total
        else:
            precision = (clipped + 1) / (total + 1)
        log_precision += math.log(precision) / 4
    closest = min((abs(len(r) - len(hypothesis)), len(r)) for r in references)[1]
    brevity = 1.0 if len(hypothesis) > closest else math.exp(1 - closest / len(hypothesis))
    return brevity * math.exp(log_precision)


def self_bleu(responses: list[list[str]], sample: int, seed: int) -> float:
    responses = [r for r in responses if r]
    if len(responses) < 2:
        return NAN
    if len(responses) > sample:
        chosen = np.random.default_rng(seed).choice(len(responses), size=sample, replace=False)
        responses = [responses[i] for i in sorted(chosen)]
    scores = [bleu4(h, responses[:i] + responses[i + 1:]) for i, h in enumerate(responses)]
    return float(np.mean(scores))


@dataclass
class TrigramLM:
    """Interpolated add-k word trigram model; probabilities over the training vocabulary + <unk>."""

    k: float
    lambdas: tuple[float, float, float]  # unigram, bigram, trigram weights (sum to 1)

    def fit(self, documents: list[str]) -> "TrigramLM":
        self.uni, self.bi, self.tri = Counter(), Counter(), Counter()
        self.bi_context, self.tri_context = Counter(), Counter()
        for document in documents:
            tokens = [BOS, BOS, *words(document), EOS]
            self.uni.update(tokens[2:])
            for u, v, w in zip(tokens, tokens[1:], tokens[2:]):
                self.tri[(u, v, w)] += 1
                self.tri_context[(u, v)] += 1
                self.bi[(v, w)] += 1
                self.bi_context[v] += 1
        self.vocabulary = set(self.uni) | {UNK}
        self.size = len(self.vocabulary)
        self.total = sum(self.uni.values())
        return self

    def prob(self, u: str, v: str, w: str) -> float:
        k, (l1, l2, l3) = self.k, self.lambdas
        p1 = (self.uni[w] + k) / (self.total + k * self.size)
        p2 = (self.bi[(v, w)] + k) / (self.bi_context[v] + k * self.size)
        p3 = (self.tri[(u, v, w)] + k) / (self.tri_context[(u, v)] + k * self.size)
        return l1 * p1 + l2 * p2 + l3 * p3

    def surprisal_bits(self, text: str) -> tuple[float, int]:
        """Total surprisal (bits) of the text's words and end marker, and their count."""
        tokens = [t if t in self.vocabulary else UNK for t in words(text)]
        if not tokens:
            return 0.0, 0
        padded = [BOS, BOS, *tokens, EOS]
        bits = -sum(math.log2(self.prob(u, v, w)) for u, v, w in zip(padded, padded[1:], padded[2:]))
        return bits, len(tokens) + 1


def score_session(system_texts: list[str], lm: TrigramLM, sample: int, seed: int) -> dict:
    responses = [words(t) for t in system_texts]
    tokens = [w for r in responses for w in r]
    bits = [lm.surprisal_bits(t) for t in system_texts]
    n_bits = sum(n for _, n in bits)
    surprisal = sum(b for b, _ in bits) / n_bits if n_bits else NAN
    return {
        "distinct_1": distinct_n(responses, 1),
        "distinct_2": distinct_n(responses, 2),
        **richness(tokens),
        "response_entropy": entropy_bits(tokens),
        "self_bleu": self_bleu(responses, sample, seed),
        "surprisal": surprisal,
        "perplexity": 2 ** surprisal if n_bits else NAN,
        "response_words": len(tokens) / len(system_texts) if system_texts else NAN,
        "empty_responses": sum(1 for r in responses if not r),
    }


def embedding_diversity(vectors: list[np.ndarray]) -> float:
    """Mean pairwise cosine distance (vectors are unit length)."""
    if len(vectors) < 2:
        return NAN
    matrix = np.vstack(vectors)
    sims = matrix @ matrix.T
    upper = sims[np.triu_indices(len(vectors), k=1)]
    return float(np.mean(1.0 - upper))


CLUSTER_KEYS = ("semantic_clusters", "cluster_silhouette", "intra_cluster_diversity", "inter_cluster_diversity")


def kmeans(points: np.ndarray, k: int, rng: np.random.Generator, n_init: int = 10, max_iter: int = 100) -> np.ndarray:
    """Lloyd's k-means with k-means++ seeding, best of `n_init` by inertia (as scikit-learn's
    KMeans does); written for a session's dozen responses, where scikit-learn's per-call overhead
    is 40x the arithmetic."""
    squared = (points ** 2).sum(axis=1)
    best_labels, best_inertia = None, np.inf
    for _ in range(n_init):
        centres = points[[rng.integers(len(points))]]
        for _ in range(1, k):
            nearest = np.maximum(squared[:, None] - 2 * points @ centres.T + (centres ** 2).sum(axis=1), 0).min(axis=1)
            if nearest.sum() <= 0:
                break
            centres = np.vstack([centres, points[rng.choice(len(points), p=nearest / nearest.sum())]])
        if len(centres) < k:
            continue
        for _ in range(max_iter):
            distances = np.maximum(squared[:, None] - 2 * points @ centres.T + (centres ** 2).sum(axis=1), 0)
            labels = distances.argmin(axis=1)
            moved = np.array([points[labels == j].mean(axis=0) if np.any(labels == j) else centres[j] for j in range(k)])
            if np.allclose(moved, centres):
                break
            centres = moved
        inertia = distances[np.arange(len(points)), labels].sum()
        if inertia < best_inertia - 1e-12:
            best_labels, best_inertia = labels, inertia
    return best_labels


def silhouette(distances: np.ndarray, labels: np.ndarray) -> float:
    """Mean silhouette over points (a point alone in its cluster scores 0, as in scikit-learn)."""
    clusters = np.unique(labels)
    member = labels[None, :] == clusters[:, None]  # clusters x points
    sums = distances @ member.T  # points x clusters: summed distance to each cluster
    sizes = member.sum(axis=1)
    own = labels[:, None] == clusters[None, :]
    own_size = sizes[np.argmax(own, axis=1)]
    a = np.where(own_size > 1, (sums * own).sum(axis=1) / np.maximum(own_size - 1, 1), 0.0)
    b = np.where(own, np.inf, sums / sizes[None, :]).min(axis=1)
    scores = np.where(own_size > 1, (b - a) / np.maximum(np.maximum(a, b), 1e-12), 0.0)
    return float(scores.mean())


def semantic_clusters(vectors: list[np.ndarray], seed: int) -> dict:
    """KMeans over unit-length response embeddings, k chosen by silhouette (see the module docstring)."""
    missing = dict.fromkeys(CLUSTER_KEYS, NAN)
    if len(vectors) < 4:
        return missing
    matrix = np.vstack(vectors)
    distinct = len(np.unique(np.round(matrix, 6), axis=0))
    sims = matrix @ matrix.T
    distances = np.maximum(1.0 - sims, 0.0)
    np.fill_diagonal(distances, 0.0)
    rng = np.random.default_rng(seed)
    best = None
    for k in range(2, min(5, len(vectors) // 2) + 1):
        if distinct < k:
            break
        labels = kmeans(matrix, k, rng)
        if labels is None or len(set(labels)) < 2:
            continue
        score = silhouette(distances, labels)
        if best is None or score > best[0]:
            best = (score, k, labels)
    if best is None:
        return missing
    score, k, labels = best
    off_diagonal = ~np.eye(len(matrix), dtype=bool)
    same = (labels[:, None] == labels[None, :]) & off_diagonal
    other = labels[:, None] != labels[None, :]
    return {"semantic_clusters": float(k), "cluster_silhouette": score,
            "intra_cluster_diversity": float(1 - sims[same].mean()) if same.any() else NAN,
            "inter_cluster_diversity": float(1 - sims[other].mean())}
