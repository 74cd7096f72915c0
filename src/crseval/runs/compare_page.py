"""What `crseval compare` writes: a page in the findings page's style, Markdown, CSV and a JSON summary.

The page reads left to right from the baseline: its comparability table (each stage equal, or the
settings that differ), a heading over every run compared although its user, metrics or catalog differ,
then per run the systems' metrics (baseline mean, run mean, the paired difference with its 95% interval,
the exact test, the verdict; flagged regressions marked) and the sessions that changed most. Each of
those links to a page of its own that shows the session in both runs' viewers side by side. A run compared
although its record does not describe its tables (its mismatches trusted) puts the heading
RECORD_MISMATCH_HEADING with each mismatch above everything else. Every value read from a run is escaped:
system names come from configs, in HTML by `esc` and in Markdown by `board.markdown_text`; every link passes
the scheme check of crseval.reports.links. Files are written atomically, into a folder outside every results
folder; a side-by-side page's name is made of its run's and system's names, with a digest of the names where
they are no plain file names, so that two names never share a page.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
from pathlib import Path
from urllib.parse import quote

import pandas as pd

from crseval.core.io import atomic_path, write_json
from crseval.reports.findings import STYLE, esc, num
from crseval.reports.links import safe_url
from crseval.runs import paired
from crseval.runs.board import markdown_text
from crseval.runs.comparability import RECORD_MISMATCH_HEADING, Run
from crseval.runs.compare import BaselineComparison, RunComparison

EXTRA_STYLE = (
    ".regression{color:#a11;font-weight:600}.improvement{color:#0b6b2f}.warn{background:#fff4e5;border-left:4px "
    "solid #c77700;padding:8px 12px}.same{color:#777}"
)
FRAMES_STYLE = (
    "body{margin:0;font-family:system-ui,sans-serif}header{padding:6px 12px;background:#f1f3f5}"
    ".pair{display:flex;height:calc(100vh - 40px)}.pair section{flex:1;display:flex;flex-direction:column;"
    "border-left:1px solid #ccc}.pair h2{font-size:1em;margin:4px 8px}iframe{flex:1;border:0;width:100%}"
)


def _signed(value) -> str:
    text = num(value)
    return f"+{text}" if text not in ("–", "n/a") and float(value) > 0 else text


def _slug(text) -> str:
    """A file name for `text`: itself when it is a plain short name, else its plain part and a digest of it, so
    that "a/b" and "a_b", or two long names alike in their first 80 characters, never share a page."""
    text = str(text)
    plain = re.sub(r"[^A-Za-z0-9._-]+", "_", text)[:80]
    if plain == text and plain.strip("."):
        return plain
    return f"{plain}-{hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest()[:10]}"


def viewer_href(run: Run, session_id: str, page_dir: Path) -> str:
    """The run's viewer opened at a session, relative to the folder of the page that links to it."""
    viewer = os.path.relpath((run.path / "viewer" / "index.html").resolve(), page_dir.resolve())
    return safe_url(f"{quote(Path(viewer).as_posix())}#session={quote(str(session_id), safe='')}")


def session_page_name(compared: RunComparison, row: dict) -> str:
    return (
        f"sessions/{_slug(compared.run.name)}/{_slug(row['system'])}-{int(row['session_index'])}"
        f"-t{int(row['trial'])}.html"
    )


def side_by_side(baseline: Run, compared: RunComparison, row: dict, page_dir: Path) -> str:
    """A page with the session in the baseline's viewer (left) and in the run's (right)."""
    left = viewer_href(baseline, row["baseline_session_id"], page_dir)
    right = viewer_href(compared.run, row["run_session_id"], page_dir)
    title = f"{row['system']} session {row['session_index']} (trial {row['trial']})"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{esc(title)}</title><style>{FRAMES_STYLE}</style></head><body>"
        f"<header>{esc(title)}: {esc(row['metric'])} {num(row['baseline_value'])} → {num(row['run_value'])}"
        f" ({int(row['metrics_changed'])} metrics changed)</header><div class='pair'>"
        f"<section><h2>baseline: {esc(baseline.name)}</h2>"
        f'<iframe id="baseline" title="baseline" src="{esc(left)}"></iframe></section>'
        f"<section><h2>run: {esc(compared.run.name)}</h2>"
        f'<iframe id="run" title="run" src="{esc(right)}"></iframe></section>'
        "</div></body></html>\n"
    )


