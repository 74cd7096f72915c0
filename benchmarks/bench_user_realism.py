"""Peak memory of the `user_realism` rule (crseval.checks.user_realism) on invented inputs.

    python benchmarks/bench_user_realism.py [--cases normal,long-turn,large-reference,at-bound,over-bound]
        [--words 20000] [--dialogues 18361] [--resamples 10000] [--before-src PATH] [--limit-gb 8] [--outputs]

Each case runs in a process of its own, as the rule runs: `load_reference` of an invented JSON-lines
reference, the simulated users' turns of invented session records (`simulated_turns`), then `realism_table`
with the demo catalog's reader (`read_turn`) and catalog names, 5 folds, `--resamples` resamples (10,000:
the default of `stats.bootstrap_resamples`), and the report (`realism_markdown`). Nothing is read from a real corpus.

- `normal`: the size of `config/user_profiles.yaml`: four profiles, each over eight systems, 60 people (session
  indices, each meeting all eight systems) of 12 turns each, 23,040 simulated turns (5,760 a profile pooled),
  against 120 real dialogues (the size of the held-out half of the CRSArena-Dial open dialogues), with the
  replies' cases read (crseval.replies.cases) where the tree reads them;
- `long-turn`: 480 simulated sessions of two users over four systems (each session a person of its own)
  against 120 real dialogues, one simulated turn of `--words` words;
- `large-reference`: the 480 sessions against `--dialogues` real dialogues (18,361: about 10 MB);
- `at-bound`: the largest reference measured against: MAX_REFERENCE_DIALOGUES dialogues just under
  MAX_REFERENCE_BYTES (the bounds of the tree, else 50,000 and 64 MiB);
- `over-bound`: a reference just over MAX_REFERENCE_BYTES: how long until it is refused, and at what
  peak.

Peak memory is the child's ru_maxrss. Each child's address space is limited to `--limit-gb` (RLIMIT_AS), so
that a tree whose memory grows without bound stops with a MemoryError, reported, instead of taking the
machine. `--before-src` runs another source tree (e.g. `git archive HEAD~1 src | tar -x -C /tmp/before`, its
src/ folder) beside this one. `--outputs` writes each tree's table (and report) under a temporary folder and
says whether the tables are the same, byte for byte.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CASES = ("normal", "long-turn", "large-reference", "at-bound", "over-bound")
PHRASES = (
    "hello there",
    "any good crime movie?",
    "I'll watch it, thanks",
    "no, something else",
    "what is it about?",
    "seen it",
    "something funny please",
    "thanks",
    "ok",
    "maybe a drama from the nineties",
    "who is in it?",
    "a thriller with a twist",
)
# invented words: a turn drawn from them is seldom said twice, as people's turns
WORDS = tuple(f"{a}{b}" for a in ("film", "watch", "good", "some", "like", "more", "late", "dark") for b in "aeiouyst")


def invented_turn(rng) -> str:
    if rng.random() < 0.4:
        return str(rng.choice(PHRASES))
    return " ".join(rng.choice(WORDS, size=int(rng.integers(1, 16))))


def write_reference(path: Path, dialogues: int, turns: int = 4, seed: int = 3) -> Path:
    """`dialogues` invented dialogues in the `jsonl` format, two of them per user, 1 to 2 x `turns` - 1 user
    turns each (`turns` on average)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    with path.open("w", encoding="utf-8") as out:
        for i in range(dialogues):
            said = []
            for _ in range(int(rng.integers(1, 2 * turns))):
                said += [{"role": "user", "text": invented_turn(rng)}, {"role": "system", "text": "How about Heat?"}]
            dialogue = {"system": f"crs{i % 9}", "dialogue_id": f"d{i}", "user_id": f"u{i // 2}", "turns": said}
            out.write(json.dumps(dialogue) + "\n")
    return path


def reference_at_bound(path: Path, size: int, dialogues: int) -> Path:
    """A reference of `dialogues` dialogues and just under `size` bytes (their user turns as many as fit)."""
    per_turn = write_reference(path, 500, 8).stat().st_size / (500 * 8)
    write_reference(path, dialogues, max(1, int(0.97 * size / dialogues / per_turn)))
    if path.stat().st_size > size:
        raise SystemExit(f"{path}: {path.stat().st_size:,} bytes, over the {size:,} aimed at")
    return path


def pad_reference(path: Path, size: int) -> Path:
    """A reference of at least `size` bytes: invented dialogues repeated under new ids."""
    lines = write_reference(path, 2_000).read_text(encoding="utf-8").splitlines()
    with path.open("a", encoding="utf-8") as out:
        copy = 0
        while path.stat().st_size <= size:
            copy += 1
            out.write("".join(line.replace('"dialogue_id": "d', f'"dialogue_id": "c{copy}-d') + "\n" for line in lines))
            out.flush()
    return path


