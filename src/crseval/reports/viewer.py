"""The session viewer: an experiment's sessions as static files to read in a browser, offline.

`write_viewer` writes `<output_dir>/index.html` (the page: viewer_assets/ inlined, no external font,
script or style), `<output_dir>/list.js` (one compact row per session: identifiers and the numeric
metrics of tables/sessions.parquet) and `<output_dir>/data/<n>.js` (the turns of about CHUNK_SIZE
sessions each: texts, the simulated user's hidden state, the titles the scorer recognised, the per-turn
CC, CR, copying and TAS of tables/turns.parquet, the judges' scores and rationales, and the tool calls of a
tool-using system, bounded: see `_tools`). The page loads the data with <script src> tags
(`window.crsevalData(payload)`, JSONP style), never fetch(), so it works opened from file:// and inside a
Snakemake report (`report(directory(...), htmlindex="index.html")`); a chunk is loaded when one of its
sessions is opened. Chunks hold whole session indices (the same seeded user in every system and trial), so a
side-by-side view reads one chunk.

Every string from the sessions is data: written JSON-escaped (`<`, `>` and `&` as \\u escapes, so that no
`</script>` or `<!--` closes or comments out the script; lone surrogates as \\u escapes too, so that the file
can be written in UTF-8), shown with textContent. A turn's user text and reply are carried up to TEXT_SHOWN
characters each: a longer one (a service may reply with a megabyte) is cut, with its length and a digest of the
whole (`user_cut`, `system_cut`), so that the page says so and the side-by-side view still sees two long replies
that differ after the cut; the session shards hold them whole. The title is the page's only text outside the
data: escaped, with the templates' placeholders filled in one pass, so that a title cannot pull in the script.
The output is deterministic: the same inputs give the same bytes.

URL hash (deep links; values URL-encoded, parameters joined by `&`):
- `#session=<session_id>`: one session, e.g. `#session=oracle%2Fs00003` (or `#session=oracle/s00003/t1`);
- `#side=<session_index>&trial=<t>&systems=<a>,<b>`: the same simulated user in several systems, side
  by side (`trial` 0, the first meeting, when left out; `systems` every system of seeded sessions when
  left out);
- the list, filtered: `#system=<name>&q=<text>&where=<condition>&sort=<column>&page=<n>` (each
  optional; `sort=-tas` sorts descending; `where` holds conditions such as `tas < 0.3, success = 1` or
  `0.2 <= tas < 0.5`, joined by commas or `and`).

Keys: j/k or arrow down/up move in the list (arrow left/right change page), Enter opens, s toggles side
by side, Escape goes back, / focuses the text filter; in a session, j/k open the next or previous one.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections import defaultdict
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

from crseval.core.io import atomic_path
from crseval.core.session_records import read_sessions
from crseval.judge import judge_columns
from crseval.metrics import families
from crseval.reports.findings import esc
from crseval.statistics import column_registry

ASSETS = Path(__file__).with_name("viewer_assets")
CHUNK_SIZE = 100  # sessions per data file, at least: a session index is never split
DECIMALS = 4
TURN_METRICS = ("cc", "cr", "copying", "tas")  # per-turn columns of turns.parquet shown beside each reply
VISIBLE = 8  # metric columns the list shows until the reader picks others
LIST_FIELDS = ("id", "system", "session_index", "seed", "profile", "trial", "turns", "ending", "chunk")
TOOL_CALLS_SHOWN = 50  # a turn's tool calls a chunk carries, in order; the others are only counted
TOOL_TEXT = 300  # characters of a call's arguments, result summary and error a chunk carries
TOOL_NAME = 60  # characters of a tool's name (the model's, so any text)
TOOL_NAMES = 8  # distinct tool names the summary of a turn's calls lists
TOOL_KEYS = ("tool_calls", "committed_titles", "tool_turn_end")  # a tool-using system's turn has them
TEXT_SHOWN = 20_000  # characters of a turn's user text and of its reply a chunk carries
_UNSAFE = re.compile("[<>&\u2028\u2029\ud800-\udfff]")  # inside JSON strings: written as \\u escapes
_PLACEHOLDERS = re.compile(r"\{\{title\}\}|/\*\{\{css\}\}\*/|/\*\{\{js\}\}\*/")


def write_viewer(
    sessions_table: str | Path,
    turns_table: str | Path,
    shards: list[str | Path],
    output_dir: str | Path,
    title: str = "",
) -> dict:
    """Write the viewer of the sessions in `shards` (session JSONL files) into `output_dir`, with the
    metrics of `sessions_table` and the per-turn scores of `turns_table`. Returns counts for a log:
    sessions, systems, chunks, turns, sessions without a row in the sessions table (`unscored`), rows of
    the table without a session in the shards (`without_record`), and bytes written."""
    output = Path(output_dir)
    records = _read_records(shards)
    table = pd.read_parquet(sessions_table)
    metrics = _metric_columns(table)
    scores = _session_scores(table, metrics)
    judges = _judgements(table)
    per_turn = _turn_metrics(turns_table)

    records.sort(key=_order)
    chunks = _chunks(records)
    chunk_of = {record["session_id"]: n for n, members in enumerate(chunks) for record in members}
    title = title or "crseval sessions"

    rows = []
    for record in sorted(records, key=lambda r: (r["system"], _order(r))):
        values = scores.get(record["session_id"], {})
        rows.append([*_identifiers(record, chunk_of), *(values.get(name) for name in metrics)])
    listing = {
        "kind": "list",
        "title": title,
        "fields": list(LIST_FIELDS),
        "columns": [_describe(name, i < VISIBLE) for i, name in enumerate(metrics)],
        "rows": rows,
        "systems": sorted({r["system"] for r in records}),
        "trials": any(r.get("trial") for r in records),
        "profiles": any(r.get("profile") for r in records),
        "chunks": len(chunks),
        "turn_metrics": [
            {"name": n, "label": column_registry.TURN_COLUMNS[n].label}
            for n in TURN_METRICS
            if any(n in m for m in per_turn.values())
        ],
    }
    written = {"list.js": _jsonp(listing)}
    for n, members in enumerate(chunks):
        sessions = {r["session_id"]: _session(r, per_turn, judges.get(r["session_id"])) for r in members}
        written[f"data/{n}.js"] = _jsonp({"kind": "chunk", "chunk": n, "sessions": sessions})
    written["index.html"] = _page(title)

    data = output / "data"
    data.mkdir(parents=True, exist_ok=True)
    for stale in data.glob("*.js"):  # chunks of an earlier, larger run
        if re.fullmatch(r"\d+\.js", stale.name) and f"data/{stale.name}" not in written:
            stale.unlink()
    for name, text in written.items():
        with atomic_path(output / name) as temporary:
            temporary.write_bytes(text.encode("utf-8"))
    ids = set(chunk_of)
    return {
        "sessions": len(records),
        "systems": len(listing["systems"]),
        "chunks": len(chunks),
        "turns": sum(len(r["turns"]) for r in records),
        "unscored": sum(1 for i in ids if i not in scores),
        "without_record": sum(1 for i in table["session_id"] if i not in ids),
        "bytes": sum(len(text.encode("utf-8")) for text in written.values()),
    }


def _read_records(shards: list[str | Path]) -> list[dict]:
    records, seen = [], set()
    for shard in sorted(map(str, shards)):
        for record in read_sessions(shard):
            if record["session_id"] in seen:
                raise ValueError(f"{shard}: session {record['session_id']!r} appears twice in the shards")
            seen.add(record["session_id"])
            records.append(record)
    return records


def _order(record: dict) -> tuple:
    """Chunk order: a session index's sessions (every system and trial) together."""
    return (record["session_index"], record.get("trial") or 0, record["system"], record["session_id"])