def _stage_rows(comparison: BaselineComparison) -> list[str]:
    names = list(dict.fromkeys(s.stage for r in comparison.runs for s in r.comparability.stages))
    lines = [
        "<table><tr><th>stage</th><th>baseline: " + esc(comparison.baseline.name) + "</th>",
        *(f"<th>{esc(r.run.name)}</th>" for r in comparison.runs),
        "</tr>",
    ]
    for name in names:
        cells = []
        digest = ""
        for compared in comparison.runs:
            stage = next((s for s in compared.comparability.stages if s.stage == name), None)
            if stage is None:
                cells.append("<td class='same'>–</td>")
                continue
            digest = stage.baseline_digest[:12]
            if stage.equal:
                cells.append("<td class='same'>equal</td>")
            else:
                listed = "<br>".join(esc(d) for d in stage.differences) or "the digests differ"
                more = f"<br>{stage.omitted} more" if stage.omitted else ""
                cells.append(f"<td>differs:<br><small>{listed}{more}</small></td>")
        lines.append(f"<tr><td>{esc(name)}</td><td><code>{esc(digest)}</code></td>{''.join(cells)}</tr>")
    return [*lines, "</table>"]


def _verdict_cell(row: dict) -> str:
    verdict = str(row["verdict"])
    css = {"regression": "regression", "improvement": "improvement", "identical": "same"}.get(verdict, "")
    note = f" <small>{esc(row['note'])}</small>" if row.get("note") else ""
    return f"<td class='{css}'>{esc(verdict)}{note}</td>"


def _run_section(comparison: BaselineComparison, compared: RunComparison, out: Path) -> list[str]:
    run = compared.run
    lines = [f"<h2>{esc(run.name)} against {esc(comparison.baseline.name)}</h2>"]
    if compared.refused:
        keys = ", ".join(compared.comparability.differing_keys) or "their digests"
        stages = ", ".join(s.stage for s in compared.comparability.refused)
        return [
            *lines,
            f"<p class='warn'>Not compared: the {esc(stages)} differ ({esc(keys)}). Numbers measured on other "
            "users or by other metrics do not compare; <code>--allow-different</code> compares them anyway.</p>",
        ]
    if compared.comparability.refused:
        keys = ", ".join(compared.comparability.differing_keys)
        stages = ", ".join(s.stage for s in compared.comparability.refused)
        lines.append(
            f"<h3 class='warn'>Compared although the {esc(stages)} differ ({esc(keys)}): a difference below may "
            "come from that change, not from the systems</h3>"
        )
    comparability = compared.comparability
    if comparability.only_baseline or comparability.only_run:
        lines.append(
            f"<p>Systems only in the baseline: {esc(', '.join(comparability.only_baseline) or 'none')}; only in "
            f"the run: {esc(', '.join(comparability.only_run) or 'none')}.</p>"
        )
    if compared.not_compared:
        lines.append(f"<p><small>Not compared: {esc('; '.join(compared.not_compared))}.</small></p>")
    table = compared.table
    lines += [
        "<table><tr><th>system</th><th>metric</th><th>users</th><th>baseline</th><th>run</th>"
        "<th>difference [95% interval]</th><th>p (exact)</th><th>verdict</th></tr>"
    ]
    for system, rows in table.groupby("system", sort=False):
        if (rows["verdict"] == "identical").all() and not rows["note"].astype(bool).any():
            lines.append(
                f"<tr><td>{esc(system)}</td><td colspan='7' class='same'>identical on all {len(rows)} metrics "
                "(every paired difference is 0)</td></tr>"
            )
            continue
        for row in rows.to_dict("records"):
            interval = f"{_signed(row['diff'])} [{num(row['ci_low'])}, {num(row['ci_high'])}]"
            lines.append(
                f"<tr><td>{esc(system)}</td><td title='{esc(row['metric'])}'>{esc(row['label'])}</td>"
                f"<td class='num'>{num(row['users'])}</td><td class='num'>{num(row['baseline_mean'])}</td>"
                f"<td class='num'>{num(row['run_mean'])}</td><td class='num'>{interval}</td>"
                f"<td class='num'>{num(row['p'], 2)}</td>{_verdict_cell(row)}</tr>"
            )
    lines.append("</table>")
    lines += _changed_section(comparison, compared, out)
    return lines


