"""The manifest of an imported corpus: what the workflow plans with, without listing the corpus
files as inputs of any job.

Planning reads each corpus file once, without recognising films, and keeps what it learnt per file
under the file's size and modification time, so a re-plan reads only the files that changed. From
it come the sessions per system (their numbers and ids, assigned exactly as one import of every
file would assign them) and one *slice* per (system, shard): the sessions of that shard with the
digest of what they were read from. A slice file is rewritten only when its content changes, so a
changed, added or removed log re-imports only the shards whose slices it changes, and Snakemake's
own re-run triggers (modification time, input) see it.

A format with one session per file (its `file_by_file`) is read file by file, the manifest keeping
each file's entry, and a slice names its own files; a corpus of a few files holding many dialogues is
read as a whole and every slice names every file, with each session's digest so that a changed
dialogue changes only its slice.

The manifest and the slices are files under results/ and may have been edited, cut off or left by
another version: a cached manifest of another shape is read again from the corpus, and a slice of
another shape is a CorpusError naming what is wrong, as is a file whose sha256 is not the manifest's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from crseval.core.canonical import canonical_sha
from crseval.core.io import atomic_path, sha256_file
from crseval.core.shards import n_shards, shard_indices
from crseval.corpora.dialogue import CorpusError, has_human_verdict, named_films, recognise_films
from crseval.corpora.format_kind import CorpusFormat
from crseval.corpora.formats import corpus_format
from crseval.language.concepts import ConceptMatcher

MANIFEST_VERSION = 1
PARALLEL_FROM = 1000  # files to read before a second process pays for its start-up
READ_WORKERS = 8
_ZEROS = "0" * 64  # catalog and config digests of the manifest's import (no record of it is kept)


def _stamp(path: str) -> list[int]:
    stat = os.stat(path)
    return [stat.st_size, stat.st_mtime_ns]


def _record_digest(record: dict) -> str:
    """A listed session's content, without the catalog and config digests (the manifest's import has zeros:
    it knows neither)."""
    return canonical_sha({k: v for k, v in record.items() if k not in ("catalog_sha", "config_sha")})


def build_manifest(paths: list[str], import_format: str, cache_file: str | Path | None = None) -> dict:
    """The manifest of the corpus `paths`: {format, files, sessions: {system: [{session_id, session_index,
    source, digest, turns}]}, labelled, report}. With `cache_file`, what was read of a file is reused while
    its size and modification time stay the same, and the cache is rewritten when anything changed."""
    chosen = corpus_format(import_format)
    cached = _read_cache(cache_file, import_format)
    paths = sorted(str(p) for p in paths)
    if chosen.file_by_file is not None:
        files, sessions, report = _manifest_file_by_file(chosen, paths, cached.get("files", {}))
        labelled = False
    else:
        files, sessions, report, labelled = _manifest_whole(chosen, paths, cached)
    manifest = {
        "version": MANIFEST_VERSION,
        "format": import_format,
        "files": files,
        "sessions": sessions,
        "labelled": labelled,
        "report": report,
    }
    if cache_file is not None and manifest != cached:
        write_if_changed(cache_file, manifest)
    return manifest


def _read_cache(cache_file: str | Path | None, import_format: str) -> dict:
    if cache_file is None:
        return {}
    try:
        cached = json.loads(Path(cache_file).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    ok = isinstance(cached, dict) and cached.get("version") == MANIFEST_VERSION
    ok = ok and cached.get("format") == import_format and _usable_cache(cached, corpus_format(import_format))
    return cached if ok else {}


def _usable_cache(cached: dict, chosen: CorpusFormat) -> bool:
    """Whether a cached manifest has the shape `build_manifest` writes (its files' stamps and digests, the
    entries of a format read file by file, the sessions and report of one read as a whole)."""
    files = cached.get("files")
    if not isinstance(files, dict) or not all(_usable_file(entry, chosen) for entry in files.values()):
        return False
    if chosen.file_by_file is not None:
        return True  # its sessions and report are assigned again from the files' entries
    sessions = cached.get("sessions")
    return (
        isinstance(sessions, dict)
        and all(isinstance(found, list) and all(map(_usable_session, found)) for found in sessions.values())
        and isinstance(cached.get("report"), dict)
        and isinstance(cached.get("labelled"), bool)
    )


def _usable_file(entry: object, chosen: CorpusFormat) -> bool:
    if not isinstance(entry, dict) or not _digest(entry.get("sha256")):
        return False
    stamp = entry.get("stamp")
    if not (isinstance(stamp, list) and len(stamp) == 2 and all(_whole(part) for part in stamp)):
        return False
    return chosen.file_by_file is None or chosen.file_by_file.usable(entry.get("plan"))


def _usable_session(session: object) -> bool:
    return (
        isinstance(session, dict)
        and isinstance(session.get("session_id"), str)
        and _whole(session.get("session_index"))
        and (session.get("source") is None or isinstance(session.get("source"), str))
        and _digest(session.get("digest"))
        and _whole(session.get("turns", 0))
    )


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _digest(value: object) -> bool:
    return isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)


def _manifest_file_by_file(chosen: CorpusFormat, paths: list[str], cached_files: dict) -> tuple[dict, dict, dict]:
    files = {}
    for path in paths:
        entry = cached_files.get(path)
        files[path] = entry if entry and entry.get("stamp") == _stamp(path) else None
    files.update(_file_entries(chosen.name, [path for path, entry in files.items() if entry is None]))
    assigned, report = chosen.file_by_file.assign([(path, entry["plan"]) for path, entry in files.items()])
    sessions = {
        system: [
            {
                "session_id": e["session_id"],
                "session_index": e["session_index"],
                "source": e["path"],
                "digest": files[e["path"]]["sha256"],
                "turns": e["turns"],
            }
            for e in entries
        ]
        for system, entries in sorted(assigned.items())
    }
    return files, sessions, report


def _file_entries(import_format: str, paths: list[str]) -> dict[str, dict]:
    """What each file holds, read by as many processes as there are cores (at most READ_WORKERS) once
    there are more than PARALLEL_FROM files to read: a first manifest of a large corpus is CPU-bound. The
    helpers are fresh interpreters, not forks of the planning process (Snakemake's, with threads of its own)."""
    workers = min(READ_WORKERS, len(os.sched_getaffinity(0)), len(paths) // PARALLEL_FROM)
    if workers <= 1:
        return _read_files(import_format, paths)
    source = str(Path(__file__).resolve().parents[2])  # the folder crseval is imported from
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [source, os.environ.get("PYTHONPATH")]))}
    helper_code = "from crseval.corpora.manifest import file_entries_from_stdin; file_entries_from_stdin()"
    command = [sys.executable, "-c", helper_code]
    helpers = []
    for worker in range(workers):
        helper = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=environment)
        helper.stdin.write(json.dumps([import_format, paths[worker::workers]]).encode())
        helper.stdin.close()
        helpers.append(helper)
    entries, failures = {}, []
    for helper in helpers:
        answer = helper.stdout.read()
        helper.wait()
        try:
            result = json.loads(answer)
        except ValueError:
            result = {"error": f"a planning process ended with exit code {helper.returncode} and no answer"}
        if "error" in result:
            failures.append(result["error"])
        else:
            entries.update(result["entries"])
    if failures:
        raise CorpusError(failures[0])
    return {path: entries[path] for path in paths}


