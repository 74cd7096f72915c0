"""Rule judge: one shard of sessions -> one judgement row per session (scores or the reason they are missing)."""

import json

import pandas as pd
import pyarrow as pa
import source_tree  # noqa: F401  (crseval from this source tree)

from crseval.catalog.index import CatalogIndex
from crseval.core.io import log_to, write_parquet
from crseval.core.session_records import read_sessions
from crseval.judge.llm_judge import Judge
from crseval.language.concepts import ConceptMatcher
from crseval.llm.client import make_client
from crseval.llm.prompts import PromptTemplate

log = log_to(snakemake.log[0])
settings = json.loads(snakemake.params.judge)
index = CatalogIndex.read(snakemake.input.films, snakemake.input.concepts)
client = make_client(settings["backend"], snakemake.config["llm"], snakemake.threads)
judge = Judge(
    client,
    PromptTemplate(snakemake.input.prompt),
    ConceptMatcher(index.concepts, index.films),
    settings["options"],
    settings["samples"],
    settings["retries"],
    settings["seed"],
)
rows = judge.judge_sessions(read_sessions(snakemake.input.sessions), max(1, snakemake.resources.llm_slots))
table = pd.DataFrame(rows)
missing = int((table["judge_valid_samples"] == 0).sum())
log.info(
    "%d sessions judged, %d missing; LLM calls %d, cache hits %d", len(table), missing, client.calls, client.cache_hits
)
write_parquet(pa.Table.from_pandas(table, preserve_index=False), snakemake.output[0])
