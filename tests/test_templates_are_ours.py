"""The user templates, and every other file of the repository's src/, resources/, tests/ and docs/, are
written for this project: none holds a run of 8 or more words that a user turn of a shipped corpus
(CRSArena-Dial's open half, the thesis logs, and the seekers of ReDial, IARD, AB-ReDial and INSPIRED, whose turns a
voice may learn from) holds."""

import json
import re
from functools import cache
from pathlib import Path

import pytest
import yaml
from conftest import REFERENCE_LOGS, REPO

DATA = REPO.parent / "shared" / "data"
CRSARENA = DATA / "crsarena" / "crs_arena_dial_open.json"
# The corpora of two people a learned voice may mix in (simulator.voice.mix): (format, files), read by their importers.
PEOPLE_CORPORA = {
    "redial": ("redial", ["redial/test_data.jsonl"]),
    "iard": ("iard", ["iard/iard.json"]),
    "ab-redial": ("ab_redial", ["ab-redial/annotated_dialogues.csv", "ab-redial/annotated_turns.csv"]),
    "inspired": ("inspired", ["inspired/dev.tsv"]),
}
SPAN = 8
_WORD = re.compile(r"[a-z0-9']+")
_PLACEHOLDER = re.compile(r"\{\w+\}")
# The folders whose every file is checked, and what is not read: files stored in a binary format (a
# compressed or image file holds no text to read as words) and files too large to be written by hand.
SCANNED = ("src", "resources", "tests", "docs")
BINARY = {".png", ".jpg", ".jpeg", ".gif", ".ico", ".pdf", ".parquet", ".gz", ".zip", ".bz2", ".xz", ".pyc", ".so"}
MAX_BYTES = 4 * 1024 * 1024


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
    for turns_of_corpus in people_corpora_turns().values():
        turns += turns_of_corpus
    return turns


@cache
def people_corpora_turns() -> dict[str, list[str]]:
    """The seekers' turns of each corpus of two people beside the repository, as its importer joins them."""
    from crseval.simulate.user.voice_learning import corpus_dialogues  # the importers, only where a corpus is

    found = {}
    for name, (import_format, files) in PEOPLE_CORPORA.items():
        paths = [DATA / f for f in files if (DATA / f).exists()]
        if paths:
            dialogues = corpus_dialogues(paths, import_format)
            found[name] = [turn["user_text"] for dialogue in dialogues for turn in dialogue["turns"]]
    return found


@cache
def corpus_spans() -> frozenset[tuple[str, ...]]:
    """Every 8-word run of a shipped corpus's user turns (empty when no corpus is beside the repository), but
    the runs of a catalog's film titles: a long title a seeker names is the catalog's words, not theirs."""
    theirs = frozenset().union(*(spans(t) for t in corpus_user_turns()))
    return theirs - catalog_title_spans()


def catalog_title_spans() -> frozenset[tuple[str, ...]]:
    """Every 8-word run of a film title (a catalog entry's key or name) of the shipped catalogs."""
    found = set()
    for path in (REPO / "resources" / "catalog" / "demo_movies.json", DATA / "opendialkg_movie_data.json"):
        if path.exists():
            catalog = json.loads(path.read_text(encoding="utf-8"))
            entries = catalog.items() if isinstance(catalog, dict) else enumerate(catalog)
            for key, entry in entries:
                for title in (key, entry.get("name") if isinstance(entry, dict) else None):
                    if isinstance(title, str):
                        found |= spans(title)
    return frozenset(found)


def template_pieces(node) -> list[str]:
    """Every template's text between placeholders (a placeholder is no word of ours or theirs)."""
    if isinstance(node, dict):
        return [piece for value in node.values() for piece in template_pieces(value)]
    if isinstance(node, list):
        return [piece for value in node for piece in template_pieces(value)]
    return _PLACEHOLDER.split(node)


def readable_text(path: Path) -> str | None:
    """The file's text (undecodable bytes ignored), or None for a binary or oversized file."""
    if path.suffix.lower() in BINARY or path.stat().st_size > MAX_BYTES:
        return None
    raw = path.read_bytes()
    if b"\0" in raw[:8192]:  # a binary file whatever its name
        return None
    return raw.decode("utf-8", errors="ignore")


def copied_runs(text: str, theirs: frozenset) -> list[tuple[int, str]]:
    """(line, run) of every 8-word run of `text` that `theirs` holds, one pass over its words."""
    lowered = text.lower()
    matches = list(_WORD.finditer(lowered))
    words = [m.group(0) for m in matches]
    found = []
    for i in range(len(words) - SPAN + 1):
        run = tuple(words[i : i + SPAN])
        if run in theirs:
            found.append((lowered.count("\n", 0, matches[i].start()) + 1, " ".join(run)))
    return found


def test_no_template_copies_eight_words_of_a_corpus_user_turn():
    theirs = corpus_spans()
    if not theirs:
        pytest.skip("no shipped corpus beside the repository (../shared/data)")
    templates = yaml.safe_load((REPO / "resources" / "templates" / "user.yaml").read_text(encoding="utf-8"))
    copied = [(piece, span) for piece in template_pieces(templates) for span in spans(piece) & theirs]
    assert not copied, copied[:5]
    assert len(corpus_user_turns()) > 1000  # the corpora were read
    if DATA.exists():  # each corpus of two people read, as many seeker turns as its README counts, about
        assert {name: len(turns) > 400 for name, turns in people_corpora_turns().items()} == dict.fromkeys(
            PEOPLE_CORPORA, True
        )


def test_no_file_of_the_repository_copies_eight_words_of_a_corpus_user_turn():
    theirs = corpus_spans()
    if not theirs:
        pytest.skip("no shipped corpus beside the repository (../shared/data)")
    read, copied = 0, []
    for folder in SCANNED:
        for path in sorted((REPO / folder).rglob("*")):
            if not path.is_file() or (text := readable_text(path)) is None:
                continue
            read += 1
            copied += [f"{path.relative_to(REPO)}:{line}: {run!r}" for line, run in copied_runs(text, theirs)]
    assert read > 200  # the four folders were read (about 250 text files)
    assert not copied, "\n".join(copied)


def test_the_check_finds_a_copied_run():
    assert spans("well, I would really like to watch a good movie tonight") & spans(
        "I would really like to watch a good movie tonight, please"
    )


def test_the_file_scan_finds_a_copied_run_with_its_line_and_skips_binary_files(tmp_path):
    theirs = frozenset(spans("so I would really like to watch a good movie tonight ok"))
    text = "first line\nsecond: I would REALLY like to watch a good movie, tonight!\n"
    assert copied_runs(text, theirs) == [
        (2, "i would really like to watch a good"),
        (2, "would really like to watch a good movie"),
        (2, "really like to watch a good movie tonight"),
    ]
    assert copied_runs("I would really like to see a good movie tonight", theirs) == []
    (tmp_path / "notes.md").write_bytes(text.encode() + b"\xff\xfe")
    (tmp_path / "image.png").write_bytes(text.encode())
    (tmp_path / "data.bin").write_bytes(b"\0" + text.encode())
    assert readable_text(tmp_path / "notes.md").startswith("first line")
    assert readable_text(tmp_path / "image.png") is None and readable_text(tmp_path / "data.bin") is None