def _chunks(records: list[dict]) -> list[list[dict]]:
    """Records (in `_order`) in groups of at least CHUNK_SIZE, never splitting a session index."""
    chunks: list[list[dict]] = [[]]
    for record in records:
        last = chunks[-1]
        if len(last) >= CHUNK_SIZE and last[-1]["session_index"] != record["session_index"]:
            chunks.append(last := [])
        last.append(record)
    return chunks if chunks[0] else []


def _number(value):
    """A JSON number rounded to DECIMALS places, None for a missing value."""
    if value is None or value is pd.NA:
        return None
    if isinstance(value, bool):
        return int(value)
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    if math.isnan(value) or math.isinf(value):
        return None
    if value.is_integer() and abs(value) < 2**53:
        return int(value)
    return round(value, DECIMALS) + 0.0


def _text(value) -> str | None:
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return None
    return str(value)


def _metric_columns(table: pd.DataFrame) -> list[str]:
    """The numeric metrics of the table the list carries: success, the families' headline metrics and the
    judges' scores first (the columns shown until the reader picks others), then every other metric in
    table order; the human `satisfied` label of imported dialogues where some session has one."""
    numeric = []
    for name in table.columns:
        try:
            column = column_registry.session_column(name)
        except KeyError:
            continue
        if column.metric and pd.api.types.is_numeric_dtype(table[name]) and not pd.api.types.is_bool_dtype(table[name]):
            numeric.append(name)
    headline = families.headline_metrics(families.FAMILY_KINDS)
    panels = judge_columns.panel_judges(table.columns)
    judged = [judge_columns.score_column(c, j) for j in (None, *panels) for c in judge_columns.CRITERIA]
    first = [n for n in dict.fromkeys(["success", *headline, *judged]) if n in numeric]
    extra = ["satisfied"] if "satisfied" in table.columns and table["satisfied"].notna().any() else []
    return [*first, *extra, *(n for n in numeric if n not in first)]


