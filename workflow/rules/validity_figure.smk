"""The metric-validity figure: measured vs expected rank of the calibration systems per metric.

Defined only when the validity table is (validity.smk, included before this file: at least three
calibration systems)."""


def validity_figure_outputs():
    if not validity_outputs():
        return []
    return [f"{RESULTS}/figures/validity.png", f"{RESULTS}/figures/validity.svg"]


if validity_figure_outputs():

    rule validity_figure:
        input:
            table=f"{RESULTS}/stats/validity.csv",
        output:
            png=report(
                f"{RESULTS}/figures/validity.png",
                caption="../report/validity_figure.rst",
                category="Metric validity",
            ),
            svg=f"{RESULTS}/figures/validity.svg",
        log:
            f"{RESULTS}/logs/validity_figure.log",
        conda:
            ENV
        script:
            "../scripts/validity_figure.py"