def profile_records(people: int = 60, turns: int = 12, seed: int = 5) -> list[dict]:
    """Session records the size of config/user_profiles.yaml: four profiles, eight systems each, `people`
    session indices (one seed each, meeting every system of the profile), `turns` user turns a session,
    each answered by an invented reply."""
    import numpy as np

    rng = np.random.default_rng(seed)
    replies = ("How about Heat (1995)?", "What kind of film do you like?", "Sure.", "Heat is a crime film.")
    records = []
    for p, profile in enumerate(("explicit", "implicit", "realistic", "learned")):
        for system in (
            f"{agent}-{profile}"
            for agent in ("oracle", "asker", "literal", "lag1", "lag2", "stubborn", "random", "template")
        ):
            for i in range(people):
                said = [
                    {"user_text": invented_turn(rng), "system_text": str(rng.choice(replies))} for _ in range(turns)
                ]
                records.append(
                    {
                        "session_id": f"{system}/s{i:05d}",
                        "session_index": i,
                        "seed": 1000 * p + i,
                        "system": system,
                        "profile": profile,
                        "turns": said,
                        "ending": {"reason": ("abandoned", "turn_limit")[i % 2]},
                    }
                )
    return records


def simulated_records(sessions: int, long_words: int, seed: int = 5) -> list[dict]:
    """Session records of two profiles over four systems, 2 to 12 user turns each; with `long_words`, the
    first session's second turn has that many words."""
    import numpy as np

    rng = np.random.default_rng(seed)
    records = []
    for i in range(sessions):
        turns = [{"user_text": invented_turn(rng)} for _ in range(int(rng.integers(2, 13)))]
        if long_words and i == 0:
            turns[1] = {"user_text": " ".join(rng.choice(WORDS, size=long_words))}
        reason = ("abandoned", "turn_limit", "accepted")[i % 3]
        system = f"system{i % 4}"
        profile = ("explicit", "learned")[i % 2]
        records.append(
            {
                "session_id": f"{system}-{i}",
                "system": system,
                "profile": profile,
                "turns": turns,
                "ending": {"reason": reason},
            }
        )
    return records


PACKAGES = ("checks", "analysis")  # where user_realism lives: today, and in a tree from before the split


