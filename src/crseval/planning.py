"""What an experiment's config asks of the workflow: each rule's inputs, the LLMs each job calls, its
threads and concurrency, the files it reads, the figures it draws, and the full check of the config
before any job is planned (where results go and whether sessions are imported: crseval.core.experiment).

Above the stages and below the workflow: the rules (workflow/rules/*.smk), the provenance record
(crseval.provenance) and the stage digests read what a config asks resolved once, as an `Experiment`
(`resolve_experiment`), the CLI asks here one fact at a time (the rule files also read a few library pieces
directly: the session schema, canonical hashes, shard names, the corpus manifest, the voice's key), and this
module asks each pluggable kind what it declares
(agent kinds: crseval.simulate.systems.kinds; LLM backends: crseval.llm.backends; metric families:
crseval.metrics.families; corpus formats: crseval.corpora.formats) instead of testing kind names.
LLM backends are returned as {config key: backend settings}, the key naming who uses the backend
(`systems.<name>`, `simulator.paraphrase`, `scoring.cas`, `scoring.adherence`, `judge`,
`judge.panel.<name>`).

Threads: a backend whose kind runs in the job's own process (llama.cpp) gets the job's threads
(`llm.threads`); so does the sentence-embedding model (torch). A server backend runs elsewhere, and
its job waits on it with one thread.

Concurrency is a runtime setting like the cache folder or the timeout: it changes how fast a job
runs, never what it produces (same seeds, same cache keys, same records in the same order). So it is
kept out of the settings that identify results (crseval.core.canonical.without_runtime) and out of
the rules' params, and a change of it re-runs nothing. A job runs one request at a time when any of
its backends runs inside the job's own process (one model instance decodes one stream) and when it
makes no LLM call at all (threads would only contend for the interpreter), unless its system's kind
asks a service that answers many requests at once.
"""

from __future__ import annotations

import functools
import glob
import os
from dataclasses import dataclass, field
from pathlib import Path

from crseval.core import config_checks
from crseval.core.config_checks import ConfigError, compose_schema
from crseval.core.experiment import imports_sessions, results_dir
from crseval.core.shards import n_shards
from crseval.corpora.formats import config_problems as format_problems
from crseval.corpora.formats import schema_part as format_schema
from crseval.judge.judge_columns import CRITERIA, score_column
from crseval.llm.backends import backend_kind
from crseval.llm.backends import config_problems as backend_problems
from crseval.llm.backends import schema_part as backend_schema
from crseval.metrics import families
from crseval.simulate.systems.kinds import ResolvedSystem, calibration_roles, system_problems
from crseval.simulate.systems.kinds import schema_part as agent_schema
from crseval.simulate.user.profiles import config_problems as profile_problems
from crseval.simulate.user.profiles import needs_learned_voice, resolve_profile
from crseval.simulate.user.templates import template_problems
from crseval.simulate.user.voice import voice_problems

__all__ = ["calibration_roles", "system_prompt_key"]

# Relative config paths under this folder may name the files shipped with the workflow (`input_path`).
SHIPPED = "resources"
# The source tree the package runs from: where the shipped files are when the config check runs outside a
# workflow (`crseval config show`).
SOURCE_TREE = Path(__file__).resolve().parents[2]
# The prompt of the LLM topic extractors (legacy CAS `topics: llm`, adherence `extractor: llm`), shipped
# with the workflow like the CRS and judge prompts.
TOPICS_PROMPT = "resources/prompts/topics.txt"
PARAPHRASE_PROMPT = "resources/prompts/paraphrase.txt"  # the simulated user's rewording (simulator.paraphrase)


# ------------------------------------------------------------------ the config, checked whole


def kind_problems(config: dict):
    """What the kinds the config selects require beyond the schema: each system's agent kind, each
    metric family, the corpus format, the LLM backends, the user profiles and their templates."""
    yield from system_problems(config)
    yield from families.config_problems(config)
    yield from format_problems(config)
    yield from backend_problems(config)
    yield from profile_problems(config)
    yield from template_problems(config, lambda path: input_path(path, SOURCE_TREE))
    yield from voice_problems(config)


def check_config(config: dict) -> None:
    """Raise one ConfigError listing every problem of `config`: the schema, the rules that relate
    several values, what each selected kind requires (crseval.core.config_checks), and the bounds on sessions and
    jobs."""
    config_checks.check_config(config, config_schema(), rules=(kind_problems, count_problems))


