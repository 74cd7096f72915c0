"""crseval: evaluate conversational recommender systems under user preference shifts.

Run the default experiment with `snakemake --cores 2`; choose another experiment with
`--configfile config/<name>.yaml`. Outputs go to results/<experiment>/ of the working directory.
Another workflow may use this one as a module (`module crseval: snakefile: "<checkout>/Snakefile"`,
`use rule * from crseval`): its folder holds the config and the results, this one the code.
"""

import os
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.sourcecache import LocalSourceFile

# This workflow's own folder (not the working directory, nor the folder of a workflow that uses
# this one as a module): its library, rule scripts and shipped resources are read from there.
if not isinstance(workflow.current_basedir, LocalSourceFile):
    raise WorkflowError(
        f"crseval runs from a local checkout, not from {workflow.current_basedir}: clone the repository "
        "and name its Snakefile by path in the module statement"
    )
WORKFLOW_DIR = Path(workflow.current_basedir.get_path_or_uri(secret_free=False))
# The workflow plans with the library of this source tree, as its rule scripts run with it
# (workflow/scripts/source_tree.py), whatever crseval is installed.
sys.path.insert(0, str(WORKFLOW_DIR / "src"))

from snakemake.utils import min_version

from crseval.core.config_checks import fill_defaults
from crseval.core.config_files import check_config_files
from crseval.planning import check_config, check_inputs, config_schema

min_version("9.0")

DEFAULT_CONFIG = "config/config.yaml"

# The default experiment, unless --configfile names another (which then replaces it whole, so
# that no key of the default leaks into another experiment); --config overrides single keys.
# Every config file is read again by crseval's loader (crseval.core.config_files), which refuses what
# Snakemake's reading lets through (a key given twice, aliases past a bound, YTE templates...): the default
# before Snakemake reads it; the --configfile ones, which Snakemake reads before this file runs, here.
if not workflow.config_settings.configfiles:
    check_config_files([DEFAULT_CONFIG] if os.path.exists(DEFAULT_CONFIG) else [])

    configfile: DEFAULT_CONFIG


# workflow.configfiles: the --configfile files, then the one the configfile directive read (snakemake.workflow)
check_config_files(workflow.configfiles)

# The schema's default of every setting the config leaves out, so that rules, params and provenance
# see the values the run uses; then every problem of the config at once, each named by its key path,
# including the rules that relate several values and what each selected kind requires (crseval.planning).
fill_defaults(config, config_schema())
check_config(config)
# Every file the config names must exist, named by its key, before any job is planned.
check_inputs(config, WORKFLOW_DIR)


report: "workflow/report/workflow.rst"


# Shared state and helpers first; then one file per stage, each after the stages it reads from.
include: "workflow/rules/common.smk"
include: "workflow/rules/catalog.smk"
include: "workflow/rules/topics.smk"
include: "workflow/rules/voice.smk"
include: "workflow/rules/simulate.smk"
include: "workflow/rules/score.smk"
include: "workflow/rules/judge.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/stats.smk"
include: "workflow/rules/plots.smk"
include: "workflow/rules/validity.smk"
include: "workflow/rules/human_agreement.smk"
include: "workflow/rules/people.smk"
include: "workflow/rules/realism.smk"
include: "workflow/rules/findings.smk"
include: "workflow/rules/provenance.smk"


# The calibration experiment whose adaptation and echo verdicts join the scorecard (human_agreement.calibration_config),
# run here as a module: only the rules its validity table needs run, with its own config and results/<its experiment>/.
if CALIBRATION_CONFIG is not None:

    module calibration:
        snakefile:
            "Snakefile"
        config:
            CALIBRATION_CONFIG

    use rule * from calibration exclude all as calibration_*


rule all:
    default_target: True
    input:
        rules.index_catalog.output,
        rules.train_lda.output,
        rules.import_report.output if IMPORTING else [],
        per_shard(SESSION_SHARD),
        per_shard(rules.score.output.sessions),
        per_shard(rules.score.output.turns),
        per_shard(rules.judge.output[0]) if JUDGE["enabled"] else [],
        rules.aggregate.output,
        rules.stats.output,
        rules.reliability_trials.output if TRIALS > 1 else [],
        rules.plots.output,
        rules.validity.output if VALIDITY else [],
        rules.validity_figure.output if VALIDITY else [],
        rules.human_agreement.output if HUMAN_LABELS else [],
        rules.people_agreement.output if PEOPLE else [],
        rules.scorecard.output,
        rules.user_realism.output if REALISM_REFERENCE else [],
        rules.viewer.output,
        rules.findings.output,
        rules.provenance.output,


onerror:
    # Outputs rewritten before the failure are newer than the record, which is written last.
    if Path(RESULTS, "provenance.json").exists():
        print(
            f"{RESULTS}/provenance.json describes the outputs of the last finished run: tables rewritten before "
            f"this failure may differ from it until a run finishes (`crseval verify {RESULTS}` lists what differs)",
            file=sys.stderr,
        )
