"""Import IARD (Cai and Chen, UMAP 2020): ReDial dialogues annotated with the seeker's and the
recommender's intents per utterance, and whether the seeker accepted a recommendation. The recommender
is a person, not a system.

File: a JSON object `{dialogue id: {accepted_recommendation: [utterance positions], dialogue_info:
{"S2"|"R3"|...: {utterance_pos, worker_id, role: seeker|recommender, utterance_text, "top-level
intent/action": [...], "sub-intent/action": [...]}}}}`. Films are written `@<ReDial movie id> <Title
(Year)>` (the title put in by the annotators); the source joined consecutive messages of one worker
with "...".

- the seeker's utterances are USER, the recommender's SYSTEM, in `utterance_pos` order; every dialogue
  is of one system, `iard-people`; the dialogue id and both worker ids stay in the provenance (the
  seeker's as `user_id`), and the intents per utterance, compactly, in its metadata
  (`[[key, top-level, sub-intents], ...]`);
- the text is kept as the source has it except each film mark `@<id> <Title (Year)>`, which becomes
  `Title (Year)` (white space runs in it made one space; the annotators' title given twice in a row is
  written once, counted), and the titles an utterance marks become its `marks` (`marked_titles`); an
  `@<id>` without a title stays as written (counted);
- the verdict `accepted` is 1.0 when `accepted_recommendation` holds a position (the seeker accepted a
  recommended film), else 0.0; the positions stay in the label `accepted_utterances`;
- an entry that is not a dialogue of that shape (a missing field, an unknown role, two utterances at
  one position, a verdict field that is not a list of positions) is skipped, named and counted, the
  others imported; a file that is not a JSON object of IARD dialogues is a CorpusError.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Iterator

from crseval.core.io import json_type, shown
from crseval.corpora import dialogue
from crseval.corpora.dialogue import MARKS, SYSTEM, USER, CorpusError, Dialogue, Skipped
from crseval.corpora.format_kind import CorpusFormat, Verdict
from crseval.corpora.people import PERSON, clean_title, digest, once, skipped

SYSTEM_NAME = "iard-people"
ROLES = {"seeker": USER, "recommender": SYSTEM}
INTENTS = ("top-level intent/action", "sub-intent/action")
ACCEPTED = Verdict(
    "accepted",
    "binary",
    "whether the seeker accepted a recommended film (accepted_recommendation not empty): 1, else 0",
)
# a film mark, and the annotators' title written a second time right after it
_MARK = re.compile(r"@(\d{1,12}) <([^<>\n]{1,300})>(\s*<\2>)?")
_ID_LEFT = re.compile(r"@\d{1,12}")
NUMBERED = "dialogue id repeated with other content: numbered"
TWICE = "film title written twice after its id: once kept"
UNRESOLVED = "film id without its title: left as written"
ACCEPTED_ELSEWHERE = "accepted position not an utterance of the dialogue"
HINT = "{dialogue id: {accepted_recommendation, dialogue_info}}"


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _problem(item: object) -> str | None:
    """What keeps `item` from being an IARD dialogue, or None (names the field, never the value)."""
    if not isinstance(item, dict):
        return "not an object"
    accepted = item.get("accepted_recommendation")
    if not isinstance(accepted, list) or not all(map(_whole, accepted)):
        return "accepted_recommendation missing or not a list of utterance positions"
    info = item.get("dialogue_info")
    if not isinstance(info, dict) or not info:
        return "dialogue_info missing, empty or not an object"
    positions = set()
    for utterance in info.values():
        if not isinstance(utterance, dict) or not _whole(utterance.get("utterance_pos")):
            return "an utterance without an integer utterance_pos"
        if utterance.get("role") not in ROLES:
            return "an utterance whose role is neither seeker nor recommender"
        if not isinstance(utterance.get("utterance_text"), str):
            return "an utterance without utterance_text"
        worker = utterance.get("worker_id")
        if worker is not None and not (_whole(worker) or isinstance(worker, str)):
            return "a worker_id that is not a string or integer"
        for key in INTENTS:
            if key in utterance and not (
                isinstance(utterance[key], list) and all(isinstance(i, str) for i in utterance[key])
            ):
                return f"{key} not a list of strings"
        if utterance["utterance_pos"] in positions:
            return "two utterances at one position"
        positions.add(utterance["utterance_pos"])
    return None


def _text(text: str, repairs: Counter) -> tuple[str, list[str]]:
    """The utterance with each film mark written as its title, and the titles it marks in order, each once."""
    marks: list[str] = []

    def written(match: re.Match) -> str:
        title = clean_title(match.group(2))
        if match.group(3):
            repairs[TWICE] += 1
        marks.append(title)
        return title

    resolved = _MARK.sub(written, text)
    if left := len(_ID_LEFT.findall(_MARK.sub("", text))):
        repairs[UNRESOLVED] += left
    return resolved, once(marks)


def _worker(utterances: list[dict], role: str) -> str | None:
    workers = [u.get("worker_id") for u in utterances if u["role"] == role and u.get("worker_id") is not None]
    return str(workers[0]) if workers else None


def read_file(path: Path) -> Iterator[Dialogue | Skipped]:
    """The dialogues of one IARD file, in file order; a malformed one skipped (Skipped)."""
    data = dialogue.read_json(path)
    if not isinstance(data, dict):
        raise CorpusError(f"{path}: expected a JSON object of IARD dialogues {HINT}, found {json_type(data)}")
    if not data:
        raise CorpusError(f"{path}: holds no dialogue: the JSON object is empty")
    if not any(isinstance(item, dict) and "dialogue_info" in item for item in data.values()):
        raise CorpusError(
            f"{path}: not an object of IARD dialogues {HINT}: no entry has a dialogue_info "
            f"(keys {[shown(key) for key in list(data)[:8]]})"
        )
    for dialogue_id, item in data.items():
        where = f"{path}: dialogue {shown(dialogue_id)}"
        if (problem := _problem(item)) is not None:
            yield skipped(problem, where)
            continue
        utterances = sorted(item["dialogue_info"].items(), key=lambda pair: pair[1]["utterance_pos"])
        repairs: Counter = Counter()
        messages = []
        for _, utterance in utterances:
            text, marks = _text(utterance["utterance_text"], repairs)
            messages.append({"speaker": ROLES[utterance["role"]], "text": text, MARKS: marks})
        positions = {u["utterance_pos"] for _, u in utterances}
        accepted = item["accepted_recommendation"]
        repairs[ACCEPTED_ELSEWHERE] += sum(position not in positions for position in accepted)
        infos = [u for _, u in utterances]
        yield Dialogue(
            name=SYSTEM_NAME,
            where=where,
            identity=digest(item),  # a dialogue id that comes back with other content is another dialogue
            digest=digest(item),
            session_name=dialogue_id,
            messages=messages,
            provenance={
                "dialogue_id": dialogue_id,
                "user_id": _worker(infos, "seeker"),
                "recommender_id": _worker(infos, "recommender"),
            },
            labels={"verdicts": {ACCEPTED.name: 1.0 if accepted else 0.0}, "accepted_utterances": list(accepted)},
            metadata={"intents": [[key, u.get(INTENTS[0], []), u.get(INTENTS[1], [])] for key, u in utterances]},
            repairs=+repairs,
        )


KIND = CorpusFormat(
    "iard",
    f"IARD: ReDial dialogues with the seeker's intents and accepted recommendations; {PERSON}",
    read_file=read_file,
    system_names=("recommenders", "the corpus has one system"),
    numbered=NUMBERED,
    verdicts=(ACCEPTED,),
    between_people=True,
)
