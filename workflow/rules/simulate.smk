"""Simulation stage: one job per (system, shard) of paired, seeded sessions."""

SYSTEMS = {system["name"]: system for system in config["systems"]}
if len(SYSTEMS) != len(config["systems"]):
    raise ValueError("config 'systems': every system needs a unique name")
SHARDS = list(range((config["sessions"]["count"] + config["sessions"]["shard_size"] - 1) // config["sessions"]["shard_size"]))


def session_shards(system=None):
    names = [system] if system else list(SYSTEMS)
    return expand(f"{RESULTS}/sessions/{{system}}/shard-{{shard}}.jsonl", system=names, shard=SHARDS)


def system_uses_llm(name):
    return SYSTEMS[name]["agent"] == "llm" or config["simulator"]["paraphrase"]["enabled"]


def system_threads(name):
    """llama.cpp runs in the job's process and gets its threads; other backends wait on a server."""
    backends = [SYSTEMS[name].get("backend", {})]
    if config["simulator"]["paraphrase"]["enabled"]:
        backends.append(config["simulator"]["paraphrase"]["backend"])
    in_process = any(b.get("type") == "llamacpp" for b in backends) and system_uses_llm(name)
    return config["llm"]["threads"] if in_process else 1


def simulate_inputs(wildcards):
    system = SYSTEMS[wildcards.system]
    inputs = {
        "films": f"{RESULTS}/catalog/films.parquet",
        "concepts": f"{RESULTS}/catalog/concepts.parquet",
        "catalog_summary": f"{RESULTS}/catalog/summary.json",
        "templates": config["simulator"]["templates"],
        "schema": "workflow/schemas/session.schema.yaml",
    }
    if system["agent"] == "llm":
        inputs["prompt"] = system["prompt"]
    return inputs


def shard_range(wildcards):
    size, count = config["sessions"]["shard_size"], config["sessions"]["count"]
    start = int(wildcards.shard) * size
    return [start, min(start + size, count)]


rule simulate:
    input:
        unpack(simulate_inputs),
    output:
        f"{RESULTS}/sessions/{{system}}/shard-{{shard}}.jsonl",
    wildcard_constraints:
        system="[A-Za-z0-9._-]+",
        shard=r"\d+",
    params:
        system=lambda wc: json.dumps(SYSTEMS[wc.system], sort_keys=True, separators=(",", ":")),
        simulator=config_slice("simulator"),
        agent=config_slice("agent"),
        seed=config["sessions"]["seed"],
        turns=config["sessions"]["turns"],
        indices=shard_range,
    threads: lambda wc: system_threads(wc.system)
    resources:
        llm_slots=lambda wc: 1 if system_uses_llm(wc.system) else 0,
        cpu_threads=cpu_threads,
    log:
        f"{RESULTS}/logs/simulate/{{system}}/shard-{{shard}}.log",
    conda:
        ENV
    script:
        "../scripts/simulate.py"
