"""Rule import_votes: the pairwise votes of an imported corpus on its imported sessions -> the votes
table and the votes report (merged into the import report)."""

import source_tree  # noqa: F401  (crseval from this source tree)

from crseval.core.io import log_to, write_json
from crseval.core.session_records import read_sessions
from crseval.corpora.formats import import_votes
from crseval.corpora.votes import write_votes

log = log_to(snakemake.log[0])
sessions = {}
for path in snakemake.input.shards:
    for record in read_sessions(path):
        sessions.setdefault(record["system"], []).append(record)
votes, report = import_votes(snakemake.input.votes, sessions, snakemake.params.import_format)
write_votes(votes, snakemake.output.votes)
write_json(report, snakemake.output.report)
log.info("votes %s", report)
