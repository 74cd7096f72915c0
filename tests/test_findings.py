"""The findings page: systems ranked with their intervals, each pair's verdict (differs, no difference
found, not testable at this n with the sessions that would make it testable), metrics ordered by how much
was checked before what passed, links to the sessions behind the extremes, and nothing from a table
written as markup."""

import math

import pandas as pd

from crseval.reports import findings

SYSTEMS = ["alpha", "beta", "<b>gamma</b>"]


def leading(*metrics, reason_for=None):
    """A scorecard in which `metrics` lead; `reason_for`: metric -> why it does not (then it does not)."""
    reasons = reason_for or {}
    names = [*metrics, *reasons]
    return pd.DataFrame(
        {
            "metric": names,
            "calibration": ["not run"] * len(names),
            "stability": ["not run"] * len(names),
            "people": ["shown" if m in metrics else "not shown" for m in names],
            "leads": [m in metrics for m in names],
            "reason": [reasons.get(m, "") for m in names],
        }
    )


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
    # without a scorecard no metric leads: beta is first on TAS in its direction; 1 of 3 pairs differs, 1 not
    # testable until 9 sessions per system
    assert "beta is first in its declared direction with 0.55 [0.5, 0.6]" in page and "1 of 3 pairs differ" in page
    assert "Does not lead: no scorecard was written for this run." in page
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
    scorecard = leading("tas", "stale_rate")
    page = findings.findings_page(
        "demo", metrics, ["tas", "stale_rate"], tests, paired(), power, 0.05, sessions(), scorecard=scorecard
    )
    assert "n/a users per system, each met n/a times" in page
    # alpha's TAS is no finite mean: shown as n/a, unranked, and beta leads
    assert "beta leads with 0.55 [0.5, 0.6]" in page and "n/a [0.35, 0.45] (unranked)" in page
    assert "not testable at this n: the sessions per system that would make it testable: n/a" in page
    assert "(the sessions per system that would make them all testable: n/a)" in page
    assert "The sessions per system the power plan asks for to detect the stated gap of 0.1: n/a." in page


# Tool calls: beta calls tools and some calls fail; gamma calls tools without an error; alpha calls none (NaN).
TOOL_COUNTS = {  # session -> (calls, errors, ignored, turns ended at the call bound)
    "beta/s00000": (10, 2, 1, 0),
    "beta/s00001": (6, 0, 0, 0),
    "beta/s00002": (24, 4, 0, 1),
    "<b>gamma</b>/s00000": (5, 0, 0, 0),
    "<b>gamma</b>/s00001": (3, 0, 2, 0),
    "<b>gamma</b>/s00002": (0, 0, 0, 0),
}
# turns.parquet's tool_error_kinds: per turn, its distinct error kinds as a JSON list ("" without an error,
# missing for a system without tools). beta's kinds, in turns: "unknown film id" 2 (a kind twice in a cell counts
# once; the texts read as their kinds), the others 1 each (a cell that is no JSON list is read as lines).
ERROR_KINDS = [
    ("beta", '["unknown film id", "unknown film id: 12"]'),
    ("beta", '["arguments not JSON"]'),
    ("beta", "unknown film id: 5\ntoo many calls"),
    ("beta", '["<script>x</script>"]'),
    ("beta", ""),
    ("beta", "[]"),
    ("alpha", None),
    ("<b>gamma</b>", ""),
]


def tool_sessions():
    table = sessions()
    for i, name in enumerate(findings.TOOL_COLUMNS):
        table[name] = [TOOL_COUNTS.get(sid, (math.nan,) * 4)[i] for sid in table["session_id"]]
    return table


def tool_turns():
    return pd.DataFrame(ERROR_KINDS, columns=["system", "tool_error_kinds"])


def tool_page(table, turns=None):
    return findings.findings_page(
        "demo", model_metrics(), ["tas"], posthoc(), paired(), pd.DataFrame(), 0.05, table, turns=turns
    )


