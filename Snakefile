"""crseval: evaluate conversational recommender systems under user preference shifts.

Run the default experiment with `snakemake --cores 2`; choose another experiment with
`--configfile config/<name>.yaml`. Outputs go to results/<experiment>/.
"""

import sys
from pathlib import Path

# The workflow plans with the library of this source tree, as its rule scripts run with it
# (workflow/scripts/source_tree.py), whatever crseval is installed.
sys.path.insert(0, str(Path(workflow.basedir) / "src"))

from snakemake.utils import min_version, validate

from crseval.core.config_checks import SCHEMA_PATH, check_config

min_version("9.0")


# The default experiment, unless --configfile names another (which then replaces it whole, so
# that no key of the default leaks into another experiment); --config overrides single keys.
if not workflow.config_settings.configfiles:

    configfile: "config/config.yaml"


# Every problem of the config at once, each named by its key path, including the rules that relate
# several values (crseval.core.config_checks); snakemake's validate then fills the schema's defaults.
check_config(config, SCHEMA_PATH)
validate(config, str(SCHEMA_PATH))


report: "workflow/report/workflow.rst"


# Shared state and helpers first; then one file per stage, each after the stages it reads from.
include: "workflow/rules/common.smk"
include: "workflow/rules/catalog.smk"
include: "workflow/rules/topics.smk"
include: "workflow/rules/simulate.smk"
include: "workflow/rules/score.smk"
include: "workflow/rules/judge.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/plots.smk"
include: "workflow/rules/validity.smk"
include: "workflow/rules/provenance.smk"


rule all:
    default_target: True
    input:
        rules.index_catalog.output,
        rules.train_lda.output,
        rules.import_logs.output if IMPORTING else per_shard(rules.simulate.output[0]),
        per_shard(rules.score.output.sessions),
        per_shard(rules.score.output.turns),
        per_shard(rules.judge.output[0]) if JUDGE["enabled"] else [],
        rules.aggregate.output,
        rules.stats.output,
        rules.plots.output,
        rules.validity.output if VALIDITY else [],
        rules.validity_figure.output if VALIDITY else [],
        rules.provenance.output,
