"""Sessions: simulated, one job per (system, shard) of paired, seeded sessions; or imported from a
conversation corpus (`sessions.source: import`, in `sessions.import_format`), one job per (system,
shard) reading the sessions its slice names. Both write SESSION_SHARD files; an import also writes
the import report, and with `sessions.import_votes` the votes table."""

if IMPORTING:

    rule import_logs:
        input:
            # the shard's slice of the corpus manifest (written while planning), not the corpus files
            slice=IMPORT_SLICE,
            films=rules.index_catalog.output.films,
            concepts=rules.index_catalog.output.concepts,
            catalog_summary=rules.index_catalog.output.summary,
            schema=SESSION_SCHEMA,
        output:
            shard=SESSION_SHARD,
            films=IMPORT_FILMS,
        log:
            f"{RESULTS}/logs/import_logs/{{system}}/{{shard}}.log",
        conda:
            ENV
        params:
            import_format=IMPORT_FORMAT,
            shard_size=SHARD_SIZE,
            # the library code the script runs: an edit to it re-runs this rule (crseval.stage_digests)
            code=library_code("import_logs.py"),
        script:
            "../scripts/import_logs.py"

    rule import_report:
        input:
            manifest=CORPUS_MANIFEST,
            films=per_shard(IMPORT_FILMS),
            votes_report=f"{RESULTS}/sessions/votes_report.json" if VOTES_FILE else [],
        output:
            report=report(
                f"{RESULTS}/sessions/import_report.json", caption="../report/import_report.rst", category="Sessions"
            ),
        log:
            f"{RESULTS}/logs/import_report.log",
        conda:
            ENV
        params:
            # (system, shard) of each of input.films
            shards=[[system, parse_shard_name(shard)[0]] for system, shard in SHARDS],
            # the library code the script runs: an edit to it re-runs this rule (crseval.stage_digests)
            code=library_code("import_report.py"),
        script:
            "../scripts/import_report.py"

    if VOTES_FILE:

        rule import_votes:
            input:
                votes=VOTES_FILE,
                shards=per_shard(SESSION_SHARD),
            output:
                votes=f"{RESULTS}/tables/votes.parquet",
                report=f"{RESULTS}/sessions/votes_report.json",
            log:
                f"{RESULTS}/logs/import_votes.log",
            conda:
                ENV
            params:
                import_format=IMPORT_FORMAT,
                # the library code the script runs: an edit to it re-runs this rule (crseval.stage_digests)
                code=library_code("import_votes.py"),
            script:
                "../scripts/import_votes.py"

else:

    rule simulate:
        input:
            films=rules.index_catalog.output.films,
            concepts=rules.index_catalog.output.concepts,
            catalog_summary=rules.index_catalog.output.summary,
            templates=input_path(config["simulator"]["templates"]),
            schema=SESSION_SCHEMA,
            prompt=system_prompt,
            voice=system_voice,
            # the rewording's prompt, for a user whose turns an LLM rewords (simulator.paraphrase); none otherwise
            paraphrase_prompt=EXPERIMENT.paraphrase_prompt or [],
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
            simulator=simulator_params(),
            user_profile=system_user_profile,
            agent=config_slice("agent"),
            seed=config["sessions"]["seed"],
            turns=config["sessions"]["turns"],
            indices=shard_range,
            # the library code the script runs: an edit to it re-runs this rule (crseval.stage_digests)
            code=library_code("simulate.py"),
        script:
            "../scripts/simulate.py"
