"""Audit of the extractors on a template-only run: do the numbers describe what happened?

    python audits/extraction.py [--sessions 10] [--turns 12] [--shift-every 3] [--catalog PATH]
        [--field-order genre,actor,...,plot_keyword] [--track-plot-keywords] [--score-plot-keywords]

Simulates the template system (which proposes exactly the films of its candidate list and
never repeats one) on the full catalog and reports what the extractors made of it:
- phantom titles: "recommended" titles that are not among the films the agent put forward;
- user turns whose extracted concepts go beyond what the simulator meant (focus, gold
  constraints and bridge), and the values that caused it;
- the template system's tracking precision/recall/joint accuracy and its repeat rate;
- shifts whose named anchor had not come up in the dialogue; bridges equal to the new focus;
- the realised contradiction rate over ordinary turns.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import Counter
from pathlib import Path

import pandas as pd

from crseval.catalog.build import build_index
from crseval.catalog.index import CatalogIndex
from crseval.core.io import write_json, write_parquet
from crseval.language.concepts import ConceptMatcher
from crseval.metrics import grounded
from crseval.simulate.shard import build_shard_runner

REPO = Path(__file__).resolve().parents[1]
ORDINARY = ("accept", "reject", "ask", "no_title", "contradict")


def simulate(
    folder: Path,
    catalog: Path,
    sessions: int,
    turns: int,
    shift_every: int,
    field_order: list[str],
    track_plot_keywords: bool,
) -> list[dict]:
    films, concepts, summary = build_index(
        catalog,
        REPO / "resources/wordlists/non_genre_values.tsv",
        {"per_film": 5, "min_df": 2, "max_df": 0.5, "lemmatize": True},
    )
    write_parquet(films, folder / "films.parquet")
    write_parquet(concepts, folder / "concepts.parquet")
    write_json(summary, folder / "summary.json")
    runner = build_shard_runner(
        system={"name": "template", "agent": "template"},
        simulator={
            "templates": str(REPO / "resources/templates/user.yaml"),
            "shift_every": shift_every,
            "field_order": field_order,
            "contradiction_rate": 0.1,
            "accept_rate": 0.7,
            "max_bridge_share": 0.1,
            "paraphrase": {"enabled": False},
        },
        agent={"candidates": 5, "history_turns": 2, "track_plot_keywords": track_plot_keywords},
        experiment_seed=20261122,
        turns=turns,
        films=folder / "films.parquet",
        concepts=folder / "concepts.parquet",
        catalog_summary=folder / "summary.json",
        schema=REPO / "src/crseval/core/schemas/session.schema.yaml",
        llm_runtime={"timeout_s": 1, "max_retries": 0, "backoff_s": 0},
        threads=1,
    )
    started = time.perf_counter()
    runner.run(range(sessions), progress=folder / "progress.jsonl", output=folder / "shard.jsonl")
    seconds = time.perf_counter() - started
    records = [json.loads(line) for line in (folder / "shard.jsonl").read_text().splitlines()]
    print(f"simulated {sessions} sessions x {turns} turns in {seconds:.1f} s")
    return records


def audit(records: list[dict], folder: Path, fields: tuple[str, ...]) -> dict:
    index = CatalogIndex.read(folder / "films.parquet", folder / "concepts.parquet")
    matcher = ConceptMatcher(index.concepts, index.films, fields)
    phantom, recommended_total, extra_turns, extra_values, missed = Counter(), 0, 0, Counter(), Counter()
    unseen_anchor, bridge_is_focus, shifts, ordinary, contradictions = 0, 0, 0, 0, 0
    for record in records:
        dialogue_titles: set[str] = set()
        for turn in record["turns"]:
            meta = turn["user_meta"]
            proposed = set(turn["candidate_titles"][:2])
            missed.update(proposed - set(turn["recommended_titles"]))
            for title in turn["recommended_titles"]:
                recommended_total += 1
                if title not in proposed:
                    phantom[title] += 1
            meant = {(c["field"], c["value"]) for c in meta["constraints"]}
            if meta["bridge"]:
                meant.add((meta["bridge"]["field"], meta["bridge"]["value"]))
            read = {(m.field, m.value) for m in matcher.values(turn["user_text"])}
            if read - meant:
                extra_turns += 1
                extra_values.update(f"{f} {v}" for f, v in read - meant)
            if meta["shift_event"]:
                shifts += 1
                event = next(e for e in record["shift_events"] if e["turn"] == turn["turn"])
                if event["from_anchor"] not in dialogue_titles and not event.get("anchor_new"):
                    unseen_anchor += 1
                if event["bridge"] == event["to_focus"]:
                    bridge_is_focus += 1
            if meta["stage"] in ORDINARY:
                ordinary += 1
                contradictions += meta["stage"] == "contradict"
            dialogue_titles.update(turn["recommended_titles"])
            dialogue_titles.update(turn.get("mentioned_titles") or [])
            dialogue_titles.update(meta.get("titles") or [])
    space = grounded.ConceptSpace(index, matcher, grounded.TasSettings(fields=fields))
    scores = pd.DataFrame([grounded.score_session(r, space)[0] for r in records])
    tp = pred = gold = 0
    for record in records:
        _, rows = grounded.score_session(record, space)
        tp += sum(r["dst_tp"] for r in rows)
        pred += sum(r["dst_pred"] for r in rows)
        gold += sum(r["dst_gold"] for r in rows)
    user_turns = sum(len(r["turns"]) for r in records)
    return {
        "phantom_titles": f"{sum(phantom.values())} of {recommended_total}",
        "phantom_examples": dict(phantom.most_common(6)),
        "proposed_titles_not_recognised": f"{sum(missed.values())}",
        "missed_examples": dict(missed.most_common(6)),
        "user_turns_with_extra_concepts": f"{extra_turns} of {user_turns}",
        "extra_concepts": dict(extra_values.most_common(8)),
        "tas": round(float(scores["tas"].mean()), 4),
        "hallucinated_concepts": round(float(scores["hallucinated_concepts"].mean()), 3),
        "missing_concepts": round(float(scores["missing_concepts"].mean()), 3),
        "dst_precision_micro": round(tp / pred, 3) if pred else None,
        "dst_recall_micro": round(tp / gold, 3) if gold else None,
        "dst_joint_accuracy": round(float(scores["dst_joint_accuracy"].mean()), 3),
        "repeat_rate": round(float(scores["repeat_rate"].mean()), 3),
        "shifts_naming_an_unseen_anchor_as_if_seen": f"{unseen_anchor} of {shifts}",
        "bridges_equal_to_new_focus": bridge_is_focus,
        "contradictions": f"{contradictions} of {ordinary} ordinary turns",
        "shifts_announcing_a_new_anchor": sum(bool(e.get("anchor_new")) for r in records for e in r["shift_events"]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=10)
    parser.add_argument("--turns", type=int, default=12)
    parser.add_argument("--shift-every", type=int, default=3)
    parser.add_argument("--catalog", default=str(REPO.parent / "shared/data/opendialkg_movie_data.json"))
    parser.add_argument("--field-order", default="genre,actor,director,writer,language,year")
    parser.add_argument("--track-plot-keywords", action="store_true", help="the tracker reads plot keywords as wishes")
    parser.add_argument("--score-plot-keywords", action="store_true", help="E(x) includes plot keywords")
    args = parser.parse_args()
    fields = ("genre", "actor", "director", "writer", "language", "year") + (
        ("plot_keyword",) if args.score_plot_keywords else ()
    )
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        records = simulate(
            folder,
            Path(args.catalog),
            args.sessions,
            args.turns,
            args.shift_every,
            args.field_order.split(","),
            args.track_plot_keywords,
        )
        print(json.dumps(audit(records, folder, fields), indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
