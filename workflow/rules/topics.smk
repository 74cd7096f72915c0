"""Topic stage: the LDA model over catalog plots used by the legacy CAS topic extractor."""


rule train_lda:
    input:
        films=rules.index_catalog.output.films,
    output:
        model=directory(f"{RESULTS}/topics/lda"),
        topics=f"{RESULTS}/topics/topics.parquet",
        summary=report(f"{RESULTS}/topics/summary.json", caption="../report/lda_summary.rst", category="Topics"),
    log:
        f"{RESULTS}/logs/train_lda.log",
    conda:
        ENV
    params:
        lda=config_slice("lda"),
        # the library code the script runs: an edit to it re-runs this rule (crseval.stage_digests)
        code=library_code("train_lda.py"),
    script:
        "../scripts/train_lda.py"
