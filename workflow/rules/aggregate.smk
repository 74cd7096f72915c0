"""Aggregation: every shard's scores (and judgements) into the experiment's tables."""


rule aggregate:
    input:
        sessions=per_shard(rules.score.output.sessions),
        turns=per_shard(rules.score.output.turns),
        judge=per_shard(rules.judge.output[0]) if JUDGE["enabled"] else [],
        # each panel judge's shards in turn, each in the order of input.judge
        panel=[path for name in JUDGE_PANEL for path in panel_outputs(name)],
    output:
        sessions=f"{RESULTS}/tables/sessions.parquet",
        turns=f"{RESULTS}/tables/turns.parquet",
        model_metrics=report(
            f"{RESULTS}/tables/model_metrics.csv", caption="../report/model_metrics.rst", category="Tables"
        ),
    log:
        f"{RESULTS}/logs/aggregate.log",
    conda:
        ENV
    params:
        # with repeated trials (sessions.trials), the trial of each table in input.sessions, input.turns and
        # input.judge: the tables get a `trial` column
        **({"trials": [parse_shard_name(shard)[1] for _, shard in SHARDS]} if TRIALS > 1 else {}),
        # every trial of every simulated user
        sessions_per_system={system: count * TRIALS for system, count in SESSION_COUNTS.items()},
        # the shard of each table in input.sessions, input.turns and input.judge
        shards=[parse_shard_name(shard)[0] for _, shard in SHARDS],
        # the bootstrap of every mean's interval in model_metrics.csv
        resamples=config_slice("stats", "bootstrap_resamples"),
        seed=config_slice("stats", "seed"),
        # the library code the script runs: an edit to it re-runs this rule (crseval.stage_digests)
        code=library_code("aggregate.py"),
    script:
        "../scripts/aggregate.py"