def _changed_section(comparison: BaselineComparison, compared: RunComparison, out: Path) -> list[str]:
    if not len(compared.changed):
        return ["<p>No session changed.</p>"]
    lines = [
        "<h3>The sessions that changed most</h3>",
        "<table><tr><th>system</th><th>session</th><th>trial</th><th>changed most</th><th>baseline → run</th>"
        "<th>metrics changed</th><th>both runs</th></tr>",
    ]
    for row in compared.changed.to_dict("records"):
        page = session_page_name(compared, row)
        lines.append(
            f"<tr><td>{esc(row['system'])}</td><td>{esc(row['baseline_session_id'])}</td>"
            f"<td class='num'>{int(row['trial'])}</td><td>{esc(row['metric'])}</td>"
            f"<td class='num'>{num(row['baseline_value'])} → {num(row['run_value'])}</td>"
            f"<td class='num'>{int(row['metrics_changed'])}</td>"
            f"<td><a class='side-by-side' href='{esc(safe_url(quote(page)))}'>side by side</a></td></tr>"
        )
    return [*lines, "</table>"]


def _mismatched(comparison: BaselineComparison) -> list[tuple[str, list[str]]]:
    """(run name, what its record does not describe) of every run, the baseline first, compared although its
    record does not describe its tables."""
    runs = [comparison.baseline, *(compared.run for compared in comparison.runs)]
    return [(run.name, run.mismatches) for run in runs if run.mismatches]


def _mismatch_section(comparison: BaselineComparison) -> list[str]:
    mismatched = _mismatched(comparison)
    if not mismatched:
        return []
    lines = [
        f"<h2 class='warn'>The {esc(RECORD_MISMATCH_HEADING)}</h2>",
        "<p class='warn'>Compared although their provenance records do not describe what was read (asked for with "
        "<code>--trust-mismatched-records</code>): a number below may come from tables or settings other than "
        "those the record names.</p><ul>",
    ]
    lines += [f"<li><b>{esc(name)}</b>: {esc(problem)}</li>" for name, problems in mismatched for problem in problems]
    return [*lines, "</ul>"]


def _lead(comparison: BaselineComparison) -> list[str]:
    lines = ["<ul class='lead'>"]
    for compared in comparison.runs:
        name = esc(compared.run.name)
        if compared.refused:
            keys = ", ".join(compared.comparability.differing_keys) or "digests"
            lines.append(f"<li><b>{name}</b>: refused, not comparable ({esc(keys)} differ).</li>")
            continue
        verdicts = compared.table["verdict"].value_counts() if len(compared.table) else pd.Series(dtype=int)
        flagged = compared.regressions
        said = f"{len(flagged)} regression{'s' if len(flagged) != 1 else ''} flagged"
        if len(flagged):
            said += " (" + ", ".join(f"{r['system']}: {r['label']}" for r in flagged.to_dict("records")) + ")"
        improved = int(verdicts.get("improvement", 0))
        said += f"; {improved} improvement{'s' if improved != 1 else ''}"
        said += f"; {int(verdicts.get('identical', 0))} of {len(compared.table)} system-metric pairs identical"
        untestable = int(verdicts.get("not testable at this n", 0))
        if untestable:
            said += f"; {untestable} not testable at this n"
        lines.append(
            f"<li><b>{name}</b>: <span class='{'regression' if len(flagged) else ''}'>{esc(said)}</span>.</li>"
        )
    return [*lines, "</ul>"]


def _rule_text(comparison: BaselineComparison) -> str:
    plan = comparison.plan
    p = "the adjusted p (the plan's correction over every row)" if comparison.adjusted else "p"
    tolerance = ", ".join(f"{k}={v:g}" for k, v in sorted(comparison.tolerance.items())) or "0"
    return (
        f"A regression is flagged when the exact two-sided Wilcoxon signed-rank test over the paired users can reach "
        f"{plan.alpha} at this n, {p} is at most {plan.alpha}, the mean paired difference lies in the metric's bad "
        f"direction beyond the tolerance ({tolerance}), and, for a 0/1 rate, the two runs hold at least "
        f"{paired.MIN_EVENTS} events. "
        "Intervals: of the mean paired difference over users, a seeded expanded percentile bootstrap."
    )