def file_entries_from_stdin() -> None:
    """A reading helper: [format, paths] as JSON on stdin -> {"entries": ...} or {"error": message} on stdout."""
    import_format, paths = json.load(sys.stdin)
    try:
        answer = {"entries": _read_files(import_format, paths)}
    except (CorpusError, OSError) as error:
        answer = {"error": str(error)}
    sys.stdout.write(json.dumps(answer, ensure_ascii=False))


def _read_files(import_format: str, paths: list[str]) -> dict[str, dict]:
    """Each file's stamp, digest and entry; the entry under the manifest's key `plan`."""
    file_entry = corpus_format(import_format).file_by_file.file_entry
    return {p: {"stamp": _stamp(p), "sha256": sha256_file(p), "plan": file_entry(p)} for p in paths}


def _manifest_whole(chosen: CorpusFormat, paths: list[str], cached: dict) -> tuple[dict, dict, dict, bool]:
    files = {path: {"stamp": _stamp(path)} for path in paths}
    if cached.get("files") and {p: {"stamp": e["stamp"]} for p, e in cached["files"].items()} == files:
        return cached["files"], cached["sessions"], cached["report"], cached["labelled"]
    files = {path: {**entry, "sha256": sha256_file(path)} for path, entry in files.items()}
    records, report = chosen.import_logs(paths, None, _ZEROS, _ZEROS)
    sessions = {
        system: [
            {
                "session_id": r["session_id"],
                "session_index": r["session_index"],
                "source": None,
                "digest": _record_digest(r),
                "turns": len(r["turns"]),
            }
            for r in sorted(found, key=lambda r: r["session_index"])
        ]
        for system, found in sorted(records.items())
    }
    labelled = any(has_human_verdict(r) for rs in records.values() for r in rs)
    return files, sessions, report, labelled


