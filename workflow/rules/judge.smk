"""Judge stage: the PEPPER-style LLM judge on each session shard (skipped when disabled)."""

if JUDGE["enabled"]:

    rule judge:
        input:
            sessions=SESSION_SHARD,
            films=rules.index_catalog.output.films,
            concepts=rules.index_catalog.output.concepts,
            prompt=input_path(JUDGE["prompt"]),
        output:
            f"{RESULTS}/judge/{{system}}/shard-{{shard}}.parquet",
        log:
            f"{RESULTS}/logs/judge/{{system}}/shard-{{shard}}.log",
        conda:
            ENV
        threads: experiment.judge_threads(config)
        resources:
            llm_slots=judge_slots(),
            cpu_threads=cpu_threads,
        params:
            judge=canonical(without_runtime(JUDGE)),
        script:
            "../scripts/judge.py"
