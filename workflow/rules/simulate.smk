"""Sessions: simulated, one job per (system, shard) of paired, seeded sessions; or imported
from a conversation corpus in one job (`sessions.source: import`, in `sessions.import_format`).
Both write SESSION_SHARD files; an import with `sessions.import_votes` also the votes table."""

if IMPORTING:

    rule import_logs:
        input:
            **({"votes": VOTES_FILE} if VOTES_FILE else {}),
            logs=LOG_FILES,
            films=rules.index_catalog.output.films,
            concepts=rules.index_catalog.output.concepts,
            catalog_summary=rules.index_catalog.output.summary,
            schema=SESSION_SCHEMA,
        output:
            **({"votes": f"{RESULTS}/tables/votes.parquet"} if VOTES_FILE else {}),
            shards=per_shard(SESSION_SHARD),
            report=report(
                f"{RESULTS}/sessions/import_report.json", caption="../report/import_report.rst", category="Sessions"
            ),
        log:
            f"{RESULTS}/logs/import_logs.log",
        conda:
            ENV
        params:
            import_format=IMPORT_FORMAT,
            shard_size=SHARD_SIZE,
            # (system, shard) of each of output.shards
            shards=[[system, shard] for system, shard in SHARDS],
        script:
            "../scripts/import_logs.py"

else:

    rule simulate:
        input:
            films=rules.index_catalog.output.films,
            concepts=rules.index_catalog.output.concepts,
            catalog_summary=rules.index_catalog.output.summary,
            templates=input_path(config["simulator"]["templates"]),
            schema=SESSION_SCHEMA,
            prompt=system_prompt,
        output:
            SESSION_SHARD,
        log:
            f"{RESULTS}/logs/simulate/{{system}}/shard-{{shard}}.log",
        conda:
            ENV
        threads: system_threads
        resources:
            llm_slots=system_llm_slots,
            cpu_threads=cpu_threads,
        params:
            system=system_params,
            simulator=config_slice("simulator"),
            agent=config_slice("agent"),
            seed=config["sessions"]["seed"],
            turns=config["sessions"]["turns"],
            indices=shard_range,
        script:
            "../scripts/simulate.py"
