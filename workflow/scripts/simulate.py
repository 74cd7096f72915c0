"""Rule simulate: one shard of sessions of one system (resumable after a kill).

Settings that shape the sessions arrive through params (a change re-runs the shard); the LLM
runtime settings (cache folder, timeout, retries) are read from the config and the concurrency
from the job's `llm_slots`, because they change no result.
"""

import json
import sys
from pathlib import Path

import source_tree  # noqa: F401  (crseval from this source tree)

from crseval.core.io import log_to
from crseval.core.shards import parse_shard_name
from crseval.simulate.shard import build_shard_runner

log = log_to(snakemake.log[0])
sys.stderr = open(snakemake.log[0], "a", buffering=1)  # the progress bar goes to the log

system = json.loads(snakemake.params.system)
start, stop = snakemake.params.indices
output = Path(snakemake.output[0])
runner = build_shard_runner(
    system=system,
    simulator=json.loads(snakemake.params.simulator),
    user_profile=json.loads(snakemake.params.user_profile),
    agent=json.loads(snakemake.params.agent),
    experiment_seed=snakemake.params.seed,
    turns=snakemake.params.turns,
    films=snakemake.input.films,
    concepts=snakemake.input.concepts,
    catalog_summary=snakemake.input.catalog_summary,
    schema=snakemake.input.schema,
    llm_runtime=snakemake.config["llm"],
    threads=snakemake.threads,
    concurrency=max(1, snakemake.resources.llm_slots),  # the slots the job holds: its requests in flight
    templates_file=snakemake.input.templates,
    prompt_file=snakemake.input.prompt or None,  # an LLM system's prompt; none for the others
    voice_file=snakemake.input.voice or None,  # the learned voice's pools; none for the other profiles
    paraphrase_prompt_file=snakemake.input.paraphrase_prompt or None,  # with simulator.paraphrase on
)
_, trial = parse_shard_name(snakemake.wildcards.shard)  # a repeated trial's shards carry it (sessions.trials)
counts = runner.run(
    range(start, stop), progress=output.parent / ".progress" / f"{output.stem}.jsonl", output=output, trial=trial
)
log.info(
    "%s %s: %s; LLM calls %d, cache hits %d, sessions in flight %d",
    system["name"],
    output.name,
    counts,
    runner.calls,
    runner.cache_hits,
    runner.concurrency,
)
