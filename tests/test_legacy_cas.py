"""Legacy CAS on dialogues written here, in both modes, every value computed by hand.

The similarity is word-set Jaccard (easy to compute by hand) and topics are given, so that the
tests pin the algorithm: shift detection, the recovery/leakage scan, the interference
denominator, the delay normalisation and the re-normalised weighting.
"""

import math
from dataclasses import replace

import pytest

from crseval.metrics.basic import jaccard
from crseval.metrics.legacy_cas import CasSettings, score_dialogue
from crseval.metrics.similarity import TfidfSimilarity

THESIS = CasSettings(mode="thesis")
FIXED = CasSettings(mode="fixed")
W = {"recovery": 0.01, "delay": 0.02, "interference": 0.02, "cross_coherence": 0.3, "context_retention": 0.15}


def word_jaccard(a, b):
    return jaccard(set(a.lower().split()), set(b.lower().split()))


def test_shift_recovered_after_two_turns_with_one_leak():
    users = ["crime film please", "crime film again please", "now romance instead", "now romance instead please"]
    systems = ["a crime film for you", "another crime film", "more crime film", "a romance in paris"]
    user_topics = [["crime", "heist"], ["crime", "heist"], ["romance", "paris"], ["romance", "paris"]]
    system_topics = [["crime"], ["crime", "heist"], ["crime", "heist"], ["romance", "paris", "love"]]
    cc = (1 / 3 + 2 / 5 + 0 + 1 / 7) / 4
    cr = (1 / 3 + 1 / 2 + 0) / 3
    for settings in (THESIS, FIXED):
        session, turns = score_dialogue(users, systems, user_topics, system_topics, word_jaccard, settings)
        assert session["cas_shifts"] == 1 and [t["cas_shift"] for t in turns] == [False, False, True, False]
        assert session["cross_coherence"] == pytest.approx(cc)
        assert session["context_retention"] == pytest.approx(cr)
        # the reply to the shift still talks crime (a leak), the next one recovers (Jaccard 2/3)
        assert session["topic_recovery_rate"] == 1.0
        assert session["avg_recovery_delay"] == 2.0
        assert session["topic_interference"] == 0.5
        expected = (0.01 * 1 + 0.02 * 0.8 + 0.02 * 0.5 + 0.3 * cc + 0.15 * cr) / 0.5
        assert session["context_adaptation_score"] == pytest.approx(expected)


TWO_SHIFTS = dict(
    users=["crime film please", "now romance instead", "war movies today"],
    systems=["crime film", "crime film again", "romance film"],
    user_topics=[["crime"], ["romance"], ["war"]],
    system_topics=[["crime"], ["crime"], ["romance"]],
)


def run(dialogue, settings):
    return score_dialogue(
        dialogue["users"],
        dialogue["systems"],
        dialogue["user_topics"],
        dialogue["system_topics"],
        word_jaccard,
        settings,
    )[0]


def test_thesis_scans_past_the_next_shift_the_fixed_mode_stops():
    cc, cr = (2 / 3 + 0 + 0) / 3, (2 / 3 + 1 / 4) / 2
    thesis = run(TWO_SHIFTS, THESIS)
    # shift 1 (crime -> romance): leak at its own turn, "recovered" at turn 3, which is already the
    # war segment; shift 2 (romance -> war): a leak, no recovery, 1 turn seen
    assert (thesis["topic_recovery_rate"], thesis["avg_recovery_delay"], thesis["topic_interference"]) == (
        0.5,
        2.0,
        0.75,
    )
    assert thesis["context_adaptation_score"] == pytest.approx(
        (0.01 * 0.5 + 0.02 * 0.8 + 0.02 * 0.25 + 0.3 * cc + 0.15 * cr) / 0.5
    )
    fixed = run(TWO_SHIFTS, FIXED)
    assert (
        fixed["topic_recovery_rate"] == 0.0
        and math.isnan(fixed["avg_recovery_delay"])
        and fixed["topic_interference"] == 1.0
    )
    # no delay component: the weights re-normalise over the other four
    assert fixed["context_adaptation_score"] == pytest.approx((0.01 * 0 + 0.02 * 0 + 0.3 * cc + 0.15 * cr) / 0.48)


