"""Rule people_sessions: one corpus of people's verdicts (human_agreement.corpora) -> its dialogues imported,
their films recognised against the experiment's catalog and scored with the experiment's scoring settings:
the sessions and turns tables the agreement with people is computed on, the votes and the import report."""

import gc
import json
import time

import pyarrow as pa
import source_tree  # noqa: F401  (crseval from this source tree)

from crseval.catalog.index import CatalogIndex
from crseval.core.canonical import canonical_sha
from crseval.core.io import log_to, write_json, write_parquet
from crseval.core.session_records import catalog_sha, load_schema, session_validator, validate_session
from crseval.corpora import formats
from crseval.corpora.votes import write_votes
from crseval.language.concepts import ConceptMatcher
from crseval.llm.client import make_client
from crseval.metrics.grounded import PROMPT_KEYS
from crseval.metrics.scorer import build_scorer, with_labels

log = log_to(snakemake.log[0])
corpus = json.loads(snakemake.params.corpus)
scoring = json.loads(snakemake.params.scoring)
index = CatalogIndex.read(snakemake.input.films, snakemake.input.concepts)
started = time.perf_counter()
sessions, report = formats.import_logs(
    list(snakemake.input.corpus),
    ConceptMatcher(index.concepts, index.films),
    catalog_sha(snakemake.input.catalog_summary),
    canonical_sha({"importer": 1, "format": corpus["format"]}),
    corpus["format"],
)
records = [record for system in sorted(sessions) for record in sessions[system]]
validator = session_validator(load_schema(snakemake.input.schema))
for record in records:
    validate_session(validator, record)
votes, votes_report = [], None
if corpus.get("votes"):
    votes, votes_report = formats.import_votes(snakemake.input.votes[0], sessions, corpus["format"])
write_votes(votes, snakemake.output.votes)
write_json(report | ({"votes": votes_report} if votes_report else {}), snakemake.output.report)
log.info("%s: %d dialogues imported in %.2f s", corpus["name"], len(records), time.perf_counter() - started)

scorer = build_scorer(
    films=snakemake.input.films,
    concepts=snakemake.input.concepts,
    lda_dir=snakemake.input.get("lda"),
    settings=scoring,
    embedding_cache=snakemake.config["scoring"]["embedding_cache"],
    llm_factory=lambda backend: make_client(backend, snakemake.config["llm"], snakemake.threads),
    topics_prompt=snakemake.input.get("topics_prompt"),
    threads=snakemake.threads,
    system_prompt={key: None for key in PROMPT_KEYS},  # people's dialogues have no prompt
)
gc.freeze()  # the scorer lives as long as the process (workflow/scripts/score.py)
started = time.perf_counter()
scored, turns = scorer.score(records)
scored = with_labels(scored, records)
log.info(
    "%s: scored %d dialogues (%d turns) in %.2f s",
    corpus["name"],
    len(scored),
    len(turns),
    time.perf_counter() - started,
)
write_parquet(pa.Table.from_pandas(scored, preserve_index=False), snakemake.output.sessions)
write_parquet(pa.Table.from_pandas(turns, preserve_index=False), snakemake.output.turns)
