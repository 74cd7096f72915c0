"""Aggregation and statistics: experiment tables, then the comparison of systems."""


rule aggregate:
    input:
        sessions=per_shard(rules.score.output.sessions),
        turns=per_shard(rules.score.output.turns),
        judge=per_shard(rules.judge.output[0]) if JUDGE["enabled"] else [],
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
        sessions_per_system=SESSION_COUNTS,
        # the shard of each table in input.sessions, input.turns and input.judge
        shards=[shard for _, shard in SHARDS],
    script:
        "../scripts/aggregate.py"


rule stats:
    input:
        sessions=rules.aggregate.output.sessions,
    output:
        **(
            {
                "reliability": f"{RESULTS}/stats/judge_reliability.csv",
                "reliability_summary": report(
                    f"{RESULTS}/stats/judge_reliability.md",
                    caption="../report/judge_reliability.rst",
                    category="Judge",
                ),
            }
            if JUDGE["enabled"]
            else {}
        ),
        anova=f"{RESULTS}/stats/anova.csv",
        tukey=f"{RESULTS}/stats/tukey.csv",
        pairwise=f"{RESULTS}/stats/pairwise.csv",
        paired=f"{RESULTS}/stats/paired.csv",
        correlations=f"{RESULTS}/stats/correlations.csv",
        power_table=f"{RESULTS}/stats/power.csv",
        summary=report(
            f"{RESULTS}/stats/summary.md", caption="../report/stats_summary.rst", category="Statistical tests"
        ),
        power=report(f"{RESULTS}/stats/power.md", caption="../report/power.rst", category="Statistical tests"),
    log:
        f"{RESULTS}/logs/stats.log",
    conda:
        ENV
    params:
        stats=config_slice("stats"),
        judged=JUDGE["enabled"],
    script:
        "../scripts/stats.py"
