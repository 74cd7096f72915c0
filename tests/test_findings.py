"""The findings page: systems ranked with their intervals, each pair's verdict (differs, no difference
found, not testable at this n with the sessions that would make it testable), metrics ordered by how much
was checked before what passed, links to the sessions behind the extremes, and nothing from a table
written as markup."""

import math

import pandas as pd

from crseval.reports import findings

SYSTEMS = ["alpha", "beta", "<b>gamma</b>"]


def model_metrics():
    return pd.DataFrame(
        {
            "model": SYSTEMS,
            "sessions": [6, 6, 6],
            "tas": [0.40, 0.55, 0.30],
            "tas_ci_low": [0.35, 0.50, 0.20],
            "tas_ci_high": [0.45, 0.60, 0.40],
            "stale_rate": [0.10, 0.10, 0.30],
            "stale_rate_ci_low": [0.0, 0.0, 0.1],
            "stale_rate_ci_high": [0.2, 0.2, 0.5],
        }
    )


def posthoc():
    return pd.DataFrame(
        {
            "metric": ["tas", "tas", "tas"],
            "test": ["Tukey HSD"] * 3,
            "system_a": ["alpha", "alpha", "beta"],
            "system_b": ["beta", "<b>gamma</b>", "<b>gamma</b>"],
            "mean_diff": [-0.15, 0.10, 0.25],
            "p_adj": [0.01, 0.30, 0.20],
            "testable": [True, True, False],
            "sessions_to_test": [math.nan, math.nan, 9.0],
            "differs": [True, False, False],
        }
    )


def paired():
    return pd.DataFrame(
        {
            "metric": ["stale_rate"] * 3,
            "system_a": ["alpha", "alpha", "beta"],
            "system_b": ["beta", "<b>gamma</b>", "<b>gamma</b>"],
            "mean_diff": [0.0, -0.2, -0.2],
            "wilcoxon_p_adj": [1.0, 0.04, 0.06],
            "wilcoxon_testable": [True, True, True],
            "wilcoxon_sessions_to_test": [math.nan] * 3,
        }
    )


def sessions():
    rows = []
    for system, values in zip(SYSTEMS, ([0.4, 0.2, 0.6], [0.5, 0.5, 0.7], [0.1, 0.3, 0.5])):
        for index, value in enumerate(values):
            rows.append({"system": system, "session_id": f"{system}/s{index:05d}", "tas": value, "stale_rate": 0.1})
    return pd.DataFrame(rows)


def test_systems_rank_in_the_metrics_direction():
    assert findings.ranking(model_metrics(), "tas")["system"].tolist() == ["beta", "alpha", "<b>gamma</b>"]
    stale = findings.ranking(model_metrics(), "stale_rate")  # lower is better; a tie shares the better rank
    assert stale["system"].tolist() == ["alpha", "beta", "<b>gamma</b>"] and stale["rank"].tolist() == [1, 1, 3]


def test_pair_verdicts_read_the_posthoc_test_then_the_paired_one():
    tas = findings.pair_verdicts("tas", posthoc(), paired(), 0.05)
    assert tas["verdict"].tolist() == ["differs", "no difference found", "not testable at this n"]
    assert tas["sessions_to_test"].tolist()[2] == 9.0
    stale = findings.pair_verdicts("stale_rate", posthoc(), paired(), 0.05)  # no post-hoc rows: Wilcoxon
    assert stale["test"].unique().tolist() == ["paired Wilcoxon"]
    assert stale["verdict"].tolist() == ["no difference found", "differs", "no difference found"]
    assert findings.pair_verdicts("unknown", posthoc(), paired(), 0.05).empty


def test_evidence_orders_by_checks_run_before_checks_passed():
    validity = pd.DataFrame(
        {
            "metric": ["one_check", "rec", "rec", "rec", "rec", "one_check"],
            "check": ["adaptation", "adaptation", "echo", "elicitation", "asking", "echo"],
            "verdict": ["pass", "pass", "pass", "pass", "fail", "not measured (no parrot)"],
        }
    )
    table = findings.evidence(validity, None)
    assert table["metric"].tolist() == ["rec", "one_check"]
    assert table[["checks_run", "checks_passed"]].values.tolist() == [[4, 3], [1, 1]]
    assert findings.evidence(None, None).empty


def test_the_page_links_extremes_to_the_viewer_and_escapes_every_name():
    page = findings.findings_page(
        "demo <x>",
        model_metrics(),
        ["tas", "stale_rate"],
        posthoc(),
        paired(),
        pd.DataFrame(),
        0.05,
        sessions(),
        links={"Statistics": "../stats/summary.md"},
    )
    assert "<b>gamma</b>" not in page and "&lt;b&gt;gamma&lt;/b&gt;" in page
    assert "Findings: demo &lt;x&gt;" in page
    # beta leads on TAS; 1 of 3 pairs differs, 1 not testable until 9 sessions per system
    assert "beta leads with 0.55 [0.5, 0.6]" in page and "1 of 3 pairs differ" in page
    assert "testable from 9 sessions per system" in page
    # the lowest and highest TAS session of alpha, linked into the viewer
    assert 'href="../viewer/index.html#session=alpha%2Fs00001"' in page
    assert 'href="../viewer/index.html#session=beta%2Fs00002"' in page
    assert "No validity evidence in this run" in page
    assert "<script" not in page and "http" not in page


def test_a_count_or_mean_that_is_infinite_reads_n_a():
    """inf in a table (a count of sessions, trials, checks or sessions needed; a mean) is no number to print
    or rank: the page says n/a where it stood (it raised OverflowError on int(inf))."""
    metrics = model_metrics().assign(sessions=[math.inf] * 3, trials_per_user=[math.inf] * 3)
    metrics.loc[metrics["model"] == "alpha", "tas"] = math.inf
    tests = posthoc().assign(sessions_to_test=[math.nan, math.nan, math.inf])
    power = pd.DataFrame(
        {"metric": ["tas"], "basis": ["stated"], "planned_difference": [0.1], "sessions_needed": [math.inf]}
    )
    scorecard = pd.DataFrame(
        {
            "metric": ["tas", "stale_rate"],
            "checks_run": [math.inf, 2],
            "checks_passed": [1, 2],
            **{name: ["pass", "pass"] for name in ("adaptation", "echo", "users", "beats_length")},
        }
    )
    page = findings.findings_page(
        "demo", metrics, ["tas", "stale_rate"], tests, paired(), power, 0.05, sessions(), scorecard=scorecard
    )
    assert "n/a users per system, each met n/a times" in page
    # alpha's TAS is no finite mean: shown as n/a, unranked, and beta leads
    assert "beta leads with 0.55 [0.5, 0.6]" in page and "n/a [0.35, 0.45] (unranked)" in page
    assert "not testable at this n: the sessions per system that would make it testable: n/a" in page
    assert "(the sessions per system that would make them all testable: n/a)" in page
    assert "The sessions per system the power plan asks for to detect the stated gap of 0.1: n/a." in page
    assert "<td class='num fail'>1 of n/a</td>" in page and "<td class='num pass'>2 of 2</td>" in page
    assert findings.evidence(None, scorecard)["metric"].tolist() == ["stale_rate", "tas"]  # n/a checks last
