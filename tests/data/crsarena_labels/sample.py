"""Draw the CRS Arena turns of the hand-labelled set and write an annotation batch.

Run once to make the sample; the labels are then written by hand (see GUIDE.md). The draw is
seeded and stratified: per CRS, its dialogues are shuffled and cut in two halves (dev, test),
and from each half PER_ROLE user turns and PER_ROLE system turns are drawn at random among the
non-empty ones, so both splits hold every CRS and both roles, and no dialogue feeds both splits.
Film references are rarer in a random draw than the measurement needs (roles, lower-case titles
in users' text, formatted titles), so a second stratum adds, per CRS and split, RICH_SYSTEM
system turns with a year in parentheses, quotes, bold or a catalog title of two or more words,
and RICH_USER user turns with such a catalog title (any case).
The batch (written outside the repository) carries each turn's text, the turns before it and,
as an aid for the annotator's recall, the catalog titles and values that occur in it; the
labels keep only the utterance ID and the sha256 of its text.

    python tests/data/crsarena_labels/sample.py <crs_arena_dial_open.json> <catalog json> <out dir>
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import sys
from pathlib import Path

PER_ROLE = 4  # per CRS, split and role: 9 CRSs x 2 splits x 2 roles x 4 = 144 turns
RICH_SYSTEM, RICH_USER = 2, 1  # per CRS and split, drawn after the random turns: 54 turns
SEED = 20261124
_FORMATTED = re.compile(r"\(\s*(?:19|20)\d\d\s*\)|\*\*|\"|“")
ROLES = {"USER": "user", "AGENT": "system"}


def occurrences(text: str, names: list[str]) -> list[str]:
    """Names that occur in `text` on word boundaries, ignoring case (single lower-case words
    excepted: those are listed only when written with a capital)."""
    found = []
    for name in names:
        pattern = re.compile(rf"(?<!\w){re.escape(name)}(?!\w)", re.I)
        for match in pattern.finditer(text):
            surface = match.group(0)
            if " " not in surface and surface == surface.lower() and not surface[:1].isdigit():
                continue
            found.append(name)
            break
    return sorted(set(found))


def entry(dialogue: dict, position: int, crs: str, split: str, drawn: str) -> dict:
    conversation = dialogue["conversation"]
    text = conversation[position]["utterance"]
    return {
        "utterance ID": conversation[position]["utterance ID"],
        "crs": crs,
        "role": ROLES[conversation[position]["participant"]],
        "split": split,
        "drawn": drawn,
        "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
        "before": [f"{u['participant']}: {u['utterance']}" for u in conversation[:position]][-3:],
        "text": text,
    }


def main(dialogues_path: str, catalog_path: str, out_dir: str) -> None:
    dialogues = json.loads(Path(dialogues_path).read_text(encoding="utf-8"))
    catalog = json.loads(Path(catalog_path).read_text(encoding="utf-8"))
    titles = sorted(catalog)
    people = sorted({p for film in catalog.values() for f in ("actor", "director", "writer") for p in film.get(f, [])})
    rng = random.Random(SEED)
    by_crs: dict[str, list[dict]] = {}
    for dialogue in dialogues:
        by_crs.setdefault(dialogue["agent"]["id"], []).append(dialogue)
    sample = []
    pools = []
    for crs in sorted(by_crs):
        chosen = sorted(by_crs[crs], key=lambda d: d["conversation ID"])
        rng.shuffle(chosen)
        half = len(chosen) // 2
        for split, part in (("dev", chosen[:half]), ("test", chosen[half:])):
            turns = {"USER": [], "AGENT": []}
            for dialogue in part:
                conversation = dialogue["conversation"]
                for position, utterance in enumerate(conversation):
                    if utterance["utterance"].strip():
                        turns[utterance["participant"]].append((dialogue, position))
            for participant in ("USER", "AGENT"):
                drawn = rng.sample(turns[participant], PER_ROLE)
                sample += [entry(dialogue, position, crs, split, "random") for dialogue, position in drawn]
                rest = [t for t in turns[participant] if t not in drawn]
                pools.append((crs, split, participant, rest))
    rich_rng = random.Random(SEED + 1)
    long_titles = [t for t in titles if len(t.split()) > 1]
    for crs, split, participant, rest in pools:
        rich_rng.shuffle(rest)
        wanted = RICH_USER if participant == "USER" else RICH_SYSTEM
        for dialogue, position in rest:
            if not wanted:
                break
            text = dialogue["conversation"][position]["utterance"]
            rich = any(re.search(rf"(?<!\w){re.escape(t)}(?!\w)", text, re.I) for t in long_titles)
            if rich or (participant == "AGENT" and _FORMATTED.search(text)):
                sample.append(entry(dialogue, position, crs, split, "rich"))
                wanted -= 1
    for turn in sample:
        turn["title_candidates"] = occurrences(turn["text"], titles)
        turn["person_candidates"] = occurrences(turn["text"], people)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "sample.jsonl", "w", encoding="utf-8") as handle:
        for turn in sample:
            handle.write(json.dumps(turn, ensure_ascii=False) + "\n")
    print(f"{len(sample)} turns of {len(by_crs)} CRSs -> {out / 'sample.jsonl'}")


if __name__ == "__main__":
    main(*sys.argv[1:4])
