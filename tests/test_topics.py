"""LDA topic model: determinism, inference rules, persistence."""

import json
from dataclasses import replace

import pytest
from conftest import DEMO_CATALOG

from crseval.catalog.topics import LdaSettings, TopicModel

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
