"""Small set and vector measures shared by the metric families, with their edge cases fixed
in one place: the Jaccard of two empty sets is 0 (nothing shared), a zero vector has cosine 0."""

from __future__ import annotations

import math
from collections import Counter
from itertools import repeat
from operator import mul


def jaccard(a: set, b: set) -> float:
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def cosine(a: dict, b: dict) -> float:
    """Cosine of two sparse vectors given as {key: weight}."""
    if not a or not b:
        return 0.0
    # the products and sums of sum(weight * b.get(key, 0.0) for key, weight in a.items()) and of
    # sum(w * w for w in a.values()), in the same order
    dot = sum(map(mul, a.values(), map(b.get, a, repeat(0.0))))
    norm = math.sqrt(sum(map(mul, a.values(), a.values()))) * math.sqrt(sum(map(mul, b.values(), b.values())))
    return dot / norm if norm else 0.0


def jaccard_credited(a: set, b: set, credited: set) -> float:
    """Jaccard of `a` and `b` in which only `credited` (members of `b`) count as shared:
    |a & credited| / |a | b|. `credited` is `b` itself when all of it counts (then it is `jaccard`)."""
    if credited is b:
        return jaccard(a, b)
    union = len(a | b)
    return len(a & credited) / union if union else 0.0


def cosine_credited(a: dict, b: dict, credited: dict) -> float:
    """`cosine` of `a` and `b` in which the dot product takes `b`'s weights from `credited` (none above
    `b`'s; missing: 0), the norms from `a` and `b`. `credited` is `b` itself when all of it counts."""
    if credited is b:
        return cosine(a, b)
    if not a or not b:
        return 0.0
    dot = sum(map(mul, a.values(), map(credited.get, a, repeat(0.0))))
    norm = math.sqrt(sum(map(mul, a.values(), a.values()))) * math.sqrt(sum(map(mul, b.values(), b.values())))
    return dot / norm if norm else 0.0


def ngrams(tokens: list[str], n: int) -> list[tuple[str, ...]]:
    return list(zip(*(tokens[i:] for i in range(n))))


def ngram_counts(tokens: list[str], n: int) -> Counter:
    return Counter(ngrams(tokens, n))


def safe_mean(values) -> float:
    values = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    return sum(values) / len(values) if values else math.nan
