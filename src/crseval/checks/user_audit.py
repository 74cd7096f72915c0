"""The simulated user's own errors, counted: per profile, how its turns were worded and whether each reads back.

A user that speaks with a learned voice (crseval.simulate.user.voice) words a turn with people's turns where
the voice has one for the act, and with its profile's rule voice where it has none or no draw reads
back as meant. The audit counts, per profile: the turns, the turns worded by the voice and by the rules
(by reason), the templates drawn that read back otherwise than meant (redraws), and the read-back
failures of the sessions as written: every user turn is read again with the extractors the metrics
use, and its values and titles must be exactly those its ground truth records (0 is the only right
answer). With a voice, also the templates it holds per act.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable

import pandas as pd

from crseval.language.concepts import ConceptMatcher
from crseval.language.tracker import extract_statements


def misread(matcher: ConceptMatcher, text: str, meta: dict, previous: list[str]) -> str:
    """How a user turn's words differ from what its ground truth says it states ("" where they do not)."""
    read = {(m.field, m.value, role) for m, role in extract_statements(matcher, text, previous)}
    meant = {(s["field"], s["value"], s["role"]) for s in meta.get("stated", [])}
    titles = set(matcher.title_recognizer.recognise(text, candidates=previous).all)
    problems = []
    if read != meant:
        problems.append(f"values read {sorted(read)} but meant {sorted(meant)}")
    if titles != set(meta.get("titles", [])):
        problems.append(f"titles read {sorted(titles)} but meant {sorted(meta.get('titles', []))}")
    return "; ".join(problems)


def audit_table(records: Iterable[dict], matcher: ConceptMatcher, profiles: dict[str, str]) -> pd.DataFrame:
    """One row per profile: turns, voiced and rule-worded turns (with the fallbacks by reason), redraws,
    read-back failures (and the first failing turn). A session's profile is the one it records, else
    `profiles[system]`. The explicit user's turns carry no paraphrase here: a reworded turn
    (`simulator.paraphrase`) is read as the rules worded it."""
    counts: dict[str, Counter] = defaultdict(Counter)
    first_failure: dict[str, str] = {}
    for record in records:
        profile = record.get("profile") or profiles[record["system"]]
        count = counts[profile]
        count["sessions"] += 1
        previous: list[str] = []
        for turn in record["turns"]:
            meta = turn.get("user_meta") or {}
            paraphrase = meta.get("paraphrase") or {}
            text = paraphrase.get("template_text") or turn["user_text"]
            count["turns"] += 1
            voice = meta.get("voice")
            if voice is not None:
                count[f"worded by the {voice['voice']} voice"] += 1
                count["redraws"] += voice["redraws"]
                if voice["fallback"]:
                    count[f"rules because: {voice['fallback']}"] += 1
            if problem := misread(matcher, text, meta, previous):
                count["read-back failures"] += 1
                first_failure.setdefault(profile, f"{record['session_id']} turn {turn['turn']}: {problem}")
            previous = turn.get("recommended_titles") or []
    rows = []
    for profile, count in counts.items():
        row = {"profile": profile, "sessions": count.pop("sessions"), "turns": count.pop("turns")}
        row["read-back failures"] = count.pop("read-back failures", 0)
        row["redraws"] = count.pop("redraws", 0)
        row.update(sorted(count.items()))
        row["first failure"] = first_failure.get(profile, "")
        rows.append(row)
    return pd.DataFrame(rows).fillna(0)


def pools_table(pools: dict[str, list]) -> pd.DataFrame:
    """The templates a voice holds per act (and where a dialogue's turn was said), summed over slot signatures."""
    rows = Counter()
    for key, templates in pools.items():
        position, act, _ = key.split("|")
        rows[(act or "leaving", position)] += len(templates)
    return pd.DataFrame(
        [{"act": act, "said as": position, "templates": n} for (act, position), n in sorted(rows.items())]
    )


def audit_markdown(table: pd.DataFrame, pools: pd.DataFrame | None) -> str:
    lines = [
        "# The simulated user's own errors",
        "",
        "Per profile: its turns, how they were worded (a profile that speaks with a learned voice: by the "
        "voice, or by its rule voice and why), the templates drawn that read back otherwise than meant and "
        "were drawn again (redraws), and the read-back failures of the sessions as written (each user turn "
        "read again with the extractors the metrics use; 0 is the only right answer).",
        "",
    ]
    columns = [c for c in table.columns if c != "first failure"]
    lines += ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for _, row in table.iterrows():
        lines.append("| " + " | ".join(str(_plain(row[c])) for c in columns) + " |")
    failures = table[table["first failure"] != ""]
    for profile, failure in zip(failures["profile"], failures["first failure"]):
        lines += ["", f"First read-back failure of `{profile}`: {failure}"]
    if pools is not None and not pools.empty:
        lines += ["", "Templates the learned voice holds per act:", "", "| act | said as | templates |"]
        lines += ["|---|---|---|"]
        lines += [f"| {a} | {p} | {n} |" for a, p, n in zip(pools["act"], pools["said as"], pools["templates"])]
    return "\n".join(lines) + "\n"


def _plain(value):
    return int(value) if isinstance(value, float) and value.is_integer() else value
