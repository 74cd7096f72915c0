"""Rule findings: the page that opens the report (crseval.reports.findings), written twice into the rule's
directory: index.html with links within the results folder (`../viewer/index.html`, `../stats/summary.md`),
and params.report_page, the report's entry (htmlindex), with links to where `snakemake --report report.zip`
puts each file. The zip holds every report item as data/raw/<id>/<file name>, <id> the first 16 hex digits of
the SHA-256 of its path as the rule names it (a directory reported with htmlindex by <directory>/<htmlindex>,
its other files beside that page); `snakemake.report_href(path)` is Snakemake's own href to such an item from
another one (`../<id>/<file name>`). tests/test_viewer_browser.py follows every link of both pages.

The kinds of tool-call errors come from the turns table's `tool_error_kinds` column, read only when the rule
declares the table as `input.turns` (rules.aggregate.output.turns) and the table has that column; without it
the page counts the errors from the sessions table and names no kinds."""

import os
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import source_tree  # noqa: F401  (crseval from this source tree)

from crseval.core.io import atomic_path, log_to
from crseval.reports import findings
from crseval.statistics import column_registry

log = log_to(snakemake.log[0])


def table(path):
    """A CSV the statistics wrote; a table without rows (one system: no pairs to test) may be an empty file."""
    try:
        return pd.read_csv(path)
    except pd.errors.EmptyDataError:
        return pd.DataFrame()


def in_folder(path: str) -> str:
    """The href of `path` (as the rule names it) from the page in the output directory."""
    return Path(os.path.relpath(path, output)).as_posix()


def in_report(path: str) -> str:
    """The href of the report item `path` (as the rule names it) from the page in the report zip."""
    return str(snakemake.report_href(Path(path).as_posix()))


def error_kinds(path):
    """The turns table's system and tool-call error kinds, when the rule gives the table and it has them."""
    if not path or findings.ERROR_KINDS not in pq.read_schema(path).names:
        return None
    return pd.read_parquet(path, columns=["system", findings.ERROR_KINDS])


output = Path(snakemake.output[0])
sessions = pd.read_parquet(snakemake.input.sessions)
judges = [c for c in column_registry.JUDGE_SCORES if c in sessions] if snakemake.params.judged else []
tables = dict(
    experiment=snakemake.params.experiment,
    model_metrics=pd.read_csv(snakemake.input.model_metrics),
    headline=[m for m in snakemake.params.metrics if m in sessions] + judges,
    posthoc=table(snakemake.input.posthoc),
    paired=table(snakemake.input.paired),
    power=table(snakemake.input.power),
    alpha=snakemake.params.alpha,
    sessions=sessions,
    validity=table(snakemake.input.validity) if snakemake.input.validity else None,
    scorecard=table(snakemake.input.scorecard) if snakemake.input.scorecard else None,
    turns=error_kinds(snakemake.input.get("turns")),
    lead=list(snakemake.params.lead),
    profiles=list(snakemake.params.profiles) or None,
)
links = dict(snakemake.params.links)
if snakemake.params.report_page == "index.html":
    raise ValueError("rule findings: params.report_page must not be index.html, the page for the results folder")
output.mkdir(parents=True, exist_ok=True)
for name, href in (("index.html", in_folder), (snakemake.params.report_page, in_report)):
    page = findings.findings_page(
        **tables,
        links={label: href(path) for label, path in links.items()},
        viewer=href(snakemake.params.viewer),
    )
    with atomic_path(output / name) as temporary:
        temporary.write_text(page, encoding="utf-8")
log.info("findings page for %d systems: index.html and %s", sessions["system"].nunique(), snakemake.params.report_page)
