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

A discriminator's AUC grows with the turns it learns from, and a simulated user of a small experiment has
fewer turns than the real side: at `floor_n` every user is measured at the floor's size; `pooled` says how
far the user is told apart when everything it said counts, the grouping by person keeping a person's many
sessions in one fold.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from crseval.checks.realism_discriminators import draw_people, equal_samples, side_rng
from crseval.checks.realism_turns import UserTurns

VOLUMES = ("once", "floor_n", "pooled")


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
