"""Provenance: the resolved config, code version, packages, model, catalog and prompt hashes and the
machine, in results/<experiment>/provenance.json (crseval.provenance)."""

from crseval.provenance import rule_inputs as provenance_inputs

PROVENANCE = f"{RESULTS}/provenance.json"


rule provenance:
    input:
        **provenance_inputs(config),
    output:
        report(PROVENANCE, caption="../report/provenance.rst", category="Provenance"),
    params:
        # the whole config: any change re-runs this cheap rule, so the record always matches the run
        config=config_slice(),
        hash_cache=".cache/provenance/sha256.json",
    log:
        f"{RESULTS}/logs/provenance.log",
    conda:
        ENV
    script:
        "../scripts/provenance.py"
