"""Rule train_lda: catalog plots -> LDA model directory, topics table, summary with coherence."""

import json
import time
from dataclasses import asdict

import pandas as pd
import pyarrow as pa
import source_tree  # noqa: F401  (crseval from this source tree)

from crseval.catalog.topics import LdaSettings, TopicModel
from crseval.core.io import log_to, write_json, write_parquet

log = log_to(snakemake.log[0])
settings = LdaSettings.from_config(json.loads(snakemake.params.lda))
plots = [p for p in pd.read_parquet(snakemake.input.films, columns=["plot"])["plot"] if p]

started = time.perf_counter()
model = TopicModel.train(plots, settings)
trained = time.perf_counter() - started
coherence = model.coherence(plots)
log.info("trained %d topics on %d plots in %.1f s, coherence %s", settings.num_topics, len(plots), trained, coherence)

model.save(snakemake.output.model)
write_parquet(pa.Table.from_pandas(model.topic_table(topn=10), preserve_index=False), snakemake.output.topics)
write_json(
    {
        "settings": asdict(settings),
        "precision": model.precision,  # float64: the same topics on every CPU
        "documents": len(plots),
        "vocabulary_size": len(model.dictionary),
        "coherence": {"measure": settings.coherence, "value": coherence},
        "topics": [{"topic": t, "words": words} for t, words in enumerate(model.topic_words)],
    },
    snakemake.output.summary,
)
