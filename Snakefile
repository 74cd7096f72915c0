"""crseval: evaluate conversational recommender systems under user preference shifts.

Run the default experiment with `snakemake --cores 2`; choose another experiment with
`--configfile config/<name>.yaml`. Outputs go to results/<experiment>/.
"""

import os
from pathlib import Path

from snakemake.utils import min_version, validate

from crseval.config_checks import check_config

min_version("9.0")


# The default experiment, unless --configfile names another (which then replaces it whole, so
# that no key of the default leaks into another experiment); --config overrides single keys.
if not workflow.config_settings.configfiles:

    configfile: "config/config.yaml"


# Every problem of the config at once, each named by its key path, including the rules that relate
# several values (crseval.config_checks); snakemake's validate then fills the schema's defaults.
check_config(config, Path(workflow.basedir) / "workflow/schemas/config.schema.yaml")
validate(config, "workflow/schemas/config.schema.yaml")


report: "workflow/report/workflow.rst"

# Rule scripts import the library from this source tree in whatever environment runs them
# (the project venv, a conda env per rule group, or a cluster node).
os.environ["PYTHONPATH"] = os.pathsep.join(
    p for p in (str(Path(workflow.basedir) / "src"), os.environ.get("PYTHONPATH")) if p
)


include: "workflow/rules/common.smk"
include: "workflow/rules/catalog.smk"
include: "workflow/rules/topics.smk"
include: "workflow/rules/simulate.smk"
include: "workflow/rules/score.smk"
include: "workflow/rules/judge.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/plots.smk"
include: "workflow/rules/validity.smk"
include: "workflow/rules/validity_figure.smk"
include: "workflow/rules/provenance.smk"


rule all:
    input:
        catalog_outputs(),
        topic_outputs(),
        session_shards(),
        score_outputs(),
        judge_outputs(),
        aggregate_outputs(),
        stats_outputs(),
        plot_outputs(),
        validity_outputs(),
        validity_figure_outputs(),
        PROVENANCE,
    default_target: True
