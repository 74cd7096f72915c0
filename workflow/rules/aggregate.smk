"""Aggregation and statistics: experiment tables, then the comparison of systems."""


def aggregate_outputs():
    return [f"{RESULTS}/tables/sessions.parquet", f"{RESULTS}/tables/turns.parquet", f"{RESULTS}/tables/model_metrics.csv"]


def stats_outputs():
    names = ["anova.csv", "tukey.csv", "pairwise.csv", "paired.csv", "correlations.csv", "summary.md", "power.csv", "power.md"]
    if JUDGE["enabled"]:
        names += ["judge_reliability.csv", "judge_reliability.md"]
    return [f"{RESULTS}/stats/{name}" for name in names]


rule aggregate:
    input:
        sessions=per_shard(f"{RESULTS}/scores/{{system}}/shard-{{shard}}.sessions.parquet"),
        turns=per_shard(f"{RESULTS}/scores/{{system}}/shard-{{shard}}.turns.parquet"),
        judge=judge_outputs(),
    output:
        sessions=f"{RESULTS}/tables/sessions.parquet",
        turns=f"{RESULTS}/tables/turns.parquet",
        model_metrics=report(f"{RESULTS}/tables/model_metrics.csv", caption="../report/model_metrics.rst", category="Tables"),
    params:
        sessions_per_system=SESSION_COUNTS,
    log:
        f"{RESULTS}/logs/aggregate.log",
    conda:
        ENV
    script:
        "../scripts/aggregate.py"


rule stats:
    input:
        sessions=f"{RESULTS}/tables/sessions.parquet",
    output:
        anova=f"{RESULTS}/stats/anova.csv",
        tukey=f"{RESULTS}/stats/tukey.csv",
        pairwise=f"{RESULTS}/stats/pairwise.csv",
        paired=f"{RESULTS}/stats/paired.csv",
        correlations=f"{RESULTS}/stats/correlations.csv",
        power_table=f"{RESULTS}/stats/power.csv",
        summary=report(f"{RESULTS}/stats/summary.md", caption="../report/stats_summary.rst", category="Statistical tests"),
        power=report(f"{RESULTS}/stats/power.md", caption="../report/power.rst", category="Statistical tests"),
        **(
            {
                "reliability": f"{RESULTS}/stats/judge_reliability.csv",
                "reliability_summary": report(
                    f"{RESULTS}/stats/judge_reliability.md", caption="../report/judge_reliability.rst", category="Judge"
                ),
            }
            if JUDGE["enabled"]
            else {}
        ),
    params:
        stats=config_slice("stats"),
        judged=JUDGE["enabled"],
    log:
        f"{RESULTS}/logs/stats.log",
    conda:
        ENV
    script:
        "../scripts/stats.py"
