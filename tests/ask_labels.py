"""Load the hand-labelled replies of tests/data/ask_labels/ and score `asked_fields` on them.

`written.jsonl` holds replies written for the project, text and all. `crsarena.jsonl` holds real
CRSArena-Dial system replies without their text: a locator (`file`, `dialogue` = conversation ID,
`turn` = position in its conversation), the `sha256` of the reply and the labels; the text is read
from the corpus, and a reply whose text changed is an error, not a silent mismatch.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from crseval.language.asks import FIELDS, OPEN, asked_fields
from crseval.language.title_labels import LabelError

LABELS = Path(__file__).resolve().parent / "data" / "ask_labels"
KNOWN = frozenset((*FIELDS, OPEN))


@dataclass(frozen=True)
class AskLabel:
    id: str
    text: str
    asks: frozenset[str]
    split: str


def _rows(labels_path: Path, required: tuple[str, ...]):
    for number, line in enumerate(labels_path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{labels_path}:{number}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            raise LabelError(f"{where}: not JSON ({error.msg})") from None
        missing = [key for key in (*required, "asks", "split") if key not in row]
        if missing:
            raise LabelError(f"{where}: missing {', '.join(missing)}")
        if not set(row["asks"]) <= KNOWN or row["split"] not in ("dev", "test"):
            raise LabelError(f"{where}: asks must be among {sorted(KNOWN)} and split dev or test")
        yield where, row


def load_written_labels(labels_path: str | Path = LABELS / "written.jsonl") -> list[AskLabel]:
    return [
        AskLabel(row["id"], row["text"], frozenset(row["asks"]), row["split"])
        for _, row in _rows(Path(labels_path), ("id", "text"))
    ]


def load_crsarena_labels(labels_path: str | Path, data_dir: str | Path) -> list[AskLabel]:
    """The labelled CRS Arena replies with their texts from `data_dir`; LabelError naming the line
    of a label that is malformed or no longer finds its reply."""
    dialogues: dict[str, dict[str, list]] = {}
    labels = []
    for where, row in _rows(Path(labels_path), ("file", "dialogue", "turn", "sha256")):
        if row["file"] not in dialogues:
            path = Path(data_dir) / row["file"]
            if not path.exists():
                raise LabelError(f"{where}: {path} not found")
            corpus = json.loads(path.read_text(encoding="utf-8"))
            dialogues[row["file"]] = {d["conversation ID"]: d["conversation"] for d in corpus}
        conversation = dialogues[row["file"]].get(row["dialogue"])
        if conversation is None:
            raise LabelError(f"{where}: dialogue {row['dialogue']} is not in {row['file']}")
        turn = row["turn"]
        if (
            not (isinstance(turn, int) and 0 <= turn < len(conversation))
            or conversation[turn]["participant"] != "AGENT"
        ):
            raise LabelError(f"{where}: turn {turn} of {row['dialogue']} is not a system reply")
        text = conversation[turn]["utterance"]
        if hashlib.sha256(text.encode("utf-8")).hexdigest() != row["sha256"]:
            raise LabelError(f"{where}: the text of {row['dialogue']}#{turn} changed since it was labelled")
        labels.append(AskLabel(f"{row['dialogue']}#{turn}", text, frozenset(row["asks"]), row["split"]))
    return labels


def evaluate(labels: list[AskLabel]) -> dict:
    """Micro precision and recall over (reply, field) pairs, `open` counted as a field, and the
    replies whose predicted set differs from the label."""
    tp = predicted = gold = 0
    errors = []
    for label in labels:
        found = asked_fields(label.text)
        tp, predicted, gold = tp + len(found & label.asks), predicted + len(found), gold + len(label.asks)
        if found != label.asks:
            errors.append((label.id, sorted(found), sorted(label.asks), label.text[:120]))
    return {
        "replies": len(labels),
        "tp": tp,
        "predicted": predicted,
        "gold": gold,
        "precision": tp / predicted if predicted else float("nan"),
        "recall": tp / gold if gold else float("nan"),
        "errors": errors,
    }
