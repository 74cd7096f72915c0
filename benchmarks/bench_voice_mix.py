"""What learning a voice from several corpora costs, and what `keep: like_the_voice` keeps of each.

    python benchmarks/bench_voice_mix.py [--corpus ../shared/data/crsarena/crs_arena_dial_open.json]
        [--data ../shared/data] [--catalog ../shared/data/opendialkg_movie_data.json] [--cache DIR]

The voice of `config/user_profiles.yaml` learns from part 1 of CRSArena-Dial's open half and from the seekers of
ReDial's test split, IARD, INSPIRED's dev split and AB-ReDial (crseval.simulate.user.voice_learning). This
reads the five corpora once, then learns the voice three ways, each timed: from CRSArena's part alone, with
every turn of the four mixed in (`keep: all`), and with only the turns that read like CRSArena's
(`keep: like_the_voice`, crseval.simulate.user.voice_likeness). Printed (numbers only, never corpus text): the
seconds of each, the turns each corpus keeps and the templates of each voice. The catalog's matcher is built
once and cached as bench_slot_typing caches it.
"""

from __future__ import annotations

import argparse
import glob
import tempfile
import time
from pathlib import Path

from bench_slot_typing import catalog_matcher

from crseval.simulate.user.voice_learning import (
    LIKE_THE_VOICE,
    UNLIKE_THE_VOICE,
    VoiceCorpus,
    corpus_dialogues,
    learn_voice,
    split_dialogues,
)

MIXED = (  # name, importing format, path under --data
    ("redial", "redial", "redial/test_data.jsonl"),
    ("iard", "iard", "iard/iard.json"),
    ("inspired", "inspired", "inspired/dev.tsv"),
    ("ab-redial", "ab_redial", "ab-redial/annotated_*.csv"),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=Path("../shared/data/crsarena/crs_arena_dial_open.json"))
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--catalog", type=Path, default=Path("../shared/data/opendialkg_movie_data.json"))
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "crseval-bench-slot-typing")
    arguments = parser.parse_args()
    matcher = catalog_matcher(arguments.catalog, arguments.cache)

    started = time.perf_counter()
    learned, _ = split_dialogues(corpus_dialogues(arguments.corpus, "crsarena"), 2, 1)
    mixed = [(name, corpus_dialogues(sorted(glob.glob(str(arguments.data / path))), fmt)) for name, fmt, path in MIXED]
    print(f"reading the five corpora: {time.perf_counter() - started:.1f} s")

    source = {"corpus": arguments.corpus.name}
    ways = {
        "alone": (),
        "every turn (keep: all)": tuple(VoiceCorpus(name, dialogues, 1, keep="all") for name, dialogues in mixed),
        "like the voice's own": tuple(VoiceCorpus(name, d, 1, keep=LIKE_THE_VOICE) for name, d in mixed),
    }
    print("| voice | seconds | templates | turns kept per corpus | left out as unlike |")
    print("|---|---|---|---|---|")
    for label, mix in ways.items():
        started = time.perf_counter()
        voice = learn_voice(learned, matcher, source, mix=mix, to_a_person_turns="leave_out")
        seconds = time.perf_counter() - started
        kept = ", ".join(f"{c['name']} {c['turns_kept']}/{c['turns_read']}" for c in voice.summary.get("corpora", []))
        unlike = voice.summary["left_out"].get(UNLIKE_THE_VOICE, 0)
        print(
            f"| {label} | {seconds:.1f} | {voice.summary['templates']} | {kept or voice.summary['turns_kept']} "
            f"| {unlike} |"
        )


if __name__ == "__main__":
    main()