def effective_config(*paths: str | Path) -> dict:
    """The config the workflow runs with `--configfile <paths...>`, defaults filled in, checked whole."""
    return config_checks.effective_config(*paths, schema=config_schema(), rules=(kind_problems, count_problems))


# ------------------------------------------------------------------ the bounds on sessions and jobs


def _whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def jobs_per_shard(config: dict) -> int:
    """The jobs of one shard: `simulate` or `import_logs`, `score`, and one per judge when the judge is on."""
    judge = config.get("judge") if isinstance(config.get("judge"), dict) else {}
    panel = judge.get("panel") if isinstance(judge.get("panel"), list) else []
    return 2 + (1 + len(panel) if judge.get("enabled") is True else 0)


def count_problems(config: dict, session_counts: dict[str, int] | None = None):
    """The bounds `sessions.max_sessions` and `sessions.max_jobs` on the sessions and per-shard jobs the experiment
    plans, each one passed named with the numbers that add up to it. Counted from the numbers alone, before any
    job is planned, so that `sessions.trials: 1000000` stops at once instead of filling the memory.
    `session_counts` (system -> its sessions) are an imported corpus's; without them the simulated sessions are
    counted (an import is counted once its corpus is read: `check_session_and_job_counts`). Values of the wrong
    shape are left to the schema."""
    sessions = config.get("sessions") if isinstance(config, dict) else None
    if not isinstance(sessions, dict):
        return
    most, most_jobs = sessions.get("max_sessions"), sessions.get("max_jobs")
    trials, size = sessions.get("trials", 1), sessions.get("shard_size")
    if session_counts is None:
        systems, count = config.get("systems"), sessions.get("count")
        if imports_sessions(config) or not isinstance(systems, list) or not _whole(count):
            return
        session_counts = {f"systems[{i}]": count for i in range(len(systems))}
        counted = f"{len(systems):,} systems x sessions.count {count:,} x sessions.trials {trials:,}"
    else:
        counted = f"the imported dialogues of {len(session_counts):,} systems"
    if not all(_whole(n) for n in (trials, size, most, most_jobs)):
        return
    planned = sum(session_counts.values()) * trials
    if planned > most:
        yield (
            f"sessions: the experiment plans {planned:,} sessions ({counted}), more than sessions.max_sessions "
            f"({most:,}): plan fewer, or raise max_sessions if this machine can run that many"
        )
    shards = sum(n_shards(n, size) for n in session_counts.values()) * trials
    jobs = shards * jobs_per_shard(config)
    if jobs > most_jobs:
        yield (
            f"sessions: the experiment plans {jobs:,} per-shard jobs ({shards:,} shards of sessions.shard_size "
            f"{size:,}, {jobs_per_shard(config)} jobs each), more than sessions.max_jobs ({most_jobs:,}): raise "
            "shard_size, plan fewer sessions, or raise max_jobs if Snakemake on this machine can plan that many"
        )


def check_session_and_job_counts(config: dict, session_counts: dict[str, int]) -> None:
    """Raise a ConfigError naming each bound on sessions and jobs (`sessions.max_sessions`, `sessions.max_jobs`)
    an imported corpus of `session_counts` passes."""
    problems = list(count_problems(config, session_counts))
    if problems:
        raise ConfigError(problems)


# ------------------------------------------------------------------ the results layout


def corpus_manifest(config: dict) -> str:
    """Where the workflow keeps the manifest of an imported corpus (crseval.corpora.manifest)."""
    return f"{results_dir(config)}/sessions/corpus_manifest.json"


# ------------------------------------------------------------------ a system's entry


def resolved(system: dict, config: dict) -> ResolvedSystem:
    """`system` (an entry of config['systems']) as its kind and `simulator.profile` resolve it."""
    return ResolvedSystem.of(system, config.get("simulator"))


def system_prompt_key(system: dict) -> str | None:
    """The key of the prompt file a system's simulate job reads, or None (ResolvedSystem.prompt_key)."""
    return ResolvedSystem.of(system).prompt_key


# ------------------------------------------------------------------ which LLMs each job calls


def system_backends(system: dict, config: dict) -> dict[str, dict]:
    """The LLMs a simulate job of `system` (an entry of config['systems']) calls: its own, if its kind
    calls one, and the paraphraser's, which rewrites the simulated user's turns of every system."""
    backends = {}
    entry = resolved(system, config)
    if entry.backend is not None:
        backends[f"systems.{entry.name}"] = entry.backend
    paraphrase = config.get("simulator", {}).get("paraphrase", {})
    if paraphrase.get("enabled"):
        backends["simulator.paraphrase"] = paraphrase["backend"]
    return backends


