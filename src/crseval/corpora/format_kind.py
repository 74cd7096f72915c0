"""What a corpus format declares about itself, and the one import every format's files go through.

A corpus format (`sessions.import_format` in the config) is declared once, as a `CorpusFormat` in the
module that reads it, and listed in crseval.corpora.formats. It declares only what is its own: how one
of its files becomes dialogues (checked against the format, with the repairs only it makes), what its
corpus calls a system, which dialogues repeat one another, whether its session ids can clash, whether
it has labels and votes, and whether its manifest lists it file by file. The rest is the same for every
format and written once here, so that every format applies the shared rules in the same order and
counts them under the same names: files in path order, system names as safe folder names, repeats
skipped, the rules every dialogue shares (crseval.corpora.dialogue), dialogues without a turn
skipped, the session records and the import report. A format also declares the verdicts people gave on
its dialogues (`Verdict`), and may read its files together (`read_corpus`) when they complete one
another, and skip a malformed dialogue of a file that is otherwise its own (`Skipped`, counted).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

from crseval.corpora.dialogue import (
    LISTED_PLACES,
    MAX_MESSAGE_CHARS,
    CorpusError,
    Dialogue,
    Skipped,
    SystemFolders,
    build_turns,
    label_counts,
    pair_turns,
    printable,
    session_record,
    unique_id,
    verdict_counts,
)
from crseval.language.concepts import ConceptMatcher


@dataclass(frozen=True)
class FileByFile:
    """How a format of one session per file is read file by file: crseval.corpora.manifest keeps what
    it read of each file (the file's entry), so that reading a large corpus again reads only the files
    that changed, and an import job reads only the files of its slice."""

    file_entry: Callable[[str | Path], dict]  # path -> what the manifest keeps of the file, as JSON (cached)
    # [(path, its entry)] -> system -> [{path, turns, session_index, session_id}] in session order, and the
    # import report: the rules applied exactly as one import of every file applies them
    assign: Callable[[list[tuple[str, dict]]], tuple[dict[str, list[dict]], dict]]
    # (path, matcher, *, system, session_index, session_id, catalog_sha, config_sha) -> the file's session record
    import_file: Callable[..., dict]
    # whether a cached entry (the manifest under results/, which may have been edited or cut off) is one
    # `file_entry` writes; one that is not is read again from its file
    usable: Callable[[object], bool] = lambda entry: isinstance(entry, dict)

    def import_session(
        self,
        path: str | Path,
        matcher: ConceptMatcher | None,
        system: str,
        session: dict,
        catalog_sha: str,
        config_sha: str,
    ) -> dict:
        """The record of one session the manifest lists: the file at `path`, numbered and named as `session`
        (its entry in the manifest) says."""
        return self.import_file(
            path,
            matcher,
            system=system,
            session_index=session["session_index"],
            session_id=session["session_id"],
            catalog_sha=catalog_sha,
            config_sha=config_sha,
        )


SCALES = ("binary", "ordinal")


@dataclass(frozen=True)
class Verdict:
    """A verdict people gave on a dialogue of a format's corpus: in each session record's
    `labels.verdicts[name]` (a binary one 1.0 or 0.0, an ordinal one the mean over its raters, null where
    the dialogue has none) and in the sessions table as the column `verdict_<name>`."""

    name: str
    scale: str  # "binary" or "ordinal"
    description: str  # how the corpus gives it, for the docs

    def __post_init__(self):
        if self.scale not in SCALES:
            raise ValueError(f"verdict {self.name}: scale {self.scale!r} is not one of {SCALES}")

    @property
    def column(self) -> str:
        return f"verdict_{self.name}"


def always_repeats(found: Dialogue, earlier: Dialogue) -> bool:
    """A format whose identity is a dialogue's content: a second dialogue of one identity repeats the first."""
    return True


@dataclass(frozen=True)
class CorpusFormat:
    name: str  # its `sessions.import_format` value
    summary: str  # one line for the docs (the schema's description of `sessions.import_format` quotes it)
    # path -> its dialogues in file order, each checked against the format; CorpusError naming the file,
    # where in it and what is wrong otherwise (a format may instead skip a malformed dialogue: `Skipped`)
    read_file: Callable[[Path], Iterable[Dialogue | Skipped]]
    # What its corpus calls its systems, and what to do when two of them become one folder (SystemFolders).
    system_names: tuple[str, str]
    # (dialogue, the first one read with its identity) -> whether it is skipped as a repeat (CorpusError
    # when one identity holds two different dialogues)
    repeats: Callable[[Dialogue, Dialogue], bool] = always_repeats
    # The rule counted when a session id is taken and the later session's is numbered (`#2`); None: its
    # ids cannot clash (`repeats` keeps them unique).
    numbered: str | None = None
    repair_user_text: Callable[[str, Counter], str] | None = None  # its own repair of a user text (build_turns)
    system_constraints: Callable[[dict, Counter], list[dict]] | None = None  # the constraints a reply logged
    labelled: bool = False  # its sessions carry the label `satisfaction` (null where a dialogue has none)
    # The verdicts people gave on its dialogues (`labels.verdicts`), the first the primary one; () for none.
    verdicts: tuple[Verdict, ...] = ()
    between_people: bool = False  # its recommender is a person, not a system (tables of agreement say so)
    # Files in path order -> (path, dialogue or Skipped) in order, for a format whose files complete one
    # another (a film list, the scores of sampled turns); None: each file read alone by `read_file`.
    read_corpus: Callable[[list[Path]], Iterable[tuple[Path, Dialogue | Skipped]]] | None = None
    # (votes path, imported sessions) -> the rows of the votes table and the votes report; None: no votes
    import_votes: Callable[[str | Path, dict[str, list[dict]]], tuple[list[dict], dict]] | None = None
    file_by_file: FileByFile | None = None  # one session per file, read file by file
    # What its import report calls the shared rules.
    renamed: str = "system name mapped to a safe folder name"
    duplicate: str = "duplicate dialogue skipped"
    no_pair: str = "dialogue without any USER/SYSTEM pair skipped"

    @property
    def has_votes(self) -> bool:
        return self.import_votes is not None

    def read_paths(self, paths: list[str | Path]) -> Iterable[tuple[Path, Dialogue | Skipped]]:
        """(path, dialogue or Skipped) of the files `paths`, in path order."""
        ordered = sorted(Path(p) for p in paths)
        if self.read_corpus is not None:
            yield from self.read_corpus(ordered)
            return
        for path in ordered:
            for found in self.read_file(path):
                yield path, found

    def import_logs(
        self, paths: list[str | Path], matcher: ConceptMatcher | None, catalog_sha: str, config_sha: str
    ) -> tuple[dict[str, list[dict]], dict]:
        """system -> session records in session order, and the import report; CorpusError naming the
        file and what is wrong. Without a matcher no film is recognised (planning counts sessions so)."""
        if self.file_by_file is not None:
            return self._import_file_by_file(paths, matcher, catalog_sha, config_sha)
        admission = Admission(self)
        kept: dict[str, list[tuple[Path, Dialogue, list[dict]]]] = {}
        for path, found in self.read_paths(paths):
            if isinstance(found, Skipped):
                admission.skip(found)
                continue
            system = admission.system(found)
            if system is None:
                continue
            turns = self.turns(found, matcher)
            if admission.keep(system, found, len(turns)):
                kept.setdefault(system, []).append((path, found, turns))
        sessions = {
            system: self._numbered_records(system, entries, admission.report, catalog_sha, config_sha)
            for system, entries in kept.items()
        }
        return sessions, admission.summary(
            len(paths),
            {system: len(records) for system, records in sessions.items()},
            sum(len(record["turns"]) for records in sessions.values() for record in records),
            label_counts(sessions) if self.labelled else None,
            verdict_counts(sessions, self.verdicts) if self.verdicts else None,
        )

    def _import_file_by_file(
        self, paths: list[str | Path], matcher: ConceptMatcher | None, catalog_sha: str, config_sha: str
    ) -> tuple[dict[str, list[dict]], dict]:
        """The import of a format read file by file: every file's entry, then each session they assign
        imported, exactly as the workflow does it shard by shard."""
        per_file = self.file_by_file
        assigned, summary = per_file.assign([(str(path), per_file.file_entry(path)) for path in paths])
        sessions = {
            system: [
                per_file.import_session(session["path"], matcher, system, session, catalog_sha, config_sha)
                for session in listed
            ]
            for system, listed in assigned.items()
        }
        return sessions, summary

    def _numbered_records(
        self,
        system: str,
        entries: list[tuple[Path, Dialogue, list[dict]]],
        report: Counter,
        catalog_sha: str,
        config_sha: str,
    ) -> list[dict]:
        """The session records of one system's dialogues, numbered in read order."""
        records, used = [], set()
        for path, found, turns in entries:
            wanted = f"{system}/{found.session_name}"
            session_id = wanted if self.numbered is None else unique_id(wanted, used)
            if session_id != wanted:
                report[self.numbered] += 1
            records.append(
                self.record(
                    path,
                    found,
                    turns,
                    system=system,
                    session_index=len(records),
                    session_id=session_id,
                    catalog_sha=catalog_sha,
                    config_sha=config_sha,
                )
            )
        return records

    def turns(self, found: Dialogue, matcher: ConceptMatcher | None) -> list[dict]:
        """The turns of `found` after the rules every dialogue shares and this format's own repairs, its
        films recognised when a matcher is given; every rule applied is counted in `found.repairs`. A message
        over MAX_MESSAGE_CHARS is a CorpusError: cutting or dropping it would score another dialogue."""
        for position, message in enumerate(found.messages):
            if len(message["text"]) > MAX_MESSAGE_CHARS:
                raise CorpusError(
                    f"{found.where}: message {position} ({message['speaker']}) holds {len(message['text']):,} "
                    f"characters, over the {MAX_MESSAGE_CHARS:,} a message may hold "
                    "(crseval.corpora.dialogue.MAX_MESSAGE_CHARS)"
                )
        return build_turns(
            pair_turns(found.messages, found.repairs),
            matcher,
            found.repairs,
            repair_user_text=self.repair_user_text,
            system_constraints=self.system_constraints,
        )

    def record(
        self,
        path: Path,
        found: Dialogue,
        turns: list[dict],
        *,
        system: str,
        session_index: int,
        session_id: str,
        catalog_sha: str,
        config_sha: str,
    ) -> dict:
        """The session record of `found`, read from `path`, with its turns, system, number and id."""
        provenance = {
            "source_file": printable(path.name),
            "format": self.name,
            **found.provenance,
            "repairs": dict(sorted(found.repairs.items())),
        }
        if found.metadata is not None:
            provenance["metadata"] = found.metadata
        return session_record(
            session_id=session_id,
            session_index=session_index,
            system=system,
            turns=turns,
            catalog_sha=catalog_sha,
            config_sha=config_sha,
            provenance=provenance,
            labels=found.labels,
        )


class Admission:
    """Which dialogues of one import become sessions, and of which system: the rules every format
    shares, in one order, each counted in the import report under the format's name for it."""

    def __init__(self, kind: CorpusFormat):
        self.kind = kind
        self.report: Counter = Counter()
        self.read = 0  # dialogues read
        self.renamed: dict[str, str] = {}  # name in the corpus -> its system folder, where they differ
        self._folders = SystemFolders(*kind.system_names)
        self._first: dict = {}  # identity -> the first dialogue read with it
        self.skipped: dict[str, list[str]] = {}  # rule of a skipped dialogue or row -> its first places

    def skip(self, skipped: Skipped) -> None:
        """A malformed dialogue (or row) the format skipped: counted under its rule, its place listed."""
        self.report[skipped.rule] += 1
        places = self.skipped.setdefault(skipped.rule, [])
        if len(places) < LISTED_PLACES:
            places.append(skipped.where)

    def system(self, found: Dialogue) -> str | None:
        """The system folder of `found`, or None when it repeats an earlier dialogue (skipped, counted).
        Two names that become one folder are a CorpusError, whether or not the dialogue is a repeat."""
        self.read += 1
        system = self._folders.folder(found.name, found.where)
        earlier = self._first.setdefault(found.identity, found)
        if earlier is not found and self.kind.repeats(found, earlier):
            self.report[self.kind.duplicate] += 1
            return None
        return system

    def keep(self, system: str, found: Dialogue, turns: int) -> bool:
        """Whether `found`, with `turns` turns after the repairs it counts, becomes a session: one
        without a turn is skipped (counted); a kept one counts its renamed system and its format's rules."""
        self.report.update(found.repairs)
        if not turns:
            self.report[self.kind.no_pair] += 1
            return False
        if system != found.name:
            self.report[self.kind.renamed] += 1
            self.renamed[found.name] = system
        self.report.update(found.rules)
        return True

    def summary(
        self,
        files: int,
        sessions: dict[str, int],
        turns: int,
        labels: dict[str, int] | None = None,
        verdicts: dict[str, dict] | None = None,
    ) -> dict:
        """The import report: what was read, what it became, every rule applied, and where the first
        skipped dialogues were. A format of one session per file counts its files only; a format without
        labels (verdicts) counts none."""
        summary = {"format": self.kind.name, "files": files}
        if self.kind.file_by_file is None:
            summary["dialogues"] = self.read
        summary |= {"sessions": dict(sorted(sessions.items())), "turns": turns}
        if labels is not None:
            summary["labels"] = labels
        if verdicts is not None:
            summary["verdicts"] = verdicts
        summary |= {
            "rules_applied": dict(sorted(self.report.items())),
            "renamed_systems": dict(sorted(self.renamed.items())),
        }
        if self.skipped:
            summary["skipped"] = dict(sorted(self.skipped.items()))
        return summary
