"""Topic adherence and response statistics on small inputs written here, computed by hand."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from crseval.metrics import adherence, response_stats
from crseval.metrics.response_stats import TrigramLM, bleu4, embedding_diversity, self_bleu

CRIME, THRILLER = ("genre", "crime"), ("genre", "thriller")
SCORSESE, PACINO = ("director", "Martin Scorsese"), ("actor", "Al Pacino")


def turn(focus, shift=False):
    return {"user_meta": {"focus_field": focus[0], "focus_value": focus[1], "shift_event": shift}}


def test_adherence_by_hand():
    turns = [turn(CRIME), turn(SCORSESE, shift=True), turn(SCORSESE)]
    topics = [{CRIME, THRILLER}, {SCORSESE, PACINO}, set()]
    scores = adherence.score_session(turns, topics)
    # 2 of 4 extracted topics are references; both references covered
    assert scores["adherence_precision"] == 0.5 and scores["adherence_recall"] == 1.0
    assert scores["adherence_f1"] == pytest.approx(2 / 3)
    # each segment: 1 of 2 topics on its focus, its focus covered
    assert scores["adherence_segment_f1"] == pytest.approx(2 / 3)


def test_adherence_edge_cases():
    precision, recall, f1 = adherence.adherence(set(), {CRIME})
    assert math.isnan(precision) and recall == 0.0 and f1 == 0.0
    assert adherence.adherence({"crime thrillers"}, {CRIME})[:2] == (1.0, 1.0)  # LLM topic strings
    assert all(math.isnan(v) for v in adherence.score_session([{"user_meta": None}], [set()]).values())


def test_response_statistics_by_hand():
    lm = TrigramLM(k=1.0, lambdas=(0.0, 0.0, 1.0)).fit(["a b", "a c"])
    stats = response_stats.score_session(["the cat sat", "the cat ran", ""], lm, sample=10, seed=0)
    assert stats["distinct_1"] == pytest.approx(4 / 6) and stats["distinct_2"] == pytest.approx(3 / 4)
    assert stats["ttr"] == pytest.approx(4 / 6)
    assert stats["root_ttr"] == pytest.approx(4 / math.sqrt(6)) and stats["corrected_ttr"] == pytest.approx(
        4 / math.sqrt(12)
    )
    assert stats["response_entropy"] == pytest.approx(2 / 3 * math.log2(3) + 1 / 3 * math.log2(6))
    # BLEU-4 of each against the other: precisions 2/3, (1+1)/(2+1), (0+1)/(1+1), (0+1)/(0+1); no brevity penalty
    assert stats["self_bleu"] == pytest.approx((2 / 3 * 2 / 3 * 1 / 2) ** 0.25)
    assert stats["empty_responses"] == 1 and stats["response_words"] == pytest.approx(2.0)


def test_trigram_model_by_hand():
    lm = TrigramLM(k=1.0, lambdas=(0.0, 0.0, 1.0)).fit(["a b", "a c"])
    # vocabulary {a, b, c, </s>, <unk>}: P(a|<s>,<s>) = 3/7, P(b|<s>,a) = 2/7, P(</s>|a,b) = 2/6
    bits, count = lm.surprisal_bits("a b")
    assert count == 3 and bits == pytest.approx(-(math.log2(3 / 7) + math.log2(2 / 7) + math.log2(1 / 3)))
    bits, _ = lm.surprisal_bits("z")  # unknown: P(<unk>|<s>,<s>) = 1/7, P(</s>|<s>,<unk>) = 1/5
    assert bits == pytest.approx(-(math.log2(1 / 7) + math.log2(1 / 5)))
    mixed = TrigramLM(k=0.5, lambdas=(0.2, 0.3, 0.5)).fit(["a b", "a c"])
    # the interpolated distribution still sums to one over the vocabulary
    assert sum(mixed.prob("<s>", "a", w) for w in mixed.vocabulary) == pytest.approx(1.0)
    stats = response_stats.score_session(["a b"], lm, sample=5, seed=0)
    assert stats["perplexity"] == pytest.approx(2 ** stats["surprisal"])


def test_no_words_gives_nan_not_a_default():
    lm = TrigramLM(k=1.0, lambdas=(0.2, 0.3, 0.5)).fit(["a b"])
    stats = response_stats.score_session(["", "  "], lm, sample=5, seed=0)
    for key in ("distinct_1", "ttr", "response_entropy", "self_bleu", "surprisal", "perplexity"):
        assert math.isnan(stats[key]), key


def test_embedding_diversity_by_hand():
    vectors = [np.array([1.0, 0.0]), np.array([0.0, 1.0]), np.array([1.0, 0.0])]
    assert embedding_diversity(vectors) == pytest.approx(2 / 3)
    assert math.isnan(embedding_diversity(vectors[:1]))


def test_self_bleu_sampling_is_seeded():
    responses = [[f"w{i}", "common", "words", "here"] for i in range(30)]
    assert self_bleu(responses, sample=10, seed=1) == self_bleu(responses, sample=10, seed=1)


token_lists = st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=1, max_size=12)


@given(token_lists, st.lists(token_lists, min_size=1, max_size=4))
def test_bleu_bounds(hypothesis, references):
    assert 0.0 <= bleu4(hypothesis, references) <= 1.0 + 1e-9
    assert bleu4(hypothesis, [hypothesis]) == pytest.approx(1.0)