def _describe(name: str, visible: bool) -> dict:
    column = column_registry.session_column(name)
    better = {True: 1, False: -1, None: 0}[column.higher_is_better]
    return {"name": name, "label": column.label, "unit": column.unit, "better": better, "visible": visible}


def _session_scores(table: pd.DataFrame, metrics: list[str]) -> dict[str, dict]:
    ids = table["session_id"].astype(str).tolist()
    values = {name: [_number(v) for v in table[name].tolist()] for name in metrics}
    return {sid: {name: values[name][i] for name in metrics} for i, sid in enumerate(ids)}


def _judgements(table: pd.DataFrame) -> dict[str, list[dict]]:
    """session id -> each judge's scores, spreads, G-Eval scores and rationales (judges with nothing
    recorded for the session are left out)."""
    found: dict[str, list[dict]] = defaultdict(list)
    ids = table["session_id"].astype(str).tolist()
    for judge in (None, *judge_columns.panel_judges(table.columns)):

        def cells(name: str, read, judge=judge) -> list:
            name = judge_columns.column(name, judge)
            return [read(v) for v in table[name].tolist()] if name in table.columns else [None] * len(ids)

        criteria = {
            criterion: {
                "score": cells(criterion, _number),
                "sd": cells(f"{criterion}_sd", _number),
                "geval": cells(f"{criterion}_geval", _number),
                "rationale": cells(f"{criterion}_rationale", _text),
            }
            for criterion in judge_columns.CRITERIA
        }
        missing = cells("missing_reason", _text)
        for i, sid in enumerate(ids):
            scores = [
                {"criterion": criterion, **{key: values[i] for key, values in parts.items()}}
                for criterion, parts in criteria.items()
            ]
            scores = [s for s in scores if any(s[key] is not None for key in ("score", "geval", "rationale"))]
            if scores or missing[i]:
                found[sid].append({"judge": judge or "judge", "scores": scores, "missing_reason": missing[i]})
    return found


