"""Measure title recognition on corpora that mark the films of their replies.

ReDial writes a film `@<id>`, IARD `@<id> <Title (Year)>`, INSPIRED `[MOVIE_TITLE_k]`, AB-ReDial
`"Title (Year)"`; their importers (crseval.corpora.formats) resolve the marks into plain titles in the
reply text and keep the marked films of each SYSTEM turn as `marked_titles`. The marks are then gold
labels that nobody had to write: what the recognizer reads from the plain text (catalog films,
recommended or mentioned, and the films outside the catalog) is compared with them.

Titles compare by `mark_key`: case, diacritics, punctuation and a trailing "(Year)" ignored, a leading
article kept. Precision and recall are micro over (reply, title) pairs; a reply without marks counts
too (a film recognised there is spurious, since these corpora mark every film they name).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Iterable

from crseval.language.titles import TitleRecognizer

_YEAR_AT_END = re.compile(r"\s*[\(\[]\s*(?:1[89]|20)\d\d\s*[\)\]]\s*$")


def mark_key(title: str) -> str:
    """How a recognised title and a marked one compare: casefold, diacritics and a trailing "(Year)"
    removed, "&" read as "and", apostrophes dropped ("Ocean's" = "Oceans") and other punctuation read
    as a space ("Spider-Man" = "Spider Man"); a leading "The" or "A" is kept."""
    plain = _YEAR_AT_END.sub("", title.strip())
    plain = unicodedata.normalize("NFKD", plain).casefold().replace("&", " and ")
    plain = "".join(c for c in plain if not unicodedata.combining(c))
    plain = re.sub(r"['’‘`]", "", plain)
    return " ".join(re.sub(r"[\W_]+", " ", plain).split())


def _prf(tp: int, predicted: int, gold: int) -> dict:
    precision = tp / predicted if predicted else float("nan")
    recall = tp / gold if gold else float("nan")
    if not (predicted and gold):
        f1 = float("nan")  # a precision or a recall with nothing to count
    else:
        f1 = 2 * precision * recall / (precision + recall) if tp else 0.0
    return {"tp": tp, "predicted": predicted, "gold": gold, "precision": precision, "recall": recall, "f1": f1}


def recognised_titles(recognizer: TitleRecognizer, sessions: Iterable[dict]) -> Iterable[tuple[dict, dict, list[str]]]:
    """(session, SYSTEM turn, the titles recognised in its reply) for every turn that carries
    `marked_titles`: the catalog films it refers to (either role) and the films it names outside the
    catalog, read with the films the user named so far as context (as an import reads them)."""
    for session in sessions:
        user_named: list[str] = []
        for turn in session.get("turns") or []:
            user_text = turn.get("user_text") or ""
            user_named += [t for t in recognizer.recognise(user_text, by_user=True).all if t not in user_named]
            if turn.get("marked_titles") is None:
                continue
            found = recognizer.recognise(turn.get("system_text") or "", context_titles=user_named)
            yield session, turn, found.all + found.unknown


def evaluate_marks(recognizer: TitleRecognizer, sessions: Iterable[dict], *, errors: bool = False) -> dict:
    """Micro precision, recall and F1 of the titles recognised in SYSTEM replies against the titles the
    corpus marks there (`marked_titles` of each turn), compared by `mark_key`; how many replies were read
    (and how many had marks), and with `errors`, per reply that differs the marks missed and the titles
    recognised that no mark names (as written)."""
    tp = predicted_count = gold_count = replies = marked_replies = 0
    listed = []
    for session, turn, titles in recognised_titles(recognizer, sessions):
        predicted = {}
        for title in titles:
            predicted.setdefault(mark_key(title), title)
        gold = {}
        for title in turn["marked_titles"]:
            if mark_key(title):
                gold.setdefault(mark_key(title), title)
        predicted.pop("", None)
        replies += 1
        marked_replies += bool(gold)
        hits = predicted.keys() & gold.keys()
        tp, predicted_count, gold_count = tp + len(hits), predicted_count + len(predicted), gold_count + len(gold)
        if errors and (predicted.keys() != gold.keys()):
            listed.append(
                {
                    "session_id": session.get("session_id"),
                    "turn": turn.get("turn"),
                    "missed": [gold[k] for k in gold if k not in hits],
                    "spurious": [predicted[k] for k in predicted if k not in hits],
                }
            )
    result = {"titles": _prf(tp, predicted_count, gold_count), "replies": replies, "replies_with_marks": marked_replies}
    if errors:
        result["errors"] = listed
    return result
