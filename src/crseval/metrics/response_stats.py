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
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import chain, repeat
from typing import Any

import numpy as np

from crseval.core.columns import Column
from crseval.core.config_checks import SUM_TOLERANCE, _at, _numbers, _show, key_path
from crseval.language.tokens import words
from crseval.metrics.basic import ngram_counts
from crseval.metrics.expectations import ADAPTATION, Expectation, column_named
from crseval.metrics.family import FamilyKind, never, no_backends, no_figure_params, no_figures, no_settings

NAN = math.nan

# Descriptive statistics of the replies: no direction is better for a recommender (longer replies,
# more distinct words), except where a column says so.
SESSION_COLUMNS = (
    Column("distinct_1", "distinct-1", "0-1"),
    Column("distinct_2", "distinct-2", "0-1"),
    Column("ttr", "type-token ratio", "0-1"),
    Column("root_ttr", "root TTR", "types per sqrt(tokens)"),
    Column("corrected_ttr", "corrected TTR", "types per sqrt(2 tokens)"),
    Column("response_entropy", "word entropy", "bits"),
    Column("self_bleu", "self-BLEU", "0-1"),
    Column("surprisal", "surprisal (plot LM)", "bits per word"),
    Column("perplexity", "perplexity (plot LM)", ">= 1"),
    Column("response_words", "words per reply", "words"),
    Column("empty_responses", "empty replies", "count", False),
    Column("embedding_diversity", "embedding diversity", "0-2"),
    Column("semantic_clusters", "semantic clusters", "count"),
    Column("cluster_silhouette", "cluster silhouette", "-1 to 1"),
    Column("intra_cluster_diversity", "diversity within clusters", "0-2"),
    Column("inter_cluster_diversity", "diversity across clusters", "0-2"),
    Column("persona_similarity", "persona similarity", "0-1", True, ground_truth=True),
)
TURN_COLUMNS = (Column("persona_similarity", "persona similarity", "0-1", True, ground_truth=True),)
BOS, EOS, UNK = "<s>", "</s>", "<unk>"


def ngram_table(responses: list[list[str]], orders: int) -> list[tuple[np.ndarray, np.ndarray, int]]:
    """For n = 1..orders: every word n-gram inside one response as (its response, its id), and how
    many distinct n-grams there are. Ids are integers (an n-gram's id codes its (n-1)-gram prefix's
    id and its last word), so counting needs no tuples; n-grams across two responses get no id."""
    # word ids in order of first appearance
    vocabulary = {w: i for i, w in enumerate(dict.fromkeys(chain.from_iterable(responses)))}
    words_ = np.fromiter(map(vocabulary.__getitem__, chain.from_iterable(responses)), dtype=np.int64)
    owner = np.repeat(np.arange(len(responses)), [len(tokens) for tokens in responses])
    table, ids = [], words_
    for n in range(1, orders + 1):
        if n > 1:
            inside = owner[: max(len(words_) - n + 1, 0)] == owner[n - 1 :]
            codes = np.where(inside, ids[:-1] * max(len(vocabulary), 1) + words_[n - 1 :], -1)
            distinct, ids = np.unique(codes, return_inverse=True)
            # the code -1 (an n-gram across responses) sorts first: the others are numbered from 0
            crossing = int(bool(len(distinct)) and distinct[0] == -1)
            table.append((owner[: len(ids)][inside], ids[inside] - crossing, len(distinct) - crossing))
        else:
            table.append((owner, words_, len(vocabulary)))
    return table


def _distinct(grams: tuple[np.ndarray, np.ndarray, int]) -> float:
    _, gram, count = grams
    return count / len(gram) if len(gram) else NAN


def richness(tokens: list[str]) -> dict:
    if not tokens:
        return {"ttr": NAN, "root_ttr": NAN, "corrected_ttr": NAN}
    types = len(set(tokens))
    return {
        "ttr": types / len(tokens),
        "root_ttr": types / math.sqrt(len(tokens)),
        "corrected_ttr": types / math.sqrt(2 * len(tokens)),
    }


def entropy_bits(tokens: list[str]) -> float:
    if not tokens:
        return NAN
    counts = np.array(list(Counter(tokens).values()), dtype=float)
    p = counts / counts.sum()
    return float(-(p * np.log2(p)).sum())