def scoring_backends(config: dict) -> dict[str, dict]:
    """The LLMs a score job calls: only those of the metric families `scoring.metrics` selects."""
    return families.scoring_backends(config.get("scoring", {}))


def panel_names(config: dict) -> list[str]:
    """The panel judges (`judge.panel`) of an experiment whose judge is on, in config order."""
    judge = config.get("judge", {})
    return [entry["name"] for entry in judge.get("panel", [])] if judge.get("enabled") else []


# What a panel judge takes from the first judge; its backend, options, top_logprobs and concurrency are its own.
PANEL_SHARED = ("prompt", "samples", "retries", "seed")


def judge_settings(config: dict, name: str | None = None) -> dict:
    """The settings of one judge's jobs: the judge section without its panel for the first judge
    (`name` None), else the panel judge `name`'s own backend and, where it gives none, the first
    judge's options, top_logprobs, and its prompt, samples, retries and seed."""
    first = {key: value for key, value in config["judge"].items() if key != "panel"}
    if name is None:
        return first
    entry = next((e for e in config["judge"].get("panel", []) if e["name"] == name), None)
    if entry is None:
        raise KeyError(f"judge.panel has no judge named {name!r}")
    settings = {key: first[key] for key in PANEL_SHARED}
    settings |= {
        "name": name,
        "backend": entry["backend"],
        "options": entry.get("options", first["options"]),
        "top_logprobs": entry.get("top_logprobs", first.get("top_logprobs", 0)),
    }
    return settings | ({"concurrency": entry["concurrency"]} if "concurrency" in entry else {})


def judge_key(name: str | None = None) -> str:
    """Who calls a judge's backend: `judge`, or `judge.panel.<name>`."""
    return "judge" if name is None else f"judge.panel.{name}"


def judge_job_backends(config: dict, name: str | None = None) -> dict[str, dict]:
    """The LLM one judge job calls: the first judge's, or the panel judge `name`'s (none when the judge is off)."""
    if not config.get("judge", {}).get("enabled"):
        return {}
    return {judge_key(name): judge_settings(config, name)["backend"]}


def judge_backends(config: dict) -> dict[str, dict]:
    """The LLMs the judge stage calls: the first judge's and each panel judge's (none when the judge is off)."""
    backends = judge_job_backends(config)
    for name in panel_names(config):
        backends |= judge_job_backends(config, name)
    return backends


def experiment_backends(config: dict) -> dict[str, dict]:
    """Every LLM the experiment calls, by the config key that uses it."""
    backends = {}
    if not imports_sessions(config):
        for system in config.get("systems", []):
            backends.update(system_backends(system, config))
    return backends | scoring_backends(config) | judge_backends(config)


def embedding_users(config: dict) -> list[str]:
    """The settings that make scoring load the all-MiniLM-L6-v2 sentence embedding model (in-process,
    torch): only those of the metric families `scoring.metrics` selects."""
    return families.embedding_users(config.get("scoring", {}))


def scoring_reads_lda(config: dict) -> bool:
    """Some selected metric family reads the LDA topic model (the `train_lda` rule's output)."""
    return families.reads_lda(config.get("scoring", {}))


def uses_llm(backends: dict[str, dict]) -> bool:
    return bool(backends)


def in_process(backends: dict[str, dict]) -> bool:
    """Some backend runs inside the job's own process."""
    return any(backend_kind(backend["type"]).in_process for backend in backends.values())


# ------------------------------------------------------------------ threads


def threads_for(backends: dict[str, dict], config: dict) -> int:
    """A job's threads: `llm.threads` for a model in its own process, 1 to wait on a server or on nothing."""
    return config["llm"]["threads"] if in_process(backends) else 1


def system_threads(system: dict, config: dict) -> int:
    return threads_for(system_backends(system, config), config)


def scoring_threads(config: dict) -> int:
    """A score job's threads: a model or the embedding model in its process take `llm.threads`."""
    return config["llm"]["threads"] if embedding_users(config) else threads_for(scoring_backends(config), config)


def judge_threads(config: dict, name: str | None = None) -> int:
    """Threads of a job of the first judge, or of the panel judge `name`."""
    return threads_for(judge_job_backends(config, name), config)