def _turn_metrics(turns_table: str | Path) -> dict[tuple[str, int], dict]:
    """(session id, turn) -> the per-turn metrics turns.parquet has of TURN_METRICS."""
    names = set(pq.read_schema(turns_table).names)
    shown = [n for n in TURN_METRICS if n in names]
    if not shown or not {"session_id", "turn"} <= names:
        return {}
    turns = pd.read_parquet(turns_table, columns=["session_id", "turn", *shown])
    values = [[_number(v) for v in turns[n].tolist()] for n in shown]
    found = {}
    for i, (sid, turn) in enumerate(zip(turns["session_id"].astype(str).tolist(), turns["turn"].tolist())):
        found[(sid, int(turn))] = {n: column[i] for n, column in zip(shown, values) if column[i] is not None}
    return found


def _identifiers(record: dict, chunk_of: dict[str, int]) -> list:
    ending = record.get("ending") or {}
    return [
        record["session_id"],
        record["system"],
        record["session_index"],
        record.get("seed"),
        record.get("profile"),
        record.get("trial") or 0,
        len(record["turns"]),
        ending.get("reason"),
        chunk_of[record["session_id"]],
    ]


def _user_meta(meta: dict | None) -> dict | None:
    if meta is None:
        return None
    kept = dict(meta)
    paraphrase = kept.get("paraphrase")
    if paraphrase:  # the verdict and the template it paraphrased; not the LLM call's bookkeeping
        kept["paraphrase"] = {"verdict": paraphrase.get("verdict"), "template_text": paraphrase.get("template_text")}
    return kept


def _session(record: dict, per_turn: dict, judgements: list[dict] | None) -> dict:
    sid = record["session_id"]
    turns = []
    for turn in record["turns"]:
        user_text, user_cut = _shown(turn["user_text"])
        system_text, system_cut = _shown(turn.get("system_text", ""))
        turns.append(
            {
                "turn": turn["turn"],
                "user_text": user_text,
                "user_meta": _user_meta(turn.get("user_meta")),
                "system_text": system_text,
                "recommended_titles": turn.get("recommended_titles") or [],
                "mentioned_titles": turn.get("mentioned_titles") or [],
                "unknown_titles": turn.get("unknown_titles") or [],
                "user_implies": turn.get("user_implies"),
                "system_asks": turn.get("system_asks") or [],
                "metrics": per_turn.get((sid, turn["turn"]), {}),
            }
        )
        for key, cut in (("user_cut", user_cut), ("system_cut", system_cut)):
            if cut:  # only a cut text: the chunks of other sessions stay as they were
                turns[-1][key] = cut
        if any(key in turn for key in TOOL_KEYS):  # other systems' turns: the chunk as it always was
            turns[-1]["tools"] = _tools(turn)
    provenance = record.get("provenance") or {}
    return {
        "id": sid,
        "system": record["system"],
        "session_index": record["session_index"],
        "seed": record.get("seed"),
        "profile": record.get("profile"),
        "trial": record.get("trial") or 0,
        "liked_titles": record.get("liked_titles") or [],
        "ending": record.get("ending"),
        "shift_events": record.get("shift_events") or [],
        "labels": record.get("labels"),
        "source_file": provenance.get("source_file"),
        "judges": judgements or [],
        "turns": turns,
    }


def _shown(text) -> tuple[str | None, dict | None]:
    """A turn's text as a chunk carries it: whole up to TEXT_SHOWN characters; a longer one cut, with its
    length, the characters shown and the first 16 hex digits of the SHA-256 of the whole (None when not cut)."""
    if not isinstance(text, str) or len(text) <= TEXT_SHOWN:
        return text, None
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return text[:TEXT_SHOWN], {"chars": len(text), "shown": TEXT_SHOWN, "sha256": digest}


def _cut(text: str, limit: int = TOOL_TEXT) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _compact(value) -> str:
    """`value` as compact JSON (keys in the order recorded), cut to TOOL_TEXT characters."""
    return _cut(json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str))


def _titles(films) -> list[str]:
    return [str(f.get("title")) for f in films if isinstance(f, dict)] if isinstance(films, list) else []


