"""Rule user_audit: per profile, how the simulated user's turns were worded and whether each reads back."""

from pathlib import Path

import source_tree  # noqa: F401  (crseval from this source tree)

from crseval.catalog.index import CatalogIndex
from crseval.checks.user_audit import audit_markdown, audit_table, pools_table
from crseval.core.io import atomic_path, log_to
from crseval.core.session_records import read_shards
from crseval.language.concepts import ConceptMatcher
from crseval.simulate.user.voice import Voice

log = log_to(snakemake.log[0])
index = CatalogIndex.read(snakemake.input.films, snakemake.input.concepts)
matcher = ConceptMatcher(index.concepts, index.films)


table = audit_table(read_shards(snakemake.input.shards), matcher, dict(snakemake.params.profiles))
pools = pools_table(Voice.read(snakemake.input.voice).pools)
with atomic_path(snakemake.output.table) as temporary:
    table.to_csv(temporary, index=False)
with atomic_path(snakemake.output.summary) as temporary:
    Path(temporary).write_text(audit_markdown(table, pools), encoding="utf-8")
log.info("user audit: %s", table.drop(columns="first failure").to_dict("records"))