# ------------------------------------------------------------------ concurrency


def effective(requested: int, backends: dict[str, dict]) -> int:
    """The concurrency a job really uses, given the backends it calls."""
    if not uses_llm(backends) or in_process(backends):
        return 1
    return max(1, int(requested))


def simulate_concurrency(system: dict, config: dict) -> int:
    """Sessions in flight in one simulate job of `system` (an entry of config['systems'])."""
    requested = system.get("concurrency", config["llm"].get("concurrency", 1))
    backends = system_backends(system, config)
    # a service answers many requests at a time
    if resolved(system, config).kind.asks_a_service and not in_process(backends):
        return max(1, int(requested))
    return effective(requested, backends)


def realism_reference(config: dict) -> str | None:
    """The real dialogues the simulated user turns are compared with (the user_realism rule), if any."""
    if imports_sessions(config):
        return None
    return (config.get("simulator", {}).get("realism") or {}).get("reference")


def voice_mix_files(config: dict) -> tuple[tuple[str, ...], ...]:
    """The files of each further corpus the learned voice learns from (`simulator.voice.mix`), sorted."""
    mix = (config.get("simulator", {}).get("voice") or {}).get("mix") or []
    return tuple(tuple(sorted(glob.glob(corpus["paths"]))) for corpus in mix)


def voice_corpus(config: dict) -> str | None:
    """The corpus of real dialogues a learned voice learns from (the learn_voice rule), if any."""
    if imports_sessions(config):
        return None
    return (config.get("simulator", {}).get("voice") or {}).get("corpus")


def user_profile_of(system: dict, config: dict) -> str:
    """The user profile a system's sessions are simulated with: its own `profile`, else `simulator.profile`."""
    return resolved(system, config).profile


def user_profile_settings(system: dict, config: dict) -> dict:
    """The settings of the user profile a system meets, built-in or defined under `simulator.profiles`, as its
    simulate jobs and provenance record them (the knobs of a defined profile's `fit` as defined: the job
    sets them from the learned voice, crseval.simulate.user.profiles.UserProfile.with_fitted)."""
    return resolve_profile(user_profile_of(system, config), config["simulator"]).settings()


def user_profiles_settings(config: dict) -> dict[str, dict]:
    """Name -> settings of every user profile the experiment's simulated sessions use (profiles_used)."""
    return {name: resolve_profile(name, config["simulator"]).settings() for name in profiles_used(config)}


def profiles_used(config: dict) -> list[str]:
    """The user profiles the experiment's simulated sessions use, in the order of the systems."""
    if imports_sessions(config):
        return []
    return list(dict.fromkeys(user_profile_of(system, config) for system in config.get("systems", [])))


def simulate_takes_slots(system: dict, config: dict) -> bool:
    """A simulate job of `system` keeps requests in flight (an LLM or a service): it takes `llm_slots`."""
    return uses_llm(system_backends(system, config)) or resolved(system, config).kind.asks_a_service


def judge_concurrency(config: dict, name: str | None = None) -> int:
    """Sessions judged at once in one job of the first judge, or of the panel judge `name`."""
    settings = judge_settings(config, name)
    requested = settings.get("concurrency", config["llm"].get("concurrency", 1))
    return effective(requested, judge_job_backends(config, name))


# ------------------------------------------------------------------ figures


# Drawn for every experiment (crseval.reports.figures); the families and the judge add theirs.
BASE_FIGURES = ("metric_bars", "correlation_heatmap", "recovery_delay_box", "distributions")


def scatter_columns(config: dict) -> list[str]:
    """Per session, TAS against these: the selected families' and, when it runs, the judge's scores."""
    judged = [score_column(criterion) for criterion in CRITERIA] if config["judge"]["enabled"] else []
    return families.scatter_columns(config["scoring"]) + judged


def figures(config: dict) -> list[str]:
    """The figures the `plots` rule draws for this config, by their file stem: the base figures, the
    selected families' own, the judge's, then those that plot a family's metric against others."""
    scoring, scatter = config["scoring"], scatter_columns(config)
    own = families.figures(scoring, [])
    drawn = [*BASE_FIGURES, *own]
    if config["judge"]["enabled"]:
        drawn.append("judge_radar")
    return drawn + [figure for figure in families.figures(scoring, scatter) if figure not in own]


# ------------------------------------------------------------------ files the config names


