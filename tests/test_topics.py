"""LDA topic model: determinism, inference rules, persistence; the rules that make the topic path
(LDA topics, TF-IDF vocabulary) the same on every CPU."""

import json
import random
from collections import Counter
from dataclasses import replace

import numpy as np
import pytest
import threadpoolctl
from conftest import DEMO_CATALOG
from gensim.models import LdaModel

from crseval.catalog import topics as topics_module
from crseval.catalog.topics import LdaSettings, TopicModel, ranked
from crseval.metrics.similarity import most_frequent_terms

PLOTS = [record["plot"] for record in json.loads(DEMO_CATALOG.read_text()).values()]
SETTINGS = LdaSettings(num_topics=6, passes=5, iterations=50, random_state=7, no_below=2, no_above=0.5)


@pytest.fixture(scope="module")
def model():
    return TopicModel.train(PLOTS, SETTINGS)


def test_same_seed_same_topics(model):
    again = TopicModel.train(PLOTS, SETTINGS)
    assert again.topic_table().equals(model.topic_table())
    assert again.topics_batch(PLOTS[:20]) == model.topics_batch(PLOTS[:20])


def test_other_seed_other_topics(model):
    other = TopicModel.train(PLOTS, replace(SETTINGS, random_state=8))
    assert not other.topic_table().equals(model.topic_table())


def test_topics_are_top_words_of_the_best_topic(model):
    words = model.topics(PLOTS[0])
    assert 1 <= len(words) <= SETTINGS.top_words
    assert any(words == topic for topic in model.topic_words)


def test_topics_of_a_text_do_not_depend_on_what_came_before(model):
    alone = model.topics(PLOTS[3])
    model.topics_batch(PLOTS[10:40])
    assert model.topics(PLOTS[3]) == alone


def test_text_without_known_words_has_no_topics(model):
    assert model.topics("") == []
    assert model.topics("zzzz qqqq xyzzy") == []


def test_save_and_load_round_trip(model, tmp_path):
    model.save(tmp_path / "lda")
    loaded = TopicModel.load(tmp_path / "lda")
    assert loaded.settings == SETTINGS
    assert loaded.topics_batch(PLOTS[:15]) == model.topics_batch(PLOTS[:15])


def test_coherence_is_a_finite_number(model):
    value = model.coherence(PLOTS)
    assert 0.0 < value < 1.0  # c_v lies in [0, 1]
    assert (
        replace(SETTINGS, coherence="none")
        and TopicModel(model.model, model.dictionary, replace(SETTINGS, coherence="none")).coherence(PLOTS) is None
    )


def test_vocabulary_filters_that_leave_nothing_fail_clearly():
    with pytest.raises(ValueError, match="lower lda.no_below"):
        TopicModel.train(["one plot only"], replace(SETTINGS, no_below=5))


def test_trained_and_inferred_in_float64(model):
    assert model.model.dtype == np.float64 and model.model.expElogbeta.dtype == np.float64


def test_blas_runs_on_one_thread_while_training(monkeypatch):
    seen = []

    def spy(*args, **kwargs):
        seen.append({info["num_threads"] for info in threadpoolctl.threadpool_info() if info["user_api"] == "blas"})
        return LdaModel(*args, **kwargs)

    monkeypatch.setattr(topics_module, "LdaModel", spy)
    with threadpoolctl.threadpool_limits(2, user_api="blas"):
        TopicModel.train(PLOTS, SETTINGS)
        after = {info["num_threads"] for info in threadpoolctl.threadpool_info() if info["user_api"] == "blas"}
    assert seen == [{1}] and after == {2}


def test_topics_tied_to_the_last_bits_go_to_the_lower_topic_id(model, monkeypatch):
    # topics 2 and 4 tie in exact arithmetic; the last bits (which differ between CPUs) favour 4
    distribution = np.array([0.1, 0.05, 0.3, 0.05, 0.3 + 4e-15, 0.2])
    monkeypatch.setattr(model, "_topic_distributions", lambda bows: np.array([distribution] * len(bows)))
    model._best_topic.clear()
    assert model.topics(PLOTS[0]) == model.topic_words[2]
    model._best_topic.clear()


def test_a_topic_at_the_minimum_probability_to_the_last_bits_is_kept(model, monkeypatch):
    just_below = np.full(6, 0.05)
    just_below[3] = 0.1 - 1e-15  # the minimum (0.1) in exact arithmetic
    monkeypatch.setattr(model, "_topic_distributions", lambda bows: np.array([just_below] * len(bows)))
    model._best_topic.clear()
    assert model.topics(PLOTS[0]) == model.topic_words[3]
    model._best_topic.clear()


def test_ranked_breaks_ties_by_index():
    assert ranked(np.array([0.1, 0.2, 0.2 + 1e-13, 0.05, 0.2]), 4) == [1, 2, 4, 0]


def test_top_words_are_ranked_by_probability(model):
    for topic in range(SETTINGS.num_topics):
        weights = [weight for _, weight in model.top_words(topic, 10)]
        assert weights == sorted(weights, reverse=True)
        assert [word for word, _ in model.top_words(topic, SETTINGS.top_words)] == model.topic_words[topic]


def test_a_float32_model_is_refused_with_the_remedy(tmp_path):
    model = TopicModel.train(PLOTS, SETTINGS)
    model.model = LdaModel(
        corpus=[model.dictionary.doc2bow(SETTINGS.tokens(p)) for p in PLOTS[:20]],
        id2word=model.dictionary,
        num_topics=2,
        random_state=1,
    )
    model.save(tmp_path / "lda")
    with pytest.raises(ValueError, match="trained in float32.*train it again"):
        TopicModel.load(tmp_path / "lda")


def test_tfidf_vocabulary_keeps_the_most_frequent_terms_ties_alphabetical():
    # 3000 terms seen 1, 2 or 3 times, 1500 kept: the cut falls inside the terms seen twice, where
    # scikit-learn's own selection (numpy's unstable sort) keeps other terms on every CPU measured
    rng = random.Random(3)
    documents = [word for word in (f"w{i:04d}q" for i in range(3000)) for _ in range(rng.choice([1, 1, 2, 3]))]
    rng.shuffle(documents)
    frequency = Counter(documents)
    expected = sorted(sorted(frequency, key=lambda term: (-frequency[term], term))[:1500])
    assert most_frequent_terms(documents, 1500) == expected


def test_texts_inferred_together_get_gensims_distribution_of_each_alone(model):
    # gensim's get_document_topics, the model's random state reseeded before each text, as the inference
    # replaces it; together, a text's distribution differs from gensim's by float noise only
    bows = list(dict.fromkeys(model._bag_of_words(SETTINGS.tokens(plot)) for plot in PLOTS[:40]))
    together = model._topic_distributions(bows)
    for bow, row in zip(bows, together):
        model.model.random_state = np.random.RandomState(SETTINGS.random_state)
        alone = np.zeros(SETTINGS.num_topics)
        for topic, probability in model.model.get_document_topics(list(bow), minimum_probability=0.0):
            alone[topic] = probability
        assert np.allclose(row, alone, rtol=0, atol=1e-12)
    assert np.array_equal(model._topic_distributions(bows[:3]), together[:3])  # a text's row ignores the others
