"""Statistics: the comparison of systems on the experiment's tables (tests, effects, power, judge reliability)."""


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
        posthoc=f"{RESULTS}/stats/posthoc.csv",
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
        # the models only (for the warning when a judge is also a system under test), not the judges' options
        judge_backends=canonical(
            [JUDGE["backend"], *(entry["backend"] for entry in JUDGE.get("panel", []))] if JUDGE["enabled"] else []
        ),
        system_backends=canonical([{"name": s["name"], "backend": s.get("backend")} for s in config["systems"]]),
    script:
        "../scripts/stats.py"