def _result(name: str, result) -> str | None:
    """A call's recorded result summary as one line: the titles a search found (of how many), the title a
    film_details read, the titles a recommend committed; any other result as compact JSON."""
    if result is None:
        return None
    if isinstance(result, dict) and isinstance(result.get("films"), list):
        titles = " · ".join(_titles(result["films"]))
        if name == "recommend":
            return _cut(f"committed: {titles}")
        total = result.get("total")
        found = f"{len(result['films'])} of {total}" if isinstance(total, int) else f"{len(result['films'])}"
        return _cut(f"{found} found" + (f": {titles}" if titles else ""))
    if isinstance(result, dict) and "title" in result:
        return _cut(f"{result['title']}" + (f" (id {result['id']})" if "id" in result else ""))
    return _compact(result)


def _call(call: dict) -> dict:
    name = _cut(str(call.get("name")), TOOL_NAME)
    arguments = call.get("arguments")
    raw = arguments is None and call.get("arguments_text") is not None
    error = call.get("error")
    return {
        "step": _number(call.get("step")),
        "name": name,
        "arguments": _cut(str(call["arguments_text"])) if raw else _compact(arguments),
        "raw": raw,
        "status": str(call.get("status")),
        "result": _result(str(call.get("name")), call.get("result")),
        "error": None if error is None else _cut(str(error)),
        "latency_s": _number(call.get("latency_s")),
    }


def _tools(turn: dict) -> dict:
    """What a tool-using system's turn did (docs/own_recommender.md), bounded whatever the record holds:
    the first TOOL_CALLS_SHOWN calls, each with its arguments as compact JSON (or the excerpt of what the
    model sent when they were no JSON), status, result summary and error cut to TOOL_TEXT characters; over
    every call, how many there were (`more`: those not carried), how many failed or were ignored, and the
    tool names with their counts (the first TOOL_NAMES names; `more_names` the others); the titles the
    turn committed through `recommend` (None when it committed nothing) and how the turn ended."""
    calls = [c if isinstance(c, dict) else {} for c in (turn.get("tool_calls") or [])]
    statuses = [str(c.get("status")) for c in calls]
    names: dict[str, int] = {}
    for call in calls:
        name = _cut(str(call.get("name")), TOOL_NAME)
        names[name] = names.get(name, 0) + 1
    committed = turn.get("committed_titles")
    return {
        "count": len(calls),
        "errors": statuses.count("error"),
        "ignored": statuses.count("ignored"),
        "names": [[name, n] for name, n in list(names.items())[:TOOL_NAMES]],
        "more_names": max(0, len(names) - TOOL_NAMES),
        "calls": [_call(c) for c in calls[:TOOL_CALLS_SHOWN]],
        "more": max(0, len(calls) - TOOL_CALLS_SHOWN),
        "committed": None if committed is None else [str(t) for t in committed],
        "end": _text(turn.get("tool_turn_end")),
    }


def _jsonp(payload: dict) -> str:
    """`window.crsevalData(<payload>);`: JSON with sorted keys, nothing that could close a script tag or
    open markup (`<`, `>`, `&` as \\u escapes; they only occur inside strings), nothing UTF-8 cannot encode (a
    lone surrogate, which a JSON line may hold as an escape, as its \\u escape)."""
    text = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return "window.crsevalData(" + _UNSAFE.sub(lambda m: f"\\u{ord(m[0]):04x}", text) + ");\n"


def _page(title: str) -> str:
    """index.html: the template with the style sheet and the script inlined and the title escaped, every
    placeholder filled in one pass (a title holding `/*{{js}}*/` stays text)."""
    template = (ASSETS / "index.html").read_text(encoding="utf-8")
    css = (ASSETS / "viewer.css").read_text(encoding="utf-8")
    script = (ASSETS / "viewer.js").read_text(encoding="utf-8")
    if "</style" in css.lower() or "</script" in script.lower():
        raise ValueError("a viewer asset would close its own tag")
    filled = {"{{title}}": esc(title), "/*{{css}}*/": css, "/*{{js}}*/": script}
    return _PLACEHOLDERS.sub(lambda m: filled[m[0]], template)
