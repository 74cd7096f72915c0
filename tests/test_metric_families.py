"""The metric families' registry: each family declares itself once, completely, in its own module
(crseval.metrics.family.FamilyKind), and everything that depends on the selected families asks
crseval.metrics.families."""

import copy
import dataclasses

import pytest
from conftest import default_config

from crseval.checks import validity
from crseval.core.columns import Column
from crseval.judge import judge_columns
from crseval.metrics import families, scorer
from crseval.metrics.expectations import ASKER_OVER_LITERAL, LAGS, Expectation, expand, lag_roles
from crseval.metrics.family import FamilyKind
from crseval.planning import config_schema

KINDS = list(families.FAMILY_KINDS.values())
WITHOUT_CALIBRATION_ORDER = {"conduct"}


@pytest.fixture(scope="module")
def config():
    return default_config()


def with_scoring(config: dict, change) -> dict:
    changed = copy.deepcopy(config)
    change(changed["scoring"])
    return changed


def test_the_families_in_column_order():
    assert list(families.FAMILY_KINDS) == [
        "tas",
        "cas",
        "adherence",
        "goals",
        "response_stats",
        "conduct",
        "tool_use",
    ]
    assert {name: kind.name for name, kind in families.FAMILY_KINDS.items()} == {n: n for n in families.FAMILY_KINDS}
    assert scorer.FAMILIES == {name: kind.scorer for name, kind in families.FAMILY_KINDS.items()}


def test_a_family_must_give_every_field():
    given = {field.name: None for field in dataclasses.fields(FamilyKind)}
    assert all(field.default is dataclasses.MISSING for field in dataclasses.fields(FamilyKind))
    del given["figure_params"]
    with pytest.raises(TypeError, match="figure_params"):
        FamilyKind(**given)


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.name)
def test_every_family_is_declared_completely(kind, config):
    scoring = config["scoring"]
    assert kind.summary.strip()
    assert kind.scorer.name == kind.name
    assert kind.session_columns and all(isinstance(c, Column) for c in (*kind.session_columns, *kind.turn_columns))
    session = {c.name: c for c in kind.session_columns}
    for field in ("parse_settings", "backends", "embedding_users", "reads_lda", "checks", "figures"):
        assert callable(getattr(kind, field)), field
    assert callable(kind.scatter_columns) and callable(kind.figure_params)
    if kind.name in scoring:  # a family without settings may have no section (tool_use)
        assert kind.settings(scoring) is not None
    assert isinstance(kind.backends(scoring), dict)
    assert all(isinstance(key, str) and key.startswith("scoring.") for key in kind.embedding_users(scoring))
    assert isinstance(kind.reads_lda(scoring), bool)
    assert list(kind.checks(config)) == []
    # its headline metrics and plotted columns are metrics it declares; a family `scoring.metrics` does not select
    # by default has no headline (`stats.metrics`' default names none of its columns)
    selected_by_default = kind.name in config_schema()["properties"]["scoring"]["properties"]["metrics"]["default"]
    assert bool(kind.headline) == selected_by_default and all(session[name].metric for name in kind.headline)
    assert all(session[name].metric for name in kind.distribution_columns)
    assert all(session[name].metric for name in kind.scatter_columns(scoring))
    assert all(isinstance(figure, str) for figure in kind.figures(scoring, ["x"]))
    assert all(isinstance(params, dict) for params in kind.figure_params(scoring).values())
    # what the calibration systems should show is about its own columns, in a declared direction; a family whose
    # columns no calibration system's construction orders declares nothing (conduct: every calibration system
    # phrases one template and never repeats a film)
    assert kind.expectations or kind.name in WITHOUT_CALIBRATION_ORDER
    for expectation in kind.expectations:
        assert isinstance(expectation, Expectation)
        assert session[expectation.metric] == expectation.column and expectation.column.metric
        assert isinstance(expectation.higher_is_better, bool) and expectation.reason.strip()


def test_the_headline_is_the_schema_default_of_stats_metrics():
    default = config_schema()["properties"]["stats"]["properties"]["metrics"]["default"]
    assert families.headline_metrics(families.FAMILY_KINDS) == default
    assert families.headline_metrics(["response_stats", "tas"]) == [
        *families.family_kind("tas").headline,
        *families.family_kind("response_stats").headline,
    ]


