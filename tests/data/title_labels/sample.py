"""Draw the replies of the hand-labelled title set and write annotation batches.

Run once to make the sample; the labels are then written by hand (see GUIDE.md). The sample
is seeded and stratified: per model, 22 replies drawn at random and 10 drawn among replies in
which a catalog title that is also a common word, a year or a name part occurs (traps are rare
in a random draw, and precision is measured on them). Reply texts are not copied here: the
labels refer to a log file and a message position, and the test reads the text from the logs.

    python tests/data/title_labels/sample.py <reference_logs dir> <catalog json> <out dir>
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import sys
from pathlib import Path

RANDOM_PER_MODEL = 22
TRAP_PER_MODEL = 10
SEED = 20261122


def occurrences(text: str, titles: list[str]) -> list[dict]:
    """Every case-insensitive whole-word occurrence of a catalog title, except single
    lower-case words (those are never film references in running text)."""
    lowered = text.lower()
    found = []
    for title in titles:
        key = title.lower()
        start = 0
        while (position := lowered.find(key, start)) >= 0:
            end = position + len(key)
            start = position + 1
            before = lowered[position - 1] if position else " "
            after = lowered[end] if end < len(lowered) else " "
            if before.isalnum() or after.isalnum():
                continue
            surface = text[position:end]
            if " " not in surface and surface == surface.lower() and not surface[:1].isdigit():
                continue
            found.append({"title": title, "surface": surface, "start": position})
    found.sort(key=lambda o: o["start"])
    return found


def main(logs_dir: str, catalog_path: str, out_dir: str) -> None:
    titles = list(json.loads(Path(catalog_path).read_text(encoding="utf-8")))
    ambiguous = [t for t in titles if " " not in t and (t.isdigit() or t.lower() in COMMON)]
    rng = random.Random(SEED)
    by_model: dict[str, list[dict]] = {}
    for path in sorted(Path(logs_dir).glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        conversation = data["conversation"]
        for position, message in enumerate(conversation):
            if message["speaker"] != "SYSTEM" or not message["text"].strip():
                continue
            previous_user = next((m["text"] for m in reversed(conversation[:position]) if m["speaker"] == "USER"), "")
            previous_system = next(
                (m["text"] for m in reversed(conversation[:position]) if m["speaker"] == "SYSTEM"), ""
            )
            by_model.setdefault(data["model_name"], []).append(
                {
                    "id": f"{path.name}#{position}",
                    "model": data["model_name"],
                    "file": path.name,
                    "message_index": position,
                    "sha256": hashlib.sha256(message["text"].encode("utf-8")).hexdigest(),
                    "previous_user": previous_user,
                    "previous_system": previous_system,
                    "reply": message["text"],
                }
            )
    sample = []
    for model in sorted(by_model):
        replies = by_model[model]
        rng.shuffle(replies)
        chosen = replies[:RANDOM_PER_MODEL]
        for reply in chosen:
            reply["drawn"] = "random"
        rest = [
            r
            for r in replies[RANDOM_PER_MODEL:]
            if any(o["title"] in ambiguous for o in occurrences(r["reply"], ambiguous))
        ]
        for reply in rest[:TRAP_PER_MODEL]:
            reply["drawn"] = "trap"
        sample += chosen + rest[:TRAP_PER_MODEL]
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for reply in sample:
        reply["candidates"] = sorted({o["title"]: o["surface"] for o in occurrences(reply["reply"], titles)}.items())
    with open(out / "sample.jsonl", "w", encoding="utf-8") as handle:
        for reply in sample:
            handle.write(json.dumps(reply, ensure_ascii=False) + "\n")
    print(f"{len(sample)} replies from {len(by_model)} models -> {out / 'sample.jsonl'}")


COMMON = set(
    re.findall(
        r"\w+",
        """
war water wild winter wolf women wonder yes you zoo zoom her us they made lost room drive speed taken wanted
waiting hero hook honey hunger island legend loser mama matched naked nine paradise passion panther prison
rush salt saw scream shame silence soldier stone super trust twelve traffic vacation virgin burn bound click
crash deep doubt easy fallen flight frozen fury gravity haunted heist holes inferno marked messenger passing
requiem restless shattered shiver taken trapped unknown unseen warrior watchers wish x
""",
    )
)

if __name__ == "__main__":
    main(*sys.argv[1:4])
