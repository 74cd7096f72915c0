"""The corpus manifest (crseval.corpora.manifest): importing slice by slice gives the one import of the
whole corpus, record for record; planning reads only the files that changed; a changed, added or
removed log changes only the slices it should."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import REFERENCE_LOGS
from test_import_formats import arena, line, write_arena, write_lines

from crseval.corpora import manifest as manifest_module
from crseval.corpora import thesis_logs
from crseval.corpora.dialogue import CorpusError, coverage_of, film_coverage
from crseval.corpora.formats import CORPUS_FORMATS, import_logs
from crseval.corpora.manifest import build_manifest, import_slice, shard_slices, write_if_changed

A, B = "a" * 64, "b" * 64
NEEDS_LOGS = pytest.mark.skipif(not REFERENCE_LOGS.exists(), reason="the thesis logs are not beside the repository")


def import_by_slices(paths, import_format, full_matcher, shard_size, cache_file=None):
    manifest = build_manifest(paths, import_format, cache_file)
    sessions, named = {}, {}
    for (system, _shard), piece in sorted(shard_slices(manifest, shard_size).items()):
        piece = json.loads(json.dumps(piece))  # as the import job reads it from its file
        records, films = import_slice(piece, full_matcher, A, B)
        sessions.setdefault(system, []).extend(records)
        merged = named.setdefault(system, {"catalog": set(), "outside": set()})
        for kind in merged:
            merged[kind].update(films[kind])
    return manifest, sessions, named


@NEEDS_LOGS
def test_thesis_logs_by_slices_are_the_one_import(full_matcher, tmp_path):
    paths = sorted(str(p) for p in REFERENCE_LOGS.glob("*.json"))
    expected, report = import_logs(paths, full_matcher, A, B, "thesis_logs")
    manifest, sessions, named = import_by_slices(paths, "thesis_logs", full_matcher, shard_size=7)
    assert sessions == expected  # every record, films included, in session order
    assert manifest["report"] == report
    assert coverage_of(named) == film_coverage(expected)
    assert sum(len(s) for s in manifest["sessions"].values()) == 300 and not manifest["labelled"]


def test_a_corpus_of_dialogues_by_slices_is_the_one_import(full_matcher, tmp_path):
    """Formats with many dialogues per file: every slice reads the corpus, keeps its own sessions."""
    corpus = write_arena(
        tmp_path / "arena.json",
        *[arena("kbrd", f"u{n}", ("USER", f"A thriller {n}?"), ("AGENT", 'Try "Heat".')) for n in range(5)],
        *[arena("unicrs", f"v{n}", ("USER", f"A comedy {n}?"), ("AGENT", 'Maybe "Toy Story".')) for n in range(3)],
    )
    lines = write_lines(
        tmp_path / "corpus.jsonl",
        *[line("crs", f"d{n}", ("user", f"Like Heat {n}?"), ("system", 'Yes: "Heat" (1995).')) for n in range(4)],
    )
    for paths, import_format in (([str(corpus)], "crsarena"), ([str(lines)], "jsonl")):
        expected, report = import_logs(paths, full_matcher, A, B, import_format)
        manifest, sessions, named = import_by_slices(paths, import_format, full_matcher, shard_size=2)
        assert sessions == expected and manifest["report"] == report
        assert coverage_of(named) == film_coverage(expected)
    assert build_manifest([str(corpus)], "crsarena")["labelled"]


def copy_logs(folder: Path, model: str, count: int) -> list[Path]:
    folder.mkdir(exist_ok=True)
    copied = []
    for number in range(count):
        name = f"{model}_session_{model}_{number}.json"
        copied.append(Path(shutil.copy(REFERENCE_LOGS / name, folder / name)))
    return copied


def written_slices(manifest: dict, folder: Path, shard_size: int) -> set[tuple[str, int]]:
    """Write every slice as the workflow does; the (system, shard) whose file changed."""
    changed = set()
    for (system, shard), piece in shard_slices(manifest, shard_size).items():
        if write_if_changed(folder / system / f"{shard}.slice.json", piece):
            changed.add((system, shard))
    return changed


@NEEDS_LOGS
def test_a_replan_reads_only_changed_files_and_rewrites_only_their_slices(tmp_path, monkeypatch):
    logs, slices, cache = tmp_path / "logs", tmp_path / "slices", tmp_path / "manifest.json"
    gemma = copy_logs(logs, "gemma:2b", 12)
    copy_logs(logs, "qwen:4b", 6)
    read = []
    per_file = thesis_logs.KIND.file_by_file
    counted = replace(per_file, file_entry=lambda path: read.append(Path(path).name) or per_file.file_entry(path))
    monkeypatch.setitem(CORPUS_FORMATS, "thesis_logs", replace(thesis_logs.KIND, file_by_file=counted))
    paths = lambda: sorted(str(p) for p in logs.glob("*.json"))  # noqa: E731

    manifest = build_manifest(paths(), "thesis_logs", cache)
    assert len(read) == 18 and len(written_slices(manifest, slices, 4)) == 3 + 2
    read.clear()
    manifest = build_manifest(paths(), "thesis_logs", cache)
    assert read == [] and written_slices(manifest, slices, 4) == set()  # nothing read, nothing rewritten

    # a changed log: read again, and only the slice holding it is rewritten
    changed = json.loads(gemma[5].read_text())
    changed["conversation"][0]["text"] += " Something with Al Pacino, please."
    gemma[5].write_text(json.dumps(changed))
    manifest = build_manifest(paths(), "thesis_logs", cache)
    assert read == [gemma[5].name] and written_slices(manifest, slices, 4) == {("gemma:2b", 1)}

    # an added log with the next number: a new shard, the others untouched
    read.clear()
    added = copy_logs(tmp_path / "more", "gemma:2b", 13)[12]
    shutil.copy(added, logs / added.name)
    manifest = build_manifest(paths(), "thesis_logs", cache)
    assert read == [added.name] and written_slices(manifest, slices, 4) == {("gemma:2b", 3)}
    assert len(manifest["sessions"]["gemma:2b"]) == 13

    # a removed log: the sessions after it move up one place, so its shard and every later shard of its
    # system are rewritten, and a last shard left empty is no longer planned (docs/importing.md); the
    # other systems are untouched
    gemma[6].unlink()
    manifest = build_manifest(paths(), "thesis_logs", cache)
    assert written_slices(manifest, slices, 4) == {("gemma:2b", 1), ("gemma:2b", 2)}
    assert ("gemma:2b", 3) not in shard_slices(manifest, 4)
    assert [s["session_index"] for s in manifest["sessions"]["gemma:2b"]][5:7] == [5, 7]


@NEEDS_LOGS
def test_a_log_changed_after_planning_is_an_error_naming_it(full_matcher, tmp_path):
    logs = tmp_path / "logs"
    copied = copy_logs(logs, "qwen:4b", 3)
    manifest = build_manifest([str(p) for p in copied], "thesis_logs")
    piece = shard_slices(manifest, 10)["qwen:4b", 0]
    copied[1].write_text(copied[1].read_text().replace("USER", "USER", 1) + " ")
    with pytest.raises(Exception, match=rf"{copied[1].name} changed after the workflow planned the import"):
        import_slice(piece, full_matcher, A, B)


@NEEDS_LOGS
def test_a_large_first_plan_read_by_helper_processes_is_the_one_read_here(tmp_path, monkeypatch):
    """Past PARALLEL_FROM files a first plan is read by helper interpreters; the manifest is the same, and a
    file that cannot be read fails the plan naming it, as when it is read here."""
    logs = tmp_path / "logs"
    copy_logs(logs, "gemma:2b", 12)
    copy_logs(logs, "qwen:4b", 6)
    paths = sorted(str(p) for p in logs.glob("*.json"))
    alone = build_manifest(paths, "thesis_logs")
    monkeypatch.setattr(manifest_module, "PARALLEL_FROM", 4)
    monkeypatch.setattr(manifest_module.os, "sched_getaffinity", lambda pid: {0, 1, 2})
    helpers = []
    original = manifest_module.subprocess.Popen
    monkeypatch.setattr(manifest_module.subprocess, "Popen", lambda *a, **k: helpers.append(a) or original(*a, **k))
    assert build_manifest(paths, "thesis_logs") == alone
    assert len(helpers) == 3  # min(cores, files // PARALLEL_FROM, READ_WORKERS)
    (logs / "qwen:4b_session_qwen:4b_9.json").write_text('{"model_name": "qwen:4b", "conversation": [')
    with pytest.raises(CorpusError, match=r"qwen:4b_session_qwen:4b_9\.json: cannot be read as JSON"):
        build_manifest(sorted(str(p) for p in logs.glob("*.json")), "thesis_logs")
