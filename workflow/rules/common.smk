"""Paths and config slices shared by every stage."""

import json
import os

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