def test_error_kind_is_the_text_before_the_first_colon():
    assert findings.error_kind("unknown film id: 99999") == "unknown film id"
    assert findings.error_kind("after the turn's recommend") == "after the turn's recommend"
    assert findings.error_kind("x" * 100) == "x" * 60
    assert findings.error_kind(findings.error_kind("y" * 80 + ": z")) == "y" * 60


def test_tool_calls_are_counted_per_system():
    table = findings.tool_calls_table(tool_sessions(), tool_turns()).set_index("system")
    assert table.index.tolist() == ["<b>gamma</b>", "beta"]  # alpha recorded no tool calls
    beta = table.loc["beta"]
    assert (beta["calls"], beta["errors"], beta["error_share"], beta["ignored"], beta["bound_turns"]) == (
        40,
        6,
        0.15,
        1,
        1,
    )
    assert beta["kinds"] == [("unknown film id", 2), ("<script>x</script>", 1), ("arguments not JSON", 1)]
    assert (beta["worst_id"], beta["worst_errors"]) == ("beta/s00002", 4)
    gamma = table.loc["<b>gamma</b>"]
    assert (gamma["calls"], gamma["errors"], gamma["error_share"], gamma["ignored"]) == (8, 0, 0.0, 2)
    assert gamma["kinds"] == [] and pd.isna(gamma["worst_id"])
    assert findings.tool_calls_table(tool_sessions())["kinds"].isna().all()  # no turns table: no kinds
    assert findings.tool_calls_table(tool_sessions().drop(columns="tool_ignored")).empty


def test_the_page_names_tool_call_errors():
    page = tool_page(tool_sessions(), tool_turns())
    assert "<h2>Tool calls</h2>" in page and "<th>most common errors (turns)</th>" in page
    assert (
        "<tr><td>beta</td><td class='num'>40</td><td class='num fail'>6&nbsp;(15.0%)</td>"
        "<td>unknown film id (2 turns); &lt;script&gt;x&lt;/script&gt; (1 turn); arguments not JSON (1 turn)</td>"
        "<td class='num'>1</td><td class='num'>1</td>"
        '<td><a href="../viewer/index.html#session=beta%2Fs00002">4 (beta/s00002)</a></td></tr>'
    ) in page
    assert (
        "<tr><td>&lt;b&gt;gamma&lt;/b&gt;</td><td class='num'>8</td><td class='num pass'>0&nbsp;(0.0%)</td>"
        "<td>–</td><td class='num'>0</td><td class='num'>2</td><td>–</td></tr>"
    ) in page
    assert "<td>alpha</td><td class='num'>" not in page.split("<h2>Tool calls</h2>")[1].split("</table>")[0]
    assert "<script>" not in page and "<b>gamma" not in page
    # without the turns table's kinds: the counts, no kinds
    page = tool_page(tool_sessions())
    assert "<h2>Tool calls</h2>" in page and "most common errors" not in page and "error's kind" not in page
    assert "<td class='num fail'>6&nbsp;(15.0%)</td><td class='num'>1</td><td class='num'>1</td>" in page


def test_no_tool_calls_section_without_its_columns_or_errors():
    assert "Tool calls" not in tool_page(sessions(), tool_turns())
    for name in findings.TOOL_COLUMNS:
        assert "Tool calls" not in tool_page(tool_sessions().drop(columns=name), tool_turns())
    no_errors = tool_sessions().assign(tool_errors=0)
    assert "Tool calls" not in tool_page(no_errors, tool_turns())


