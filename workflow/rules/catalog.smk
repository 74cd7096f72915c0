"""Catalog stage: normalise the movie catalog and build the per-field value index."""


rule index_catalog:
    input:
        catalog=input_path(config["catalog"]["path"]),
        non_genre_values=input_path(config["catalog"]["non_genre_values"]),
    output:
        films=f"{RESULTS}/catalog/films.parquet",
        concepts=f"{RESULTS}/catalog/concepts.parquet",
        summary=report(f"{RESULTS}/catalog/summary.json", caption="../report/catalog_summary.rst", category="Catalog"),
    log:
        f"{RESULTS}/logs/index_catalog.log",
    conda:
        ENV
    params:
        plot_keywords=config_slice("catalog", "plot_keywords"),
        # the library code the script runs: an edit to it re-runs this rule (crseval.stage_digests)
        code=library_code("index_catalog.py"),
    script:
        "../scripts/index_catalog.py"
