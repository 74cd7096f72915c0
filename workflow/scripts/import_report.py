"""Rule import_report: the corpus manifest's report (files, sessions, turns, every rule applied) with
the films the imported replies name, merged over shards, and the votes report when there are votes."""

import json
from pathlib import Path

import source_tree  # noqa: F401  (crseval from this source tree)

from crseval.core.io import log_to, write_json
from crseval.corpora.dialogue import coverage_of


def read(path):
    return json.loads(Path(path).read_text(encoding="utf-8"))


log = log_to(snakemake.log[0])
report = dict(read(snakemake.input.manifest)["report"])
named = {}
for (system, _shard), path in zip(snakemake.params.shards, snakemake.input.films):
    films = read(path)
    merged = named.setdefault(system, {"catalog": set(), "outside": set()})
    for kind in merged:
        merged[kind].update(films[kind])
report["referenced_films"] = coverage_of(named)  # distinct films the replies name, per system
if snakemake.input.votes_report:
    report["votes"] = read(snakemake.input.votes_report)
write_json(report, snakemake.output.report)
log.info("imported %s", report)
