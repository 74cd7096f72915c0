"""Figures (PNG for the report, SVG beside each) and the HTML report's captions."""


rule plots:
    input:
        sessions=rules.aggregate.output.sessions,
        turns=rules.aggregate.output.turns,
        model_metrics=rules.aggregate.output.model_metrics,
    output:
        **{
            name: report(f"{RESULTS}/figures/{name}.png", caption=f"../report/{name}.rst", category="Figures")
            for name in FIGURES
        },
        **({"sensitivity": f"{RESULTS}/tables/weight_sensitivity.csv"} if "tas_over_turns" in FIGURES else {}),
        svg=expand(f"{RESULTS}/figures/{{name}}.svg", name=FIGURES),
    log:
        f"{RESULTS}/logs/plots.log",
    conda:
        ENV
    params:
        metrics=config["stats"]["metrics"],
        seed=config["stats"]["seed"],
        judged=JUDGE["enabled"],
        scatter=EXPERIMENT.scatter_columns if "tas_scatter" in FIGURES else [],
        # the selected families' columns in the distributions figure
        distributions=EXPERIMENT.distribution_columns,
        # figure -> the settings it is drawn with (the configured TAS weights, which the
        # weight-sensitivity grid holds and marks)
        figure_params=EXPERIMENT.figure_params,
        # the library code the script runs: an edit to it re-runs this rule (crseval.stage_digests)
        code=library_code("plots.py"),
    script:
        "../scripts/plots.py"
