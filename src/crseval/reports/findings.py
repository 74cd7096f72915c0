"""The findings page: what an experiment concluded, on one static page that opens the report.

The statistics of a run are spread over a dozen tables; a reader should not have to assemble the
conclusion. `findings_page` joins them into one self-contained HTML page (no scripts, no external
files; links to the session viewer and the tables beside it):
- the systems ranked on each headline metric, with the mean and its 95% interval (model_metrics.csv);
- per headline metric, every pair of systems: a difference the recommended post-hoc test (or, where
  it has no row, the paired Wilcoxon test) finds at the plan's alpha, no difference found, or not
  testable at this n with the sessions per system that would make it testable (sessions with a value of
  the metric: a metric undefined in some sessions needs more sessions than that, and the conclusions name
  the system with the smallest share of sessions with a value); and the sessions
  per system the power plan asks for the observed gap (power.csv). When no pair of any headline metric
  is testable, the conclusions say so once, with the sessions per system that would make them all testable;
- the evidence behind each metric: how many validity checks could be run on it and how many it
  passed (the scorecard when real users' verdicts were joined, else the calibration systems'
  validity table), ordered by how much was checked before what passed, so a metric that passed the
  one check it could run does not read as better founded than one that passed three of four;
- per headline metric and system, links to the sessions with the lowest and the highest value in
  the session viewer (`<viewer>#session=<session_id>`);
- when a tool-using system's calls failed (docs/own_recommender.md), per such system: its calls, the
  errors (count and share), the most common error kinds, the turns that ended at the call bound and the calls
  ignored after the turn's recommend (`tool_calls_table`; the session columns TOOL_COLUMNS, the kinds from
  the turns table's `tool_error_kinds` when it has one).
Every value read from a table is escaped: system names and metric labels come from the config, error kinds
from the model under test. A name with right-to-left text or a bidi control is a bidi isolate (<bdi>), so that
it cannot reorder the numbers around it; NUL and other control characters show as U+FFFD. A number or text
that is missing shows as "–" (a system without a name too); one that is no finite number (an inf a table holds)
as "n/a", and a mean that is no finite number is left unranked. A row per system of model_metrics.csv is a
column of the page, even when two rows carry the same name.

The hrefs are the caller's: `viewer` (the viewer's index.html) and `links` (label -> href of a table or
summary), relative to where the page is opened; one with a scheme other than http(s) (javascript:, data:) is
written as a relative path (crseval.reports.links, the check every page's links pass), so that no link of the
page runs a script. The results folder and the Snakemake report zip place the same files differently (the zip
puts each report item in `data/raw/<id>/`), so the rule writes the page once for each
(workflow/scripts/findings.py).
"""

from __future__ import annotations

import html
import json
import math
import re
import unicodedata
from collections import Counter
from urllib.parse import quote

import numpy as np
import pandas as pd

from crseval.reports.links import safe_url
from crseval.statistics import column_registry

