"""Agreement with real users: every metric against the users' verdicts and votes of an imported corpus
(crseval.checks.human_agreement). In the experiment whenever the imported sessions carry verdicts."""

if HUMAN_LABELS:

    rule human_agreement:
        input:
            sessions=rules.aggregate.output.sessions,
            turns=rules.aggregate.output.turns,
            votes=rules.import_votes.output.votes if VOTES_FILE else [],
        output:
            table=f"{RESULTS}/stats/human_agreement.csv",
            systems=f"{RESULTS}/stats/human_agreement_systems.csv",
            rankings=f"{RESULTS}/stats/human_agreement_rankings.csv",
            summary=report(
                f"{RESULTS}/stats/human_agreement.md",
                caption="../report/human_agreement.rst",
                category="Agreement with users",
            ),
            png=report(
                f"{RESULTS}/figures/human_agreement.png",
                caption="../report/human_agreement_figure.rst",
                category="Agreement with users",
            ),
            svg=f"{RESULTS}/figures/human_agreement.svg",
        log:
            f"{RESULTS}/logs/human_agreement.log",
        conda:
            ENV
        params:
            stats=config_slice("stats"),
            # the corpus's primary verdict (binary): the user's satisfaction, an accepted recommendation
            verdict=HUMAN_VERDICT,
            # the library code the script runs: an edit to it re-runs this rule (crseval.stage_digests)
            code=library_code("human_agreement.py"),
        script:
            "../scripts/human_agreement.py"
