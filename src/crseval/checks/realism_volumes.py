"""The volumes at which the user realism check discriminates a simulated user from real users, each measured
for the floor of real users against real users the same way (`volume_samples`):

- `once`: each simulated person once (one session of each), both sides drawn down to the smaller one's
  count as whole people (crseval.checks.realism_discriminators.equal_samples);
- `floor_n`: as many simulated turns as the floor's comparison has on each side (its real side: every real
  turn, or as many as the floor has where it has fewer), drawn as whole sessions from people in a drawn order,
  each person once, and only where the people's first sessions run out a further session of the same
  people (`session_rounds`): how many people (and sessions) it took is part of the result;
- `pooled`: every session of every person (every system, every trial) against every real turn, the sides
  weighed equally (balanced class weights) instead of drawn down.

Beside the volumes, `matched` (`matched_sample`): the `once` turns of both sides matched by what they say
(`what_is_said`: the act, the fields and roles it states, a greeting), each such kind of turn on both sides
as often as the side with fewer has it. A user can be told apart for what the plan makes it say (more
wishes stated, exclusions people seldom make, fewer greetings) or for how it words what it says; matched,
only the wording counts.

A discriminator's AUC grows with the turns it learns from, and a simulated user of a small experiment has
fewer turns than the real side: at `floor_n` every user is measured at the floor's size; `pooled` says how
far the user is told apart when everything it said counts, the grouping by person keeping a person's many
sessions in one fold.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from crseval.checks.realism_discriminators import draw_people, equal_samples, side_rng
from crseval.checks.realism_turns import UserTurns
from crseval.language.user_acts import TurnReading

VOLUMES = ("once", "floor_n", "pooled")
MATCHED = "matched"  # the once sample matched by what is said: reported beside the volumes


@dataclass(frozen=True)
class VolumeSample:
    """The turns of both sides a discriminator is shown at one volume: indices into `source` (the simulated
    turns drawn from) and into the real turns, and whether the sides are weighed equally (`balanced`)."""

    volume: str
    source: UserTurns
    simulated: np.ndarray
    real: np.ndarray
    balanced: bool = False

    @property
    def people(self) -> int:
        return len({self.source.people[i] for i in self.simulated})

    @property
    def sessions(self) -> int:
        return len({self.source.sessions[i] for i in self.simulated})


def session_rounds(turns: UserTurns) -> np.ndarray:
    """The round of each turn's session: how many sessions of the same person come before it in `turns`
    (0 for a person's first session). The pooled turns of crseval.checks.realism_turns.gather_simulated hold
    each person's sessions in the order the user's row keeps them."""
    frame = pd.DataFrame({"person": turns.people, "session": turns.sessions})
    firsts = frame.drop_duplicates("session").copy()
    firsts["round"] = firsts.groupby("person", sort=False).cumcount()
    return frame["session"].map(firsts.set_index("session")["round"]).to_numpy()


def floor_size(real: UserTurns, floor: UserTurns | None) -> int:
    """The turns on each side of the floor's comparison: as many as the real side has, or as the floor has
    where it has fewer; every real turn without a floor."""
    return min(len(real.texts), len(floor.texts)) if floor is not None else len(real.texts)


def volume_samples(
    once: UserTurns, real: UserTurns, n: int, seed: int, pooled: UserTurns | None = None
) -> list[VolumeSample]:
    """A user's samples at each of VOLUMES against `real`: `once` from the user's turns (each person once),
    `floor_n` (`n` turns, drawn from `pooled` a round of sessions at a time) and `pooled` from every session.
    Without `pooled` (the floor: each real person's dialogues are theirs once) the user's turns are all it
    said. The real side's draw at `floor_n` is the floor's own (the same Generator, the same size)."""
    source = pooled if pooled is not None else once
    rounds = session_rounds(pooled) if pooled is not None else None
    simulated, drawn_real = equal_samples(once.people, real.people, seed)
    size = min(n, len(source.texts), len(real.texts))
    return [
        VolumeSample("once", once, simulated, drawn_real),
        VolumeSample(
            "floor_n",
            source,
            draw_people(source.people, size, side_rng(seed, 1), rounds),
            draw_people(real.people, size, side_rng(seed, 0)),
        ),
        VolumeSample("pooled", source, np.arange(len(source.texts)), np.arange(len(real.texts)), balanced=True),
    ]


def what_is_said(reading: TurnReading) -> str:
    """What a turn says, as the matched sample matches it: its act, the field and role of each value it
    states (each once, sorted) and whether it greets; not the values, not the words."""
    stated = ",".join(sorted({f"{field}:{role}" for field, _, role in reading.statements}))
    return f"{reading.act}|{stated}|{'greets' if reading.greets else ''}"


def matched_sample(once: VolumeSample, real: UserTurns, said: Callable[[str], str], seed: int) -> VolumeSample:
    """The `once` sample's turns matched by what they say (`said`: text -> its kind, `what_is_said`): of each
    kind, as many turns of each side as the side with fewer has, drawn where a side has more (each side from
    its own Generator, the kinds in sorted order, so the draw is the same on every machine)."""
    sides = {"simulated": (once.source.texts, once.simulated), "real": (real.texts, once.real)}
    kinds = {side: np.array([said(texts[i]) for i in picked], dtype=object) for side, (texts, picked) in sides.items()}
    generators = {"simulated": side_rng(seed, 3), "real": side_rng(seed, 2)}  # apart from the volumes' draws
    drawn = {side: [np.array([], dtype=int)] for side in sides}
    for kind in sorted(set(kinds["simulated"]) & set(kinds["real"])):
        where = {side: np.flatnonzero(kinds[side] == kind) for side in sides}
        n = min(len(found) for found in where.values())
        for side, found in where.items():
            chosen = found if len(found) == n else generators[side].choice(found, size=n, replace=False)
            drawn[side].append(sides[side][1][chosen])
    simulated, matched_real = (np.sort(np.concatenate(drawn[side])) for side in sides)
    return VolumeSample(MATCHED, once.source, simulated, matched_real)