VIEWER = "../viewer/index.html"
# per session, the counts the tool_use metric family writes: calls, calls with status "error", calls ignored
# after the turn's recommend, turns that ended at the call bound (NaN or absent: no tool-using system)
TOOL_COLUMNS = ("tool_calls", "tool_errors", "tool_ignored", "tool_bound_turns")
ERROR_KINDS = "tool_error_kinds"  # turns table: the turn's distinct error kinds (a JSON list of strings)
KINDS_SHOWN = 3
KIND_LENGTH = 60
PART_CSS = {"pass": "pass", "holds": "pass", "shown": "pass", "fail": "fail", "changes": "fail"}  # scorecard parts
STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;max-width:1200px;padding:16px 24px;
color:#1d1f23;line-height:1.45}
h1{font-size:1.5em;margin:.2em 0}h2{font-size:1.15em;margin:1.4em 0 .4em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.4em 0 1em;font-size:.92em}th,td{border:1px solid #d6d8dc;padding:3px 8px;
text-align:left;vertical-align:top}th{background:#f1f3f5}td.num{text-align:right;font-variant-numeric:tabular-nums}
.lead{font-size:1.05em;background:#f6f8fa;border-left:4px solid #3b6ea5;padding:8px 12px}
.differs{color:#0b6b2f;font-weight:600}.none{color:#555}.untestable{color:#9a5b00}.fail{color:#a11}.pass{color:#0b6b2f}
nav a{margin-right:1em}small{color:#555}
"""


# NUL and the other control characters HTML does not allow in text, and lone surrogates (no UTF-8 encodes them)
_UNPRINTABLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")
# the bidi classes of right-to-left letters and digits and of the explicit embeddings, overrides and isolates
_BIDI = {"R", "AL", "AN", "RLE", "RLO", "LRE", "LRO", "PDF", "RLI", "LRI", "FSI", "PDI"}


def esc(value) -> str:
    """`value` as HTML text or attribute (the runs' pages use it too); characters that are no text as U+FFFD."""
    return _UNPRINTABLE.sub("\ufffd", html.escape(str(value), quote=True))


def _text(value) -> str:
    """A text cell of a table, "–" when it is missing (not the word "nan")."""
    return "–" if value is None or (not isinstance(value, str) and pd.isna(value)) else str(value)


def _name(value) -> str:
    """A name (system, session, error kind) inside a sentence, escaped; one with right-to-left text or a bidi
    control in it as an isolate (<bdi>), so that it cannot reorder the numbers after it ("0.55" shown "55.0")."""
    text = esc(_text(value))
    return f"<bdi>{text}</bdi>" if any(unicodedata.bidirectional(c) in _BIDI for c in text) else text


def _href(value) -> str:
    """An href attribute: the URL after the links check (crseval.reports.links), escaped."""
    return esc(safe_url(value))


def num(value, digits: int = 3) -> str:
    """`value` to `digits` significant digits; "–" when missing, "n/a" when infinite (as every page writes it)."""
    try:
        value = float(value)
    except (TypeError, ValueError):
        return "–"
    if math.isnan(value):
        return "–"
    return "n/a" if math.isinf(value) else f"{value:.{digits}g}"


def _count(value) -> str:
    """A count as 1,234; "n/a" for a value that is no finite number (missing, or an inf a table holds)."""
    try:
        value = float(value)
    except (TypeError, ValueError):
        return "n/a"
    return f"{int(value):,}" if math.isfinite(value) else "n/a"


def _finite(values) -> pd.Series:
    """`values` as numbers, with NaN for whatever is no finite number (text, inf)."""
    numbers = pd.to_numeric(pd.Series(values, dtype=object), errors="coerce").astype(float)
    return numbers.where(np.isfinite(numbers))


def _label(metric: str) -> str:
    try:
        return column_registry.label(metric)
    except KeyError:
        return metric


def ranking(model_metrics: pd.DataFrame, metric: str) -> pd.DataFrame:
    """The systems by their mean of `metric`, best first in the metric's declared direction (highest first
    for a metric without one): columns system, mean, ci_low, ci_high, with_value (sessions with a value of the
    metric), sessions, rank (ties share the better rank; a
    mean that is missing or no finite number has no rank and comes last). The index is the row of
    `model_metrics`, so that two rows with the same name stay apart."""
    name = column_registry.thesis_name(metric)
    if name not in model_metrics or "model" not in model_metrics:
        return pd.DataFrame(columns=["system", "mean", "ci_low", "ci_high", "with_value", "sessions", "rank"])
    model_metrics = model_metrics.reset_index(drop=True)
    table = pd.DataFrame(
        {
            "system": _systems(model_metrics),
            "mean": pd.to_numeric(model_metrics[name], errors="coerce"),
            "ci_low": pd.to_numeric(model_metrics.get(f"{name}_ci_low"), errors="coerce"),
            "ci_high": pd.to_numeric(model_metrics.get(f"{name}_ci_high"), errors="coerce"),
            "with_value": pd.to_numeric(model_metrics.get(f"{name}_n"), errors="coerce"),
            "sessions": pd.to_numeric(model_metrics.get("sessions"), errors="coerce"),
        }
    )
    ascending = column_registry.direction(metric) is False
    table["rank"] = _finite(table["mean"]).rank(method="min", ascending=ascending)
    return table.sort_values(["rank", "system"], kind="stable")


def _systems(model_metrics: pd.DataFrame) -> list[str]:
    """The system of each row of model_metrics.csv, "–" where the name is missing (a CSV reader reads a system
    named "NA" or "None" as missing)."""
    return [_text(name) for name in model_metrics["model"]] if "model" in model_metrics else []


def pair_verdicts(metric: str, posthoc: pd.DataFrame, paired: pd.DataFrame, alpha: float) -> pd.DataFrame:
    """Every pair of systems on `metric`: system_a, system_b, mean_diff (a - b), test, p_adj, verdict
    ("differs", "no difference found", "not testable at this n") and sessions_to_test (the sessions per
    system that would make an untestable pair testable). The post-hoc test of the recommended omnibus test
    where it has rows, else the paired Wilcoxon test."""
    columns = ["system_a", "system_b", "mean_diff", "test", "p_adj", "verdict", "sessions_to_test"]
    rows = posthoc[posthoc["metric"] == metric] if len(posthoc) and "metric" in posthoc else posthoc.iloc[0:0]
    if len(rows):
        source = rows.assign(
            test=rows["test"].astype(str),
            p=rows["p_adj"],
            testable=rows["testable"],
            to_test=rows.get("sessions_to_test"),
            verdict=rows["differs"] if "differs" in rows else None,  # the post-hoc table's own reading
        )
    else:
        rows = paired[paired["metric"] == metric] if len(paired) and "metric" in paired else paired.iloc[0:0]
        if not len(rows):
            return pd.DataFrame(columns=columns)
        source = rows.assign(
            test="paired Wilcoxon",
            p=rows["wilcoxon_p_adj"],
            testable=rows["wilcoxon_testable"],
            to_test=rows.get("wilcoxon_sessions_to_test"),
            verdict=None,
        )
    out = []
    for row in source.to_dict("records"):
        testable = _true(row["testable"])
        p = pd.to_numeric(row["p"], errors="coerce")
        if not testable:
            verdict = "not testable at this n"
        elif row["verdict"] is not None and not pd.isna(row["verdict"]):
            verdict = "differs" if _true(row["verdict"]) else "no difference found"
        elif pd.notna(p) and p < alpha:
            verdict = "differs"
        else:
            verdict = "no difference found"
        out.append([row["system_a"], row["system_b"], row["mean_diff"], row["test"], p, verdict, row["to_test"]])
    return pd.DataFrame(out, columns=columns)


def _true(value) -> bool:
    """A boolean read back from a CSV (True, "True", 1)."""
    return str(value).strip().lower() in ("true", "1", "1.0")


def evidence(validity: pd.DataFrame | None, scorecard: pd.DataFrame | None) -> pd.DataFrame:
    """Per metric: the evidence behind it. From the scorecard where there is one (crseval.checks.scorecard:
    calibration, stability and people, whether it leads and why not; metrics that lead first), else from the
    validity table (calibration checks only, every user profile's rows: checks run, passed, verdicts)."""
    if scorecard is not None and len(scorecard) and "leads" in scorecard:
        table = scorecard.assign(leads=scorecard["leads"].map(_true))
        return table.sort_values(["leads", "metric"], ascending=[False, True], kind="stable").reset_index(drop=True)
    columns = ["metric", "checks_run", "checks_passed", "verdicts"]
    if validity is None or not len(validity):
        return pd.DataFrame(columns=columns)
    rows = []
    for metric, own in validity.groupby("metric", sort=False):
        verdicts = own["verdict"].map(_text)
        measured = own[verdicts.isin(["pass", "fail"])]  # no verdict, not measured, cannot see: not run
        named = [
            f"{_text(r['check'])}{' (' + _text(r['profile']) + ')' if 'profile' in own else ''} {r['verdict']}"
            for r in measured.to_dict("records")
        ]
        rows.append([metric, len(measured), int((measured["verdict"] == "pass").sum()), ", ".join(named)])
    table = pd.DataFrame(rows, columns=columns)
    return table.sort_values(["checks_run", "checks_passed", "metric"], ascending=[False, False, True], kind="stable")


def supported(headline: list[str], scorecard: pd.DataFrame | None) -> tuple[list[str], dict[str, str]]:
    """The headline metrics the scorecard lets lead (in headline order), and for each other one why not."""
    if scorecard is None or not len(scorecard) or "leads" not in scorecard:
        return [], {m: "no scorecard was written for this run" for m in headline}
    by_metric = {r["metric"]: r for r in scorecard.to_dict("records")}
    leading, others = [], {}
    for metric in headline:
        row = by_metric.get(metric)
        if row is None:
            others[metric] = "not judged by the scorecard"
        elif _true(row["leads"]):
            leading.append(metric)
        else:
            others[metric] = _text(row.get("reason")) if _text(row.get("reason")) != "–" else "no evidence"
    return leading, others


def _whole(value) -> int | float:
    """A count read from a table as an int; NaN when it is no finite number."""
    number = _finite([value]).iloc[0]
    return int(number) if pd.notna(number) else math.nan


def extremes(sessions: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Per system, the session with the lowest and the one with the highest value of `metric` (first by
    session id among equals): system, low_id, low, high_id, high."""
    columns = ["system", "low_id", "low", "high_id", "high"]
    if metric not in sessions:
        return pd.DataFrame(columns=columns)
    known = sessions[["system", "session_id", metric]].dropna(subset=[metric]).sort_values(["system", "session_id"])
    rows = []
    for system, own in known.groupby("system", sort=True):
        low = own.loc[own[metric].idxmin()]
        high = own.loc[own[metric].idxmax()]
        rows.append([system, low["session_id"], low[metric], high["session_id"], high[metric]])
    return pd.DataFrame(rows, columns=columns)


def error_kind(text) -> str:
    """The kind of a tool call's error: its text up to the first ":", at most KIND_LENGTH characters ("unknown
    film id: 99999" -> "unknown film id"). A kind is its own kind."""
    return str(text).split(":", 1)[0].strip()[:KIND_LENGTH]


def _kinds_of(cell) -> list[str]:
    """The distinct error kinds in one turn's `tool_error_kinds` cell: a JSON list of strings (the kinds, or
    error texts); a cell that is no JSON list is read as one per line; missing or empty, none."""
    if cell is None or (isinstance(cell, float) and math.isnan(cell)) or not str(cell).strip():
        return []
    try:
        items = json.loads(cell)
    except (TypeError, ValueError):
        items = None
    if not isinstance(items, list):
        items = str(cell).splitlines()
    return list(dict.fromkeys(error_kind(item) for item in items if item is not None and str(item).strip()))


def tool_calls_table(sessions: pd.DataFrame, turns: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per system whose sessions recorded tool calls (a value in `tool_calls`), over all its sessions: calls,
    errors, error_share (errors / calls, NaN without calls), ignored, bound_turns, kinds (the KINDS_SHOWN most
    common error kinds as (kind, turns with an error of that kind), most first, then by name; None when
    `turns` has no `tool_error_kinds`), worst_id and worst_errors (the session with the most errors, first by id among
    equals; missing without errors). Empty when `sessions` lacks one of TOOL_COLUMNS."""
    columns = ["system", "calls", "errors", "error_share", "ignored", "bound_turns", "kinds", "worst_id"]
    columns.append("worst_errors")
    if not set(TOOL_COLUMNS) <= set(sessions.columns):
        return pd.DataFrame(columns=columns)
    counts = sessions[["system", "session_id"]].astype(str)
    for name in TOOL_COLUMNS:
        counts[name] = _finite(sessions[name].tolist()).to_numpy()
    counts = counts[counts["tool_calls"].notna()].sort_values(["system", "session_id"], kind="stable")
    counts = counts.reset_index(drop=True)
    kinds = None
    if turns is not None and ERROR_KINDS in turns and "system" in turns:
        kinds = {}
        for system, cells in turns.groupby(turns["system"].astype(str), sort=True)[ERROR_KINDS]:
            found = Counter(kind for cell in cells.tolist() for kind in _kinds_of(cell))
            kinds[system] = sorted(found.items(), key=lambda item: (-item[1], item[0]))[:KINDS_SHOWN]
    rows = []
    for system, own in counts.groupby("system", sort=True):
        calls, errors = own["tool_calls"].sum(), own["tool_errors"].sum()
        worst = own.loc[own["tool_errors"].idxmax()] if errors > 0 else None
        rows.append(
            [
                system,
                calls,
                errors,
                errors / calls if calls > 0 else math.nan,
                own["tool_ignored"].sum(),
                own["tool_bound_turns"].sum(),
                None if kinds is None else kinds.get(system, []),
                None if worst is None else worst["session_id"],
                None if worst is None else worst["tool_errors"],
            ]
        )
    return pd.DataFrame(rows, columns=columns)


def _session_link(viewer: str, session_id: str, value: str) -> str:
    """`value (session id)`, a link to the session in the viewer."""
    href = f"{_href(viewer)}#session={quote(str(session_id), safe='')}"
    return f'<a href="{href}">{esc(value)} ({_name(session_id)})</a>'


def _none_testable(pairs: pd.DataFrame) -> bool:
    return bool(len(pairs)) and bool(pairs["verdict"].eq("not testable at this n").all())


def _shared_untestable(pairs: dict[str, pd.DataFrame]) -> str | None:
    """The sentence said once when no pair of any headline metric is testable at this n (each metric's
    sentence then leaves it out): with the sessions per system that would make them all testable."""
    if not pairs or not all(_none_testable(table) for table in pairs.values()):
        return None
    needed = pd.concat([pd.to_numeric(t["sessions_to_test"], errors="coerce") for t in pairs.values()])
    most = _count(needed.max()) if needed.notna().all() else "n/a"
    said = "<li><span class='untestable'>No pair of systems is testable at this n on any headline metric</span>"
    if most == "n/a":
        return f"{said} (the sessions per system that would make them testable: n/a).</li>"
    return f"{said}; {most} sessions per system with a value would make them all testable.</li>"


def _headline_sentence(metric: str, ranked: pd.DataFrame, pairs: pd.DataFrame, shared: bool = False) -> str:
    """The metric's leader and what its pairs show; `shared`: the untestable pairs are said once for all metrics
    (`_shared_untestable`), so only the leader is named."""
    if not len(ranked) or ranked["mean"].isna().all():
        return f"<li>{esc(_label(metric))}: no values.</li>"
    if ranked["rank"].isna().all():
        return f"<li>{esc(_label(metric))}: no mean is a finite number (n/a).</li>"
    best = ranked[ranked["rank"] == ranked["rank"].min()]
    leaders = " = ".join(_name(system) for system in best["system"])
    top = best.iloc[0]
    interval = f"{num(top['mean'])} [{num(top['ci_low'])}, {num(top['ci_high'])}]"
    if shared:
        return f"<li><b>{esc(_label(metric))}</b>: {leaders} leads with {interval}.</li>"
    counts = pairs["verdict"].value_counts() if len(pairs) else pd.Series(dtype=int)
    differ, untestable = int(counts.get("differs", 0)), int(counts.get("not testable at this n", 0))
    total = len(pairs)
    if not total:
        said = "no pair was tested"
    elif differ == 0:
        said = f"<span class='none'>no pair of systems differs at this n</span>: {total} tested"
        said += f", {untestable} of them not testable at this n" if untestable else ""
    elif total == 1:
        said = "<span class='differs'>the pair differs</span>"
    else:
        said = f"<span class='differs'>{differ} of {total} pairs differ</span>"
        said += f", {untestable} not testable at this n" if untestable else ""
    if untestable:
        needed = pd.to_numeric(pairs.loc[pairs["verdict"] == "not testable at this n", "sessions_to_test"], "coerce")
        if needed.notna().any():
            most = _count(needed.max())
            said += (
                f" (all testable from {most} sessions per system with a value{_fewest_values(ranked)})"
                if most != "n/a"
                else " (the sessions per system that would make them all testable: n/a)"
            )
    return f"<li><b>{esc(_label(metric))}</b>: {leaders} leads with {interval}; {said}.</li>"


def _described_sentence(metric: str, ranked: pd.DataFrame, pairs: pd.DataFrame, why: str, shared: bool) -> str:
    """A metric that does not lead: what its values show, in words that rank no system as better when its
    direction is undeclared, and why it does not lead."""
    label = esc(_label(metric))
    reason = f" <small>Does not lead: {esc(why)}.</small>"
    if not len(ranked) or ranked["rank"].isna().all():
        return f"<li>{label}: no values.{reason}</li>"
    finite = ranked[ranked["rank"].notna()]
    if column_registry.direction(metric) is None:
        high, low = finite.loc[finite["mean"].idxmax()], finite.loc[finite["mean"].idxmin()]
        said = (
            f"highest {_name(high['system'])} {num(high['mean'])}, lowest {_name(low['system'])} {num(low['mean'])} "
            "(direction undeclared: neither end is better)"
        )
        return f"<li><b>{label}</b>: {said}.{reason}</li>"
    sentence = _headline_sentence(metric, ranked, pairs, shared=shared)
    sentence = sentence.replace(" leads with ", " is first in its declared direction with ")
    return sentence.removesuffix("</li>") + f"{reason}</li>"


def _holds_under(metric: str, scorecard: pd.DataFrame | None, profiles: list[str] | None) -> str:
    """Under which simulated users a conclusion holds: the scorecard's stability part, or the one profile run."""
    row = None
    if scorecard is not None and len(scorecard) and "stability_detail" in scorecard:
        found = scorecard[scorecard["metric"] == metric]
        row = found.iloc[0] if len(found) else None
    if row is not None and _text(row.get("stability")) in ("holds", "changes"):
        return f" <small>Users: {esc(_text(row['stability_detail']))}.</small>"
    if profiles:
        users = ", ".join(map(_name, profiles))
        return f" <small>Users: measured under {users} only.</small>"
    return ""


def _fewest_values(ranked: pd.DataFrame) -> str:
    """Where the metric has no value in some sessions (a ground-truth metric after no shift, say): the system
    with the smallest share of sessions with a value, as "; <system> has one in K of its N sessions", so that
    the reader sees that sessions with a value are fewer than the sessions to run."""
    share = ranked["with_value"] / ranked["sessions"]
    if not (share < 1).any():
        return ""
    fewest = ranked.loc[share.idxmin()]
    return (
        f"; {_name(fewest['system'])} has one in {_count(fewest['with_value'])} of its {_count(fewest['sessions'])} "
        "sessions"
    )


def findings_page(
    experiment: str,
    model_metrics: pd.DataFrame,
    headline: list[str],
    posthoc: pd.DataFrame,
    paired: pd.DataFrame,
    power: pd.DataFrame,
    alpha: float,
    sessions: pd.DataFrame,
    validity: pd.DataFrame | None = None,
    scorecard: pd.DataFrame | None = None,
    links: dict[str, str] | None = None,
    viewer: str = VIEWER,
    turns: pd.DataFrame | None = None,
    lead: list[str] | tuple[str, ...] = ("people",),
    profiles: list[str] | None = None,
) -> str:
    """The findings page as one HTML document (see the module docstring). `links`: label -> href of the
    tables and summaries to link to (those the run wrote); `viewer`: href of the session viewer's page. Both
    relative to where the page is opened. `turns`: the turns table's `system` and `tool_error_kinds` columns,
    for the kinds of the tool calls' errors (None: the kinds are left out). `lead`: the evidence a metric needs to
    lead (human_agreement.lead), as the scorecard judged it; `profiles`: the simulated users the run met (None for
    imported dialogues), named where no stability evidence says more."""
    systems = _systems(model_metrics)
    headline = [m for m in headline if column_registry.thesis_name(m) in model_metrics]
    rankings = {m: ranking(model_metrics, m) for m in headline}
    pairs = {m: pair_verdicts(m, posthoc, paired, alpha) for m in headline}
    parts = _page_head(experiment, systems, _sample_size(model_metrics), alpha, links, viewer)
    parts += _conclusions(headline, rankings, pairs, scorecard, lead, profiles)
    parts += _scorecard_table(headline, rankings)
    parts += _pairs_section(headline, pairs, power)
    parts += _tool_calls_section(tool_calls_table(sessions, turns), viewer)
    parts += _evidence_section(evidence(validity, scorecard))
    parts += _extremes_section(headline, sessions, viewer)
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _sample_size(model_metrics: pd.DataFrame) -> str:
    """How many sessions (or users, each met several times) the system with the fewest has."""
    size = "no sessions"
    if "sessions" in model_metrics and len(model_metrics):
        fewest = _count(_finite(model_metrics["sessions"]).min())
        size = f"{fewest} sessions per system"
        if "trials_per_user" in model_metrics:
            most = _count(_finite(model_metrics["trials_per_user"]).max())
            size = f"{fewest} users per system, each met {most} times"
    return size


def _page_head(
    experiment: str, systems: list[str], size: str, alpha: float, links: dict[str, str] | None, viewer: str
) -> list[str]:
    """The document's head, the title, what was compared at what alpha, and the links to the viewer and tables."""
    return [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>Findings: {esc(experiment)}</title><style>{STYLE}</style></head><body>",
        f"<h1>Findings: {esc(experiment)}</h1>",
        f"<p><small>{len(systems)} systems ({', '.join(map(_name, systems))}); {esc(size)}; tests at alpha "
        f"{num(alpha)} with the analysis plan of stats/summary.md.</small></p>",
        '<nav><a href="'
        + _href(viewer)
        + '">Sessions (viewer)</a>'
        + "".join(f'<a href="{_href(path)}">{esc(label)}</a>' for label, path in (links or {}).items())
        + "</nav>",
    ]


def _conclusions(
    headline: list[str],
    rankings: dict[str, pd.DataFrame],
    pairs: dict[str, pd.DataFrame],
    scorecard: pd.DataFrame | None,
    lead: list[str] | tuple[str, ...],
    profiles: list[str] | None,
) -> list[str]:
    """What this run concludes: the headline metrics the scorecard shows to hold up, each with its ranking and
    pairs, then the others with the reason they lack the evidence to lead."""
    shared = _shared_untestable(pairs)
    leading, others = supported(headline, scorecard)
    parts = ["<h2>What this run concludes</h2>"]
    evidence_named = ", ".join(lead) if lead else "none"
    if leading:
        parts += [
            f"<p><small>The metrics the scorecard shows to hold up (evidence asked: {esc(evidence_named)}; "
            "stats/scorecard.md).</small></p>",
            "<ul class='lead'>",
            *(
                _headline_sentence(m, rankings[m], pairs[m], shared=shared is not None).removesuffix("</li>")
                + _holds_under(m, scorecard, profiles)
                + "</li>"
                for m in leading
            ),
            *([shared] if shared else []),
            "</ul>",
        ]
    else:
        parts.append(
            f"<p class='lead'>No headline metric has the evidence to lead (evidence asked: {esc(evidence_named)}; "
            "stats/scorecard.md): every one is listed below with its reason.</p>"
        )
    if others:
        parts += [
            "<h2>Without the evidence to lead</h2>",
            "<ul>",
            *(_described_sentence(m, rankings[m], pairs[m], others[m], shared is not None) for m in others),
            *([shared] if shared and not leading else []),
            "</ul>",
        ]
    return parts


def _scorecard_table(headline: list[str], rankings: dict[str, pd.DataFrame]) -> list[str]:
    """Metrics as rows, systems as columns (in the order of the first headline metric): mean [95% interval]
    (rank in the metric's direction)."""
    if not headline:
        return ["<h2>Systems</h2>", "<p>No headline metric was computed in this run.</p>"]
    first = rankings[headline[0]]
    order = list(first.index)  # rows of model_metrics: a name given twice is two columns
    lines = [
        "<h2>Systems on the headline metrics</h2>",
        "<p><small>Each cell is the mean [95% interval] (rank, 1 = best in the metric's direction); systems in the "
        f"order of {esc(_label(headline[0]))}.</small></p>",
        "<table><tr><th>metric</th>" + "".join(f"<th>{esc(first.loc[row, 'system'])}</th>" for row in order) + "</tr>",
    ]
    for metric in headline:
        by_row = rankings[metric]
        cells = []
        for row in order:
            if row not in by_row.index or pd.isna(by_row.loc[row, "mean"]):
                cells.append("<td class='num'>–</td>")
                continue
            r = by_row.loc[row]
            rank = f" ({int(r['rank'])})" if pd.notna(r["rank"]) else " (unranked)"
            cells.append(f"<td class='num'>{num(r['mean'])} [{num(r['ci_low'])}, {num(r['ci_high'])}]{rank}</td>")
        lines.append(f"<tr><td title='{esc(metric)}'>{esc(_label(metric))}</td>{''.join(cells)}</tr>")
    return [*lines, "</table>"]


def _pairs_section(headline: list[str], pairs: dict[str, pd.DataFrame], power: pd.DataFrame) -> list[str]:
    lines = ["<h2>Which differences hold</h2>"]
    for metric in headline:
        table = pairs[metric]
        if not len(table):
            continue
        plan = power[power["metric"] == metric] if len(power) and "metric" in power else power.iloc[0:0]
        needed = ""
        if len(plan):
            row = plan.iloc[0]
            paired_n = row.get("paired_sessions_needed", math.nan)
            n = paired_n if pd.notna(paired_n) else row.get("sessions_needed", math.nan)
            if pd.notna(n):
                basis = "the stated" if row["basis"] == "stated" else "the observed (a post-hoc plan, no evidence)"
                gap = f"{basis} gap of {num(row['planned_difference'])}"
                needed = (
                    f" The power plan asks for {_count(n)} sessions per system to detect {gap}."
                    if _count(n) != "n/a"
                    else f" The sessions per system the power plan asks for to detect {gap}: n/a."
                )
        lines += [
            f"<h3>{esc(_label(metric))}</h3>",
            f"<p><small>{esc(_text(table['test'].iloc[0]))}, p adjusted by the plan.{needed}</small></p>",
            "<table><tr><th>a</th><th>b</th><th>a - b</th><th>p (adjusted)</th><th>verdict</th></tr>",
        ]
        for r in table.to_dict("records"):
            css = {"differs": "differs", "no difference found": "none"}.get(r["verdict"], "untestable")
            verdict = r["verdict"]
            to_test = pd.to_numeric(r["sessions_to_test"], "coerce")
            if verdict == "not testable at this n" and pd.notna(to_test):
                verdict += (
                    f": testable from {_count(to_test)} sessions per system with a value"
                    if _count(to_test) != "n/a"
                    else ": the sessions per system that would make it testable: n/a"
                )
            lines.append(
                f"<tr><td>{_name(r['system_a'])}</td><td>{_name(r['system_b'])}</td><td class='num'>"
                f"{num(r['mean_diff'])}</td><td class='num'>{num(r['p_adj'])}</td>"
                f"<td class='{css}'>{esc(verdict)}</td></tr>"
            )
        lines.append("</table>")
    return lines


def _tool_calls_section(table: pd.DataFrame, viewer: str) -> list[str]:
    """The tool-using systems' calls, when some call of any of them failed; nothing otherwise."""
    if not len(table) or not (_finite(table["errors"]) > 0).any():
        return []
    kinds = table["kinds"].notna().any()
    lines = [
        "<h2>Tool calls</h2>",
        "<p><small>Over every session of each tool-using system. An error is a call the toolkit refused (an "
        "unknown tool or film id, arguments that are no JSON or off the schema, too many films or calls); an "
        "ignored call was recorded and never run. "
        + ("An error's kind is its text up to the first colon, counted in the turns it occurred in. " if kinds else "")
        + "The viewer shows each turn's calls under the reply.</small></p>",
        "<table><tr><th>system</th><th>calls</th><th>errors</th>"
        + ("<th>most common errors (turns)</th>" if kinds else "")
        + "<th>turns ended at the call bound</th><th>ignored calls</th><th>the session with most errors</th></tr>",
    ]
    for r in table.to_dict("records"):
        share = "" if pd.isna(r["error_share"]) else f"&nbsp;({r['error_share']:.1%})"
        css = "fail" if r["errors"] > 0 else "pass"
        named = "; ".join(f"{_name(kind)} ({n} turn{'s' if n != 1 else ''})" for kind, n in r["kinds"] or [])
        worst = (
            _session_link(viewer, r["worst_id"], _count(r["worst_errors"])) if isinstance(r["worst_id"], str) else "–"
        )
        lines.append(
            f"<tr><td>{_name(r['system'])}</td><td class='num'>{_count(r['calls'])}</td>"
            f"<td class='num {css}'>{_count(r['errors'])}{share}</td>"
            + (f"<td>{named or '–'}</td>" if kinds else "")
            + f"<td class='num'>{_count(r['bound_turns'])}</td><td class='num'>{_count(r['ignored'])}</td>"
            f"<td>{worst}</td></tr>"
        )
    return [*lines, "</table>"]


def _evidence_section(table: pd.DataFrame) -> list[str]:
    lines = ["<h2>The evidence behind each metric</h2>"]
    if not len(table):
        return [
            *lines,
            "<p>No validity evidence in this run: no calibration systems and no people's verdicts. "
            "config/calibration.yaml checks the metrics against systems of known behaviour, and "
            "`human_agreement.corpora` against people.</p>",
        ]
    if "leads" in table:
        lines += [
            "<p><small>From stats/scorecard.md: calibration (orders the calibration systems as built under every "
            "user profile that can show it), stability (its conclusions hold across user profiles), people (agrees "
            "with people's verdicts and is ahead of reply length over the corpora). Metrics that may lead first."
            "</small></p>",
            "<table><tr><th>metric</th><th>calibration</th><th>stability</th><th>people</th><th>leads</th>"
            "<th>why not</th></tr>",
        ]
        for r in table.to_dict("records"):
            cells = "".join(
                f"<td class='{PART_CSS.get(_text(r.get(k)), '')}'"
                f" title='{esc(_text(r.get(k + '_detail')))}'>{esc(_text(r.get(k)))}</td>"
                for k in ("calibration", "stability", "people")
            )
            leads = "yes" if r["leads"] else "no"
            lines.append(
                f"<tr><td>{esc(_label(r['metric']))}</td>{cells}<td class='{'pass' if r['leads'] else ''}'>{leads}"
                f"</td><td>{esc(_text(r.get('reason')) if not r['leads'] else '')}</td></tr>"
            )
        return [*lines, "</table>"]
    lines += [
        "<p><small>Checks run first, then checks passed: a metric that passed the one check it could run has "
        "less behind it than one that passed three of four.</small></p>",
        "<table><tr><th>metric</th><th>checks run</th><th>passed</th><th>verdicts</th></tr>",
    ]
    for r in table.to_dict("records"):
        run, passed = _count(r["checks_run"]), _count(r["checks_passed"])
        css = "pass" if run not in ("n/a", "0") and passed == run else "fail"
        lines.append(
            f"<tr><td>{esc(_label(r['metric']))}</td><td class='num'>{run}</td>"
            f"<td class='num {css}'>{passed} of {run}</td><td>{esc(r['verdicts'])}</td></tr>"
        )
    return [*lines, "</table>"]


def _extremes_section(headline: list[str], sessions: pd.DataFrame, viewer: str) -> list[str]:
    lines = ["<h2>The sessions behind the extremes</h2>", "<table><tr><th>metric</th><th>system</th>"]
    lines[-1] += "<th>lowest</th><th>highest</th></tr>"
    shown = False
    for metric in headline:
        for r in extremes(sessions, metric).to_dict("records"):
            shown = True
            low = _session_link(viewer, r["low_id"], num(r["low"]))
            high = _session_link(viewer, r["high_id"], num(r["high"]))
            lines.append(
                f"<tr><td>{esc(_label(metric))}</td><td>{_name(r['system'])}</td><td>{low}</td><td>{high}</td></tr>"
            )
    return [*lines, "</table>"] if shown else []