ORDERS = (1, 2, 3, 4)


def _bleu_from_counts(clipped: list[int], totals: list[int], length: int, reference_lengths: list[int]) -> float:
    """BLEU-4 from the clipped and total n-gram counts of orders 1..4 and the lengths involved."""
    log_precision = 0.0
    for n, (hits, total) in enumerate(zip(clipped, totals), start=1):
        if n == 1:
            if hits == 0:
                return 0.0
            precision = hits / total
        else:
            precision = (hits + 1) / (total + 1)
        log_precision += math.log(precision) / 4
    closest = min((abs(r - length), r) for r in reference_lengths)[1]
    brevity = 1.0 if length > closest else math.exp(1 - closest / length)
    return brevity * math.exp(log_precision)


def bleu4(hypothesis: list[str], references: list[list[str]]) -> float:
    if not hypothesis or not references:
        return NAN
    clipped, totals = [], []
    for n in ORDERS:
        hyp = ngram_counts(hypothesis, n)
        max_ref: Counter = Counter()
        for ref in references:
            for gram, count in ngram_counts(ref, n).items():
                max_ref[gram] = max(max_ref[gram], count)
        clipped.append(sum(min(c, max_ref[g]) for g, c in hyp.items()))
        totals.append(sum(hyp.values()))
    return _bleu_from_counts(clipped, totals, len(hypothesis), [len(r) for r in references])


def self_bleu(responses: list[list[str]], sample: int, seed: int, table: list | None = None) -> float:
    """Mean of `bleu4(response, the other responses)` over the non-empty responses (up to `sample`
    of them, drawn with the seed). `table`: their `ngram_table` of orders 1..4 when the caller has
    it already (used only when no sample is drawn)."""
    responses = [r for r in responses if r]
    if len(responses) < 2:
        return NAN
    if len(responses) > sample:
        chosen = np.random.default_rng(seed).choice(len(responses), size=sample, replace=False)
        responses = [responses[i] for i in sorted(chosen)]
        table = None
    return _mean_leave_one_out_bleu(table or ngram_table(responses, len(ORDERS)), [len(r) for r in responses])


def _mean_leave_one_out_bleu(table: list, lengths: list[int]) -> float:
    """The n-grams are counted once, into a responses x n-grams matrix per order, whose column
    maxima without each row give the clip of every response against all the others at once."""
    rows = len(lengths)
    clipped, totals = [], []
    for gram_owner, gram, count in table:
        counts = np.bincount(gram_owner * count + gram, minlength=rows * count).reshape(rows, count)
        ordered = np.sort(counts, axis=0)
        highest, runner_up = ordered[-1], ordered[-2]
        others_max = np.where(counts == highest, runner_up, highest)  # the highest count among the other rows
        clipped.append(np.minimum(counts, others_max).sum(axis=1).tolist())
        totals.append(counts.sum(axis=1).tolist())
    scores = [
        _bleu_from_counts([c[i] for c in clipped], [t[i] for t in totals], lengths[i], lengths[:i] + lengths[i + 1 :])
        for i in range(rows)
    ]
    return float(np.mean(scores))


