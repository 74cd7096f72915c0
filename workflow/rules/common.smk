"""What the stages share: the experiment's systems and shards, paths, and every helper function.

Included first by the Snakefile. What the config asks of the workflow (the systems and the user profiles they
meet, the LLMs, threads and concurrency of each job, the files read, the figures drawn, the optional outputs) is
resolved once, as EXPERIMENT (crseval.planning.Experiment), which every rule file reads. A stage file defines its
rules and the few values only its rules read (stats.smk: the systems matched across user profiles; findings.smk:
the pages the findings page links to, which need the other stages' rules); a rule refers to the files of a rule
defined before it as `rules.<name>.output`.
"""

import glob as _glob
import os

from crseval import planning
from crseval.core import session_records
from crseval.core.canonical import canonical_json as canonical
from crseval.core.canonical import canonical_sha, without_runtime
from crseval.stage_digests import code_param
from crseval.core.config_files import load_config_file
from crseval.core.experiment import results_dir
from crseval.corpora import formats as import_formats
from crseval.simulate.user import voice_learning
from crseval.corpora.manifest import build_manifest, shard_slices, write_if_changed
from crseval.core.io import sha256_file
from crseval.core.shards import n_shards, parse_shard_name, shard_indices, shard_name

# ------------------------------------------------------------------ paths

# Outputs, caches and the files a user names are relative to the working directory; the workflow's
# own files (rule scripts, envs, report captions) to the rule files, the shipped resources to the
# workflow's folder WORKFLOW_DIR (set by the Snakefile) through input_path.
EXPERIMENT = planning.resolve_experiment(config, WORKFLOW_DIR)
RESULTS = results_dir(config)
ENV = "../../envs/crseval.yaml"  # relative to the rule files
SESSION_SCHEMA = str(session_records.SESSION_SCHEMA)  # package data of the library
# A shard of sessions, simulated or imported: the {system}/{shard} every per-shard rule shares.
SESSION_SHARD = f"{RESULTS}/sessions/{{system}}/shard-{{shard}}.jsonl"


wildcard_constraints:
    system="[A-Za-z0-9._:-]+",
    shard=r"\d+(-t\d+)?",  # crseval.core.shards.shard_name: a shard, and its trial after the first


def input_path(path):
    """The file the config names at `path`: in the working directory, else shipped with the workflow
    (crseval.planning.input_path; config/README.md, "Paths")."""
    return EXPERIMENT.input_path(path)


# ------------------------------------------------------------------ config slices in params
# canonical(value): the canonical JSON of crseval.core.canonical, the form of every config slice in params.


def config_slice(*keys):
    """The config section at `keys` as canonical JSON.

    Rules receive their settings through `params` in this form, so a rule re-runs exactly when
    a value it depends on changes, whatever the key order in the YAML file.
    """
    section = config
    for key in keys:
        section = section[key]
    return canonical(section)


def config_digests():
    """`section=<12 hex digits of its canonical sha256>` for every top-level config section, one line."""
    return " ".join(f"{key}={canonical_sha(config[key])[:12]}" for key in sorted(config))


def library_code(script):
    """The digest of the code a script runs (the script, every library module it reaches and the package data
    pyproject.toml declares for them; crseval.stage_digests.code_param). In the params of the script's rules, an
    edit to that code re-runs them and what follows, and an edit the script does not reach re-runs nothing.
    Snakemake keeps it with each job's outputs: provenance records the code the jobs ran with from there."""
    return code_param(WORKFLOW_DIR / "workflow" / "scripts" / script)


# ------------------------------------------------------------------ threads and resources

# llama.cpp slows to a crawl when its threads outnumber free cores, so every job consumes
# `cpu_threads` equal to its threads, capped at the cores this machine really has, even under
# `--cores 8` on a 2-core box. Override with `--resources cpu_threads=N`; on a cluster
# (`--jobs` with an executor) jobs run elsewhere and no cap is set.
if workflow.global_resources.get("_nodes").value is None:
    workflow.global_resources.setdefault("cpu_threads", len(os.sched_getaffinity(0)))


