"""Scoring stage: every metric family on each session shard (one job per shard)."""


rule score:
    input:
        unpack(scored_prompt),
        **({"lda": rules.train_lda.output.model} if SCORING_USES_LDA else {}),
        **({"topics_prompt": EXPERIMENT.topics_prompt} if EXPERIMENT.topics_prompt else {}),
        sessions=SESSION_SHARD,
        films=rules.index_catalog.output.films,
        concepts=rules.index_catalog.output.concepts,
    output:
        sessions=f"{RESULTS}/scores/{{system}}/shard-{{shard}}.sessions.parquet",
        turns=f"{RESULTS}/scores/{{system}}/shard-{{shard}}.turns.parquet",
    log:
        f"{RESULTS}/logs/score/{{system}}/shard-{{shard}}.log",
    conda:
        ENV
    threads: EXPERIMENT.scoring_threads
    resources:
        cpu_threads=cpu_threads,
    params:
        scoring=scoring_settings(),
        # the library code the script runs: an edit to it re-runs this rule (crseval.stage_digests)
        code=library_code("score.py"),
    script:
        "../scripts/score.py"
