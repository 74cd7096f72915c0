"""Figures (PNG for the report, SVG beside each) and the HTML report's captions."""

FIGURES = ["metric_bars", "correlation_heatmap", "recovery_delay_box", "distributions"]
if "tas" in config["scoring"]["metrics"]:
    FIGURES += ["tas_over_turns", "weight_sensitivity"]
if JUDGE["enabled"]:
    FIGURES.append("judge_radar")
# Per session, TAS against the legacy CAS and the judge's criteria: only the scores this experiment computes.
SCATTER = (["context_adaptation_score"] if "cas" in config["scoring"]["metrics"] else []) + (
    ["judge_proactiveness", "judge_coherence", "judge_personalization"] if JUDGE["enabled"] else []
)
if "tas" in config["scoring"]["metrics"] and SCATTER:
    FIGURES.append("tas_scatter")


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
        scatter=SCATTER if "tas_scatter" in FIGURES else [],
    log:
        f"{RESULTS}/logs/plots.log",
    conda:
        ENV
    script:
        "../scripts/plots.py"
