"""Sessions: simulated, one job per (system, shard) of paired, seeded sessions; or imported
from conversation logs in one job (`sessions.source: import`)."""

import glob as _glob

from crseval.importer import sessions_per_system
from crseval.llm.concurrency import simulate_concurrency, without_runtime

IMPORTING = config["sessions"]["source"] == "import"
SHARD_SIZE = config["sessions"]["shard_size"]
if IMPORTING:
    LOG_FILES = sorted(_glob.glob(config["sessions"]["import_paths"]))
    if not LOG_FILES:
        raise ValueError(f"sessions.import_paths {config['sessions']['import_paths']!r} matches no file")
    SESSION_COUNTS = sessions_per_system(LOG_FILES)
    SYSTEMS = {name: {"name": name, "agent": "imported"} for name in SESSION_COUNTS}
else:
    SYSTEMS = {system["name"]: system for system in config["systems"]}
    if len(SYSTEMS) != len(config["systems"]):
        raise ValueError("config 'systems': every system needs a unique name")
    SESSION_COUNTS = {name: config["sessions"]["count"] for name in SYSTEMS}


def shard_ids(system):
    return list(range((SESSION_COUNTS[system] + SHARD_SIZE - 1) // SHARD_SIZE))


def per_shard(pattern):
    """`pattern` with {system} and {shard} filled for every shard of every system."""
    return [pattern.format(system=s, shard=k) for s in SYSTEMS for k in shard_ids(s)]


def session_shards():
    return per_shard(f"{RESULTS}/sessions/{{system}}/shard-{{shard}}.jsonl")


def system_uses_llm(name):
    return SYSTEMS[name]["agent"] == "llm" or config["simulator"]["paraphrase"]["enabled"]


def system_llm_slots(name):
    """Requests a simulate job of `name` keeps in flight (0 without LLM calls)."""
    return llm_slots(simulate_concurrency(SYSTEMS[name], config)) if system_uses_llm(name) else 0


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
    size, count = SHARD_SIZE, SESSION_COUNTS[wildcards.system]
    start = int(wildcards.shard) * size
    return [start, min(start + size, count)]


if IMPORTING:

    rule import_logs:
        input:
            logs=LOG_FILES,
            films=f"{RESULTS}/catalog/films.parquet",
            concepts=f"{RESULTS}/catalog/concepts.parquet",
            catalog_summary=f"{RESULTS}/catalog/summary.json",
            schema="workflow/schemas/session.schema.yaml",
        output:
            shards=session_shards(),
            report=report(f"{RESULTS}/sessions/import_report.json", caption="../report/import_report.rst", category="Sessions"),
        params:
            shard_size=SHARD_SIZE,
            results=RESULTS,
        log:
            f"{RESULTS}/logs/import_logs.log",
        conda:
            ENV
        script:
            "../scripts/import_logs.py"


if not IMPORTING:

    rule simulate:
        input:
            unpack(simulate_inputs),
        output:
            f"{RESULTS}/sessions/{{system}}/shard-{{shard}}.jsonl",
        wildcard_constraints:
            system="[A-Za-z0-9._:-]+",
            shard=r"\d+",
        params:
            system=lambda wc: json.dumps(without_runtime(SYSTEMS[wc.system]), sort_keys=True, separators=(",", ":")),
            simulator=config_slice("simulator"),
            agent=config_slice("agent"),
            seed=config["sessions"]["seed"],
            turns=config["sessions"]["turns"],
            indices=shard_range,
        threads: lambda wc: system_threads(wc.system)
        resources:
            llm_slots=lambda wc: system_llm_slots(wc.system),
            cpu_threads=cpu_threads,
        log:
            f"{RESULTS}/logs/simulate/{{system}}/shard-{{shard}}.log",
        conda:
            ENV
        script:
            "../scripts/simulate.py"
