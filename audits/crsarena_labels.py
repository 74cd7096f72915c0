"""Audit: film and concept extraction against hand-labelled turns of real CRS Arena dialogues.

    python audits/crsarena_labels.py [--split test] [--corpus ../shared/data/crsarena/crs_arena_dial_open.json]

prints precision / recall per kind and role on the full catalog (tests/test_crsarena_labels.py holds
the floors they must reach).

A label file (tests/data/crsarena_labels/labels.jsonl, guide beside it) has one JSON line per
turn: its `utterance ID` in the CRS Arena corpus, the sha256 of its text, its `role` (user or
system), `split` (dev or test), and the annotator's catalog films (`recommended`, `mentioned`),
out-of-catalog films (`unknown`, as written) and catalog concepts per field. The texts stay in
the corpus; a turn whose text changed is an error, not a silent mismatch.

Each turn is read as the pipeline reads it: a system turn with the user turn before it (a film
the user named and the reply does not propose again is mentioned), a user turn on its own (every
film it names is mentioned).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from crseval.core.fields import CONCEPT_FIELDS
from crseval.language.concepts import ConceptMatcher
from crseval.language.title_labels import LabelError
from crseval.language.titles import title_key

REQUIRED = ("utterance ID", "crs", "role", "split", "sha256", "recommended", "mentioned", "unknown", "concepts")
ROLES = ("user", "system")
TITLE_KINDS = ("recommended", "mentioned", "catalog", "unknown")


@dataclass(frozen=True)
class LabelledTurn:
    id: str
    crs: str
    role: str
    split: str
    text: str
    user_text: str  # the user turn before a system turn ("" for a user turn)
    recommended: frozenset[str]
    mentioned: frozenset[str]
    unknown: frozenset[str]
    concepts: frozenset[tuple[str, str]]


def _utterances(dialogues_path: Path) -> dict[str, tuple[str, str, str]]:
    """utterance ID -> (participant, text, the user text before it)."""
    dialogues = json.loads(dialogues_path.read_text(encoding="utf-8"))
    found = {}
    for dialogue in dialogues:
        previous_user = ""
        for utterance in dialogue["conversation"]:
            found[utterance["utterance ID"]] = (utterance["participant"], utterance["utterance"], previous_user)
            if utterance["participant"] == "USER":
                previous_user = utterance["utterance"]
    return found


def load_turn_labels(labels_path: str | Path, dialogues_path: str | Path) -> list[LabelledTurn]:
    """The labelled turns with their texts from the corpus; LabelError naming the line of a
    label that is malformed or no longer fits the corpus."""
    labels_path = Path(labels_path)
    utterances = _utterances(Path(dialogues_path))
    turns = []
    for number, line in enumerate(labels_path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{labels_path}:{number}"
        try:
            label = json.loads(line)
        except json.JSONDecodeError as error:
            raise LabelError(f"{where}: not JSON ({error.msg})") from None
        missing = [k for k in REQUIRED if k not in label]
        if missing:
            raise LabelError(f"{where}: missing {', '.join(missing)}")
        if label["role"] not in ROLES:
            raise LabelError(f"{where}: role {label['role']!r} is not one of {ROLES}")
        unknown_fields = set(label["concepts"]) - set(CONCEPT_FIELDS)
        if unknown_fields:
            raise LabelError(f"{where}: concept fields {sorted(unknown_fields)} are not among {CONCEPT_FIELDS}")
        if label["role"] == "user" and label["recommended"]:
            raise LabelError(f"{where}: a user turn recommends nothing (its films are 'mentioned')")
        if label["utterance ID"] not in utterances:
            raise LabelError(f"{where}: utterance {label['utterance ID']} is not in {dialogues_path}")
        participant, text, user_text = utterances[label["utterance ID"]]
        if (participant == "USER") != (label["role"] == "user"):
            raise LabelError(f"{where}: {label['utterance ID']} is a {participant} turn, labelled {label['role']}")
        if hashlib.sha256(text.encode("utf-8")).hexdigest() != label["sha256"]:
            raise LabelError(f"{where}: the text of {label['utterance ID']} changed since it was labelled")
        turns.append(
            LabelledTurn(
                label["utterance ID"],
                label["crs"],
                label["role"],
                label["split"],
                text,
                user_text if label["role"] == "system" else "",
                frozenset(label["recommended"]),
                frozenset(label["mentioned"]),
                frozenset(label["unknown"]),
                frozenset((field, value) for field, values in label["concepts"].items() for value in values),
            )
        )
    return turns


def check_against_catalog(turns: list[LabelledTurn], matcher: ConceptMatcher, concepts) -> list[str]:
    """Labelled catalog titles that are not catalog keys, and labelled concepts that are not
    catalog values (`concepts`: the index's concept table); empty when every label fits."""
    titles = set(matcher.title_recognizer.titles.values())
    values = set(zip(concepts["field"], concepts["value"]))
    problems = []
    for turn in turns:
        problems += [f"{turn.id}: {t!r} is no catalog title" for t in (turn.recommended | turn.mentioned) - titles]
        problems += [f"{turn.id}: {c} is no catalog value" for c in turn.concepts - values]
    return problems


def predict(matcher: ConceptMatcher, turn: LabelledTurn) -> dict[str, set]:
    """What the pipeline reads in one turn: films by role, out-of-catalog films, concepts."""
    found = matcher.title_recognizer.recognise(turn.text, user_text=turn.user_text, by_user=turn.role == "user")
    concepts = {(m.field, m.value) for m in matcher.values(turn.text) if m.field in CONCEPT_FIELDS}
    if turn.role == "user":  # a user proposes nothing: every film a user names is mentioned
        return {"recommended": set(), "mentioned": set(found.all), "unknown": set(found.unknown), "concepts": concepts}
    return {
        "recommended": set(found.recommended),
        "mentioned": set(found.mentioned),
        "unknown": set(found.unknown),
        "concepts": concepts,
    }


def _prf(tp: int, predicted: int, gold: int) -> dict:
    precision = tp / predicted if predicted else float("nan")
    recall = tp / gold if gold else float("nan")
    return {"tp": tp, "predicted": predicted, "gold": gold, "precision": precision, "recall": recall}


def evaluate_turns(matcher: ConceptMatcher, turns: list[LabelledTurn]) -> dict:
    """Micro precision and recall per role (`user`, `system`, `all`) of recommended, mentioned
    and all catalog films, out-of-catalog films (compared by `title_key`), concepts per field and
    all concepts; the turns where prediction and label differ, under `errors`."""
    kinds = (*TITLE_KINDS, "concepts", *(f"concepts:{f}" for f in CONCEPT_FIELDS))
    counts = {role: {k: [0, 0, 0] for k in kinds} for role in (*ROLES, "all")}
    errors = []
    for turn in turns:
        got = predict(matcher, turn)
        gold = {
            "recommended": set(turn.recommended),
            "mentioned": set(turn.mentioned),
            "unknown": set(turn.unknown),
            "concepts": set(turn.concepts),
        }
        for side in (got, gold):
            side["catalog"] = side["recommended"] | side["mentioned"]
            side["unknown"] = {title_key(t) for t in side["unknown"]}
            for field in CONCEPT_FIELDS:
                side[f"concepts:{field}"] = {c for c in side["concepts"] if c[0] == field}
        for role in (turn.role, "all"):
            for kind in kinds:
                tp, n_pred, n_gold = counts[role][kind]
                counts[role][kind] = [
                    tp + len(got[kind] & gold[kind]),
                    n_pred + len(got[kind]),
                    n_gold + len(gold[kind]),
                ]
        differs = {
            k: {"predicted": sorted(got[k]), "gold": sorted(gold[k])}
            for k in ("recommended", "mentioned", "unknown", "concepts")
            if got[k] != gold[k]
        }
        if differs:
            errors.append({"id": turn.id, "role": turn.role, **differs})
    result = {role: {kind: _prf(*values) for kind, values in by_kind.items()} for role, by_kind in counts.items()}
    result["turns"] = {role: sum(1 for t in turns if role in ("all", t.role)) for role in (*ROLES, "all")}
    result["errors"] = errors
    return result


def markdown_table(result: dict, kinds=("recommended", "mentioned", "catalog", "unknown", "concepts")) -> str:
    """Precision / recall (gold count) per kind and role, as a Markdown table."""

    def cell(counts: dict) -> str:
        if not counts["gold"] and not counts["predicted"]:
            return "–"
        p = "–" if counts["predicted"] == 0 else f"{counts['precision']:.2f}"
        r = "–" if counts["gold"] == 0 else f"{counts['recall']:.2f}"
        return f"{p} / {r} ({counts['gold']})"

    lines = ["| | " + " | ".join(kinds) + " |", "|---" * (len(kinds) + 1) + "|"]
    for role in (*ROLES, "all"):
        lines.append(f"| {role} | " + " | ".join(cell(result[role][k]) for k in kinds) + " |")
    return "\n".join(lines)


def main() -> None:
    import argparse

    from crseval.catalog.index import CatalogIndex

    here = Path(__file__).resolve().parents[1]
    parser = argparse.ArgumentParser(description="film and concept extraction against hand labels")
    parser.add_argument("--split", choices=("dev", "test", "all"), default="test")
    parser.add_argument("--corpus", type=Path, default=here.parent / "shared/data/crsarena/crs_arena_dial_open.json")
    parser.add_argument("--labels", type=Path, default=here / "tests/data/crsarena_labels/labels.jsonl")
    parser.add_argument("--catalog", type=Path, required=True, help="a folder with index_catalog's outputs")
    args = parser.parse_args()
    index = CatalogIndex.read(args.catalog / "films.parquet", args.catalog / "concepts.parquet")
    turns = [t for t in load_turn_labels(args.labels, args.corpus) if args.split in ("all", t.split)]
    print(markdown_table(evaluate_turns(ConceptMatcher(index.concepts, index.films), turns)))


if __name__ == "__main__":
    main()