def cpu_threads(wildcards, threads):
    return threads


def llm_slots(concurrency):
    """The `llm_slots` a job takes: its concurrency (requests it keeps in flight), at most the
    `--resources llm_slots=N` given, so that N caps the requests one server gets even when a single
    job asks for more. The job runs with exactly the slots it holds (snakemake.resources.llm_slots)."""
    cap = workflow.global_resources.get("llm_slots")
    cap = getattr(cap, "value", cap)
    return concurrency if cap is None or concurrency == 0 else max(1, min(concurrency, int(cap)))


# ------------------------------------------------------------------ systems and shards

# Sessions are simulated, one job per (system, shard) of paired, seeded sessions, or imported
# from a conversation corpus, one job per (system, shard) too (`sessions.source: import`,
# docs/importing.md). No job lists the corpus files: planning writes the corpus manifest (what
# each file holds, cached by size and modification time) and one slice file per shard, rewritten
# only when its sessions change; an import job depends on its slice (crseval.corpora.manifest).
IMPORTING = EXPERIMENT.importing
SHARD_SIZE = config["sessions"]["shard_size"]
VOTES_FILE = None  # the votes of an imported corpus (sessions.import_votes), when it has them
CORPUS_MANIFEST = EXPERIMENT.corpus_manifest
IMPORT_SLICE = f"{RESULTS}/sessions/import/{{system}}/{{shard}}.slice.json"
IMPORT_FILMS = f"{RESULTS}/sessions/import/{{system}}/{{shard}}.films.json"
if IMPORTING:
    IMPORT_FORMAT = config["sessions"]["import_format"]
    # an empty match was stopped by check_inputs (Snakefile), naming sessions.import_paths
    VOTES_FILE = config["sessions"].get("import_votes")
    CORPUS = build_manifest(_glob.glob(config["sessions"]["import_paths"]), IMPORT_FORMAT, CORPUS_MANIFEST)
    SESSION_COUNTS = {system: len(sessions) for system, sessions in CORPUS["sessions"].items()}
    EXPERIMENT.check_imported_counts(SESSION_COUNTS)  # sessions.max_sessions and max_jobs, before the shards are cut
    # The users' verdicts read by human_agreement, the format's primary verdict when it is binary (an
    # ordinal verdict is judged by human_agreement.corpora's agreement with people, which reads both scales).
    _VERDICTS = import_formats.corpus_format(IMPORT_FORMAT).verdicts
    HUMAN_LABELS = CORPUS["labelled"] and bool(_VERDICTS) and _VERDICTS[0].scale == "binary"
    HUMAN_VERDICT = _VERDICTS[0].column if HUMAN_LABELS else None
    SYSTEMS = {name: {"name": name, "agent": "imported"} for name in SESSION_COUNTS}
    for (_system, _shard), _piece in shard_slices(CORPUS, SHARD_SIZE).items():
        write_if_changed(IMPORT_SLICE.format(system=_system, shard=_shard), _piece)
else:
    SYSTEMS = {name: system.resolved.entry for name, system in EXPERIMENT.systems.items()}
    SESSION_COUNTS = {name: config["sessions"]["count"] for name in SYSTEMS}
    HUMAN_LABELS = False  # simulated users give no verdicts
# How often each simulated user meets each system: every trial after the first has shards of its own
# (crseval.core.shards.shard_name), so adding trials adds jobs and changes none.
TRIALS = EXPERIMENT.trials

# Every (system, shard name) of the experiment, in the order of the per-shard inputs and outputs:
# a system's shards of the first trial, then of the next.
SHARDS = [
    (system, shard_name(shard, trial))
    for system in SYSTEMS
    for trial in range(TRIALS)
    for shard in range(n_shards(SESSION_COUNTS[system], SHARD_SIZE))
]


def per_shard(pattern):
    """`pattern` with {system} and {shard} filled for every shard of every system (in SHARDS order)."""
    return [pattern.format(system=system, shard=shard) for system, shard in SHARDS]


