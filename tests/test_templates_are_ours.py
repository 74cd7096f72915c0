"""The user templates are written for this project: none holds a run of 8 or more words that a user turn
of a shipped corpus (CRSArena-Dial's open half, the thesis logs) holds."""

import json
import re

import pytest
import yaml
from conftest import REFERENCE_LOGS, REPO

CRSARENA = REPO.parent / "shared" / "data" / "crsarena" / "crs_arena_dial_open.json"
SPAN = 8
_WORD = re.compile(r"[a-z0-9']+")
_PLACEHOLDER = re.compile(r"\{\w+\}")


def spans(text: str) -> set[tuple[str, ...]]:
    words = _WORD.findall(text.lower())
    return {tuple(words[i : i + SPAN]) for i in range(len(words) - SPAN + 1)}


def corpus_user_turns() -> list[str]:
    turns = []
    if CRSARENA.exists():
        for item in json.loads(CRSARENA.read_text(encoding="utf-8")):
            turns += [t["utterance"] for t in item["conversation"] if t["participant"] == "USER"]
    for path in sorted(REFERENCE_LOGS.glob("*.json")) if REFERENCE_LOGS.exists() else []:
        log = json.loads(path.read_text(encoding="utf-8"))
        turns += [m["text"] for m in log["conversation"] if m.get("speaker") == "USER" and isinstance(m["text"], str)]
    return turns


def template_pieces(node) -> list[str]:
    """Every template's text between placeholders (a placeholder is no word of ours or theirs)."""
    if isinstance(node, dict):
        return [piece for value in node.values() for piece in template_pieces(value)]
    if isinstance(node, list):
        return [piece for value in node for piece in template_pieces(value)]
    return _PLACEHOLDER.split(node)


def test_no_template_copies_eight_words_of_a_corpus_user_turn():
    turns = corpus_user_turns()
    if not turns:
        pytest.skip("no shipped corpus beside the repository (../shared/data)")
    theirs = set().union(*(spans(t) for t in turns))
    templates = yaml.safe_load((REPO / "resources" / "templates" / "user.yaml").read_text(encoding="utf-8"))
    copied = [(piece, span) for piece in template_pieces(templates) for span in spans(piece) & theirs]
    assert not copied, copied[:5]
    assert len(turns) > 1000  # both corpora were read


def test_the_check_finds_a_copied_run():
    assert spans("well, I would really like to watch a good movie tonight") & spans(
        "I would really like to watch a good movie tonight, please"
    )
