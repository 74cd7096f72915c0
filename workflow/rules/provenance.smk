"""Provenance: the resolved config, code version, packages, model, catalog and prompt hashes, the
machine, and the sha256 of every table, statistic and figure it describes, in
results/<experiment>/provenance.json (crseval.provenance; `crseval verify` checks a folder against it)."""


rule provenance:
    input:
        **EXPERIMENT.provenance_inputs,
        described=described_outputs(),
    output:
        report(f"{RESULTS}/provenance.json", caption="../report/provenance.rst", category="Provenance"),
    log:
        f"{RESULTS}/logs/provenance.log",
    conda:
        ENV
    params:
        # a short digest per config section: any change re-runs this cheap rule, so the record always
        # matches the run, and the re-run reason shows which section changed (not the whole config)
        config_sections=config_digests(),
        hash_cache=".cache/provenance/sha256.json",
        # the library code the script runs: an edit to it re-runs this rule (crseval.stage_digests)
        code=library_code("provenance.py"),
    script:
        "../scripts/provenance.py"
