"""Provenance: the resolved config, code version, packages, model, catalog and prompt hashes and the
machine, in results/<experiment>/provenance.json (crseval.provenance)."""


rule provenance:
    input:
        **provenance_inputs(config, WORKFLOW_DIR),
    output:
        report(f"{RESULTS}/provenance.json", caption="../report/provenance.rst", category="Provenance"),
    log:
        f"{RESULTS}/logs/provenance.log",
    conda:
        ENV
    params:
        # the whole config: any change re-runs this cheap rule, so the record always matches the run
        config=config_slice(),
        hash_cache=".cache/provenance/sha256.json",
    script:
        "../scripts/provenance.py"
