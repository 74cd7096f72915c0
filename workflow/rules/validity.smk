"""Metric validity: how each metric orders the calibration systems (crseval.checks.validity), as a table
and a figure (measured vs expected rank per metric).

Runs when the experiment has at least three calibration systems (config/calibration.yaml)."""

if VALIDITY:

    rule validity:
        input:
            sessions=rules.aggregate.output.sessions,
            # the calibration systems' session records, each simulated user once: their shifts (within one field?)
            shards=[
                SESSION_SHARD.format(system=system, shard=shard)
                for system, shard in SHARDS
                if system in CALIBRATION and parse_shard_name(shard)[1] == 0
            ],
        output:
            table=f"{RESULTS}/stats/validity.csv",
            summary=report(
                f"{RESULTS}/stats/validity.md",
                caption="../report/validity.rst",
                category="Metric validity",
            ),
        log:
            f"{RESULTS}/logs/validity.log",
        conda:
            ENV
        params:
            roles=CALIBRATION,
            profiles=EXPERIMENT.calibration_profiles,
            stats=config_slice("stats"),
            # the library code the script runs: an edit to it re-runs this rule (crseval.stage_digests)
            code=library_code("validity.py"),
        script:
            "../scripts/validity.py"

    rule validity_figure:
        input:
            table=rules.validity.output.table,
        output:
            png=report(
                f"{RESULTS}/figures/validity.png", caption="../report/validity_figure.rst", category="Metric validity"
            ),
            svg=f"{RESULTS}/figures/validity.svg",
        log:
            f"{RESULTS}/logs/validity_figure.log",
        conda:
            ENV
        params:
            # the library code the script runs: an edit to it re-runs this rule (crseval.stage_digests)
            code=library_code("validity_figure.py"),
        script:
            "../scripts/validity_figure.py"
