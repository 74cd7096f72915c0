"""What a reader opens first: the findings page (systems ranked, which differences hold, how much each
metric was checked; crseval.analysis.findings) and the session viewer (every conversation, systems side by
side on the same simulated user; crseval.analysis.viewer). Both are static pages under results/<experiment>/,
opened from file:// or in the report (`snakemake --report report.zip`)."""

# The readable summaries of this run the findings page links to, relative to it.
FINDINGS_LINKS = {
    "Statistics": "../stats/summary.md",
    "Power": "../stats/power.md",
    "Means": "../tables/model_metrics.csv",
    **({"Validity": "../stats/validity.md"} if VALIDITY else {}),
    **({"Users' verdicts": "../stats/scorecard.md"} if HUMAN_LABELS else {}),
    **({"Repeated trials": "../stats/reliability_trials.md"} if TRIALS > 1 else {}),
    **({"User robustness": "../stats/user_robustness.md"} if ROBUSTNESS else {}),
    **({"User realism": "../stats/user_realism.md"} if REALISM_REFERENCE else {}),
}


rule viewer:
    input:
        sessions=rules.aggregate.output.sessions,
        turns=rules.aggregate.output.turns,
        shards=per_shard(SESSION_SHARD),
    output:
        report(
            directory(f"{RESULTS}/viewer"),
            htmlindex="index.html",
            caption="../report/viewer.rst",
            category="Sessions",
        ),
    log:
        f"{RESULTS}/logs/viewer.log",
    conda:
        ENV
    params:
        title=config["experiment"],
    script:
        "../scripts/viewer.py"


rule findings:
    input:
        sessions=rules.aggregate.output.sessions,
        model_metrics=rules.aggregate.output.model_metrics,
        posthoc=rules.stats.output.posthoc,
        paired=rules.stats.output.paired,
        power=rules.stats.output.power_table,
        validity=rules.validity.output.table if VALIDITY else [],
        scorecard=rules.human_agreement.output.scorecard if HUMAN_LABELS else [],
    output:
        report(
            directory(f"{RESULTS}/findings"),
            htmlindex="index.html",
            caption="../report/findings.rst",
            category="Findings",
        ),
    log:
        f"{RESULTS}/logs/findings.log",
    conda:
        ENV
    params:
        experiment=config["experiment"],
        # the metrics the statistics compared, and the judge's scores when it ran
        metrics=config["stats"]["metrics"],
        judged=JUDGE["enabled"],
        alpha=config["stats"]["alpha"],
        # the readable summaries the page links to, relative to it
        links=FINDINGS_LINKS,
    script:
        "../scripts/findings.py"