def test_no_recovery_gets_the_best_delay_only_in_thesis_mode():
    dialogue = {k: v[:2] for k, v in TWO_SHIFTS.items()}
    cc, cr = (2 / 3 + 0) / 2, 2 / 3
    thesis = run(dialogue, THESIS)
    assert (thesis["topic_recovery_rate"], thesis["avg_recovery_delay"], thesis["topic_interference"]) == (
        0.0,
        0.0,
        1.0,
    )
    # delay 0.0 normalises to rd = 1 - clip(-0.2) = 1.0: the prototype's defect, kept for reproduction
    assert thesis["context_adaptation_score"] == pytest.approx((0.02 * 1.0 + 0.3 * cc + 0.15 * cr) / 0.5)
    fixed = run(dialogue, FIXED)
    assert math.isnan(fixed["avg_recovery_delay"])
    assert fixed["context_adaptation_score"] == pytest.approx((0.3 * cc + 0.15 * cr) / 0.48)
    assert fixed["context_adaptation_score"] < thesis["context_adaptation_score"]


def test_no_shift_at_all():
    users, systems = ["crime film please", "crime film again please"], ["crime film", ""]
    topics = [["crime"], ["crime"]]
    cc, cr = (2 / 3 + 0) / 2, 0.0  # the empty reply has similarity 0 with everything
    thesis = score_dialogue(users, systems, topics, topics, word_jaccard, THESIS)[0]
    assert thesis["cas_shifts"] == 0
    assert (thesis["topic_recovery_rate"], thesis["avg_recovery_delay"], thesis["topic_interference"]) == (
        0.0,
        0.0,
        0.0,
    )
    assert thesis["context_adaptation_score"] == pytest.approx((0.02 + 0.02 + 0.3 * cc + 0.15 * cr) / 0.5)
    fixed = score_dialogue(users, systems, topics, topics, word_jaccard, FIXED)[0]
    assert all(math.isnan(fixed[k]) for k in ("topic_recovery_rate", "avg_recovery_delay", "topic_interference"))
    assert fixed["context_adaptation_score"] == pytest.approx((0.3 * cc + 0.15 * cr) / 0.45)


def test_empty_topic_sets_count_as_a_shift():
    users = ["crime film please", "crime film please"]  # identical text: similarity 1
    session = score_dialogue(users, ["x", "y"], [[], []], [[], []], word_jaccard, FIXED)[0]
    assert session["cas_shifts"] == 1


def test_thresholds_come_from_the_settings():
    loose = replace(FIXED, sim_topic_shift=0.0, topic_jaccard_shift=0.0)
    assert run(TWO_SHIFTS, loose)["cas_shifts"] == 0


def test_tfidf_similarity_follows_the_thesis_conventions():
    from sklearn.feature_extraction.text import TfidfVectorizer

    names, plots = ["Heat", "Casino"], ["A detective hunts bank robbers.", "A casino boss fights the mob in Las Vegas."]
    sim = TfidfSimilarity(names, plots)
    reference = TfidfVectorizer(max_features=4096, ngram_range=(1, 2), lowercase=True, stop_words="english")
    reference.fit(["Heat", plots[0], "Casino", plots[1]])
    a, b = "bank robbers in Las Vegas", "the mob and the bank robbers"
    va, vb = reference.transform([a, b])
    assert sim(a, b) == pytest.approx((va @ vb.T).toarray()[0, 0])
    assert sim(a, a) == pytest.approx(1.0)
    assert sim("zzz qqq", a) == 0.0 and sim("", a) == 0.0
    assert sim(a, b) == pytest.approx(sim(b, a))


@pytest.mark.llm
def test_embedding_similarity_is_cached_by_text(tmp_path):
    from crseval.metrics.similarity import EmbeddingCache, EmbeddingSimilarity, SentenceEmbedder

    cache = EmbeddingCache(tmp_path / "emb.sqlite")
    sim = EmbeddingSimilarity(SentenceEmbedder(cache))
    close = sim("a gangster film set in New York", "a mafia movie in New York City")
    far = sim("a gangster film set in New York", "a cartoon about talking toys")
    assert 0 < far < close <= 1.0 and sim("same text", "same text") == pytest.approx(1.0, abs=1e-5)
    assert sim("", "anything") == 0.0
    again = SentenceEmbedder(cache)
    again._load = lambda: pytest.fail("a cached text reached the model")
    vectors = again.embed(["a gangster film set in New York", "a cartoon about talking toys"])
    assert vectors["a cartoon about talking toys"].shape == (384,)
