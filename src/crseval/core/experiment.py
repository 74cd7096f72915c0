"""What an experiment's config asks of each job: the LLMs it calls, its threads, its concurrency, its files.

One place answers "does this job use an LLM, in its own process or on a server?", so that the
workflow's threads and slots (workflow/rules/common.smk), the concurrency of the simulate and judge
jobs and the provenance record (crseval.provenance) always agree. Backends are returned as
{config key: backend settings}, the key naming who uses the backend (`systems.<name>`,
`simulator.paraphrase`, `scoring.cas`, `scoring.adherence`, `judge`, `judge.panel.<name>`).

Threads: a llama.cpp backend runs in the job's own process and gets the job's threads
(`llm.threads`); so does the sentence-embedding model (torch). A server backend (ollama, openai) runs
elsewhere, and its job waits on it with one thread.

Concurrency is a runtime setting like the cache folder or the timeout: it changes how fast a job
runs, never what it produces (same seeds, same cache keys, same records in the same order). So it is
kept out of the settings that identify results (`without_runtime`) and out of the rules' params, and
a change of it re-runs nothing. A job runs one request at a time when any of its backends is
llama.cpp inside the job's own process (one model instance decodes one stream) and when it makes no
LLM call at all (threads would only contend for the interpreter).
"""

from __future__ import annotations

import os
from pathlib import Path

RUNTIME_KEYS = ("concurrency",)
# Relative config paths under this folder may name the files shipped with the workflow (`input_path`).
SHIPPED = "resources"


def without_runtime(section: dict) -> dict:
    """`section` without the keys that change speed only: what identifies a system's results."""
    return {key: value for key, value in section.items() if key not in RUNTIME_KEYS}


# ------------------------------------------------------------------ which LLMs each job calls


def simulating(config: dict) -> bool:
    """Sessions are simulated (not imported from logs)."""
    return config.get("sessions", {}).get("source", "simulate") == "simulate"


def system_prompt_key(system: dict) -> str | None:
    """The key of the prompt file a system's simulate job reads: an LLM system's `prompt`, a chat system's
    optional `system_prompt`; None for the others. The one place that decides it (the rule's input, the
    provenance record and the shard runner all ask here)."""
    if system.get("agent") == "llm":
        return "prompt"
    if system.get("agent") == "chat" and system.get("system_prompt"):
        return "system_prompt"
    return None


def system_backends(system: dict, config: dict) -> dict[str, dict]:
    """The LLMs a simulate job of `system` (an entry of config['systems']) calls: its own, if it is an
    LLM system, and the paraphraser's, which rewrites the simulated user's turns of every system."""
    backends = {}
    if system.get("agent") in ("llm", "chat"):
        backends[f"systems.{system['name']}"] = system["backend"]
    paraphrase = config.get("simulator", {}).get("paraphrase", {})
    if paraphrase.get("enabled"):
        backends["simulator.paraphrase"] = paraphrase["backend"]
    return backends


def scoring_backends(config: dict) -> dict[str, dict]:
    """The LLMs a score job calls: only those of the metric families `scoring.metrics` selects."""
    scoring = config.get("scoring", {})
    metrics = set(scoring.get("metrics", []))
    backends = {}
    if "cas" in metrics and scoring.get("cas", {}).get("topics") == "llm":
        backends["scoring.cas"] = scoring["cas"]["llm"]["backend"]
    if "adherence" in metrics and scoring.get("adherence", {}).get("extractor") == "llm":
        backends["scoring.adherence"] = scoring["adherence"]["llm"]["backend"]
    return backends


# The prompt of the LLM topic extractors (legacy CAS `topics: llm`, adherence `extractor: llm`), shipped
# with the workflow like the CRS and judge prompts.
TOPICS_PROMPT = "resources/prompts/topics.txt"


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
    if simulating(config):
        for system in config.get("systems", []):
            backends.update(system_backends(system, config))
    return backends | scoring_backends(config) | judge_backends(config)