def run_case(case: str, args, workdir: Path, outputs: Path | None) -> dict:
    """One case here (called in the child process)."""
    # imported here, from the tree measured (PYTHONPATH of the child): crseval.checks, or crseval.analysis in
    # a tree from before the library's packages were split
    import importlib.util

    user_realism = next(
        importlib.import_module(f"crseval.{package}.user_realism")
        for package in PACKAGES
        if importlib.util.find_spec(f"crseval.{package}") is not None
    )

    limit = int(args.limit_gb * (1 << 30))
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    bound = getattr(user_realism, "MAX_REFERENCE_BYTES", 64 << 20)
    reference = workdir / f"reference-{case}.jsonl"
    if not reference.exists():
        if case == "over-bound":
            pad_reference(reference, bound)
        elif case == "at-bound":
            reference_at_bound(reference, bound, getattr(user_realism, "MAX_REFERENCE_DIALOGUES", 50_000))
        else:
            write_reference(reference, args.dialogues if case == "large-reference" else 120)
    records = (
        profile_records() if case == "normal" else simulated_records(480, args.words if case == "long-turn" else 0)
    )
    started_cpu, started = time.process_time(), time.perf_counter()
    result = {"case": case, "reference_bytes": reference.stat().st_size}
    try:
        result.update(measure_realism(user_realism, reference, records, args.resamples, outputs))
    except MemoryError as error:
        result["failed"] = f"MemoryError: {error}"
    except ValueError as error:  # ReferenceTooLarge is a ValueError
        result["failed"] = f"{type(error).__name__}: {error}"
    result["seconds"] = round(time.perf_counter() - started, 1)
    result["cpu_seconds"] = round(time.process_time() - started_cpu, 1)
    result["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    return result


def measure_realism(user_realism, reference: Path, records: list[dict], resamples: int, outputs: Path | None) -> dict:
    from crseval.catalog.build import build_index
    from crseval.catalog.index import CatalogIndex
    from crseval.language.concepts import ConceptMatcher
    from crseval.language.user_acts import read_turn

    films, concepts, _ = build_index(
        REPO / "resources" / "catalog" / "demo_movies.json",
        REPO / "resources" / "wordlists" / "non_genre_values.tsv",
        {"per_film": 5, "min_df": 2, "max_df": 0.5, "lemmatize": True},
    )
    index = CatalogIndex(films.to_pandas(), concepts.to_pandas())
    matcher = ConceptMatcher(index.concepts, index.films)
    extra = {}
    if hasattr(user_realism, "gather_simulated"):  # a tree that measures per person, at three volumes
        cases = user_realism.reply_case_reader(matcher)
        split = user_realism.load_reference(reference, "jsonl", reply_cases=cases)
        gathered = user_realism.gather_simulated(records, {}, cases)
        users, systems, extra = gathered.users, gathered.systems, {"pooled": gathered.pooled}
    else:
        split = user_realism.load_reference(reference, "jsonl")
        users, systems = user_realism.simulated_turns(records, {})
    table = user_realism.realism_table(
        users,
        systems,
        split.real,
        5,
        resamples,
        0,
        lambda text: bool(matcher.titles(text)) or bool(matcher.values(text)),
        read=lambda text: read_turn(text, matcher),
        **extra,
    )
    if outputs is not None:
        outputs.mkdir(parents=True, exist_ok=True)
        table.to_csv(outputs / "user_realism.csv", index=False)
        (outputs / "user_realism.md").write_text(
            user_realism.realism_markdown(table, reference.name, split.real, split)
        )
    pooled = sum(len(turns.texts) for turns in extra.get("pooled", users).values())
    return {
        "real_dialogues": len(set(split.real.sessions)),
        "real_turns": len(split.real.texts),
        "rows": len(table),
        "simulated_turns": pooled,
    }


def measure(case: str, args, workdir: Path, source: str | None, outputs: Path | None) -> dict:
    """Run one case on the source tree `source` (this one by default) in a process of its own."""
    if source and not any((Path(source) / "crseval" / package / "user_realism.py").is_file() for package in PACKAGES):
        raise SystemExit(f"--before-src {source}: no crseval/checks/user_realism.py there (a tree's src/ folder)")
    env = {**os.environ, "PYTHONPATH": source or str(REPO / "src")}
    command = [sys.executable, __file__, "--child", case, "--workdir", str(workdir)]
    command += ["--words", str(args.words), "--dialogues", str(args.dialogues), "--resamples", str(args.resamples)]
    command += ["--limit-gb", str(args.limit_gb)]
    if outputs is not None:
        command += ["--outputs-to", str(outputs)]
    output = subprocess.run(command, capture_output=True, text=True, check=True, env=env).stdout
    return json.loads(output.strip().splitlines()[-1])


def compare_tables(now: Path, then: Path) -> str:
    """Whether two trees' tables are the same byte for byte; else which rows differ, and by how much."""
    import numpy as np
    import pandas as pd

    if now.read_bytes() == then.read_bytes():
        return "tables identical"
    new, old = pd.read_csv(now), pd.read_csv(then)
    key = ["user", "system", "measure"]
    joined = new.merge(old, on=key, how="outer", suffixes=("", "_before"), indicator=True)
    lines = [f"tables differ: rows only now: {sorted(set(joined.loc[joined['_merge'] == 'left_only', 'measure']))}"]
    lines.append(f"rows only before: {sorted(set(joined.loc[joined['_merge'] == 'right_only', 'measure']))}")
    both = joined[joined["_merge"] == "both"]
    for column in ("simulated", "real", "difference", "ci_low", "ci_high"):
        a, b = both[column].to_numpy(float), both[f"{column}_before"].to_numpy(float)
        differ = ~((a == b) | (np.isnan(a) & np.isnan(b)))
        if differ.any():
            relative = np.nanmax(np.abs(a[differ] - b[differ]) / np.maximum(np.abs(b[differ]), 1e-300))
            measures = sorted(set(both.loc[differ, "measure"]))
            lines.append(f"{column} differs in {differ.sum()} rows ({', '.join(measures)}), relative {relative:.1e}")
    return "; ".join(lines)


def describe(tree: str, found: dict) -> str:
    line = f"  {tree:7s} peak RSS {found['peak_rss_mb']:>6,} MB, {found['seconds']:>6.1f} s"
    line += f" ({found['cpu_seconds']:.1f} CPU s), reference of {found['reference_bytes']:,} bytes"
    if "failed" in found:
        return line + f": {found['failed'][:160]}"
    line += f": {found['real_turns']:,} real turns of {found['real_dialogues']:,} dialogues"
    return line + f", {found.get('simulated_turns', 0):,} simulated turns measured, {found['rows']} rows"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--words", type=int, default=20_000, help="words of the long turn (long-turn)")
    parser.add_argument("--dialogues", type=int, default=18_361, help="real dialogues (large-reference)")
    parser.add_argument("--resamples", type=int, default=10_000, help="stats.bootstrap_resamples (its default)")
    parser.add_argument("--before-src", help="a source tree (its src/ folder) to run beside this one")
    parser.add_argument("--limit-gb", type=float, default=8.0, help="address space of each child (RLIMIT_AS)")
    parser.add_argument("--outputs", action="store_true", help="compare each tree's table and report")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--workdir", help=argparse.SUPPRESS)
    parser.add_argument("--outputs-to", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        outputs = Path(args.outputs_to) if args.outputs_to else None
        print(json.dumps(run_case(args.child, args, Path(args.workdir), outputs)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        for case in args.cases.split(","):
            if case not in CASES:
                raise SystemExit(f"unknown case {case!r}; known: {', '.join(CASES)}")
            print(f"{case} ({args.resamples:,} resamples):", flush=True)
            trees = {"now": None, **({"before": args.before_src} if args.before_src else {})}
            found = {}
            for tree, source in trees.items():
                outputs = workdir / f"{case}-{tree}" if args.outputs else None
                found[tree] = measure(case, args, workdir, source, outputs)
                print(describe(tree, found[tree]), flush=True)
            if args.outputs and len(found) == 2 and not any("failed" in f for f in found.values()):
                print("  " + compare_tables(*(workdir / f"{case}-{tree}" / "user_realism.csv" for tree in found)))


if __name__ == "__main__":
    main()
