"""Scoring stage: every metric family on each simulated shard (one job per shard)."""


def score_outputs():
    return per_shard(f"{RESULTS}/scores/{{system}}/shard-{{shard}}.sessions.parquet") + per_shard(
        f"{RESULTS}/scores/{{system}}/shard-{{shard}}.turns.parquet")


def score_inputs(wildcards):
    inputs = {
        "sessions": f"{RESULTS}/sessions/{wildcards.system}/shard-{wildcards.shard}.jsonl",
        "films": f"{RESULTS}/catalog/films.parquet",
        "concepts": f"{RESULTS}/catalog/concepts.parquet",
    }
    if "cas" in config["scoring"]["metrics"] and config["scoring"]["cas"]["topics"] == "lda":
        inputs["lda"] = f"{RESULTS}/topics/lda"
    return inputs


def scoring_settings():
    """The scoring config without the cache location, which changes no score."""
    return json.dumps({k: v for k, v in config["scoring"].items() if k != "embedding_cache"},
                      sort_keys=True, separators=(",", ":"))


def scoring_threads():
    uses_llm = config["scoring"]["cas"]["topics"] == "llm" or config["scoring"]["adherence"]["extractor"] == "llm"
    uses_torch = config["scoring"]["response_stats"]["embeddings"] or "embedding" in (
        config["scoring"]["cas"]["similarity"], config["scoring"]["response_stats"]["persona_similarity"])
    return config["llm"]["threads"] if uses_llm or uses_torch else 1


rule score:
    input:
        unpack(score_inputs),
    output:
        sessions=f"{RESULTS}/scores/{{system}}/shard-{{shard}}.sessions.parquet",
        turns=f"{RESULTS}/scores/{{system}}/shard-{{shard}}.turns.parquet",
    wildcard_constraints:
        system="[A-Za-z0-9._:-]+",
        shard=r"\d+",
    params:
        scoring=scoring_settings(),
    threads: scoring_threads()
    resources:
        cpu_threads=cpu_threads,
    log:
        f"{RESULTS}/logs/score/{{system}}/shard-{{shard}}.log",
    conda:
        ENV
    script:
        "../scripts/score.py"