def test_no_testable_pair_on_any_metric_is_said_once():
    """When no pair of any headline metric is testable at this n, the conclusions name each metric's leader and say
    once, for all metrics, the sessions per system that would make every pair testable (the most any pair needs)."""
    untestable = posthoc().assign(testable=[False] * 3, sessions_to_test=[8.0, 9.0, 8.0], differs=[False] * 3)
    wilcoxon = paired().assign(wilcoxon_testable=[False] * 3, wilcoxon_sessions_to_test=[8.0, 8.0, 10.0])
    page = findings.findings_page(
        "demo",
        model_metrics(),
        ["tas", "stale_rate"],
        untestable,
        wilcoxon,
        pd.DataFrame(),
        0.05,
        sessions(),
        scorecard=leading("tas", "stale_rate"),
    )
    conclusions = page.split("<h2>What this run concludes</h2>")[1].split("</ul>")[0]
    assert conclusions.count("testable at this n") == 1 and conclusions.count("would make them all testable") == 1
    shared = "testable at this n on any headline metric</span>; 10 sessions per system with a value would make"
    assert shared in page
    assert "<b>grounded TAS</b>: beta leads with 0.55 [0.5, 0.6].</li>" in conclusions
    # the pairs' tables still say it per pair
    assert page.count("not testable at this n: testable from 8 sessions per system with a value") == 4
    # one metric with a testable pair: each metric says its own again
    mixed = findings.findings_page(
        "demo", model_metrics(), ["tas", "stale_rate"], untestable, paired(), pd.DataFrame(), 0.05, sessions()
    )
    assert "on any headline metric" not in mixed and "(all testable from 9 sessions per system with a value)" in mixed


def test_a_metric_without_values_in_some_sessions_names_the_system_with_the_fewest():
    """The sessions that would make a pair testable are sessions with a value; where a system has a value in only
    some of its sessions, the sentence names the one with the smallest share (beta: 4 of 6), so that the reader
    does not take 9 for the sessions to run. Where every session has a value, nothing is added."""
    counted = model_metrics().assign(tas_n=[5, 4, 6])
    page = findings.findings_page("demo", counted, ["tas"], posthoc(), paired(), pd.DataFrame(), 0.05, sessions())
    assert "(all testable from 9 sessions per system with a value; beta has one in 4 of its 6 sessions)" in page
    whole = model_metrics().assign(tas_n=[6, 6, 6])
    page = findings.findings_page("demo", whole, ["tas"], posthoc(), paired(), pd.DataFrame(), 0.05, sessions())
    assert "(all testable from 9 sessions per system with a value)" in page


def test_the_page_leads_with_what_the_scorecard_supports_and_lists_the_rest_with_their_reason():
    """A metric the scorecard lets lead heads the conclusions with the users it was measured under; the others go
    under "Without the evidence to lead" with their reason; one without a declared direction is described as
    highest and lowest and never leads."""
    metrics = model_metrics().assign(self_bleu=[0.2, 0.8, 0.5], self_bleu_ci_low=0.1, self_bleu_ci_high=0.9)
    page = findings.findings_page(
        "demo",
        metrics,
        ["tas", "stale_rate", "self_bleu"],
        posthoc(),
        paired(),
        pd.DataFrame(),
        0.05,
        sessions(),
        scorecard=leading("tas", reason_for={"stale_rate": "people: behind reply length on iard"}),
        profiles=["explicit"],
    )
    concludes = page.split("<h2>What this run concludes</h2>")[1].split("<h2>Without the evidence to lead</h2>")
    assert "<b>grounded TAS</b>: beta leads with 0.55 [0.5, 0.6]" in concludes[0]
    assert "Users: measured under explicit only." in concludes[0]
    rest = concludes[1].split("</ul>")[0]
    assert "<b>recommended films serving a superseded wish, not the current one</b>: alpha = beta is first" in rest
    assert "Does not lead: people: behind reply length on iard." in rest
    assert "leads" not in rest
    assert "highest beta 0.8, lowest alpha 0.2 (direction undeclared: neither end is better)" in rest
    # no metric may lead: said at the top
    none = findings.findings_page(
        "demo", metrics, ["tas"], posthoc(), paired(), pd.DataFrame(), 0.05, sessions(), scorecard=leading()
    )
    assert "No headline metric has the evidence to lead (evidence asked: people" in none
