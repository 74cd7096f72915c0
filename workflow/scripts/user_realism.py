"""Rule user_realism: the simulated users' turns against the real users' turns of the reference corpus."""

import json
from pathlib import Path

import pandas as pd
import source_tree  # noqa: F401  (crseval from this source tree)

from crseval.analysis import figures
from crseval.analysis.user_realism import (
    realism_markdown,
    realism_table,
    reference_turns,
    simulated_turns,
    turn_statistics,
)
from crseval.catalog.index import CatalogIndex
from crseval.core.io import atomic_path, log_to
from crseval.language.concepts import ConceptMatcher

log = log_to(snakemake.log[0])
settings = json.loads(snakemake.params.realism)
stats = json.loads(snakemake.params.stats)
profiles = dict(snakemake.params.profiles)

reference = Path(snakemake.input.reference)
real = reference_turns(reference, settings["format"])


def records():
    for shard in snakemake.input.shards:
        for line in Path(shard).read_text(encoding="utf-8").splitlines():
            yield json.loads(line)


index = CatalogIndex.read(snakemake.input.films, snakemake.input.concepts)
matcher = ConceptMatcher(index.concepts, index.films)


def names_catalog(text: str) -> bool:
    return bool(matcher.titles(text)) or bool(matcher.values(text))


users, systems = simulated_turns(records(), profiles)
table = realism_table(
    users, systems, real, settings["folds"], stats["bootstrap_resamples"], stats["seed"], names_catalog
)
with atomic_path(snakemake.output.table) as temporary:
    table.to_csv(temporary, index=False)
with atomic_path(snakemake.output.summary) as temporary:
    temporary.write_text(realism_markdown(table, reference.name, real))
words = {user: turn_statistics(turns.texts)["words"].tolist() for user, turns in users.items()}
words["real users"] = turn_statistics(real.texts)["words"].tolist()
shares = pd.DataFrame(
    {
        user: turn_statistics(turns.texts).drop(columns="words").mean()
        for user, turns in {**users, "real users": real}.items()
    }
).T
figures.user_realism_figure(words, shares, Path(snakemake.output.png).with_suffix(""))
log.info(
    "user realism of %d users against %d real user turns: %s",
    len(users),
    len(real.texts),
    table.loc[table["measure"] == "auc_word", ["user", "simulated"]].to_dict("records"),
)
