"""Agreement with people: every metric of the experiment against the verdicts of the corpora
`human_agreement.corpora` names (crseval.checks.people_agreement), and the scorecard that joins it with
the calibration and stability evidence (crseval.checks.scorecard), which the findings page leads with."""


wildcard_constraints:
    corpus="[a-z0-9][a-z0-9-]*",


rule people_sessions:
    input:
        **({"lda": rules.train_lda.output.model} if SCORING_USES_LDA else {}),
        **({"topics_prompt": EXPERIMENT.topics_prompt} if EXPERIMENT.topics_prompt else {}),
        corpus=lambda wildcards: people_corpus_files(wildcards.corpus),
        votes=lambda wildcards: people_votes_file(wildcards.corpus),
        films=rules.index_catalog.output.films,
        concepts=rules.index_catalog.output.concepts,
        catalog_summary=rules.index_catalog.output.summary,
        schema=SESSION_SCHEMA,
    output:
        sessions=f"{RESULTS}/people/{{corpus}}/sessions.parquet",
        turns=f"{RESULTS}/people/{{corpus}}/turns.parquet",
        votes=f"{RESULTS}/people/{{corpus}}/votes.parquet",
        report=f"{RESULTS}/people/{{corpus}}/import_report.json",
    log:
        f"{RESULTS}/logs/people_sessions/{{corpus}}.log",
    conda:
        ENV
    threads: EXPERIMENT.scoring_threads
    resources:
        cpu_threads=cpu_threads,
    params:
        corpus=lambda wildcards: canonical(PEOPLE[wildcards.corpus]),
        scoring=scoring_settings(),
        # the library code the script runs: an edit to it re-runs this rule (crseval.stage_digests)
        code=library_code("people_sessions.py"),
    script:
        "../scripts/people_sessions.py"


rule people_agreement:
    input:
        sessions=expand(rules.people_sessions.output.sessions, corpus=PEOPLE),
        votes=expand(rules.people_sessions.output.votes, corpus=PEOPLE),
    output:
        table=f"{RESULTS}/stats/people_agreement.csv",
        summary=report(
            f"{RESULTS}/stats/people_agreement.md",
            caption="../report/people_agreement.rst",
            category="Agreement with users",
        ),
    log:
        f"{RESULTS}/logs/people_agreement.log",
    conda:
        ENV
    params:
        corpora=canonical(list(PEOPLE.values())),
        resamples=config["human_agreement"]["resamples"],
        seed=config["stats"]["seed"],
        # the library code the script runs: an edit to it re-runs this rule (crseval.stage_digests)
        code=library_code("people_agreement.py"),
    script:
        "../scripts/people_agreement.py"


rule scorecard:
    input:
        sessions=rules.aggregate.output.sessions,
        validity=rules.validity.output.table if VALIDITY else (VALIDITY_TABLE or []),
        robustness=rules.stats.output.robustness if ROBUSTNESS else [],
        people=rules.people_agreement.output.table if PEOPLE else [],
        users=rules.human_agreement.output.table if HUMAN_LABELS else [],
    output:
        table=f"{RESULTS}/stats/scorecard.csv",
        summary=report(
            f"{RESULTS}/stats/scorecard.md", caption="../report/scorecard.rst", category="Agreement with users"
        ),
    log:
        f"{RESULTS}/logs/scorecard.log",
    conda:
        ENV
    params:
        lead=config["human_agreement"]["lead"],
        alpha=config["stats"]["alpha"],
        # the library code the script runs: an edit to it re-runs this rule (crseval.stage_digests)
        code=library_code("scorecard.py"),
    script:
        "../scripts/scorecard.py"
