"""Catalog stage: normalise the movie catalog and build the per-field value index."""


def catalog_outputs():
    return [
        f"{RESULTS}/catalog/films.parquet",
        f"{RESULTS}/catalog/concepts.parquet",
        f"{RESULTS}/catalog/summary.json",
    ]


rule index_catalog:
    input:
        catalog=config["catalog"]["path"],
        non_genre_values=config["catalog"]["non_genre_values"],
    output:
        films=f"{RESULTS}/catalog/films.parquet",
        concepts=f"{RESULTS}/catalog/concepts.parquet",
        summary=report(
            f"{RESULTS}/catalog/summary.json",
            caption="../report/catalog_summary.rst",
            category="Catalog",
        ),
    params:
        plot_keywords=config_slice("catalog", "plot_keywords"),
    log:
        f"{RESULTS}/logs/index_catalog.log",
    conda:
        ENV
    script:
        "../scripts/index_catalog.py"
