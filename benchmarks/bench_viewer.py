"""Time of the session viewer (crseval.reports.viewer) on a synthetic experiment, written and opened.

    python benchmarks/bench_viewer.py [--sessions 5000] [--systems 4] [--turns 12] [--keep DIR] [--runs 3]

Builds an experiment of `--sessions` sessions (`--systems` systems meeting the same simulated users, 2-5,
`--turns` turns each, replies of LLM length, the simulator's hidden state, titles, judge scores and
rationales; sessions.parquet with the TAS and goal families' columns, turns.parquet with the per-turn
scores) in a temporary folder (`--keep`: in DIR, kept), writes the viewer and reports the seconds and
bytes. Then, in headless Chromium (/usr/bin/chromium, /usr/bin/chromedriver, Selenium), at 1280 x 900:
- open: from navigation start to the list drawn (`document.body.dataset.ready`; the page keeps the
  time as `crsevalViewer.readyAt`, from performance.now());
- filter: a text filter, a system filter and a metric range, each timed in the page with performance.now()
  around `crsevalViewer.filter(...)` and the layout it causes;
- session: from setting `#session=<id>` to the session drawn (its chunk loaded by a script tag).
Each is the median of `--runs` runs. Targets: open under 2 s, filter under 200 ms.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from crseval.core.session_records import write_sessions
from crseval.reports.viewer import write_viewer

SYSTEMS = ["oracle", "template", "grounded_llm", "chat_llm", "retrieval"]
GENRES = ["comedy", "drama", "horror", "western", "thriller", "romance", "animation", "documentary", "war", "crime"]
ACTORS = ["Tom Hanks", "Meryl Streep", "Denzel Washington", "Cate Blanchett", "Toshiro Mifune", "Juliette Binoche"]
FILMS = [f"{adjective} {noun}" for adjective in ("The Last", "Silent", "Blue", "Long", "Little", "Broken", "Golden")
         for noun in ("Road", "Harbor", "Summer", "Witness", "Garden", "Frontier", "Letter", "Island")]  # fmt: skip
REPLIES = [
    "Since you enjoy {genre} films, I think {film} would suit you: it is funny without being silly, and the "
    "cast, {actor} among them, carries the slower middle part well. If you want something lighter, {other} "
    "is a good second choice.",
    "Here are two ideas. {film} is a {genre} film with a strong lead performance by {actor}; {other} is older "
    "but often mentioned alongside it. Would you like something more recent, or does one of these sound good?",
    "You could try {film}. It is not the best-known {genre} film, but it has a loyal following. I can also "
    "suggest films similar to {other}, if you tell me what you liked about it.",
]
USERS = [
    "Hi! I'm in the mood for a {genre} film tonight, any ideas?",
    "{film} sounds good, but could you suggest another {genre} one?",
    "I've seen {film} already. Something else, maybe with {actor}?",
    "Actually, I changed my mind: something {genre} instead.",
]


def _records(system: str, user: int, turns: int) -> dict:
    chance = random.Random(user * 1000 + SYSTEMS.index(system))
    plan = random.Random(user)  # the user's plan: the same in every system
    genre, second = plan.sample(GENRES, 2)
    actor = plan.choice(ACTORS)
    shift_at = plan.randint(4, turns - 2)
    rows = []
    for t in range(1, turns + 1):
        focus = genre if t < shift_at else second
        film, other = chance.sample(FILMS, 2)
        user_text = USERS[0 if t == 1 else 3 if t == shift_at else chance.randint(1, 2)]
        rows.append(
            {
                "turn": t,
                "user_text": user_text.format(genre=focus, film=film, actor=actor),
                "user_meta": {
                    "focus_field": "genre",
                    "focus_value": focus,
                    "constraints": [
                        {"field": "genre", "value": focus, "negated": False},
                        {"field": "actor", "value": actor, "negated": False},
                    ],
                    "disclosure": ["volunteer", "on_ask"],
                    "said": [True, t > 2],
                    "revealed": [],
                    "shift_event": t == shift_at,
                    "plan_event": "shift" if t == shift_at else None,
                    "bridge": {"field": "actor", "value": actor} if t == shift_at else None,
                    "anchor_title": FILMS[user % len(FILMS)],
                    "stage": "open" if t == 1 else "shift" if t == shift_at else "ask",
                    "stated": [{"field": "genre", "value": focus, "role": "wish"}],
                    "titles": [],
                    "paraphrase": None,
                },
                "system_text": chance.choice(REPLIES).format(genre=focus, film=film, actor=actor, other=other),
                "system_constraints": [{"field": "genre", "value": focus, "negated": False}],
                "candidate_titles": [film, other],
                "recommended_titles": [film],
                "mentioned_titles": [other],
                "unknown_titles": ["A Film Nobody Made"] if chance.random() < 0.05 else [],
                "user_implies": {"accepts": [], "rejects": []},
                "system_asks": ["open"] if chance.random() < 0.2 else [],
                "llm": None,
            }
        )
    return {
        "session_id": f"{system}/s{user:05d}",
        "session_index": user,
        "system": system,
        "seed": 1000 + user,
        "catalog_sha": "0" * 64,
        "config_sha": "0" * 64,
        "liked_titles": plan.sample(FILMS, 3),
        "profile": plan.choice(["explicit", "implicit", "realistic"]),
        "ending": {"reason": "turn_limit", "turn": turns, "farewell": None},
        "turns": rows,
        "shift_events": [
            {
                "turn": shift_at,
                "from_focus": {"field": "genre", "value": genre},
                "to_focus": {"field": "genre", "value": second},
                "bridge": {"field": "actor", "value": actor},
                "from_anchor": FILMS[0],
                "to_anchor": FILMS[1],
                "anchor_new": False,
            }
        ],
    }


SESSION_METRICS = [
    "tas", "tas_cc", "tas_cr", "tas_copying", "tas_rec", "hallucinated_concepts", "recommendation_rate",
    "repeat_rate", "unknown_titles", "catalog_coverage", "tas_segment", "recovery_rate_cosine",
    "recovery_delay_cosine", "missing_concepts", "dst_f1", "rec_satisfaction", "success", "stale_rate",
]  # fmt: skip


def build(root: Path, sessions: int, systems: int, turns: int) -> dict:
    """The synthetic experiment under `root`: shards, sessions.parquet and turns.parquet."""
    names = SYSTEMS[:systems]
    users = sessions // systems
    shards, session_rows, turn_rows = [], [], []
    for system in names:
        records = [_records(system, user, turns) for user in range(users)]
        for shard in range(2):
            path = root / "sessions" / system / f"shard-{shard}.jsonl"
            write_sessions(records[shard::2], path)
            shards.append(path)
        for record in records:
            chance = random.Random(record["session_id"])
            ids = {k: record[k] for k in ("system", "session_id", "session_index", "seed")}
            session_rows.append(
                {
                    **ids,
                    "turns": turns,
                    **{m: chance.random() for m in SESSION_METRICS},
                    "judge_coherence": float(chance.randint(1, 5)),
                    "judge_coherence_rationale": "The replies follow the user's requests; after the shift "
                    "the system keeps recommending the earlier genre for one turn.",
                    "shard": record["session_index"] % 2,
                }
            )
            for t in range(1, turns + 1):
                cc, cr = chance.random(), chance.random()
                turn_rows.append(
                    {**ids, "turn": t, "cc": cc, "cr": cr, "copying": chance.random() / 10, "tas": (cc + cr) / 2}
                )
    tables = root / "tables"
    tables.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(session_rows).to_parquet(tables / "sessions.parquet")
    pd.DataFrame(turn_rows).to_parquet(tables / "turns.parquet")
    return {"sessions": tables / "sessions.parquet", "turns": tables / "turns.parquet", "shards": shards}


def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = "/usr/bin/chromium"
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,900"):
        options.add_argument(argument)
    return webdriver.Chrome(options=options, service=Service("/usr/bin/chromedriver"))


def wait(driver, condition: str, timeout: float = 30) -> None:
    end = time.monotonic() + timeout
    while not driver.execute_script(f"return !!({condition});"):
        if time.monotonic() > end:
            raise TimeoutError(condition)
        time.sleep(0.01)


TIMED = """
const start = performance.now();
const n = window.crsevalViewer.filter(arguments[0]);
document.body.offsetHeight;  // the layout the new rows cause
return [performance.now() - start, n];
"""


def measure_page(page: Path, runs: int, system: str) -> dict:
    driver = browser()
    found: dict[str, list] = {"open": [], "text": [], "system": [], "where": [], "session": []}
    try:
        for _ in range(runs):
            driver.get("about:blank")
            driver.get(page.as_uri())
            wait(driver, "document.body.dataset.ready === '1'")
            found["open"].append(driver.execute_script("return window.crsevalViewer.readyAt"))
            for key, options in (
                ("text", {"text": "s0042"}),
                ("system", {"text": "", "system": system}),
                ("where", {"system": "", "where": "tas < 0.3, success >= 0.5"}),
            ):
                milliseconds, matched = driver.execute_script(TIMED, options)
                found[key].append(milliseconds)
                found[f"{key}_matches"] = matched
            driver.execute_script("window.crsevalViewer.filter({where: ''})")
            sid = f"{system}/s00777"
            start = driver.execute_script("return performance.now()")
            driver.execute_script("location.hash = arguments[0]", "#session=" + sid)
            wait(driver, f"document.body.dataset.session === '{sid}'")
            found["session"].append(driver.execute_script("return window.crsevalViewer.renderedAt") - start)
    finally:
        driver.quit()
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=5000)
    parser.add_argument("--systems", type=int, default=4, choices=range(2, 6))
    parser.add_argument("--turns", type=int, default=12)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--keep", help="build the experiment and the viewer in this folder and keep them")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="crseval-viewer-") as scratch:
        root = Path(args.keep or scratch)
        start = time.perf_counter()
        inputs = build(root / "results", args.sessions, args.systems, args.turns)
        print(f"built {args.sessions} sessions ({args.systems} systems, {args.turns} turns) in "
              f"{time.perf_counter() - start:.1f} s")  # fmt: skip
        start = time.perf_counter()
        counts = write_viewer(inputs["sessions"], inputs["turns"], inputs["shards"], root / "viewer", "bench")
        seconds = time.perf_counter() - start
        listing = (root / "viewer" / "list.js").stat().st_size
        page = (root / "viewer" / "index.html").stat().st_size
        print(
            f"write_viewer: {seconds:.2f} s; {counts['bytes'] / 1e6:.1f} MB in {counts['chunks'] + 2} files "
            f"(index.html {page / 1e3:.0f} kB, list.js {listing / 1e6:.2f} MB, {counts['chunks']} chunks of "
            f"{(counts['bytes'] - listing - page) / counts['chunks'] / 1e3:.0f} kB on average)"
        )
        found = measure_page(root / "viewer" / "index.html", args.runs, SYSTEMS[1])
        median = {key: statistics.median(values) for key, values in found.items() if isinstance(values, list)}
        print(f"open (navigation start to the list drawn): {median['open']:.0f} ms (target < 2000)")
        print(f"text filter 's0042': {median['text']:.1f} ms, {found['text_matches']} sessions (target < 200)")
        print(f"system filter: {median['system']:.1f} ms, {found['system_matches']} sessions (target < 200)")
        print(f"range filter 'tas < 0.3, success >= 0.5': {median['where']:.1f} ms, {found['where_matches']} sessions")
        print(f"open a session (its chunk loaded): {median['session']:.0f} ms")
        print(f"(medians of {args.runs} runs; every run: {found})", file=sys.stderr)


if __name__ == "__main__":
    main()