def test_an_unknown_family_is_named_with_the_known_ones():
    with pytest.raises(ValueError, match=r"unknown metric family 'respnse_stats' \(did you mean 'response_stats'\?\)"):
        families.family_kind("respnse_stats")
    with pytest.raises(ValueError, match="known: tas, cas, adherence, goals, response_stats") as error:
        families.family_kind("bleu")
    assert "did you mean" not in str(error.value)
    with pytest.raises(ValueError, match="unknown metric family"):
        families.selected({"metrics": ["tas", "cass"]})


def test_selected_families_come_in_column_order():
    assert [k.name for k in families.selected({"metrics": ["response_stats", "tas"]})] == ["tas", "response_stats"]
    assert families.selected({"metrics": []}) == [] and families.selected({}) == []


def test_what_a_score_job_needs(config):
    scoring = config["scoring"]
    assert families.scoring_backends(scoring) == {}
    assert families.embedding_users(scoring) == ["scoring.response_stats.embeddings"]
    assert families.reads_lda(scoring)

    def llm_everywhere(s):
        s["cas"].update(topics="llm", similarity="embedding", llm={"backend": {"type": "ollama", "model": "a"}})
        s["adherence"].update(extractor="llm", llm={"backend": {"type": "ollama", "model": "b"}})
        s["response_stats"].update(embeddings=False, persona_similarity="embedding")

    scoring = with_scoring(config, llm_everywhere)["scoring"]
    assert families.scoring_backends(scoring) == {
        "scoring.cas": {"type": "ollama", "model": "a"},
        "scoring.adherence": {"type": "ollama", "model": "b"},
    }
    assert families.embedding_users(scoring) == ["scoring.cas.similarity", "scoring.response_stats.persona_similarity"]
    assert not families.reads_lda(scoring)
    # only the selected families' settings count
    scoring["metrics"] = ["tas"]
    assert families.scoring_backends(scoring) == {} and families.embedding_users(scoring) == []
    unselected = with_scoring(config, lambda s: s.update(metrics=["tas", "adherence"]))["scoring"]
    assert not families.reads_lda(unselected)


def test_figures_of_the_selected_families(config):
    scoring = config["scoring"]
    assert families.scatter_columns(scoring) == ["context_adaptation_score"]
    assert families.figures(scoring) == ["tas_over_turns", "weight_sensitivity", "tas_scatter"]
    assert families.distribution_columns(scoring) == ["tas", "rec_satisfaction", "context_adaptation_score"]
    assert families.figure_params(scoring) == {"weight_sensitivity": {"alpha": 0.4, "beta": 0.4, "gamma": 0.2}}
    bare = with_scoring(config, lambda s: s.update(metrics=["tas", "adherence"]))["scoring"]
    assert families.scatter_columns(bare) == [] and families.figures(bare) == ["tas_over_turns", "weight_sensitivity"]
    # the judge's scores are scatter columns too: the experiment passes all of them
    assert families.figures(bare, ["judge_coherence"])[-1] == "tas_scatter"
    no_tas = with_scoring(config, lambda s: s.update(metrics=["cas", "response_stats"]))["scoring"]
    assert families.figures(no_tas) == [] and families.figure_params(no_tas) == {}
    assert families.distribution_columns(no_tas) == ["context_adaptation_score"]


# A bad value of each family's settings and the problem its checks name (as check_config reports it).
BAD = [
    (
        lambda s: s["response_stats"]["lm"].update(lambdas=[1, 1, 1]),
        "scoring.response_stats.lm.lambdas: [1, 1, 1] sum to 3, but must sum to 1 "
        "(they interpolate the unigram, bigram and trigram models)",
    ),
    (
        lambda s: s["response_stats"]["lm"].update(lambdas=[0.1, 0.3, 0.5]),
        "scoring.response_stats.lm.lambdas: [0.1, 0.3, 0.5] sum to 0.9, but must sum to 1 "
        "(they interpolate the unigram, bigram and trigram models)",
    ),
    (
        lambda s: s["cas"].update(weights=dict.fromkeys(s["cas"]["weights"], 0)),
        "scoring.cas.weights: they sum to 0, but must have a positive sum "
        "(CAS is the mean of its components weighted by them)",
    ),
    (
        lambda s: s["tas"].update(alpha=0, beta=0),
        "scoring.tas: alpha + beta is 0, but must be positive "
        "(TAS = alpha CC + beta CR - gamma I would be 0 or below for every system)",
    ),
    (
        lambda s: s["cas"].update(delay_range=[6, 1]),
        "scoring.cas.delay_range: [6, 1] must be strictly increasing (first < second)",
    ),
    (
        lambda s: s["cas"].update(delay_range=[3, 3]),
        "scoring.cas.delay_range: [3, 3] must be strictly increasing (first < second)",
    ),
]


