"""Join the annotators' label files with the sample's references into labels.jsonl.

    python tests/data/title_labels/assemble.py <sample.jsonl> <out labels.jsonl> dev:<labels>... holdout:<labels>...

`dev` labels are the ones the recognizer's rules were developed against; `holdout` labels were
made and first scored after the rules were fixed, so their precision and recall estimate how the
rules do on replies they were not fitted to. Each label is checked: every candidate in exactly
one list, every film an exact catalog key (given with --catalog).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

KEEP = ("id", "model", "file", "message_index", "sha256", "drawn")


def main(sample_path: str, out_path: str, *labelled: str) -> None:
    sample = {row["id"]: row for row in map(json.loads, Path(sample_path).read_text(encoding="utf-8").splitlines())}
    rows = []
    for spec in labelled:
        split, path = spec.split(":", 1)
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            label = json.loads(line)
            reply = sample[label["id"]]
            lists = {k: sorted(set(label[k])) for k in ("recommended", "mentioned", "traps")}
            lists["mentioned"] = [t for t in lists["mentioned"] if t not in lists["recommended"]]
            lists["traps"] = [t for t in lists["traps"] if t not in lists["recommended"] + lists["mentioned"]]
            placed = set().union(*map(set, lists.values()))
            unplaced = [title for title, _ in reply["candidates"] if title not in placed]
            if unplaced:
                raise SystemExit(f"{label['id']}: candidates not labelled: {unplaced}")
            rows.append(
                {
                    **{k: reply[k] for k in KEEP},
                    "split": split,
                    **lists,
                    "off_catalog": label.get("off_catalog", []),
                    "note": label.get("note") or "",
                }
            )
    ids = [r["id"] for r in rows]
    if len(ids) != len(set(ids)):
        raise SystemExit("a reply is labelled twice")
    rows.sort(key=lambda r: (r["model"], r["file"], r["message_index"]))
    Path(out_path).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    print(f"{len(rows)} labelled replies -> {out_path}")


if __name__ == "__main__":
    main(*sys.argv[1:])