def input_path(path: str, workflow_dir: str | Path) -> str:
    """Where the workflow reads a file the config names (config/README.md, "Paths").

    A path is read from the working directory, where snakemake runs and results/ is written. A
    relative path under resources/ that names no file there names the file shipped with the
    workflow at `workflow_dir` (its prompts, templates, word lists, demo catalog), so that the
    shipped configs run unchanged from a checkout and from a folder that uses the workflow as a
    module. A path found in neither place is returned as written, for the missing-file error to name.
    """
    if os.path.isabs(path) or os.path.exists(path) or Path(os.path.normpath(path)).parts[:1] != (SHIPPED,):
        return path
    shipped = Path(workflow_dir) / path
    return str(shipped) if shipped.exists() else path


def config_inputs(config: dict) -> dict[str, str]:
    """Config key -> file path, for every file the config makes the workflow read (not the import
    glob, nor GGUF models, which `model_paths` lists). Keys as written in the YAML file."""
    inputs = {
        "catalog.path": config["catalog"]["path"],
        "catalog.non_genre_values": config["catalog"]["non_genre_values"],
    }
    if not imports_sessions(config):
        inputs["simulator.templates"] = config["simulator"]["templates"]
        if reference := realism_reference(config):
            inputs["simulator.realism.reference"] = reference
        if corpus := voice_corpus(config):
            inputs["simulator.voice.corpus"] = corpus
            for position, files in enumerate(voice_mix_files(config)):
                inputs.update({f"simulator.voice.mix[{position}].paths[{i}]": path for i, path in enumerate(files)})
        for i, system in enumerate(config.get("systems", [])):
            entry = resolved(system, config)
            if entry.prompt_key:
                inputs[f"systems[{i}].{entry.prompt_key}"] = entry.prompt
    if config.get("judge", {}).get("enabled"):
        inputs["judge.prompt"] = config["judge"]["prompt"]
    return inputs


def model_paths(config: dict) -> dict[str, str]:
    """Config key -> GGUF file, for the backends that name a model file by path (not an embedded model)."""
    sections = {}
    if not imports_sessions(config):
        for i, system in enumerate(config.get("systems", [])):
            if (backend := resolved(system, config).backend) is not None:
                sections[f"systems[{i}].backend.model"] = backend
        if config["simulator"]["paraphrase"].get("enabled"):
            sections["simulator.paraphrase.backend.model"] = config["simulator"]["paraphrase"]["backend"]
    for key, backend in scoring_backends(config).items():
        sections[f"{key}.llm.backend.model"] = backend
    if config.get("judge", {}).get("enabled"):
        sections["judge.backend.model"] = config["judge"]["backend"]
        for i, entry in enumerate(config["judge"].get("panel", [])):
            sections[f"judge.panel[{i}].backend.model"] = entry["backend"]
    files = {key: backend_kind(backend["type"]).model_file(backend) for key, backend in sections.items()}
    return {key: path for key, path in files.items() if path is not None}


def check_inputs(config: dict, workflow_dir: str | Path) -> None:
    """Raise one ConfigError naming every file the config names that does not exist, by its key.

    Run before any job is planned, so that a typo in a path stops the run at once whatever is already
    under results/ (Snakemake would otherwise re-run nothing upstream of a missing input, or fail
    later without naming the key). Paths are resolved as the rules resolve them (`input_path`).
    """
    problems = []
    for key, path in {**config_inputs(config), **model_paths(config)}.items():
        if not os.path.isfile(input_path(path, workflow_dir)):
            problems.append(f"{key}: {path} does not exist" + (" (or is not a file)" if os.path.exists(path) else ""))
    if imports_sessions(config):
        pattern = config["sessions"].get("import_paths")
        if pattern and not glob.glob(pattern):
            problems.append(f"sessions.import_paths: {pattern} matches no file")
        votes = config["sessions"].get("import_votes")
        if votes and not os.path.isfile(votes):
            problems.append(
                f"sessions.import_votes: {votes} does not exist"
                + (" (or is not a file)" if os.path.exists(votes) else "")
            )
    validity = (config.get("human_agreement") or {}).get("validity_table")
    if validity and not os.path.isfile(validity):
        problems.append(
            f"human_agreement.validity_table: {validity} does not exist (run the calibration experiment first: "
            "snakemake --cores 2 --configfile config/calibration.yaml)"
        )
    calibration = (config.get("human_agreement") or {}).get("calibration_config")
    if calibration and not os.path.isfile(calibration):
        problems.append(f"human_agreement.calibration_config: {calibration} does not exist")
    if voice_corpus(config) and not imports_sessions(config):
        for position, corpus in enumerate(config["simulator"]["voice"].get("mix") or []):
            if not glob.glob(corpus["paths"]):
                problems.append(f"simulator.voice.mix[{position}].paths: {corpus['paths']} matches no file")
    for position, corpus in enumerate((config.get("human_agreement") or {}).get("corpora") or []):
        key = f"human_agreement.corpora[{position}]"
        if not glob.glob(corpus["paths"]):
            problems.append(f"{key}.paths: {corpus['paths']} matches no file")
        if corpus.get("votes") and not os.path.isfile(corpus["votes"]):
            problems.append(f"{key}.votes: {corpus['votes']} does not exist")
    if problems:
        raise ConfigError(problems, "missing input file")


