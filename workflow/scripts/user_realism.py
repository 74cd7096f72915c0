"""Rule user_realism: the simulated users' turns against the real users' turns of the reference corpus,
held out from the learned voice when the voice learned from the reference (crseval.checks.user_realism):
each turn with its person and the case of the system reply it reacts to, every session of every trial read
(the pooled volume), each person once in a user's own rows."""

import json
import time
from pathlib import Path

import pandas as pd
import source_tree  # noqa: F401  (crseval from this source tree)

from crseval.catalog.index import CatalogIndex
from crseval.checks.user_realism import (
    gather_simulated,
    load_reference,
    realism_markdown,
    realism_table,
    reply_case_reader,
    turn_statistics,
)
from crseval.core.io import atomic_path, log_to
from crseval.core.session_records import read_shards
from crseval.language.concepts import ConceptMatcher
from crseval.language.user_acts import read_turn
from crseval.reports import figures

log = log_to(snakemake.log[0])
started = time.perf_counter()
settings = json.loads(snakemake.params.realism)
voice = json.loads(snakemake.params.voice)
stats = json.loads(snakemake.params.stats)
profiles = dict(snakemake.params.profiles)

index = CatalogIndex.read(snakemake.input.films, snakemake.input.concepts)
matcher = ConceptMatcher(index.concepts, index.films)
# the case of the system reply each user turn reacts to, read alike on both sides
reply_cases = reply_case_reader(matcher)

reference = Path(snakemake.input.reference)
# the voice's corpus, when the config names one: the real side is held out from the part it learned from
voice_corpus = snakemake.input.get("voice_corpus") or None
split = load_reference(reference, settings["format"], voice, voice_corpus, reply_cases)
real = split.real
if split.shared:
    log.warning(
        "user realism not held out: %d dialogues of %s are in the learned voice's part (%s)",
        split.shared,
        reference.name,
        split.voice_part,
    )


def names_catalog(text: str) -> bool:
    return bool(matcher.titles(text)) or bool(matcher.values(text))


def read(text: str):
    return read_turn(text, matcher)


simulated = gather_simulated(read_shards(snakemake.input.shards), profiles, reply_cases)
users = simulated.users
table = realism_table(
    users,
    simulated.systems,
    real,
    settings["folds"],
    stats["bootstrap_resamples"],
    stats["seed"],
    names_catalog,
    read=read,
    floor=split.floor,
    pooled=simulated.pooled,
)
with atomic_path(snakemake.output.table) as temporary:
    table.to_csv(temporary, index=False)
with atomic_path(snakemake.output.summary) as temporary:
    temporary.write_text(realism_markdown(table, reference.name, real, split))
compared = {**users, **({split.floor.name: split.floor} if split.floor is not None else {}), "real users": real}
words = {user: turn_statistics(turns.texts)["words"].tolist() for user, turns in compared.items()}
shares = pd.DataFrame(
    {user: turn_statistics(turns.texts).drop(columns="words").mean() for user, turns in compared.items()}
).T
figures.user_realism_figure(words, shares, Path(snakemake.output.png).with_suffix(""))
log.info(
    "user realism of %d users (%d turns pooled) against %d real user turns of %d people%s in %.1f s: %s",
    len(users),
    sum(len(turns.texts) for turns in simulated.pooled.values()),
    len(real.texts),
    len(set(real.people)),
    f" ({split.held_out})" if split.held_out else "",
    time.perf_counter() - started,
    table.loc[table["measure"] == "auc_word", ["user", "simulated"]].to_dict("records"),
)
