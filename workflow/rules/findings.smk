"""What a reader opens first: the findings page (systems ranked, which differences hold, how much each
metric was checked; crseval.reports.findings) and the session viewer (every conversation, systems side by
side on the same simulated user; crseval.reports.viewer). Both are static pages under results/<experiment>/,
opened from file:// or in the report (`snakemake --report report.zip`)."""

# The readable summaries of this run the findings page links to, as the rules name them (each is a report item
# too, so the report's copy of the page links to it inside the zip).
FINDINGS_LINKS = {
    "Statistics": str(rules.stats.output.summary),
    "Power": str(rules.stats.output.power),
    "Means": str(rules.aggregate.output.model_metrics),
    **({"Validity": str(rules.validity.output.summary)} if VALIDITY else {}),
    "Scorecard": str(rules.scorecard.output.summary),
    **({"Agreement with people": str(rules.people_agreement.output.summary)} if PEOPLE else {}),
    **({"Users' verdicts": str(rules.human_agreement.output.summary)} if HUMAN_LABELS else {}),
    **({"Repeated trials": str(rules.reliability_trials.output.summary)} if TRIALS > 1 else {}),
    **({"User robustness": str(rules.stats.output.robustness_summary)} if ROBUSTNESS else {}),
    **({"User realism": str(rules.user_realism.output.summary)} if REALISM_REFERENCE else {}),
}
# The page each directory opens with: the viewer's, and the copy of the findings page whose links point at
# where the report zip puts each file (data/raw/<id>/, see workflow/scripts/findings.py); findings/index.html
# links within the results folder.
VIEWER_PAGE = "index.html"
FINDINGS_REPORT_PAGE = "in_report.html"


rule viewer:
    input:
        sessions=rules.aggregate.output.sessions,
        turns=rules.aggregate.output.turns,
        shards=per_shard(SESSION_SHARD),
    output:
        report(
            directory(f"{RESULTS}/viewer"),
            htmlindex=VIEWER_PAGE,
            caption="../report/viewer.rst",
            category="Sessions",
        ),
    log:
        f"{RESULTS}/logs/viewer.log",
    conda:
        ENV
    params:
        title=config["experiment"],
        # the library code the script runs: an edit to it re-runs this rule (crseval.stage_digests)
        code=library_code("viewer.py"),
    script:
        "../scripts/viewer.py"


rule findings:
    input:
        sessions=rules.aggregate.output.sessions,
        # the kinds of tool-call errors of tool-using systems (its `tool_error_kinds` column, when the family ran)
        turns=rules.aggregate.output.turns,
        model_metrics=rules.aggregate.output.model_metrics,
        posthoc=rules.stats.output.posthoc,
        paired=rules.stats.output.paired,
        power=rules.stats.output.power_table,
        validity=rules.validity.output.table if VALIDITY else [],
        scorecard=rules.scorecard.output.table,
    output:
        report(
            directory(f"{RESULTS}/findings"),
            htmlindex=FINDINGS_REPORT_PAGE,
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
        # the evidence a metric needs to lead, and the simulated users the run met (none for imported dialogues)
        lead=config["human_agreement"]["lead"],
        profiles=sorted(set(EXPERIMENT.profile_of.values())),
        # the readable summaries the page links to and the viewer's page, as the rules name them
        links=FINDINGS_LINKS,
        viewer=f"{rules.viewer.output[0]}/{VIEWER_PAGE}",
        report_page=FINDINGS_REPORT_PAGE,
        # the library code the script runs: an edit to it re-runs this rule (crseval.stage_digests)
        code=library_code("findings.py"),
    script:
        "../scripts/findings.py"
