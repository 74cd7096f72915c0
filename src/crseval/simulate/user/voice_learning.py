"""Learning a voice from a corpus of real dialogues (crseval.simulate.user.voice says what a voice is).

The corpus is read by its importer (any importing format), its dialogues split into parts by a hash of
their user's id or their own (crseval.simulate.user.voice.dialogue_part), and the user turns of one part read,
typed and pooled by `learn_voice`; `fitted_knobs` gives the profile knobs the same turns show. Each turn is
read as people see it (crseval.simulate.user.voice.visible_text: no format or control character, NFKC), so that a
zero-width space inside "co\\u200bmedy" neither hides the value from the rules nor stays in a template. A turn
longer than a person types (MAX_TEMPLATE_CHARS) is left out, counted; a part of the corpus of which no
turn is kept has nothing to teach, and learning it is a CorpusError rather than a voice that says nothing.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np

from crseval.core.canonical import canonical_json
from crseval.corpora.dialogue import CorpusError
from crseval.corpora.formats import corpus_format
from crseval.language.concepts import ConceptMatcher
from crseval.language.user_acts import TurnReading, act_flags, read_turn
from crseval.simulate.user.voice import (
    FIRST,
    LATER,
    LEAVE,
    MAX_TEMPLATE_CHARS,
    Voice,
    VoiceTemplate,
    dialogue_part,
    pool_key,
    speaker,
    visible_text,
)

_UNKNOWN_WORD = re.compile(r"\b[a-z]{3,}\b")
MIN_SAID = 2  # turns that must write a value one way before the simulated user writes it so


def voice_key(corpus_sha: str, settings: dict) -> str:
    """What names a voice's pools: the corpus's content and the settings of the split, not the corpus's
    path (16 hex digits)."""
    split = {key: value for key, value in settings.items() if key != "corpus"}
    return hashlib.sha256(f"{corpus_sha}\n{canonical_json(split)}".encode("utf-8")).hexdigest()[:16]


def corpus_dialogues(path: str | Path, import_format: str) -> list[dict]:
    """The dialogues of a corpus as its importer reads them (session records, the user turns it pairs
    with a reply), in file order."""
    imported, _ = corpus_format(import_format).import_logs([Path(path)], None, "0" * 64, "0" * 64)
    return [record for records in imported.values() for record in records]


def split_dialogues(records: list[dict], parts: int, part: int) -> tuple[list[dict], list[dict]]:
    """(the dialogues of `part`, the others), each in the given order."""
    inside = [r for r in records if dialogue_part(r, parts) == part]
    outside = [r for r in records if dialogue_part(r, parts) != part]
    return inside, outside


def template_slots(reading: TurnReading) -> tuple[str, ...]:
    """The slots of a reading's template, left to right ("genre:wish", "title")."""
    by_field = iter(f"{f}:{r}" for f, _, r in reading.statements)
    return tuple("title" if slot == "title" else next(by_field) for slot in re.findall(r"\{(\w+)\}", reading.template))


def learn_voice(dialogues: list[dict], matcher: ConceptMatcher, source: dict) -> Voice:
    """The voice of the user turns of `dialogues` (session records in order): every turn read, typed
    and pooled, or left out with its reason; `source` (corpus, sha256, split) is kept in the summary.
    CorpusError when no turn is kept: a voice without a template would word every turn by the rules."""
    pools: dict[str, list[VoiceTemplate]] = {}
    left_out: Counter = Counter()
    acts: Counter = Counter()
    read = 0
    # counted by person (the dialogue's user where the corpus names one, else the dialogue): one person
    # typing the same request three times to a system that does not understand is one person saying it
    said: dict[str, dict[str, set]] = {}  # pool key -> template text -> the people who say it
    said_as: dict[str, Counter] = {}  # "field|value" -> the words people wrote it with -> turns
    asked: dict[str, dict[str, set]] = {}  # field -> value -> the people who ask for it
    for dialogue in dialogues:
        turns = dialogue["turns"]
        person = speaker(dialogue)
        frustrated = (dialogue.get("labels") or {}).get("satisfaction") == "frustrated"
        for position, turn in enumerate(turns):
            read += 1
            text = visible_text(turn["user_text"])
            if not text:  # nothing a reader sees
                left_out["empty"] += 1
                continue
            if len(text) > MAX_TEMPLATE_CHARS:  # longer than a person types; reading it back would be refused
                left_out[f"over {MAX_TEMPLATE_CHARS:,} characters"] += 1
                continue
            if "{" in text or "}" in text:
                left_out["braces (the slot marks)"] += 1
                continue
            reading = read_turn(text, matcher)
            if reading.untyped:
                left_out[reading.untyped] += 1
                continue
            if len(reading.titles) != reading.template.count("{title}"):
                left_out["a film named twice or unreadably"] += 1
                continue
            acts[reading.act] += 1
            for (field_name, value, role), words in zip(reading.statements, reading.said_as):
                said_as.setdefault(f"{field_name}|{value}", Counter())[words] += 1
                if role == "wish":
                    asked.setdefault(field_name, {}).setdefault(value, set()).add(person)
            keys = [pool_key(FIRST if position == 0 else LATER, reading.act, reading.slots)]
            if position == len(turns) - 1 and frustrated and not reading.slots and reading.act != "request":
                keys.append(pool_key(LEAVE, "", ()))  # how a dissatisfied user's dialogue ends
            for key in keys:  # the same words twice are one template, said by each person who said them
                people = said.setdefault(key, {})
                if reading.template not in people:
                    pool = pools.setdefault(key, [])
                    pool.append(VoiceTemplate(f"{key}#{len(pool)}", reading.template, template_slots(reading)))
                people.setdefault(reading.template, set()).add(person)
    pools = {key: [replace(t, said=len(said[key][t.text])) for t in pool] for key, pool in pools.items()}
    kept = sum(acts.values())
    if not kept:
        reasons = "; ".join(f"{reason}: {count}" for reason, count in sorted(left_out.items()))
        raise CorpusError(
            f"{source.get('corpus', 'the corpus')}: nothing to learn a voice from: {read} user turns of "
            f"{len(dialogues)} dialogues read (the voice's part of the corpus), none kept"
            + (f" (left out: {reasons})" if reasons else "")
            + "; name a corpus whose user turns name the catalog's values and films, or another learn_part"
        )
    summary = {
        **source,
        "dialogues": len(dialogues),
        "turns_read": read,
        "turns_kept": kept,
        "left_out": dict(sorted(left_out.items())),
        "acts": dict(sorted(acts.items())),
        "templates": sum(len(p) for p in pools.values()),
        "fitted": fitted_knobs(dialogues),
        # a spelling one person used once may be the rules misreading them: a spelling is kept from two turns on
        "said_as": {
            key: dict(sorted((w, n) for w, n in forms.items() if n >= MIN_SAID))
            for key, forms in sorted(said_as.items())
            if any(n >= MIN_SAID for n in forms.values())
        },
        "asked": {f: {v: len(people) for v, people in sorted(values.items())} for f, values in sorted(asked.items())},
    }
    return Voice(pools, summary)