def first_trial_shards(pattern):
    """`pattern` for the shards of the first trial only: each simulated user once (sessions.trials)."""
    return [pattern.format(system=system, shard=shard) for system, shard in SHARDS if parse_shard_name(shard)[1] == 0]


def shard_range(wildcards):
    """[start, stop): the session indices of a shard."""
    shard, _ = parse_shard_name(wildcards.shard)
    indices = shard_indices(SESSION_COUNTS[wildcards.system], SHARD_SIZE, shard)
    return [indices.start, indices.stop]


def system_params(wildcards):
    """A system's settings that shape its sessions (not its concurrency, which changes speed only)."""
    return canonical(without_runtime(SYSTEMS[wildcards.system]))


def simulator_params():
    """The simulator settings that shape the sessions: not `realism`, which only the user_realism rule reads,
    nor `voice`, which reaches the systems whose user speaks with it as the learned pools (`system_voice`)."""
    return canonical({key: value for key, value in config["simulator"].items() if key not in ("realism", "voice")})


def system_user_profile(wildcards):
    """The settings of the user profile the system meets: editing a profile re-runs its sessions."""
    return canonical(EXPERIMENT.systems[wildcards.system].profile_settings)


def system_voice(wildcards):
    """The learned voice's pools, for a system whose user speaks with it; none for the others."""
    return rules.learn_voice.output.voice if wildcards.system in EXPERIMENT.systems_with_voice else []


def system_prompt(wildcards):
    """The prompt file the system's kind reads (its `prompt` or `system_prompt`; none for most kinds)."""
    system = EXPERIMENT.systems[wildcards.system].resolved
    return input_path(system.prompt) if system.prompt_key else []


def scored_prompt(wildcards):
    """The prompt file of the system whose shard is scored, under its key (`prompt`, `system_prompt`; none
    for most kinds and for imported sessions): what its replies copy from it earns no concept credit
    (crseval.metrics.grounded.SystemPrompt)."""
    if IMPORTING:
        return {}
    system = EXPERIMENT.systems[wildcards.system].resolved
    return {system.prompt_key: input_path(system.prompt)} if system.prompt_key else {}


def system_llm_slots(wildcards):
    """Requests a simulate job of the system keeps in flight (0 without LLM calls)."""
    system = EXPERIMENT.systems[wildcards.system]
    return llm_slots(system.concurrency) if system.takes_slots else 0


def system_threads(wildcards):
    """A model in the job's process gets its threads; other backends wait on a server."""
    return EXPERIMENT.systems[wildcards.system].threads


# ------------------------------------------------------------------ scoring

SCORING = config["scoring"]
# Some selected metric family reads the LDA topic model.
SCORING_USES_LDA = EXPERIMENT.scoring_reads_lda


def scoring_settings():
    """The scoring config without the cache location, which changes no score."""
    return canonical({key: value for key, value in SCORING.items() if key != "embedding_cache"})


# ------------------------------------------------------------------ judge

JUDGE = config["judge"]
# The panel judges' names, in config order (none when the judge is off): each has jobs of its own.
JUDGE_PANEL = list(EXPERIMENT.panel)


def judge_params(jobs):
    """A judge's settings without the speed-only concurrency (`jobs`: an EXPERIMENT.judge or .panel entry)."""
    return canonical(without_runtime(jobs.settings))


def panel_params(wildcards):
    return judge_params(EXPERIMENT.panel[wildcards.judge])


def panel_threads(wildcards):
    """A model in the job's process gets its threads; other backends wait on a server."""
    return EXPERIMENT.panel[wildcards.judge].threads


def panel_slots(wildcards):
    return llm_slots(EXPERIMENT.panel[wildcards.judge].concurrency)


def panel_outputs(name):
    """Every shard's judgements by the panel judge `name` (in SHARDS order)."""
    return per_shard(rules.panel_judge.output[0].replace("{judge}", name))


# ------------------------------------------------------------------ the learned voice

