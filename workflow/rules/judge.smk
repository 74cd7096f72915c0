"""Judge stage: the PEPPER-style LLM judge on each simulated shard (skipped when disabled)."""

from crseval.llm.concurrency import judge_concurrency

JUDGE = config["judge"]


def judge_outputs():
    if not JUDGE["enabled"]:
        return []
    return per_shard(f"{RESULTS}/judge/{{system}}/shard-{{shard}}.parquet")


def judge_threads():
    return config["llm"]["threads"] if JUDGE.get("backend", {}).get("type") == "llamacpp" else 1


if JUDGE["enabled"]:

    rule judge:
        input:
            sessions=f"{RESULTS}/sessions/{{system}}/shard-{{shard}}.jsonl",
            films=f"{RESULTS}/catalog/films.parquet",
            concepts=f"{RESULTS}/catalog/concepts.parquet",
            prompt=JUDGE["prompt"],
        output:
            f"{RESULTS}/judge/{{system}}/shard-{{shard}}.parquet",
        wildcard_constraints:
            system="[A-Za-z0-9._:-]+",
            shard=r"\d+",
        params:
            judge=json.dumps(without_runtime(JUDGE), sort_keys=True, separators=(",", ":")),
        threads: judge_threads()
        resources:
            llm_slots=llm_slots(judge_concurrency(config)),
            cpu_threads=cpu_threads,
        log:
            f"{RESULTS}/logs/judge/{{system}}/shard-{{shard}}.log",
        conda:
            ENV
        script:
            "../scripts/judge.py"