# ------------------------------------------------------------------ the provenance rule's inputs


def backends_used(config: dict) -> list[tuple[str, dict]]:
    """(user, backend config) for every LLM the config makes the workflow call."""
    return list(experiment_backends(config).items())


def prompts_used(config: dict) -> dict[str, list[str]]:
    """Prompt file -> its users (systems.<name>, judge, the LLM topic extractors scoring.cas and
    scoring.adherence), for the prompts the config makes the workflow read."""
    prompts: dict[str, list[str]] = {}
    if not imports_sessions(config):
        for system in config.get("systems", []):
            entry = resolved(system, config)
            if entry.prompt_key:
                prompts.setdefault(entry.prompt, []).append(f"systems.{entry.name}")
    if config.get("judge", {}).get("enabled"):
        prompts.setdefault(config["judge"]["prompt"], []).append("judge")
    for user in scoring_backends(config):
        prompts.setdefault(TOPICS_PROMPT, []).append(user)
    if not imports_sessions(config) and config.get("simulator", {}).get("paraphrase", {}).get("enabled"):
        prompts.setdefault(PARAPHRASE_PROMPT, []).append("simulator.paraphrase")
    return prompts


def model_files(config: dict) -> list[str]:
    """GGUF files named by path in the backends the experiment calls (embedded models are checked by
    crseval.llm.models), each once."""
    return list(dict.fromkeys(model_paths(config).values()))


def other_inputs(config: dict) -> dict[str, list[str]]:
    """Config key -> data files besides the catalog and prompts that shape the sessions."""
    inputs = {"catalog.non_genre_values": [config["catalog"]["non_genre_values"]]}
    if not imports_sessions(config):
        inputs["simulator.templates"] = [config["simulator"]["templates"]]
        if reference := realism_reference(config):
            inputs["simulator.realism.reference"] = [reference]
    else:
        inputs["sessions.import_paths"] = sorted(glob.glob(config["sessions"]["import_paths"]))
        if config["sessions"].get("import_votes"):
            inputs["sessions.import_votes"] = [config["sessions"]["import_votes"]]
    for position, corpus in enumerate(config.get("human_agreement", {}).get("corpora", [])):
        inputs[f"human_agreement.corpora[{position}].paths"] = sorted(glob.glob(corpus["paths"]))
        if corpus.get("votes"):
            inputs[f"human_agreement.corpora[{position}].votes"] = [corpus["votes"]]
    return inputs


def provenance_inputs(config: dict, workflow_dir: str | Path) -> dict[str, str | list[str]]:
    """The files the provenance rule depends on, so that it re-runs when one of them changes: each
    where the workflow at `workflow_dir` reads it (`input_path`)."""
    inputs = other_inputs(config)

    def read(paths: list[str]) -> list[str]:
        return [input_path(path, workflow_dir) for path in paths]

    return {
        "catalog": input_path(config["catalog"]["path"], workflow_dir),
        "non_genre_values": read(inputs["catalog.non_genre_values"]),
        "templates": read(inputs.get("simulator.templates", [])),
        # an imported corpus is an input through its manifest (crseval.corpora.manifest), which changes
        # whenever a log does: listing every log would make planning grow with the corpus
        "logs": [] if not imports_sessions(config) else [corpus_manifest(config)],
        "votes": inputs.get("sessions.import_votes", []),
        # the corpora every metric is judged against (human_agreement.corpora)
        "people": [path for key, paths in inputs.items() if key.startswith("human_agreement.") for path in paths],
        "prompts": read(sorted(prompts_used(config))),
        "models": model_files(config),
    }


