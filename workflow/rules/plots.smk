"""Figures (PNG for the report, SVG beside each) and the HTML report's captions."""

FIGURES = ["metric_bars", "correlation_heatmap", "recovery_delay_box", "distributions"]
if "tas" in config["scoring"]["metrics"]:
    FIGURES += ["tas_over_turns", "weight_sensitivity"]
if JUDGE["enabled"]:
    FIGURES.append("judge_radar")


def plot_outputs():
    return expand(f"{RESULTS}/figures/{{name}}.{{ext}}", name=FIGURES, ext=["png", "svg"])


rule plots:
    input:
        sessions=f"{RESULTS}/tables/sessions.parquet",
        turns=f"{RESULTS}/tables/turns.parquet",
        model_metrics=f"{RESULTS}/tables/model_metrics.csv",
    output:
        **{name: report(f"{RESULTS}/figures/{name}.png", caption=f"../report/{name}.rst", category="Figures") for name in FIGURES},
        svg=expand(f"{RESULTS}/figures/{{name}}.svg", name=FIGURES),
        **({"sensitivity": f"{RESULTS}/tables/weight_sensitivity.csv"} if "tas_over_turns" in FIGURES else {}),
    params:
        metrics=config["stats"]["metrics"],
        seed=config["stats"]["seed"],
        judged=JUDGE["enabled"],
    log:
        f"{RESULTS}/logs/plots.log",
    conda:
        ENV
    script:
        "../scripts/plots.py"