def embedding_users(config: dict) -> list[str]:
    """The settings that make scoring load the all-MiniLM-L6-v2 sentence embedding model (in-process,
    torch): only those of the metric families `scoring.metrics` selects."""
    scoring = config.get("scoring", {})
    metrics = set(scoring.get("metrics", []))
    stats = scoring.get("response_stats", {})
    users = []
    if "cas" in metrics and scoring.get("cas", {}).get("similarity") == "embedding":
        users.append("scoring.cas.similarity")
    if "response_stats" in metrics and stats.get("embeddings"):
        users.append("scoring.response_stats.embeddings")
    if "response_stats" in metrics and stats.get("persona_similarity") == "embedding":
        users.append("scoring.response_stats.persona_similarity")
    return users


def uses_llm(backends: dict[str, dict]) -> bool:
    return bool(backends)


def in_process(backends: dict[str, dict]) -> bool:
    """Some backend is llama.cpp, which runs inside the job's own process."""
    return any(backend.get("type") == "llamacpp" for backend in backends.values())


# ------------------------------------------------------------------ threads


def threads_for(backends: dict[str, dict], config: dict) -> int:
    """A job's threads: `llm.threads` for a model in its own process, 1 to wait on a server or on nothing."""
    return config["llm"]["threads"] if in_process(backends) else 1


def system_threads(system: dict, config: dict) -> int:
    return threads_for(system_backends(system, config), config)


def scoring_threads(config: dict) -> int:
    """A score job's threads: llama.cpp or the embedding model in its process take `llm.threads`."""
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
    if system.get("agent") == "http" and not in_process(backends):  # a service answers many requests at a time
        return max(1, int(requested))
    return effective(requested, backends)


def judge_concurrency(config: dict, name: str | None = None) -> int:
    """Sessions judged at once in one job of the first judge, or of the panel judge `name`."""
    settings = judge_settings(config, name)
    requested = settings.get("concurrency", config["llm"].get("concurrency", 1))
    return effective(requested, judge_job_backends(config, name))


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


# ------------------------------------------------------------------ the files a config names


def config_inputs(config: dict) -> dict[str, str]:
    """Config key -> file path, for every file the config makes the workflow read (not the import
    glob, nor GGUF models, which `model_paths` lists). Keys as written in the YAML file."""
    inputs = {
        "catalog.path": config["catalog"]["path"],
        "catalog.non_genre_values": config["catalog"]["non_genre_values"],
    }
    if simulating(config):
        inputs["simulator.templates"] = config["simulator"]["templates"]
        for i, system in enumerate(config.get("systems", [])):
            if system.get("agent") == "llm":
                inputs[f"systems[{i}].prompt"] = system["prompt"]
            if system.get("system_prompt"):
                inputs[f"systems[{i}].system_prompt"] = system["system_prompt"]
    if config.get("judge", {}).get("enabled"):
        inputs["judge.prompt"] = config["judge"]["prompt"]
    return inputs


def model_paths(config: dict, embedded: set[str] | frozenset[str]) -> dict[str, str]:
    """Config key -> GGUF file, for the llama.cpp backends that name a file rather than an embedded model."""
    sections = {}
    if simulating(config):
        for i, system in enumerate(config.get("systems", [])):
            if system.get("agent") == "llm":
                sections[f"systems[{i}].backend.model"] = system["backend"]
        if config["simulator"]["paraphrase"].get("enabled"):
            sections["simulator.paraphrase.backend.model"] = config["simulator"]["paraphrase"]["backend"]
    for key, backend in scoring_backends(config).items():
        sections[f"{key}.llm.backend.model"] = backend
    if config.get("judge", {}).get("enabled"):
        sections["judge.backend.model"] = config["judge"]["backend"]
        for i, entry in enumerate(config["judge"].get("panel", [])):
            sections[f"judge.panel[{i}].backend.model"] = entry["backend"]
    return {
        key: backend["model"]
        for key, backend in sections.items()
        if backend.get("type") == "llamacpp" and backend["model"] not in embedded
    }