def shard_slices(manifest: dict, shard_size: int) -> dict[tuple[str, int], dict]:
    """(system, shard) -> the slice its import job reads: the format, the files to read and the sessions."""
    slices = {}
    for system, sessions in manifest["sessions"].items():
        for shard in range(n_shards(len(sessions), shard_size)):
            indices = shard_indices(len(sessions), shard_size, shard)
            chosen = sessions[indices.start : indices.stop]
            per_file = all(s["source"] is not None for s in chosen)
            paths = [s["source"] for s in chosen] if per_file else sorted(manifest["files"])
            slices[system, shard] = {
                "format": manifest["format"],
                "system": system,
                "shard": shard,
                "paths": paths,
                "sessions": [{k: s[k] for k in ("session_id", "session_index", "source", "digest")} for s in chosen],
            }
    return slices


def write_if_changed(path: str | Path, data: dict) -> bool:
    """Write `data` as JSON unless the file holds it already (its modification time then stays: nothing
    downstream re-runs); whether it was written."""
    text = json.dumps(data, ensure_ascii=False, sort_keys=True, indent=None, separators=(",", ":")) + "\n"
    path = Path(path)
    try:
        if path.read_text(encoding="utf-8") == text:
            return False
    except (OSError, UnicodeDecodeError):
        pass
    with atomic_path(path) as temporary:
        temporary.write_text(text, encoding="utf-8")
    return True


def import_slice(
    piece: dict, matcher: ConceptMatcher, catalog_sha: str, config_sha: str
) -> tuple[list[dict], dict[str, list[str]]]:
    """The session records of one slice, films recognised, in session order; and the films their
    replies name (catalog titles, titles outside it, casefolded) for the import report. A file that
    changed since the workflow read it into the manifest is an error: the manifest it was imported by no longer
    holds, and so is a slice of another shape than `shard_slices` writes."""
    if (problem := _slice_problem(piece)) is not None:
        raise CorpusError(f"a slice of the corpus manifest {problem}; run the workflow again to re-plan the import")
    chosen = corpus_format(piece["format"])
    system = piece["system"]
    if chosen.file_by_file is not None:
        records = []
        for session in piece["sessions"]:
            if session["source"] is None:
                raise CorpusError(
                    f"a slice of system {system!r} names a session without its file; run the workflow again"
                )
            if _sha256_or_none(session["source"]) != session["digest"]:
                raise _changed(session["source"])
            records.append(
                chosen.file_by_file.import_session(session["source"], None, system, session, catalog_sha, config_sha)
            )
    else:
        found, _ = chosen.import_logs(piece["paths"], None, catalog_sha, config_sha)
        by_id = {r["session_id"]: r for r in found.get(system, [])}
        records = []
        for session in piece["sessions"]:
            record = by_id.get(session["session_id"])
            if record is None or _record_digest(record) != session["digest"]:
                raise _changed(", ".join(piece["paths"]), session["session_id"])
            records.append(record)
    for record in records:
        recognise_films(record["turns"], matcher)
    return records, {kind: sorted(films) for kind, films in named_films(records).items()}


def _sha256_or_none(path: str) -> str | None:
    """The file's sha256; None when it can no longer be read (removed after the manifest read it)."""
    try:
        return sha256_file(path)
    except OSError:
        return None


def _slice_problem(piece: object) -> str | None:
    """What keeps `piece` from being a slice `shard_slices` writes, or None."""
    if not isinstance(piece, dict):
        return "is not a JSON object"
    if not isinstance(piece.get("format"), str) or not isinstance(piece.get("system"), str):
        return "names no format or system"
    paths, sessions = piece.get("paths"), piece.get("sessions")
    if not isinstance(paths, list) or not all(isinstance(path, str) for path in paths):
        return f"of system {piece['system']!r}: 'paths' is not a list of file names"
    if not isinstance(sessions, list) or not all(map(_usable_session, sessions)):
        return f"of system {piece['system']!r}: 'sessions' is not a list of planned sessions"
    return None


def _changed(where: str, session_id: str | None = None) -> CorpusError:
    what = f"session {session_id} of {where}" if session_id else where
    return CorpusError(
        f"{what} changed after the workflow planned the import (it is not what the corpus manifest's digest "
        "says); run the workflow again to re-plan, and should the error come back with the file unchanged, "
        "delete sessions/corpus_manifest.json: its digest is wrong, and the corpus is planned again"
    )