@dataclass
class TrigramLM:
    """Interpolated add-k word trigram model; probabilities over the training vocabulary + <unk>."""

    k: float
    lambdas: tuple[float, float, float]  # unigram, bigram, trigram weights (sum to 1)

    def fit(self, documents: list[str]) -> "TrigramLM":
        """Counts of the documents' word trigrams (each document padded with <s> <s> ... </s>), kept
        as arrays keyed by integer-coded n-grams, so that a whole shard's probabilities are a few
        array look-ups instead of a dictionary walk per word."""
        tokenised = [words(document) for document in documents]
        self.vocabulary = {w for tokens in tokenised for w in tokens} | ({EOS} if documents else set()) | {UNK}
        self.size = len(self.vocabulary)
        known = sorted(self.vocabulary | {BOS, EOS})
        base = self._base = len(known)
        if base**3 >= 2**63:
            raise ValueError(f"vocabulary of {base} words: trigram codes would overflow 64 bits")
        self._id = {word: i for i, word in enumerate(known)}
        u, v, w = self._trigram_ids([[self._id[t] for t in tokens] for tokens in tokenised])
        self.total = len(w)
        self._uni_counts = np.bincount(w, minlength=base).astype(float)
        self._bi_context_counts = np.bincount(v, minlength=base).astype(float)
        self._bi = _code_counts(v * base + w)
        self._tri = _code_counts((u * base + v) * base + w)
        self._tri_context = _code_counts(u * base + v)
        return self

    def _trigram_ids(self, sequences: list[list[int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Word ids of (u, v, w) for every trigram of the sequences padded with <s> <s> ... </s>:
        one per word and one for the end marker."""
        start, end = self._id[BOS], self._id[EOS]
        padded = [[start, start, *ids, end] for ids in sequences]
        if not padded:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        joined = np.fromiter(chain.from_iterable(padded), dtype=np.int64)
        owner = np.repeat(np.arange(len(padded)), [len(ids) for ids in padded])
        inside = owner[:-2] == owner[2:]
        return joined[:-2][inside], joined[1:-1][inside], joined[2:][inside]

    def prob(self, u: str, v: str, w: str) -> float:
        """P(w | u v); a word outside the vocabulary has count 0 in every n-gram."""
        code = self._id
        k, (l1, l2, l3) = self.k, self.lambdas
        p1 = ((self._uni_counts[code[w]] if w in code else 0.0) + k) / (self.total + k * self.size)
        p2 = (self._count(self._bi, v, w) + k) / (
            (self._bi_context_counts[code[v]] if v in code else 0.0) + k * self.size
        )
        p3 = (self._count(self._tri, u, v, w) + k) / (self._count(self._tri_context, u, v) + k * self.size)
        return float(l1 * p1 + l2 * p2 + l3 * p3)

    def _count(self, table: tuple[np.ndarray, np.ndarray], *ngram: str) -> float:
        if not all(word in self._id for word in ngram):
            return 0.0
        code = 0
        for word in ngram:
            code = code * self._base + self._id[word]
        return float(_look_up(table, np.array([code], dtype=np.int64))[0])

    def surprisal_bits(self, text: str) -> tuple[float, int]:
        """Total surprisal (bits) of the text's words and end marker, and their count."""
        return self.surprisal_many([words(text)])[0]

    def surprisal_many(self, token_lists: list[list[str]]) -> list[tuple[float, int]]:
        """`surprisal_bits` of many token lists in one vectorised pass (`prob` on arrays)."""
        unknown, code = self._id[UNK], self._id
        u, v, w = self._trigram_ids([list(map(code.get, tokens, repeat(unknown))) for tokens in token_lists if tokens])
        if not len(w):
            return [(0.0, 0)] * len(token_lists)
        k, (l1, l2, l3) = self.k, self.lambdas
        base, size = self._base, self.size
        p1 = (self._uni_counts[w] + k) / (self.total + k * size)
        p2 = (_look_up(self._bi, v * base + w) + k) / (self._bi_context_counts[v] + k * size)
        p3 = (_look_up(self._tri, (u * base + v) * base + w) + k) / (
            _look_up(self._tri_context, u * base + v) + k * size
        )
        logs = np.log2(l1 * p1 + l2 * p2 + l3 * p3).tolist()
        result, first = [], 0
        for tokens in token_lists:
            if tokens:
                last = first + len(tokens) + 1
                result.append((-sum(logs[first:last]), last - first))
                first = last
            else:
                result.append((0.0, 0))
        return result


def _code_counts(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct codes, sorted, and how often each occurs."""
    keys, counts = np.unique(codes, return_counts=True)
    return keys, counts.astype(float)


def _look_up(table: tuple[np.ndarray, np.ndarray], codes: np.ndarray) -> np.ndarray:
    """Counts of the coded n-grams (0 for unseen ones)."""
    keys, values = table
    if not len(keys):
        return np.zeros(len(codes))
    at = np.minimum(np.searchsorted(keys, codes), len(keys) - 1)
    return np.where(keys[at] == codes, values[at], 0.0)


def score_session(system_texts: list[str], lm: TrigramLM, sample: int, seed: int) -> dict:
    return score_sessions([system_texts], lm, sample, [seed])[0]


def score_sessions(sessions: list[list[str]], lm: TrigramLM, sample: int, seeds: list[int]) -> list[dict]:
    """`score_session` of many sessions (each its system texts, with its self-BLEU seed); the LM
    reads the responses of all of them in one vectorised pass."""
    return score_tokenised([[words(t) for t in texts] for texts in sessions], lm, sample, seeds)


def score_tokenised(tokenised: list[list[list[str]]], lm: TrigramLM, sample: int, seeds: list[int]) -> list[dict]:
    """`score_sessions` of sessions given as the words (`words`) of each of their system texts."""
    bits = iter(lm.surprisal_many([r for responses in tokenised for r in responses]))
    return [
        _statistics(responses, [next(bits) for _ in responses], sample, seed)
        for responses, seed in zip(tokenised, seeds)
    ]


def _statistics(responses: list[list[str]], bits: list[tuple[float, int]], sample: int, seed: int) -> dict:
    tokens = [w for r in responses for w in r]
    said = [r for r in responses if r]  # empty responses add no n-gram: one table serves distinct-n and self-BLEU
    table = ngram_table(said, len(ORDERS))
    n_bits = sum(n for _, n in bits)
    surprisal = sum(b for b, _ in bits) / n_bits if n_bits else NAN
    return {
        "distinct_1": _distinct(table[0]),
        "distinct_2": _distinct(table[1]),
        **richness(tokens),
        "response_entropy": entropy_bits(tokens),
        "self_bleu": self_bleu(said, sample, seed, table),
        "surprisal": surprisal,
        "perplexity": 2**surprisal if n_bits else NAN,
        "response_words": len(tokens) / len(responses) if responses else NAN,
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
    squared = (points**2).sum(axis=1)
    best_labels, best_inertia = None, np.inf
    for _ in range(n_init):
        centres = points[[rng.integers(len(points))]]
        for _ in range(1, k):
            nearest = np.maximum(squared[:, None] - 2 * points @ centres.T + (centres**2).sum(axis=1), 0).min(axis=1)
            if nearest.sum() <= 0:
                break
            centres = np.vstack([centres, points[rng.choice(len(points), p=nearest / nearest.sum())]])
        if len(centres) < k:
            continue
        for _ in range(max_iter):
            distances = np.maximum(squared[:, None] - 2 * points @ centres.T + (centres**2).sum(axis=1), 0)
            labels = distances.argmin(axis=1)
            moved = np.array(
                [points[labels == j].mean(axis=0) if np.any(labels == j) else centres[j] for j in range(k)]
            )
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
    return {
        "semantic_clusters": float(k),
        "cluster_silhouette": score,
        "intra_cluster_diversity": float(1 - sims[same].mean()) if same.any() else NAN,
        "inter_cluster_diversity": float(1 - sims[other].mean()),
    }


class ResponseStatsFamily:
    """Statistics of a system's responses (registered as `response_stats`): lexical diversity,
    self-BLEU, perplexity under the catalog-plot LM, embedding diversity and semantic clusters,
    persona similarity."""

    name = "response_stats"
    session_columns = SESSION_COLUMNS
    turn_columns = TURN_COLUMNS

    def __init__(self, context):
        from crseval.metrics.similarity import EmbeddingSimilarity  # scikit-learn and torch: only with this family

        self.index = context.index
        self.texts = context.texts
        self.settings = KIND.settings(context.settings)
        lm = self.settings["lm"]
        self.lm = TrigramLM(k=lm["k"], lambdas=tuple(lm["lambdas"]))
        self.lm.fit(context.index.films["plot"].tolist())
        self.embedder = context.embedder() if self.settings["embeddings"] else None
        self.persona_similarity = (
            context.tfidf()
            if self.settings["persona_similarity"] == "tfidf"
            else EmbeddingSimilarity(context.embedder())
        )

    def score_shard(self, records: list[dict]) -> list[tuple[dict, list[dict]]]:
        system_texts = list(dict.fromkeys(t["system_text"] for r in records for t in r["turns"]))
        vectors = self.embedder.embed([t for t in system_texts if t.strip()]) if self.embedder else {}
        profiles = {r["session_id"]: self._profile(r) for r in records}
        # only sessions with liked films have a persona similarity (imported logs have none)
        liking = [r for r in records if profiles[r["session_id"]]]
        self.persona_similarity.prepare(
            [profiles[r["session_id"]] for r in liking] + [t["system_text"] for r in liking for t in r["turns"]]
        )
        seeds = [self.settings["seed"] + (r.get("session_index") or 0) for r in records]
        statistics = score_tokenised(
            [[self.texts(t["system_text"]).words for t in r["turns"]] for r in records],
            self.lm,
            self.settings["self_bleu_sample"],
            seeds,
        )
        scores = []
        for number, record in enumerate(records):
            systems = [t["system_text"] for t in record["turns"]]
            session = dict(statistics[number])
            embedded = [vectors[s] for s in systems if s in vectors] if self.embedder else []
            session["embedding_diversity"] = embedding_diversity(embedded) if self.embedder else math.nan
            session.update(
                semantic_clusters(embedded, seeds[number]) if self.embedder else dict.fromkeys(CLUSTER_KEYS, math.nan)
            )
            profile = profiles[record["session_id"]]
            persona = [self.persona_similarity(profile, s) for s in systems] if profile else [math.nan] * len(systems)
            session["persona_similarity"] = float(np.nanmean(persona)) if profile and persona else math.nan
            scores.append((session, [{"persona_similarity": value} for value in persona]))
        return scores

    def _profile(self, record: dict) -> str:
        """The user's liked items as one text: each liked film's name, genres and plot."""
        parts = []
        for title in record.get("liked_titles") or []:
            film_id = self.index.film_id(title)
            if film_id is not None:
                row = self.index.films.loc[film_id]
                parts.append(f"{row['name']}. {', '.join(row['genre'])}. {row['plot']}")
        return " ".join(parts)


LM_LAMBDAS = ("scoring", "response_stats", "lm", "lambdas")


def lambda_problems(config: Any) -> Iterator[str]:
    """Interpolation weights: any sum other than 1 scales every probability, hence the perplexity."""
    lambdas = _numbers(_at(config, LM_LAMBDAS), 3)
    if lambdas is not None and abs(math.fsum(lambdas) - 1) > SUM_TOLERANCE:
        yield (
            f"{key_path(LM_LAMBDAS)}: {lambdas} sum to {_show(math.fsum(lambdas))}, but must sum to 1 "
            "(they interpolate the unigram, bigram and trigram models)"
        )


def embedding_users(scoring: dict) -> list[str]:
    """The settings that embed the replies with all-MiniLM-L6-v2."""
    section = scoring.get("response_stats", {})
    return (["scoring.response_stats.embeddings"] if section.get("embeddings") else []) + (
        ["scoring.response_stats.persona_similarity"] if section.get("persona_similarity") == "embedding" else []
    )


KIND = FamilyKind(
    name="response_stats",
    summary="statistics of a system's replies: lexical diversity, self-BLEU, perplexity, embeddings, persona",
    scorer=ResponseStatsFamily,
    parse_settings=dict,  # `lm`, `self_bleu_sample`, `seed`, `embeddings`, `persona_similarity`: read as given
    backends=no_backends,
    embedding_users=embedding_users,
    reads_lda=never,
    checks=lambda_problems,
    expectations=(
        Expectation(
            column_named(SESSION_COLUMNS, "cluster_silhouette"),
            ADAPTATION,
            "replies that follow the shifts group by segment (clear clusters); replies k turns late blur the "
            "segments' edges; a stubborn system's replies stay on one topic and random ones on none",
            higher_first=True,
            # the session's replies clustered as one unordered set: k turns late, they fall into the same clusters
            pools_foci=True,
        ),
    ),
    headline=(
        "distinct_2",
        "self_bleu",
        "perplexity",
        "embedding_diversity",
        "cluster_silhouette",
        "semantic_clusters",
        "persona_similarity",
    ),
    figures=no_figures,
    scatter_columns=no_settings,
    distribution_columns=(),
    figure_params=no_figure_params,
)