# ------------------------------------------------------------------ the experiment, resolved once


@dataclass(frozen=True)
class SimulatedSystem:
    """A system whose sessions the experiment simulates, with what its simulate jobs take."""

    resolved: ResolvedSystem  # its entry, kind, user profile's name, prompt file and LLM
    profile_settings: dict  # the settings of the user profile it meets (user_profile_settings)
    backends: dict[str, dict]  # the LLMs its simulate jobs call (system_backends)
    threads: int
    concurrency: int  # sessions in flight in one of its simulate jobs
    takes_slots: bool  # its jobs keep requests in flight: they take `llm_slots`
    needs_voice: bool  # its jobs need the learned voice (crseval.simulate.user.profiles.needs_learned_voice)

    @classmethod
    def of(cls, entry: dict, config: dict) -> SimulatedSystem:
        """`entry` (an item of config['systems']) as the experiment of `config` simulates it."""
        system = resolved(entry, config)
        profile = resolve_profile(system.profile, config["simulator"])
        return cls(
            system,
            profile.settings(),
            system_backends(entry, config),
            system_threads(entry, config),
            simulate_concurrency(entry, config),
            simulate_takes_slots(entry, config),
            needs_learned_voice(profile, config["simulator"]["paraphrase"]),
        )

    @property
    def name(self) -> str:
        return self.resolved.name

    @property
    def profile(self) -> str:
        """The name of the user profile it meets."""
        return self.resolved.profile


@dataclass(frozen=True)
class JudgeJobs:
    """The jobs of one judge: the first judge's (`name` None) or a panel judge's."""

    name: str | None
    settings: dict  # judge_settings, concurrency included
    threads: int
    concurrency: int  # sessions judged at once in one job

    @classmethod
    def of(cls, config: dict, name: str | None = None) -> JudgeJobs:
        return cls(name, judge_settings(config, name), judge_threads(config, name), judge_concurrency(config, name))


@dataclass(frozen=True)
class Experiment:
    """What a config asks of the workflow, resolved once (`resolve_experiment`): the rule files, the provenance
    record and the stage digests read it instead of asking this module one fact at a time. Its values are plain
    dicts and lists, as the rules' params take them (Snakemake compares params by their repr): read, never
    written. Paths "where read" are where the workflow reads the file (`input_path`)."""

    config: dict = field(repr=False)  # the config it was resolved from, defaults filled in
    workflow_dir: Path  # the workflow's own folder: its rule scripts and shipped resources
    importing: bool  # sessions imported from a corpus (`sessions.source: import`), not simulated
    corpus_manifest: str  # where an imported corpus's manifest is kept (crseval.corpora.manifest)
    # The systems whose sessions are simulated, by name in config order (none for an import); those whose user
    # needs the learned voice (none without `simulator.voice.corpus`).
    systems: dict[str, SimulatedSystem]
    systems_with_voice: tuple[str, ...]
    user_profiles: dict[str, dict]  # name -> settings of each user profile the simulated sessions use
    voice_corpus: str | None  # where read: the corpus the learned voice learns from (the learn_voice rule)
    voice_mix_files: tuple[tuple[str, ...], ...]  # the files of each further corpus it learns from, sorted
    realism_reference: str | None  # where read: the real dialogues the user_realism rule compares with
    paraphrase_prompt: str | None  # where read: the rewording's prompt, when the user's turns are reworded
    # Scoring: the LLMs a score job calls, its threads, whether it reads the LDA topic model, the settings that
    # load the sentence embedding model, and where the LLM topic extractors' prompt is read (when one runs).
    scoring_backends: dict[str, dict]
    scoring_threads: int
    scoring_reads_lda: bool
    embedding_users: list[str]
    topics_prompt: str | None
    judge: JudgeJobs | None  # the first judge, None while the judge is off
    panel: dict[str, JudgeJobs]  # the panel judges by name, in config order
    # The figures by file stem, the per-session scores TAS is plotted against, the distributions figure's
    # columns, and each figure's settings (crseval.metrics.families).
    figures: list[str]
    scatter_columns: list[str]
    distribution_columns: list[str]
    figure_params: dict[str, dict]
    calibration_roles: dict[str, str]  # system name -> role, for the calibration systems
    # The optional final outputs: the validity table and figure (three calibration systems or more), the
    # agreement with the corpora of people's verdicts (by name), the reliability over repeated trials.
    validity: bool
    people: dict[str, dict]
    trials: int
    # What the provenance record describes: every LLM by the config key that uses it, each prompt file with its
    # users, the other input files by config key, and the files the provenance rule depends on.
    backends: dict[str, dict]
    prompts: dict[str, list[str]]
    other_inputs: dict[str, list[str]]
    provenance_inputs: dict[str, str | list[str]]

    @property
    def profile_of(self) -> dict[str, str]:
        """System name -> the user profile it meets, for the simulated systems."""
        return {name: system.profile for name, system in self.systems.items()}

    @property
    def profiles_used(self) -> list[str]:
        """The user profiles the simulated sessions use, in the order of the systems."""
        return list(self.user_profiles)

    @property
    def calibration_profiles(self) -> dict[str, str]:
        """System name -> the user profile it meets, for the calibration systems."""
        return {name: self.systems[name].profile for name in self.calibration_roles}

    def input_path(self, path: str) -> str:
        """Where the workflow reads the file the config names at `path` (`input_path`)."""
        return input_path(path, self.workflow_dir)

    def check_imported_counts(self, session_counts: dict[str, int]) -> None:
        """Raise a ConfigError naming each bound on sessions and jobs an imported corpus of `session_counts`
        (system -> its dialogues) passes (`check_session_and_job_counts`)."""
        check_session_and_job_counts(self.config, session_counts)


