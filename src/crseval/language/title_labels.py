"""Measure title recognition against hand-labelled real replies.

A label file has one JSON line per system reply: `id`, `file` and `message_index` (where the
reply is in the legacy logs), `sha256` of its text, and the annotator's `recommended`,
`mentioned` and `traps` title lists (annotation guide: tests/data/title_labels/GUIDE.md). The
reply texts stay in the logs; a log whose text changed is an error, not a silent mismatch.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from crseval.core.io import UnreadableFile, numbered_lines, read_regular_file
from crseval.language.titles import TitleRecognizer

MAX_FILE_BYTES = 64 << 20  # a label file or a log is read whole, bounded as a corpus file is (crseval.corpora)
REQUIRED = ("id", "model", "file", "message_index", "sha256", "recommended", "mentioned", "traps")
TITLE_LISTS = ("recommended", "mentioned", "traps")


class LabelError(ValueError):
    """A label that does not fit its log (missing file, moved message, changed text)."""


@dataclass(frozen=True)
class LabelledReply:
    id: str
    model: str
    text: str
    user_text: str
    recommended: frozenset[str]
    mentioned: frozenset[str]
    traps: frozenset[str]
    split: str


def load_labels(labels_path: str | Path, logs_dir: str | Path) -> list[LabelledReply]:
    replies = []
    logs: dict[str, list[dict]] = {}
    for number, line in numbered_lines(_read(labels_path)):
        try:
            label = json.loads(line)
        except json.JSONDecodeError as error:
            raise LabelError(f"{labels_path}:{number}: not JSON ({error.msg})") from None
        missing = [k for k in REQUIRED if k not in label]
        if missing:
            raise LabelError(f"{labels_path}:{number}: missing {', '.join(missing)}")
        if not all(isinstance(label[k], list) and all(isinstance(t, str) for t in label[k]) for k in TITLE_LISTS):
            raise LabelError(f"{labels_path}:{number}: {', '.join(TITLE_LISTS)} must be lists of titles")
        if label["file"] not in logs:
            path = Path(logs_dir) / label["file"]
            if not path.exists():
                raise LabelError(f"{labels_path}:{number}: log {path} not found")
            logs[label["file"]] = json.loads(_read(path))["conversation"]
        conversation = logs[label["file"]]
        position = label["message_index"]
        if position >= len(conversation) or conversation[position]["speaker"] != "SYSTEM":
            raise LabelError(f"{labels_path}:{number}: {label['id']} is not a SYSTEM message")
        text = conversation[position]["text"]
        if hashlib.sha256(text.encode("utf-8")).hexdigest() != label["sha256"]:
            raise LabelError(f"{labels_path}:{number}: the text of {label['id']} changed since it was labelled")
        user_text = next((m["text"] for m in reversed(conversation[:position]) if m["speaker"] == "USER"), "")
        replies.append(
            LabelledReply(
                label["id"],
                label["model"],
                text,
                user_text,
                frozenset(label["recommended"]),
                frozenset(label["mentioned"]),
                frozenset(label["traps"]),
                label.get("split", "all"),
            )
        )
    return replies


def _read(path: str | Path) -> str:
    try:
        return read_regular_file(path, MAX_FILE_BYTES).decode("utf-8")
    except UnreadableFile as error:
        raise LabelError(f"{path}: {error.reason} (at most {MAX_FILE_BYTES:,} bytes of a regular file)") from None
    except UnicodeDecodeError as error:
        raise LabelError(f"{path}: not UTF-8 text ({error.reason})") from None


def _prf(tp: int, predicted: int, gold: int) -> dict:
    precision = tp / predicted if predicted else float("nan")
    recall = tp / gold if gold else float("nan")
    return {"tp": tp, "predicted": predicted, "gold": gold, "precision": precision, "recall": recall}


def evaluate(recognizer: TitleRecognizer, replies: list[LabelledReply]) -> dict:
    """Micro precision and recall over replies: of every film reference (either role), of the
    recommended and of the mentioned films; and how many trap titles were taken for films."""
    counts = {k: [0, 0, 0] for k in ("referenced", "recommended", "mentioned")}
    trap_hits, trap_total, errors = 0, 0, []
    for reply in replies:
        found = recognizer.recognise(reply.text, user_text=reply.user_text)
        predicted = {"recommended": set(found.recommended), "mentioned": set(found.mentioned)}
        predicted["referenced"] = predicted["recommended"] | predicted["mentioned"]
        gold = {"recommended": set(reply.recommended), "mentioned": set(reply.mentioned)}
        gold["referenced"] = gold["recommended"] | gold["mentioned"]
        for key, (tp, n_pred, n_gold) in counts.items():
            counts[key] = [tp + len(predicted[key] & gold[key]), n_pred + len(predicted[key]), n_gold + len(gold[key])]
        traps = reply.traps - gold["referenced"]
        trap_total += len(traps)
        trap_hits += len(traps & predicted["referenced"])
        if predicted["recommended"] != gold["recommended"] or predicted["mentioned"] != gold["mentioned"]:
            errors.append(
                {
                    "id": reply.id,
                    "predicted": {k: sorted(v) for k, v in predicted.items() if k != "referenced"},
                    "gold": {k: sorted(v) for k, v in gold.items() if k != "referenced"},
                }
            )
    result = {key: _prf(*values) for key, values in counts.items()}
    result["traps"] = {"total": trap_total, "taken_for_films": trap_hits}
    result["replies"] = len(replies)
    result["errors"] = errors
    return result
