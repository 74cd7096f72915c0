"""Metric validity: how each metric orders the calibration systems (crseval.validity).

Runs when the experiment has at least three calibration systems (config/calibration.yaml)."""


def calibration_roles():
    """System name -> calibration role: oracle, lag<k>, stubborn, random, parrot."""
    roles = {}
    for system in config.get("systems", []):
        if system["agent"] == "lagging":
            roles[system["name"]] = f"lag{system['lag']}"
        elif system["agent"] in ("oracle", "stubborn", "random", "parrot"):
            roles[system["name"]] = system["agent"]
    return roles


CALIBRATION = calibration_roles() if config["sessions"]["source"] == "simulate" else {}


def validity_outputs():
    if len(CALIBRATION) < 3:
        return []
    return [f"{RESULTS}/stats/validity.csv", f"{RESULTS}/stats/validity.md"]


if validity_outputs():

    rule validity:
        input:
            sessions=f"{RESULTS}/tables/sessions.parquet",
        output:
            table=f"{RESULTS}/stats/validity.csv",
            summary=report(f"{RESULTS}/stats/validity.md", caption="../report/validity.rst", category="Metric validity"),
        params:
            roles=CALIBRATION,
            stats=config_slice("stats"),
        log:
            f"{RESULTS}/logs/validity.log",
        conda:
            ENV
        script:
            "../scripts/validity.py"