def resolve_experiment(config: dict, workflow_dir: str | Path) -> Experiment:
    """The experiment `config` (defaults filled in) asks of the workflow at `workflow_dir`, resolved once."""
    workflow_dir = Path(workflow_dir)
    importing = imports_sessions(config)
    entries = [] if importing else config.get("systems", [])
    systems = {entry["name"]: SimulatedSystem.of(entry, config) for entry in entries}
    if len(systems) != len(entries):
        raise ValueError("config 'systems': every system needs a unique name")
    voice, realism = voice_corpus(config), realism_reference(config)
    paraphrased = not importing and config.get("simulator", {}).get("paraphrase", {}).get("enabled")
    judged = config.get("judge", {}).get("enabled")
    roles = {} if importing else calibration_roles(config["systems"])
    return Experiment(
        config=config,
        workflow_dir=workflow_dir,
        importing=importing,
        corpus_manifest=corpus_manifest(config),
        systems=systems,
        systems_with_voice=tuple(name for name, system in systems.items() if system.needs_voice) if voice else (),
        user_profiles={system.profile: system.profile_settings for system in systems.values()},
        voice_corpus=input_path(voice, workflow_dir) if voice else None,
        voice_mix_files=voice_mix_files(config) if voice else (),
        realism_reference=input_path(realism, workflow_dir) if realism else None,
        paraphrase_prompt=input_path(PARAPHRASE_PROMPT, workflow_dir) if paraphrased else None,
        scoring_backends=scoring_backends(config),
        scoring_threads=scoring_threads(config),
        scoring_reads_lda=scoring_reads_lda(config),
        embedding_users=embedding_users(config),
        topics_prompt=input_path(TOPICS_PROMPT, workflow_dir) if scoring_backends(config) else None,
        judge=JudgeJobs.of(config) if judged else None,
        panel={name: JudgeJobs.of(config, name) for name in panel_names(config)},
        figures=figures(config),
        scatter_columns=scatter_columns(config),
        distribution_columns=families.distribution_columns(config["scoring"]),
        figure_params=families.figure_params(config["scoring"]),
        calibration_roles=roles,
        validity=len(roles) >= 3,
        people={corpus["name"]: corpus for corpus in config.get("human_agreement", {}).get("corpora", [])},
        trials=config["sessions"].get("trials", 1),
        backends=experiment_backends(config),
        prompts=prompts_used(config),
        other_inputs=other_inputs(config),
        provenance_inputs=provenance_inputs(config, workflow_dir),
    )


# ------------------------------------------------------------------ the config schema


@functools.lru_cache(maxsize=1)
def config_schema() -> dict:
    """The schema every config is checked against and filled from: the file's, which names no kind, with each
    registry's part composed in (crseval.core.config_checks.compose_schema): the agent kinds' and the LLM
    backends' names and keys, the metric families' and corpus formats' names and the defaults that name them.
    One shared copy: do not change it."""
    parts = (agent_schema(), backend_schema(), families.schema_part(), format_schema())
    return compose_schema(config_checks.load_schema(), parts)
