"""Judge stage: the PEPPER-style LLM judge on each session shard (skipped when disabled).

The first judge (`judge.backend`) writes judge/<system>/shard-<k>.parquet; each panel judge
(`judge.panel`) its own judge_panel/<name>/<system>/shard-<k>.parquet, in jobs of its own, so
that changing one judge re-runs only that judge's jobs. A job's params are its judge's settings
without the speed-only concurrency (crseval.planning.JudgeJobs; helpers in common.smk).
"""

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
        threads: EXPERIMENT.judge.threads
        resources:
            llm_slots=llm_slots(EXPERIMENT.judge.concurrency),
            cpu_threads=cpu_threads,
        params:
            judge=judge_params(EXPERIMENT.judge),
            # the library code the script runs: an edit to it re-runs this rule (crseval.stage_digests)
            code=library_code("judge.py"),
        script:
            "../scripts/judge.py"


if JUDGE_PANEL:

    rule panel_judge:
        input:
            sessions=SESSION_SHARD,
            films=rules.index_catalog.output.films,
            concepts=rules.index_catalog.output.concepts,
            prompt=input_path(JUDGE["prompt"]),
        output:
            f"{RESULTS}/judge_panel/{{judge}}/{{system}}/shard-{{shard}}.parquet",
        log:
            f"{RESULTS}/logs/judge_panel/{{judge}}/{{system}}/shard-{{shard}}.log",
        wildcard_constraints:
            judge="|".join(JUDGE_PANEL),
        conda:
            ENV
        threads: panel_threads
        resources:
            llm_slots=panel_slots,
            cpu_threads=cpu_threads,
        params:
            judge=panel_params,
            # the library code the script runs: an edit to it re-runs this rule (crseval.stage_digests)
            code=library_code("judge.py"),
        script:
            "../scripts/judge.py"