def fitted_knobs(dialogues: list[dict]) -> dict:
    """The profile knobs the corpus shows, each with the statistic behind it (docs/simulation.md)."""
    from wordfreq import zipf_frequency  # a large word list, loaded only where a voice is learned

    turns = [visible_text(t["user_text"]) for d in dialogues for t in d["turns"]]
    firsts = [visible_text(d["turns"][0]["user_text"]) for d in dialogues if d["turns"]]
    flags = [act_flags(t) for t in turns]
    frustrated = [len(d["turns"]) for d in dialogues if (d.get("labels") or {}).get("satisfaction") == "frustrated"]

    def share(hits: int, total: int, what: str) -> dict:
        return {"value": round(hits / total, 4) if total else None, "statistic": what, "n": total}

    lower = [t for t in turns if any(c.isalpha() for c in t)]
    return {
        "greeting": share(
            sum(act_flags(t)["greeting"] for t in firsts), len(firsts), "share of opening turns that greet"
        ),
        "thanks": share(sum(f["thanks"] for f in flags), len(turns), "share of user turns that thank"),
        "question": share(sum(f["question"] for f in flags), len(turns), "share of user turns with a question mark"),
        "lowercase": share(
            sum(t == t.lower() for t in lower), len(lower), "share of user turns with letters and no capital"
        ),
        "typo": share(
            sum(any(zipf_frequency(w, "en") == 0 for w in _UNKNOWN_WORD.findall(t)) for t in turns),
            len(turns),
            "share of user turns with a lower-case word no English word list holds",
        ),
        "patience": {
            "value": int(np.median(frustrated)) if frustrated else None,
            "statistic": "median user turns of the dialogues whose user was frustrated",
            "n": len(frustrated),
        },
    }


def voice_markdown(voice: Voice) -> str:
    """What the voice learned, for people: the split, the turns kept and left out (by reason), the templates
    per act and slot signature, and the fitted knobs with their statistics. No template text (they are a
    corpus's words)."""
    summary = voice.summary
    lines = [
        "# The learned voice",
        "",
        f"Corpus `{summary['corpus']}` (sha256 `{summary['corpus_sha256'][:16]}...`, format {summary['format']}): "
        f"{summary['dialogues']} dialogues of part {summary['learn_part']} of {summary['parts']} "
        f"({summary['held_out_dialogues']} held out for user realism). {summary['turns_read']} user turns read, "
        f"{summary['turns_kept']} kept as templates ({summary['templates']} distinct per pool).",
        "",
        "| left out because the turn names | turns |",
        "|---|---|",
    ]
    lines += [f"| {reason} | {count} |" for reason, count in summary["left_out"].items()] or ["| (none) | 0 |"]
    lines += ["", "| where | act | slots | templates |", "|---|---|---|---|"]
    for key, templates in sorted(voice.pools.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        position, act, slots = key.split("|")
        lines.append(f"| {position} | {act or '(leaving)'} | {slots or '-'} | {len(templates)} |")
    lines += ["", "| knob | fitted value | statistic | n |", "|---|---|---|---|"]
    for knob, fit in summary["fitted"].items():
        lines.append(f"| {knob} | {fit['value']} | {fit['statistic']} | {fit['n']} |")
    return "\n".join(lines) + "\n"
