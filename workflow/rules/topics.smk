"""Topic stage: the LDA model over catalog plots used by the legacy CAS topic extractor."""


def topic_outputs():
    return [
        f"{RESULTS}/topics/lda",
        f"{RESULTS}/topics/topics.parquet",
        f"{RESULTS}/topics/summary.json",
    ]


rule train_lda:
    input:
        films=f"{RESULTS}/catalog/films.parquet",
    output:
        model=directory(f"{RESULTS}/topics/lda"),
        topics=f"{RESULTS}/topics/topics.parquet",
        summary=report(
            f"{RESULTS}/topics/summary.json",
            caption="../report/lda_summary.rst",
            category="Topics",
        ),
    params:
        lda=config_slice("lda"),
    log:
        f"{RESULTS}/logs/train_lda.log",
    conda:
        ENV
    script:
        "../scripts/train_lda.py"