# The corpus a learned voice learns from (simulator.voice.corpus), where read, or None; the systems whose
# simulate jobs need the voice are EXPERIMENT.systems_with_voice.
VOICE_CORPUS = EXPERIMENT.voice_corpus
# The corpus's content and the voice's settings name the pools (crseval.simulate.user.voice_learning.voice_key).
VOICE_CORPUS_SHA256 = sha256_file(VOICE_CORPUS) if VOICE_CORPUS else None
# The files of each further corpus the voice learns from (simulator.voice.mix), and one digest of each's files.
VOICE_MIX_FILES = EXPERIMENT.voice_mix_files
VOICE_MIX_SHA256 = tuple(
    hashlib.sha256("\n".join(sha256_file(path) for path in paths).encode()).hexdigest() for paths in VOICE_MIX_FILES
)
VOICE_KEY = (
    voice_learning.voice_key(VOICE_CORPUS_SHA256, config["simulator"]["voice"], VOICE_MIX_SHA256)
    if VOICE_CORPUS
    else None
)

# ------------------------------------------------------------------ user realism

# The real dialogues the simulated user turns are compared with (simulator.realism.reference), or None.
REALISM_REFERENCE = EXPERIMENT.realism_reference


# ------------------------------------------------------------------ figures

# The figures of the experiment, by file stem (the families and the judge add theirs to the base ones;
# crseval.planning.figures).
FIGURES = EXPERIMENT.figures


# ------------------------------------------------------------------ metric validity

# System name -> calibration role (oracle, lag<k>, stubborn, random, parrot) of the calibration systems.
CALIBRATION = EXPERIMENT.calibration_roles
# The validity table and figure need at least three calibration systems (config/calibration.yaml).
VALIDITY = EXPERIMENT.validity


def calibration_module_config():
    """The config of the calibration experiment named by human_agreement.calibration_config (run by this
    workflow as the module `calibration`, up to its validity table), or None."""
    path = config.get("human_agreement", {}).get("calibration_config")
    return load_config_file(path) if path else None


# The calibration verdicts the scorecard joins: a finished table, or the one the calibration module writes.
CALIBRATION_CONFIG = calibration_module_config()
if CALIBRATION_CONFIG is not None:
    VALIDITY_TABLE = f"{results_dir(CALIBRATION_CONFIG)}/stats/validity.csv"
else:
    VALIDITY_TABLE = config.get("human_agreement", {}).get("validity_table")


# ------------------------------------------------------------------ agreement with people

# The corpora of people's verdicts every metric is judged against (human_agreement.corpora), by name.
PEOPLE = EXPERIMENT.people


def people_corpus_files(name):
    """The files of the corpus `name` (its `paths`, a path or a glob pattern), in path order."""
    return sorted(_glob.glob(PEOPLE[name]["paths"]))


def people_votes_file(name):
    """The votes file of the corpus `name`, where it names one."""
    votes = PEOPLE[name].get("votes")
    return [votes] if votes else []


# ------------------------------------------------------------------ provenance


def described_outputs():
    """The experiment's tables, statistics and figures (and catalog index, topics, import report):
    the provenance record depends on them, so it is written again whenever one of them is and never
    describes outputs other than those beside it. Per-shard files are summarised by the tables.
    Called by the provenance rule, once every stage is defined."""
    described = [
        rules.index_catalog.output,
        rules.train_lda.output,
        rules.aggregate.output,
        rules.stats.output,
        rules.plots.output,
    ]
    if IMPORTING:
        described.append(rules.import_report.output.report)
        if VOTES_FILE:
            described.append(rules.import_votes.output.votes)
    if VALIDITY:
        described += [rules.validity.output, rules.validity_figure.output]
    if HUMAN_LABELS:
        described.append(rules.human_agreement.output)
    if PEOPLE:
        described.append(rules.people_agreement.output)
    described.append(rules.scorecard.output)
    if REALISM_REFERENCE:
        described.append(rules.user_realism.output)
    if VOICE_CORPUS:
        described += [rules.learn_voice.output, rules.user_audit.output]
    described += [rules.viewer.output, rules.findings.output]
    if TRIALS > 1:
        described.append(rules.reliability_trials.output)
    return described
