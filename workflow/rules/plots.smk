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
        scatter=SCATTER if "tas_scatter" in FIGURES else [],
        # the configured TAS weights, which the weight-sensitivity grid holds and marks
        tas_weights=(
            {key: SCORING["tas"][key] for key in ("alpha", "beta", "gamma")} if "weight_sensitivity" in FIGURES else {}
        ),
    script:
        "../scripts/plots.py"
