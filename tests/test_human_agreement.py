"""The human_agreement tables on corpora with known answers, and recomputed independently."""

import json
import math

import numpy as np
import pandas as pd
import pytest
from conftest import copy_workflow, default_config, run_snakemake, write_config
from scipy.stats import kendalltau, mannwhitneyu
from sklearn.metrics import roc_auc_score
from statsmodels.stats.proportion import proportion_confint

from crseval.checks import human_agreement as ha

LABELS = np.array([1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0] * 2, dtype=float)


def synthetic():
    n = len(LABELS)
    sessions = pd.DataFrame(
        {
            "session_id": [f"s{i}" for i in range(n)],
            "system": ["a", "b", "c"] * (n // 3),
            "satisfied": LABELS,
            "exact": LABELS,
            "constant": np.full(n, 3.0),
            "reversed": -LABELS,
            "lower_better": -LABELS,
        }
    )
    references = pd.DataFrame(
        {
            "session_id": sessions["session_id"],
            ha.LENGTH: np.arange(n, dtype=float),  # unrelated to the verdict
            "reference: turns per dialogue": np.full(n, 4.0),
        }
    )
    metrics = {
        "exact": ("exact", True),
        "constant": ("constant", True),
        "reversed": ("reversed", True),
        "lower_better": ("lower better", False),
    }
    return sessions, references, metrics


def test_known_answers_per_dialogue():
    sessions, references, metrics = synthetic()
    table = ha.dialogue_table(sessions, references, metrics, resamples=200, seed=3, alpha=0.05).set_index("metric")
    assert table.loc["exact", "auc"] == 1.0 and table.loc["exact", "verdict"] == "agrees"
    assert table.loc["constant", "auc"] == 0.5 and table.loc["constant", "verdict"] == "no evidence"
    assert table.loc["reversed", "auc"] == 0.0 and table.loc["reversed", "verdict"] == "disagrees"
    # lower is better and lower with satisfied: agrees, read in its declared direction
    assert table.loc["lower_better", "auc"] == 0.0 and table.loc["lower_better", "oriented_auc"] == 1.0
    assert table.loc["lower_better", "verdict"] == "agrees"
    # references have no direction: associated at most
    assert table.loc[ha.LENGTH, "verdict"] in ("associated", "no evidence")
    assert table.loc["reference: turns per dialogue", "auc"] == 0.5
    # the exact metric separates better than the unrelated length: its margin's CI lies above 0
    assert bool(table.loc["exact", "beats_length"]) and not bool(table.loc["constant", "beats_length"])
    # Holm over every tested row, recomputed by hand
    p = table["p"].dropna().sort_values()
    m = len(p)
    holm = np.minimum(1, np.maximum.accumulate([(m - k) * value for k, value in enumerate(p)]))
    assert table.loc[p.index, "p_holm"].to_numpy() == pytest.approx(holm)
    assert "exact: agrees with users" in " ".join(table["sentence"])


def test_known_answers_per_system():
    sessions, _, _ = synthetic()
    votes = pd.DataFrame(
        {
            "time": ["2024-01-02", "2024-01-01", "2024-01-03"],
            "system_a": ["a", "a", "b"],
            "system_b": ["b", "c", "c"],
            "winner": ["a", None, "b"],
        }
    )
    table = ha.system_table(sessions, votes, resamples=50, seed=1).set_index("system")
    for system, group in sessions.groupby("system"):
        k, n = int(group["satisfied"].sum()), len(group)
        assert table.loc[system, "satisfaction_rate"] == k / n
        assert (table.loc[system, "rate_low"], table.loc[system, "rate_high"]) == pytest.approx(
            proportion_confint(k, n, method="wilson")
        )
    # Elo by hand in time order: a-c tie (1000, 1000), a beats b (1008, 992), b beats c
    expected_c = 1 / (1 + 10 ** ((992 - 1000) / 400))  # c's expected score against b
    assert table.loc["a", "elo"] == pytest.approx(1008)
    assert table.loc["b", "elo"] == pytest.approx(992 + 16 * expected_c)
    assert table.loc["c", "elo"] == pytest.approx(1000 - 16 * expected_c)
    assert table.loc["a", "bt_strength"] > table.loc["c", "bt_strength"] and table["votes"].to_dict() == {
        "a": 2,
        "b": 2,
        "c": 2,
    }


def test_bradley_terry_bootstrap_is_the_fit_of_each_resample_of_the_votes():
    """The CI comes from one fit per resample of the votes: recomputed here one resample at a time."""
    sessions, _, _ = synthetic()
    votes = pd.DataFrame(
        {
            "system_a": ["a", "a", "b", "c", "a", "b"],
            "system_b": ["b", "c", "c", "a", "b", "c"],
            "winner": ["a", None, "b", "c", "b", "c"],
        }
    )
    table = ha.system_table(sessions, votes, resamples=300, seed=9).set_index("system")
    pairs = ha.votes_list(votes)
    rng = np.random.default_rng(9)
    boot = []
    for _ in range(300):
        sample = [pairs[i] for i in sorted(rng.integers(0, len(pairs), len(pairs)))]
        strengths = ha.agreement.bradley_terry(sample, ["a", "b", "c"], prior=ha.BT_PRIOR)
        boot.append([strengths[s] for s in ("a", "b", "c")])
    tail = (1 - 0.95) / 2 * 100  # as the table computes it (2.5 up to rounding)
    low, high = np.percentile(boot, [tail, 100 - tail], axis=0)
    assert table["bt_low"].tolist() == low.tolist() and table["bt_high"].tolist() == high.tolist()


def test_rankings_are_kendall_tau_of_the_system_means():
    sessions, _, metrics = synthetic()
    sessions["exact"] = sessions["exact"] + sessions["system"].map({"a": 0.0, "b": 0.1, "c": 0.2})
    table = ha.ranking_table(sessions, metrics, None, resamples=100, seed=2)
    row = table[(table["metric"] == "exact") & (table["human_ranking"] == "satisfaction rate")].iloc[0]
    means = sessions.groupby("system")["exact"].mean()
    rates = sessions.groupby("system")["satisfied"].mean()
    assert row["kendall_tau"] == pytest.approx(kendalltau(means, rates).statistic)
    assert row["ci_low"] <= row["kendall_tau"] <= row["ci_high"] or math.isnan(row["kendall_tau"])


@pytest.mark.workflow
def test_the_rule_on_a_labelled_corpus_recomputed_independently(tmp_path):
    """A labelled JSON-lines corpus runs through the workflow; human_agreement.csv is recomputed from
    sessions.parquet with scikit-learn and scipy."""
    workdir = copy_workflow(tmp_path)
    rng = np.random.default_rng(5)
    lines = []
    films = ["Heat", "Casablanca", "Stagecoach", "Citizen Kane", "Vertigo"]
    for system, good in (("long", 0.7), ("short", 0.3), ("mid", 0.5)):
        for i in range(12):
            satisfied = bool(rng.random() < good)
            words = " ".join(["really"] * int(rng.integers(1, 12 if satisfied else 6)))
            turns = [
                {"role": "user", "text": "A crime film from the forties?"},
                {"role": "system", "text": f"Try {films[i % 5]}, it is {words} good."},
                {"role": "user", "text": "Something else?"},
                {"role": "system", "text": f"Then {films[(i + 1) % 5]}."},
            ]
            label = {"satisfaction": "satisfied" if satisfied else "frustrated"}
            lines.append({"system": system, "dialogue_id": f"d{i}", "turns": turns, "labels": label})
    (workdir / "corpus.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    config = default_config()
    config.update(experiment="agree", judge={"enabled": False}, systems=[{"name": "unused", "agent": "template"}])
    config["sessions"] = {
        "source": "import",
        "import_format": "jsonl",
        "import_paths": "corpus.jsonl",
        "shard_size": 12,
    }
    config["scoring"]["metrics"] = ["tas", "response_stats", "conduct"]
    config["scoring"]["response_stats"]["embeddings"] = False
    config["stats"]["bootstrap_resamples"] = 200
    # the same run judges every metric against people: this corpus again, and an annotated one (ordinal)
    write_annotated_corpus(workdir / "annotated.csv", rng)
    config["human_agreement"] |= {
        "corpora": [
            {"name": "own", "format": "jsonl", "paths": "corpus.jsonl"},
            {"name": "annotated", "format": "ab_redial", "paths": "annotated.csv", "verdicts": ["overall"]},
        ],
        "resamples": 200,
    }
    write_config(workdir, config, "agree.yaml")
    run_snakemake(
        workdir,
        "results/agree/stats/human_agreement.csv",
        "results/agree/stats/scorecard.csv",
        "--configfile",
        "agree.yaml",
    )
    results = workdir / "results" / "agree"
    check_people_agreement(results, pd.read_parquet(results / "tables" / "sessions.parquet"))
    sessions = pd.read_parquet(results / "tables" / "sessions.parquet")
    table = pd.read_csv(results / "stats" / "human_agreement.csv").set_index("metric")
    labels = sessions["satisfied"]
    for metric in ("tas", "response_words", "distinct_1"):
        keep = sessions[metric].notna()
        values, y = sessions.loc[keep, metric], labels[keep]
        assert table.loc[metric, "auc"] == pytest.approx(roc_auc_score(y, values))
        expected_p = mannwhitneyu(values[y == 1], values[y == 0], alternative="two-sided").pvalue
        assert table.loc[metric, "p"] == pytest.approx(expected_p)
    assert table.loc["reference: words per reply", "auc"] == pytest.approx(
        roc_auc_score(labels, sessions["response_words"])
    )
    systems = pd.read_csv(results / "stats" / "human_agreement_systems.csv").set_index("system")
    assert systems["dialogues"].to_dict() == {"long": 12, "mid": 12, "short": 12}
    assert (results / "figures" / "human_agreement.png").stat().st_size > 10_000
    summary = (results / "stats" / "human_agreement.md").read_text()
    assert "## Verdicts" in summary and "36 dialogues with the user's verdict" in summary


def write_annotated_corpus(path, rng) -> None:
    """An AB-ReDial-style file of our own: 10 dialogues, two annotators each, scores 1-5."""
    films = ['"Heat (1995)"', '"Vertigo (1958)"', '"Casablanca (1942)"']
    rows = []
    for number in range(10):
        offered = " and ".join(films[: 1 + number % 3])
        cells = [
            "USER\tI want a tense film tonight.",
            f"SYSTEM\tYou could watch {offered}{' ' + 'really ' * int(rng.integers(0, 8))}.",
            "USER\tThanks, bye.",
            "SYSTEM\tEnjoy.",
        ]
        for annotator in range(2):
            score = float(1 + (number + annotator) % 5)
            rows.append(
                {"ConvId": f"c{number}", **{f"utterance{k}": cell for k, cell in enumerate(cells)}}
                | {"understanding": 2, "task-completion": 2, "interest-arousal": 1, "efficiency": 1}
                | {"dialogue-overall": score, "justification-text": ""}
            )
    pd.DataFrame(rows).to_csv(path, index=False)


def check_people_agreement(results, experiment_sessions) -> None:
    """stats/people_agreement.csv recomputed with scikit-learn and scipy from the corpora's own tables: the AUC
    on the binary corpus, tau-b on the ordinal one, and C pooled over both by counting pairs."""
    table = pd.read_csv(results / "stats" / "people_agreement.csv")
    own = pd.read_parquet(results / "people" / "own" / "sessions.parquet")
    annotated = pd.read_parquet(results / "people" / "annotated" / "sessions.parquet")
    # the corpus imported twice scores the same: the experiment's sessions and the agreement's
    merged = own.merge(experiment_sessions, on="session_id", suffixes=("", "_experiment"))
    assert len(merged) == 36 and np.allclose(merged["tas"], merged["tas_experiment"], equal_nan=True)
    assert annotated["verdict_overall"].notna().sum() == 10

    def found(metric, corpus):
        return table[(table["metric"] == metric) & (table["corpus"] == corpus)].iloc[0]

    for metric in ("response_words", "films_offered_per_reply"):
        assert found(metric, "own")["value"] == pytest.approx(roc_auc_score(own["verdict_satisfied"], own[metric]))
        tau = kendalltau(annotated[metric], annotated["verdict_overall"]).statistic
        assert found(metric, "annotated")["value"] == pytest.approx(tau)
        concordant = pairs = 0.0
        for corpus, verdict in ((own, "verdict_satisfied"), (annotated, "verdict_overall")):
            x, y = corpus[metric].to_numpy(float), corpus[verdict].to_numpy(float)
            better = y[:, None] > y[None, :]
            concordant += (better * ((x[:, None] > x[None, :]) + 0.5 * (x[:, None] == x[None, :]))).sum()
            pairs += better.sum()
        assert found(metric, "pooled")["value"] == pytest.approx(concordant / pairs)
    card = pd.read_csv(results / "stats" / "scorecard.csv").set_index("metric")
    assert card.loc["films_offered_per_reply", "people"] in ("shown", "not shown")
    assert not card.loc["distinct_1", "leads"]  # no declared direction: never leads


def test_every_judge_column_enters_the_agreement_table_and_ground_truth_metrics_are_listed_apart():
    """The first judge's scores and G-Eval scores and a panel judge's (declared by pattern) are metrics of the
    table like any other; a metric without a value is listed as unmeasured; text columns are not metrics."""
    sessions = pd.DataFrame(
        {
            "tas": [0.1, 0.2],
            "judge_coherence": [3.0, 4.0],
            "judge_coherence_geval": [3.2, 3.9],
            "judge_gemma_coherence": [2.0, 5.0],
            "judge_gemma_coherence_geval": [2.5, 4.5],
            "judge_gemma_coherence_rationale": ["a", "b"],
            "rec_satisfaction": [np.nan, np.nan],
        }
    )
    metrics = ha.session_metrics(sessions)
    assert set(metrics) == {
        "tas",
        "judge_coherence",
        "judge_coherence_geval",
        "judge_gemma_coherence",
        "judge_gemma_coherence_geval",
    }
    assert metrics["judge_gemma_coherence_geval"] == ("judge gemma: coherence, G-Eval (probability-weighted)", True)
    assert ha.unmeasured(sessions) == ["rec_satisfaction"]
