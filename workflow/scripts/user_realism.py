"""Rule user_realism: the simulated users' turns against the real users' turns of the reference corpus."""

import json
from collections import defaultdict
from pathlib import Path

import pandas as pd
import source_tree  # noqa: F401  (crseval from this source tree)

from crseval.analysis import figures
from crseval.analysis.user_realism import TURN_STATISTICS, UserTurns, realism_markdown, realism_table, turn_statistics
from crseval.core.io import atomic_path, log_to
from crseval.corpora.formats import reader

log = log_to(snakemake.log[0])
settings = json.loads(snakemake.params.realism)
stats = json.loads(snakemake.params.stats)
profiles = dict(snakemake.params.profiles)

reference = Path(snakemake.input.reference)
imported, _ = reader(settings["format"]).import_logs([reference], None, "0" * 64, "0" * 64)
real_texts, real_sessions = [], []
for records in imported.values():
    for record in records:
        for turn in record["turns"]:
            real_texts.append(turn["user_text"])
            real_sessions.append(record["session_id"])
real = UserTurns("real users", real_texts, real_sessions)

texts, sessions = defaultdict(list), defaultdict(list)
for shard in snakemake.input.shards:
    for line in Path(shard).read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        user = record.get("profile") or profiles[record["system"]]
        for turn in record["turns"]:
            for key in (user, (user, record["system"])):
                texts[key].append(turn["user_text"])
                sessions[key].append(record["session_id"])
users = {key: UserTurns(key, texts[key], sessions[key]) for key in texts if isinstance(key, str)}
systems = {
    key: UserTurns(f"{key[0]} with {key[1]}", texts[key], sessions[key]) for key in texts if isinstance(key, tuple)
}

table = realism_table(users, systems, real, settings["folds"], stats["bootstrap_resamples"], stats["seed"])
with atomic_path(snakemake.output.table) as temporary:
    table.to_csv(temporary, index=False)
with atomic_path(snakemake.output.summary) as temporary:
    temporary.write_text(realism_markdown(table, reference.name, real))
words = {user: turn_statistics(turns.texts)["words"].tolist() for user, turns in users.items()}
words["real users"] = turn_statistics(real.texts)["words"].tolist()
shares = pd.DataFrame(
    {
        user: turn_statistics(turns.texts)[list(TURN_STATISTICS[1:])].mean()
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