def compare_html(comparison: BaselineComparison, out: Path) -> str:
    runs = ", ".join(r.run.name for r in comparison.runs)
    title = f"Compare: {comparison.baseline.name} against {runs}"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{esc(title)}</title><style>{STYLE}{EXTRA_STYLE}</style></head><body>",
        f"<h1>{esc(title)}</h1>",
        *_mismatch_section(comparison),
        f"<p><small>{esc(_rule_text(comparison))}</small></p>",
        "<h2>What changed</h2>",
        *_lead(comparison),
        "<h2>Comparability</h2>",
        "<p><small>Each stage's digest names what its numbers depend on (settings, files by content, the library "
        "code). Runs whose catalog, user or metrics differ are refused unless compared with "
        "<code>--allow-different</code>.</small></p>",
        *_stage_rows(comparison),
    ]
    for compared in comparison.runs:
        parts += _run_section(comparison, compared, out)
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def compare_markdown(comparison: BaselineComparison) -> str:
    md = markdown_text
    names = ", ".join(md(r.run.name) for r in comparison.runs)
    lines = [f"# Compare: {md(comparison.baseline.name)} against {names}", ""]
    mismatched = _mismatched(comparison)
    if mismatched:
        lines += [f"## The {RECORD_MISMATCH_HEADING}", ""]
        lines += [f"- {md(name)}: {md(problem)}" for name, problems in mismatched for problem in problems]
        lines.append("")
    lines += [_rule_text(comparison), ""]
    for compared in comparison.runs:
        lines += [f"## {md(compared.run.name)}", ""]
        lines += [f"- {md(stage.describe())}" for stage in compared.comparability.stages]
        lines.append("")
        keys = md(", ".join(compared.comparability.differing_keys))
        if compared.refused:
            lines += [f"Refused: {keys} differ.", ""]
            continue
        if compared.comparability.refused:
            lines += [f"Compared although {keys} differ.", ""]
        if compared.not_compared:
            lines += [f"Not compared: {md('; '.join(compared.not_compared))}.", ""]
        lines += [
            "| system | metric | users | baseline | run | difference [95% interval] | p | verdict |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for row in compared.table.to_dict("records"):
            cells = [
                row["system"],
                row["metric"],
                num(row["users"]),
                num(row["baseline_mean"]),
                num(row["run_mean"]),
                f"{_signed(row['diff'])} [{num(row['ci_low'])}, {num(row['ci_high'])}]",
                num(row["p"], 2),
                f"**{row['verdict']}**" if row["flag"] else str(row["verdict"]),
            ]
            if row["note"]:
                cells[-1] += f" ({row['note']})"
            lines.append("| " + " | ".join(md(c) for c in cells) + " |")
        lines.append("")
    return "\n".join(lines)


def _summary(comparison: BaselineComparison, exit_code: int) -> dict:
    plan = comparison.plan
    runs = []
    for compared in comparison.runs:
        flagged = compared.regressions
        runs.append(
            {
                "name": compared.run.name,
                "path": str(compared.run.path),
                "record_mismatches": compared.run.mismatches,
                "refused": compared.refused,
                "stages": [
                    {"stage": s.stage, "equal": s.equal, "differences": s.differences, "omitted": s.omitted}
                    for s in compared.comparability.stages
                ],
                "differing_keys": compared.comparability.differing_keys,
                "only_baseline": compared.comparability.only_baseline,
                "only_run": compared.comparability.only_run,
                "not_compared": compared.not_compared,
                "rows": len(compared.table),
                "regressions": [
                    {key: _plain(r[key]) for key in ("system", "metric", "diff", "ci_low", "ci_high", "p", "users")}
                    for r in flagged.to_dict("records")
                ],
            }
        )
    return {
        "baseline": {
            "name": comparison.baseline.name,
            "path": str(comparison.baseline.path),
            "record_mismatches": comparison.baseline.mismatches,
        },
        "plan": {"alpha": plan.alpha, "method": plan.method, "adjusted_flags": comparison.adjusted},
        "tolerance": comparison.tolerance,
        "runs": runs,
        "exit_code": exit_code,
    }


def _plain(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value.item() if hasattr(value, "item") else value


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as temporary:
        temporary.write_text(text, encoding="utf-8")


def write_comparison(comparison: BaselineComparison, out: str | Path, exit_code: int) -> dict[str, Path]:
    """compare.html, compare.md, compare.csv (every row of every run), changed.csv, compare.json and one
    side-by-side page per changed session, in `out`."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written = {}
    tables = [r.table.assign(run=r.run.name) for r in comparison.runs if len(r.table)]
    changed = [r.changed.assign(run=r.run.name) for r in comparison.runs if len(r.changed)]
    for name, frames in (("compare.csv", tables), ("changed.csv", changed)):
        frame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
        if len(frame):
            frame = frame[["run", *[c for c in frame.columns if c != "run"]]]
        _write(out / name, frame.to_csv(index=False))
        written[name] = out / name
    for compared in comparison.runs:
        for row in compared.changed.to_dict("records"):
            page = out / session_page_name(compared, row)
            _write(page, side_by_side(comparison.baseline, compared, row, page.parent))
    _write(out / "compare.html", compare_html(comparison, out))
    _write(out / "compare.md", compare_markdown(comparison))
    write_json(_summary(comparison, exit_code), out / "compare.json")
    written |= {name: out / name for name in ("compare.html", "compare.md", "compare.json")}
    return written
