"""Audit: how far each user profile's turns are from real users' turns (crseval.checks.user_realism).

    python audits/user_realism.py RESULTS_DIR [--reference PATH] [--format crsarena] [--resamples 1000] [--seed 0]

Reads the simulated sessions of an experiment (results/<experiment>/sessions/*/shard-*.jsonl, grouped
by the user profile each session records) and the user turns of a CRSArena-Dial file (by default the
open half beside the repository), and prints, per profile, the population statistics with the
difference to the real users and its bootstrap CI, and the discriminator AUC on word n-grams,
character n-grams and the turn statistics, with the n-grams that give each side away.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd

from crseval.checks.user_realism import compare_statistics, discriminator, reference_turns, simulated_turns

REFERENCE = Path(__file__).resolve().parents[2] / "shared" / "data" / "crsarena" / "crs_arena_dial_open.json"


def sessions(results: Path):
    for shard in sorted(results.glob("sessions/*/shard-*.jsonl")):
        for line in shard.read_text(encoding="utf-8").splitlines():
            yield json.loads(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("--reference", type=Path, default=REFERENCE)
    parser.add_argument("--format", default="crsarena", help="the reference's importing format")
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    real = reference_turns(args.reference, args.format)
    print(f"real users: {len(real.texts)} turns in {len(set(real.sessions))} dialogues ({args.reference.name})\n")
    pd.set_option("display.width", 160)
    users, _ = simulated_turns(sessions(args.results), {})  # every session records its profile
    for profile, simulated in users.items():
        print(f"== {profile}: {len(simulated.texts)} turns in {len(set(simulated.sessions))} sessions")
        print(compare_statistics(simulated, real, args.resamples, args.seed).round(3).to_string(index=False))
        for kind in ("word", "char", "statistics"):
            found = discriminator(simulated.texts, real.texts, kind, seed=args.seed)
            print(
                f"discriminator on {kind}: AUC {found['auc']:.3f} "
                f"[{found['auc_ci_low']:.3f}, {found['auc_ci_high']:.3f}]"
                f"; simulated tells {found['simulated_tells'][:6]}; real tells {found['real_tells'][:6]}"
            )
        print()


if __name__ == "__main__":
    main()
