"""The report of the user realism check: every user against the real users as one table (`realism_table`, the
CSV) and as readable Markdown (`realism_markdown`), in three views: words, style apart from content, flow, and
the word discriminators at three volumes (crseval.checks.realism_volumes).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

import numpy as np
import pandas as pd

from crseval.checks.realism_discriminators import (
    BLIND_DISCRIMINATORS,
    DISCRIMINATORS,
    TooFewPeople,
    content_blind,
    discriminator,
    distinct_share,
)
from crseval.checks.realism_measures import (
    MAX_TURN_WORDS,
    MIN_SESSIONS,
    SessionSums,
    bigram_distance_of_sums,
    compare_sums,
    reply_act_distance,
)
from crseval.checks.realism_reference import DEALT, FLOOR, Reference, dealt_to_others
from crseval.checks.realism_turns import UserTurns
from crseval.checks.realism_volumes import (
    MATCHED,
    VOLUMES,
    VolumeSample,
    floor_size,
    matched_sample,
    volume_samples,
    what_is_said,
)
from crseval.language.user_acts import TurnReading

# ------------------------------------------------------------------ the table

# The table's columns: a statistic fills `simulated`, `real`, `difference` and its CI; a discriminator its AUC
# (`simulated`), the CI over people, DeLong's CI, the people, sessions and turns it was shown, why it is n/a
# (`note`) and the n-grams that give each side away; a distance its value, CI and the turns it reads.
COLUMNS = [
    "user",
    "system",
    "measure",
    "simulated",
    "real",
    "difference",
    "ci_low",
    "ci_high",
    "delong_low",
    "delong_high",
    "simulated_people",
    "simulated_sessions",
    "simulated_turns",
    "real_people",
    "real_turns",
    "note",
    "simulated_tells",
    "real_tells",
]
# The columns that count people, sessions or turns (whole numbers, empty where not counted).
COUNTS = ("simulated_people", "simulated_sessions", "simulated_turns", "real_people", "real_turns")
# The discriminators measured at every volume: `auc_<kind>[_blind]_volume_<volume>`.
VOLUME_DISCRIMINATORS = (("word", False), ("word", True))


def realism_table(
    users: dict[str, UserTurns],
    systems: dict[tuple[str, str], UserTurns],
    real: UserTurns,
    folds: int = 5,
    resamples: int = 1000,
    seed: int = 0,
    names_catalog: Callable[[str], bool] | None = None,
    read: Callable[[str], TurnReading] | None = None,
    floor: UserTurns | None = None,
    pooled: dict[str, UserTurns] | None = None,
) -> pd.DataFrame:
    """Every user (a profile) against the real users: its statistics and the discriminators' AUCs
    (`system` "all"), and the statistics of the user as each system met it. One row per measure
    (COLUMNS). A discriminator's folds are grouped by person and its CI draws people
    (crseval.checks.realism_discriminators); where a side has fewer people than folds its AUC is n/a and
    `note` says why. `names_catalog` (text -> bool) adds the share of turns naming the catalog; it is asked
    once per distinct text.

    `read` (text -> TurnReading, crseval.language.user_acts.read_turn with the catalog's matcher; asked
    once per distinct text) adds the other two views: the word and character discriminators on
    content-blind text (`auc_word_blind`, `auc_char_blind`), and how sessions flow: the statistics
    `act_<act>`, `last_act_<act>` and `ending_<reason>` (compare_statistics), per user the Jensen-Shannon
    distance between the act-bigram distributions (`act_bigram_js`) and, where both sides' turns have their
    reply cases (`UserTurns.replies`), between the acts given the case of the system's reply
    (`reply_act_js` and `reply_act_js_<case>`), each with its bootstrap CI. The word discriminators, as
    said and content-blind, are measured at each of VOLUMES (`auc_word_volume_<volume>`,
    `auc_word_blind_volume_<volume>`), `pooled` holding every session of each user (else its turns are all
    it said), and with turns read on the `once` turns matched by what they say (`..._volume_matched`,
    crseval.checks.realism_volumes.matched_sample). `floor`, real users of another part of the reference,
    is measured as a user (the FLOOR row: what real users score against real users), and its turns dealt
    out to its other people at every volume (the DEALT rows, crseval.checks.realism_reference.dealt_to_others:
    the closest a voice can come that gives real people's turns to anyone). Where either side has
    turns over MAX_TURN_WORDS words, `long_turns` counts them (`simulated`, `real`). A CI over sessions is
    NaN where a side has fewer than MIN_SESSIONS sessions."""
    against = _RealUsers(real, folds, resamples, seed, names_catalog, read, floor_size(real, floor))
    rows = []
    for user, turns in users.items():
        rows += against.user_rows(user, turns, (pooled or {}).get(user))
    if floor is not None:
        rows += against.user_rows(FLOOR, floor)
        rows += against.volume_rows(DEALT, dealt_to_others(floor, seed))
    for (user, system), turns in systems.items():
        rows += against.statistics_rows(user, system, turns)[0]
    table = pd.DataFrame(rows).drop(columns="statistic", errors="ignore").reindex(columns=COLUMNS)
    return table.astype({column: "Int64" for column in COUNTS})


class _RealUsers:
    """The real side every user is measured against, summed per session once, with the settings of every
    measure; the catalog and the turn readings are asked once per distinct text (cached), and each
    discriminator is fitted once per sample of turns (the same sample at two volumes, once)."""

    def __init__(
        self,
        real: UserTurns,
        folds: int,
        resamples: int,
        seed: int,
        names_catalog: Callable[[str], bool] | None,
        read: Callable[[str], TurnReading] | None,
        floor_n: int,
    ):
        self.real, self.folds, self.resamples, self.seed, self.floor_n = real, folds, resamples, seed, floor_n
        self.names = lru_cache(maxsize=None)(names_catalog) if names_catalog is not None else None
        self.reading = lru_cache(maxsize=None)(read) if read is not None else None
        self.flow = self.act if self.reading is not None else None
        self.sessions = SessionSums.of(real, self.names, self.flow)
        self.blind_texts = self.blind(real.texts) if self.reading is not None else None
        self.fitted: dict[tuple, dict] = {}

    def act(self, text: str) -> str:
        return self.reading(text).act

    def said(self, text: str) -> str:
        return what_is_said(self.reading(text))

    def blind(self, texts: list[str]) -> list[str]:
        return [content_blind(text, self.reading(text)) for text in texts]

    def statistics_rows(self, user: str, system: str, turns: UserTurns) -> tuple[list[dict], SessionSums]:
        """The statistics of `turns` against the real users' (compare_statistics), and their sums per session."""
        sessions = SessionSums.of(turns, self.names, self.flow)
        compared = compare_sums(sessions, self.sessions, self.resamples, self.seed)
        rows = [
            {"user": user, "system": system, "measure": row.statistic, **row._asdict()}
            for row in compared.itertuples(index=False)
        ]
        return rows, sessions

    def discriminate(self, kind: str, sample: VolumeSample, blind: bool, tells: bool) -> dict:
        """The `kind` discriminator on a sample (content-blind with `blind`), fitted once per distinct sample."""
        texts = [sample.source.texts[i] for i in sample.simulated]
        texts = self.blind(texts) if blind else texts
        people = [sample.source.people[i] for i in sample.simulated]
        key = (kind, blind, sample.balanced, tuple(texts), tuple(people), sample.real.tobytes())
        found = self.fitted.get(key)
        if found is None or (tells and found.get("tells") is False):
            real = self.blind_texts if blind else self.real.texts
            found = discriminator(
                texts,
                [real[i] for i in sample.real],
                kind,
                self.folds,
                self.seed,
                simulated_people=people,
                real_people=[self.real.people[i] for i in sample.real],
                balanced=sample.balanced,
                resamples=self.resamples,
                tells=tells,
            ) | {"tells": tells}
            self.fitted[key] = found
        return found

    def discriminator_row(
        self, user: str, measure: str, kind: str, sample: VolumeSample, blind: bool = False, tells: bool = True
    ) -> dict:
        """The AUC of the `kind` discriminator on a sample, its CIs, the people, sessions and turns it was
        shown and the n-grams that give each side away; n/a with the reason where a side has too few people."""
        row = {
            "user": user,
            "system": "all",
            "measure": measure,
            "simulated_people": sample.people,
            "simulated_sessions": sample.sessions,
            "simulated_turns": len(sample.simulated),
            "real_people": len({self.real.people[i] for i in sample.real}),
            "real_turns": len(sample.real),
        }
        try:
            found = self.discriminate(kind, sample, blind, tells)
        except TooFewPeople as error:
            return row | {"simulated": np.nan, "note": f"n/a: {error}"}
        return row | {
            "simulated": found["auc"],
            "ci_low": found["auc_ci_low"],
            "ci_high": found["auc_ci_high"],
            "delong_low": found["delong_low"],
            "delong_high": found["delong_high"],
            "simulated_tells": _tells(found["simulated_tells"]) if tells else "",
            "real_tells": _tells(found["real_tells"]) if tells else "",
        }

    def user_rows(self, user: str, turns: UserTurns, pooled: UserTurns | None = None) -> list[dict]:
        """Every measure of one user against the real users (`system` "all"): its statistics, the share of
        distinct turns and the discriminators on equal samples of both sides, and, with turns read, the
        discriminators on content-blind text and the distances between act bigrams and between acts given
        the system's reply; then the word discriminators at each volume (`pooled`: every session of the
        user, None for the floor)."""
        rows, sessions = self.statistics_rows(user, "all", turns)
        samples = self.samples(turns, pooled)
        once = samples[0]
        distinct = distinct_share([turns.texts[i] for i in once.simulated])
        real_distinct = distinct_share([self.real.texts[i] for i in once.real])
        rows.append(
            {
                "user": user,
                "system": "all",
                "measure": "distinct_turns",
                "simulated": distinct,
                "real": real_distinct,
                "difference": distinct - real_distinct,
            }
        )
        rows += [self.discriminator_row(user, f"auc_{kind}", kind, once) for kind in DISCRIMINATORS]
        if self.reading is not None:
            rows += [self.discriminator_row(user, f"auc_{k}_blind", k, once, blind=True) for k in BLIND_DISCRIMINATORS]
            distance, low, high = bigram_distance_of_sums(sessions, self.sessions, self.resamples, self.seed)
            rows.append(
                {"user": user, "system": "all", "measure": "act_bigram_js", "simulated": distance}
                | {
                    "ci_low": low,
                    "ci_high": high,
                }
            )
            if turns.replies is not None and self.real.replies is not None:
                rows += self.reply_rows(user, turns)
        return rows + self._at_volumes(user, samples)

    def volume_rows(self, user: str, turns: UserTurns) -> list[dict]:
        """The word discriminators of `turns` at each volume and matched, and no other measure."""
        return self._at_volumes(user, self.samples(turns))

    def samples(self, turns: UserTurns, pooled: UserTurns | None = None) -> list[VolumeSample]:
        """A user's samples at each of VOLUMES, `once` first, and with turns read the matched one."""
        samples = volume_samples(turns, self.real, self.floor_n, self.seed, pooled)
        if self.reading is not None:
            samples.append(matched_sample(samples[0], self.real, self.said, self.seed))
        return samples

    def _at_volumes(self, user: str, samples: list[VolumeSample]) -> list[dict]:
        rows = []
        for sample in samples:
            for kind, blind in VOLUME_DISCRIMINATORS:
                if blind and self.reading is None:
                    continue
                measure = f"auc_{kind}{'_blind' if blind else ''}_volume_{sample.volume}"
                rows.append(self.discriminator_row(user, measure, kind, sample, blind, tells=False))
        return rows

    def reply_rows(self, user: str, turns: UserTurns) -> list[dict]:
        """The distance between the acts given the system's reply (`reply_act_js`, over the cases both sides
        have) and per case (`reply_act_js_<case>`), with their CIs over people and the turns they read."""
        found = reply_act_distance(turns, self.real, self.act, self.resamples, self.seed)
        rows = []
        for measure, part in [("reply_act_js", found)] + [(f"reply_act_js_{c['case']}", c) for c in found["cases"]]:
            rows.append(
                {
                    "user": user,
                    "system": "all",
                    "measure": measure,
                    "simulated": part["distance"],
                    "ci_low": part["ci_low"],
                    "ci_high": part["ci_high"],
                    "simulated_turns": part["simulated_turns"],
                    "real_turns": part["real_turns"],
                }
            )
        return rows


def _tells(ngrams: list[str]) -> str:
    """N-grams as a table cell: each in backticks, a space shown as "·" (character n-grams begin and end
    with one)."""
    return ", ".join(f"`{ngram.replace(' ', '·')}`" for ngram in ngrams)


# ------------------------------------------------------------------ the Markdown


def _view(measure: str) -> str:
    """Which view a measure belongs to: "volume" (a discriminator at one of VOLUMES), "words" (the
    statistics and discriminators of the turns as said), "style" (the discriminators on content-blind text)
    or "flow" (acts, bigrams, acts given the reply, endings)."""
    if "_volume_" in measure:
        return "volume"
    if measure.startswith("auc_") and measure.endswith("_blind"):
        return "style"
    if measure.startswith(("act_", "last_act_", "ending_", "reply_act_js")):
        return "flow"
    return "words"


# The overview's columns: measure -> heading.
OVERVIEW = {
    "words": "median words",
    "question": "question share",
    "distinct_turns": "distinct turns",
    "turns_per_session": "turns per session",
    "auc_word": "AUC word",
    "auc_char": "AUC char",
    "auc_statistics": "AUC statistics",
    "auc_word_blind": "AUC word, content-blind",
    "auc_char_blind": "AUC char, content-blind",
    "act_bigram_js": "act bigrams JS distance",
    "reply_act_js": "acts given the reply JS distance",
}
# Measures shown with their CI in the overview.
WITH_CI = ("act_bigram_js", "reply_act_js")


def realism_markdown(table: pd.DataFrame, reference: str, real: UserTurns, split: Reference | None = None) -> str:
    """The readable report: an overview of every user, then per user its three views: words (its
    statistics beside the real users' and the discriminators), style apart from content (the
    discriminators on content-blind text) and flow (acts, act bigrams, how sessions end). `split` (from
    `load_reference`) says which dialogues the real side is, held out from the learned voice or not."""
    split = split or Reference(real)
    table = table.reindex(columns=list(dict.fromkeys([*table.columns, *COLUMNS])))
    not_held_out = " (not held out)" if split.shared else ""
    lines = _introduction(reference, real, split, not_held_out)
    overall = table[table["system"] == "all"]
    measures = set(overall["measure"])
    if measures & {"auc_word_blind", "act_bigram_js"}:
        lines += ["", _THREE_VIEWS]
    lines += _overview(overall, measures, not_held_out)
    lines += _at_volume(overall[overall["measure"].map(_view) == "volume"], not_held_out)
    for user, own in overall[overall["measure"].map(_view) != "volume"].groupby("user", sort=False):
        lines += _user_section(user, own)
        lines += _by_system(table[(table["user"] == user) & (table["system"] != "all")])
    return "\n".join(lines) + "\n"


def _fmt(x) -> str:
    return "n/a" if x != x else f"{x:.2f}"


def _with_ci(r) -> str:
    return f"{_fmt(r.simulated)} [{_fmt(r.ci_low)}, {_fmt(r.ci_high)}]"


def _introduction(reference: str, real: UserTurns, split: Reference, not_held_out: str) -> list[str]:
    """The heading, whether the real side is held out, what the reference is and how to read the tables, and
    the notes on a reference of one dialogue, the floor and users both parts share."""
    sessions = len(set(real.sessions))
    lines = [f"# How far is the simulated user from real users?{not_held_out}", ""]
    if split.shared:
        lines += [
            f"**Not held out**: {split.shared} of the reference's {sessions} dialogues are also in the "
            f"learned voice's part ({split.voice_part}): the voice learned from them, so a user that speaks "
            "with it is measured partly against its own source. Name the voice's corpus as the reference to "
            "measure against the dialogues it did not learn from.",
            "",
        ]
    held_out = f": {split.held_out}" if split.held_out else ""
    lines += [
        f"Reference: {len(real.texts)} user turns of {sessions} real dialogues ({reference}){held_out}. " + _READING
    ]
    if sessions < MIN_SESSIONS:
        lines += [
            "",
            f"**One real dialogue**: a CI over sessions needs at least {MIN_SESSIONS} sessions on each side, so "
            "no difference and no act-bigram distance has one here (n/a); each user is compared with one "
            "person's dialogue.",
        ]
    if split.floor is not None:
        floor_sessions = len(set(split.floor.sessions))
        lines += [
            "",
            f"`{FLOOR}` is the part the voice learned from ({len(split.floor.texts)} user turns of "
            f"{floor_sessions} dialogues), measured as a user against the held-out dialogues the same way: what "
            "real users score against other real users, the floor beside every simulated user.",
        ]
    if split.same_users or split.echoed:
        lines += [
            "",
            f"The parts split dialogues, not users: {split.same_users} of the held-out dialogues are by a user "
            f"who also speaks in the voice's part, and {split.echoed} say word for word what a dialogue of the "
            "voice's part says.",
        ]
    return lines


# How to read the tables, after what the reference is.
_READING = (
    "Differences are "
    "simulated minus real, with a 95% bootstrap CI over sessions (the CIs need at least "
    f"{MIN_SESSIONS} sessions on each side, one session resampled being always itself: n/a with fewer). "
    "Shares are of user turns; `takes`, "
    "`turns_down` and `asks_about` (a film offered) are read by the same rules on both sides, "
    "`unknown_word` is a word no English word list holds (a typo, mostly), `word_variety` is Guiraud's "
    "index per session. A user's row counts each simulated person once, as the corpus holds each "
    "person's dialogue once: of the sessions one seed had with every system (and in every trial) it keeps "
    "one, a different system for different people; the rows per system count all of theirs. "
    "A person is a simulated session index (one seed meeting every system) or a real user (the dialogue where "
    "the corpus names no users). A discriminator's AUC is how well a logistic regression tells a simulated "
    "turn from a real one, cross-validated over folds that never split a person, on either side (0.5: "
    "indistinguishable, 1.0: always told apart); its 95% CI is a bootstrap of people (all of a person's turns "
    "drawn together), DeLong's, which takes turns as independent, beside it; its tells are the n-grams that "
    "give each side away most. Each discriminator sees as many turns of a user as of the real users, the "
    "larger side drawn down as whole people (seeded), so every user is measured as the floor is; "
    "`distinct_turns` is the share of those turns that no other turn of the same side says word for word (a "
    "user that repeats itself shows it there, not hidden in the AUC)."
)

# The three views, said where the table has more than the words.
_THREE_VIEWS = (
    "Three views per user. **Words**: the statistics and the discriminators of the turns as said. "
    "**Style apart from content**: the word and character discriminators on content-blind text, every "
    "catalog value and title replaced by a word naming its type (`slotgenre`, `slottitle`) on both sides: "
    "how the user talks, not what about. **Flow**: the share of turns of each act (the first that "
    "applies of take, turn_down, ask_about, request, small_talk, ask, other), the Jensen-Shannon "
    "distance between the distributions of act bigrams within a session (a start and an end marker "
    "included; base 2, 0: the same, 1: nothing in common) with a 95% bootstrap CI over sessions (two "
    "samples of the same users are some distance apart, resampled ones further, so the CI can lie above "
    "the distance: read it against the floor of real users against real users), the Jensen-Shannon distance "
    "between the acts that follow each case of system reply (the first turn's case is the start), per case "
    "and, overall, their mean weighted by how often each case comes (the mean of its shares of both sides' "
    "turns, over the cases both sides have), with a 95% bootstrap CI over people: what the systems say "
    "differs between a simulation and a corpus, what a user does given what they said should not; turns per "
    "session, and how sessions end: the act of the last user turn the system answered "
    "(`last_act_<act>`, a share of sessions) and, for simulated sessions, whether the user left "
    "(`ending_abandoned`) or the turn limit ended it (`ending_turn_limit`)."
)


def _overview(overall: pd.DataFrame, measures: set[str], not_held_out: str) -> list[str]:
    """One row per user (the floor first, after the real users) and a column per OVERVIEW measure it has."""
    shown = [m for m in OVERVIEW if m in measures]
    first = overall.drop_duplicates("measure").set_index("measure")
    lines = ["", f"## All users{not_held_out}", ""]
    lines += ["| user | " + " | ".join(OVERVIEW[m] for m in shown) + " |", "|---" * (len(shown) + 1) + "|"]
    lines += ["| real users | " + " | ".join(_fmt(first["real"].get(m, np.nan)) for m in shown) + " |"]
    users = [user for user in _floor_first(overall["user"]) if user != DEALT]  # measured at volume only
    cells = {
        (r.user, r.measure): (_with_ci(r) if r.measure in WITH_CI else _fmt(r.simulated)) for r in overall.itertuples()
    }
    lines += [f"| {user} | " + " | ".join(cells.get((user, m), "n/a") for m in shown) + " |" for user in users]
    return lines


def _floor_first(users) -> list[str]:
    """The users in the order given, the floor first and its dealt turns next."""
    users = list(dict.fromkeys(users))
    return [user for user in (FLOOR, DEALT) if user in users] + [user for user in users if user not in (FLOOR, DEALT)]


def _at_volume(rows: pd.DataFrame, not_held_out: str) -> list[str]:
    """The word discriminators at each of VOLUMES, one row per user and volume (the floor first): the people,
    sessions and turns of each side, and the AUCs with their CIs over people."""
    if rows.empty:
        return []
    lines = ["", f"## At volume{not_held_out}", "", _VOLUMES, ""]
    lines += [
        "| user | volume | simulated people (sessions) | simulated turns | real people | real turns "
        "| AUC word [95% CI] | AUC word, content-blind [95% CI] |",
        "|---|---|---|---|---|---|---|---|",
    ]
    found = {(r.user, r.measure): r for r in rows.itertuples()}
    notes = []
    for user in _floor_first(rows["user"]):
        for volume in (*VOLUMES, MATCHED):
            said, blind = (found.get((user, f"auc_word{kind}_volume_{volume}")) for kind in ("", "_blind"))
            if said is None:
                continue
            lines.append(
                f"| {user} | {volume} | {_count(said.simulated_people)} ({_count(said.simulated_sessions)}) | "
                f"{_count(said.simulated_turns)} | {_count(said.real_people)} | {_count(said.real_turns)} | "
                f"{_with_ci(said)} | {_with_ci(blind) if blind is not None else 'n/a'} |"
            )
            notes += [f"{user}, {volume}: {r.note}" for r in (said, blind) if r is not None and isinstance(r.note, str)]
    return lines + _notes(notes)


def _count(x) -> str:
    return "n/a" if pd.isna(x) else f"{x:,.0f}"


def _notes(notes: list[str]) -> list[str]:
    """Why a measure is n/a, below its table, each reason once."""
    return ["", *(f"- {note}" for note in dict.fromkeys(notes))] if notes else []


# What the volumes are, above their table.
_VOLUMES = (
    "The word discriminators, as said and content-blind, at three volumes; the floor is measured at each the "
    "same way. **once**: each simulated person once (one session of each), both sides drawn down to the "
    "smaller one's count as whole people. **floor_n**: as many simulated turns as the floor's comparison has "
    "on each side, drawn as whole sessions of people in a drawn order, each person once, and a further "
    "session of the same people only where their first sessions run out (then sessions outnumber people). "
    "**pooled**: every session of every person (every system, every trial) against every real turn, the "
    "two sides weighed equally (balanced class weights). **matched**: the turns of `once` matched by what "
    "they say (the act, the field and role of each value stated, a greeting), each kind on both sides as often "
    "as the side with fewer has it: what is left to tell the user apart is how it words what it says, not what "
    "its plan makes it say. Folds never split a person; the CI draws people. The floor's turns dealt at "
    "random to its own sessions (each session keeps its person and its number of turns, each turn its words) "
    "are the closest a voice can come that words any simulated person's turns with any real person's turns: "
    "each turn said once, by someone who never said it."
)


def _user_section(user: str, own: pd.DataFrame) -> list[str]:
    """One user's three views: words, style apart from content (when measured), flow (when measured)."""
    views = own["measure"].map(_view)
    words, style, flow = own[views == "words"], own[views == "style"], own[views == "flow"]
    auc = words["measure"].str.startswith("auc_")
    lines = ["", f"## User `{user}`", "", "### Words"]
    lines += _statistics_table(words[~auc], "statistic", user)
    lines += _long_turns(words, user)
    lines += _discriminator_table(words[auc])
    if not style.empty:
        lines += ["", "### Style apart from content"]
        lines += _discriminator_table(style)
    if not flow.empty:
        shares = flow[flow["measure"].str.startswith("act_") & (flow["measure"] != "act_bigram_js")]
        lines += ["", "### Flow"]
        lines += _statistics_table(pd.concat([shares, words[words["measure"] == "turns_per_session"]]), "act", user)
        for r in flow[flow["measure"] == "act_bigram_js"].itertuples():
            lines += ["", f"Act bigrams, Jensen-Shannon distance to the real users' [95% CI]: {_with_ci(r)}."]
        lines += _reply_table(flow[flow["measure"].str.startswith("reply_act_js")], user)
        ends = flow[flow["measure"].str.startswith(("last_act_", "ending_"))]
        lines += _statistics_table(ends[ends[["simulated", "real"]].notna().any(axis=1)], "how sessions end", user)
    return lines


def _statistics_table(rows: pd.DataFrame, heading: str, user: str) -> list[str]:
    """Statistics beside the real users' with the difference and its CI (not `long_turns`, a count of turns)."""
    side = "the voice's part" if user == FLOOR else "simulated"
    lines = ["", f"| {heading} | {side} | real | difference [95% CI] |", "|---|---|---|---|"]
    return lines + [
        f"| {r.measure} | {_fmt(r.simulated)} | {_fmt(r.real)} | "
        f"{_fmt(r.difference)} [{_fmt(r.ci_low)}, {_fmt(r.ci_high)}] |"
        for r in rows.itertuples()
        if r.measure != "long_turns"
    ]


def _long_turns(rows: pd.DataFrame, user: str) -> list[str]:
    """How many turns of each side are over MAX_TURN_WORDS words, where any are."""
    over = rows[rows["measure"] == "long_turns"]
    if over.empty:
        return []
    side = "the voice's part's" if user == FLOOR else "this user's"
    return [
        "",
        f"{over['simulated'].iloc[0]:,.0f} of {side} turns and {over['real'].iloc[0]:,.0f} of the real users' "
        f"are over {MAX_TURN_WORDS:,} words: each counts as {MAX_TURN_WORDS:,} in the median words per turn "
        "(which moves only if half a side's turns are over it).",
    ]


def _discriminator_table(rows: pd.DataFrame) -> list[str]:
    """Each discriminator's AUC with its CI over people and DeLong's, the people of each side, and the
    n-grams that give each side away; below, why an AUC is n/a."""
    lines = [
        "",
        "| discriminator | AUC [95% CI] | DeLong's 95% CI | people (simulated / real) "
        "| gives the simulated user away | gives real users away |",
        "|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r.measure.removeprefix('auc_').removesuffix('_blind')} | {_with_ci(r)} | "
        f"[{_fmt(r.delong_low)}, {_fmt(r.delong_high)}] | {_count(r.simulated_people)} / {_count(r.real_people)} | "
        f"{_cell(r.simulated_tells)} | {_cell(r.real_tells)} |"
        for r in rows.itertuples()
    ]
    return lines + _notes([f"{r.measure}: {r.note}" for r in rows.itertuples() if isinstance(r.note, str)])


def _cell(text) -> str:
    """A table cell of text that may be missing."""
    return text if isinstance(text, str) else ""


def _reply_table(rows: pd.DataFrame, user: str) -> list[str]:
    """The acts given the case of the system's reply: overall and per case, with the turns of each side."""
    if rows.empty:
        return []
    side = "the voice's part's" if user == FLOOR else "simulated"
    overall = rows[rows["measure"] == "reply_act_js"].iloc[0]
    lines = [
        "",
        "Acts given the system's reply before them, Jensen-Shannon distance to the real users' [95% CI over "
        f"people]: {_with_ci(overall)}, the mean over the cases both sides have, each weighted by the mean of "
        f"its shares of both sides' turns ({_count(overall.simulated_turns)} {side} and "
        f"{_count(overall.real_turns)} real turns).",
        "",
        f"| reply case | {side} turns | real turns | JS distance [95% CI] |",
        "|---|---|---|---|",
    ]
    return lines + [
        f"| {r.measure.removeprefix('reply_act_js_')} | {_count(r.simulated_turns)} | {_count(r.real_turns)} | "
        f"{_with_ci(r)} |"
        for r in rows[rows["measure"] != "reply_act_js"].itertuples()
    ]


BY_SYSTEM = ("words", "question", "turns_down", "asks_about", "turns_per_session")


def _by_system(rows: pd.DataFrame) -> list[str]:
    """The user as each system met it: a few statistics per system (simulated value; all of them, with
    CIs, are in the CSV). A system that fails the user changes how the user talks."""
    if rows.empty:
        return []
    wide = rows.pivot_table(index="system", columns="measure", values="simulated", sort=False)
    shown = [m for m in BY_SYSTEM if m in wide]
    lines = ["", "As each system met it (the real users: the first table's `real` column):", ""]
    lines += ["| system | " + " | ".join(shown) + " |", "|---" * (len(shown) + 1) + "|"]
    lines += [f"| {system} | " + " | ".join(_fmt(row[m]) for m in shown) + " |" for system, row in wide.iterrows()]
    return lines