@pytest.mark.parametrize("change, problem", BAD)
def test_family_checks_name_the_problem_by_its_key(config, change, problem):
    assert families.config_problems(with_scoring(config, change)) == [problem]


def test_checks_run_whether_the_family_is_selected_or_not(config):
    def unselected_but_wrong(s):
        s["metrics"] = ["adherence"]
        s["tas"].update(alpha=0, beta=0)

    assert families.config_problems(with_scoring(config, unselected_but_wrong))[0].startswith("scoring.tas: ")


def test_lambdas_summing_to_one_within_rounding_pass(config):
    changed = with_scoring(config, lambda s: s["response_stats"]["lm"].update(lambdas=[0.7, 0.2, 0.1]))
    assert families.config_problems(changed) == []


@pytest.mark.parametrize(
    "change",
    [
        lambda s: s.update(cas=[1, 6], tas="weights", response_stats=None),
        lambda s: s["cas"].update(weights=[0, 0], delay_range="1-6"),
        lambda s: s["cas"].update(weights={"delay": "zero"}, delay_range=[6]),
        lambda s: s["tas"].update(alpha=True, beta=False),
        lambda s: s["response_stats"]["lm"].update(lambdas=[1, 1]),
    ],
)
def test_checks_skip_values_of_the_wrong_shape(config, change):
    assert families.config_problems(with_scoring(config, change)) == []


@pytest.mark.parametrize("wrong", [None, [], "config", {"scoring": []}, {"scoring": {"cas": {"weights": None}}}])
def test_checks_read_any_config(wrong):
    assert families.config_problems(wrong) == []


def test_the_validity_table_gathers_every_declared_expectation():
    declared = [*families.expectations(), *judge_columns.EXPECTATIONS]
    assert set(declared) <= set(validity.EXPECTATIONS)
    added = [e for e in validity.EXPECTATIONS if e not in declared]
    # every metric of adaptation is also checked under a user who keeps wishes to itself, unless its family
    # declares that check itself (session success does)
    adaptation = {e.metric for e in declared if e.check == "adaptation"}
    assert {e.metric for e in added} == adaptation - {"success"} and "tas" in adaptation
    assert all(e.check == "elicitation" and e.order == ASKER_OVER_LITERAL for e in added)
    checks = [e.check for e in validity.EXPECTATIONS]
    assert checks == sorted(checks, key=["adaptation", "echo", "prompt_echo", "elicitation"].index)
    rows = [(e.metric, e.check) for e in validity.EXPECTATIONS]
    assert len(rows) == len(set(rows))


def test_lags_are_ordered_by_their_lag():
    assert lag_roles(["random", "lag10", "lag2", "lag1", "lagging", "oracle"]) == ["lag1", "lag2", "lag10"]
    order = ("oracle", LAGS, f"parrot={LAGS}", "random")
    assert expand(order, {"lag3", "lag1", "oracle"}) == ("oracle", "lag1", "lag3", "parrot=lag1=lag3", "random")
    assert expand(order, {"oracle", "random"}) == ("oracle", "parrot", "random")
    assert expand((LAGS,), set()) == ()


def test_cliffs_delta_compares_the_best_and_worst_adapting_systems_present():
    assert validity.best_and_worst(["parrot", "random", "lag2", "oracle", "stubborn"]) == ("oracle", "random")
    assert validity.best_and_worst(["lag3", "stubborn", "parrot"]) == ("lag3", "stubborn")
    assert validity.best_and_worst(["oracle", "parrot"]) is None
