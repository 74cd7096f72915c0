"""Paths and config slices shared by every stage."""

import json

EXPERIMENT = config["experiment"]
RESULTS = f"results/{EXPERIMENT}"
ENV = "../../envs/crseval.yaml"


def config_slice(*keys):
    """The config section at `keys` as canonical JSON (sorted keys, no spaces).

    Rules receive their settings through `params` in this form, so a rule re-runs exactly when
    a value it depends on changes, whatever the key order in the YAML file.
    """
    section = config
    for key in keys:
        section = section[key]
    return json.dumps(section, sort_keys=True, separators=(",", ":"))
