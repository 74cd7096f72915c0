"""The corpus formats, by the name `sessions.import_format` gives them (crseval.corpora.format_kind).

Each format is declared in the module that reads it (`KIND`, a CorpusFormat); a new format is that
module and one entry in CORPUS_FORMATS (the config schema gets the formats' names and summaries from
`schema_part`). Its `import_logs` reads the corpus files into session records per system and an import
report (every rule applied, counted), from which `import_counts` and `sessions_per_system` count the
sessions an import yields without recognising films (the workflow plans its jobs with them, before any
job runs), and a format whose corpora carry pairwise votes reads them with its `import_votes`. The
rules every dialogue shares are in crseval.corpora.dialogue, those of every vote in crseval.corpora.votes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

from crseval.core.config_checks import SchemaPart
from crseval.core.experiment import imports_sessions
from crseval.core.registry import look_up
from crseval.corpora import ab_redial, crsarena, iard, inspired, jsonl, redial, thesis_logs
from crseval.corpora.dialogue import CorpusError, has_human_verdict
from crseval.corpora.format_kind import CorpusFormat
from crseval.language.concepts import ConceptMatcher

CORPUS_FORMATS: dict[str, CorpusFormat] = {
    kind.name: kind
    for kind in (
        thesis_logs.KIND,
        crsarena.KIND,
        jsonl.KIND,
        redial.KIND,
        iard.KIND,
        ab_redial.KIND,
        inspired.KIND,
    )
}
# The format of a corpus the config names without one: the thesis prototype's logs, for an import; CRSArena-Dial,
# the corpus the learned voice and the realism measure were made with, for the voice and the realism reference.
DEFAULT_IMPORT_FORMAT = thesis_logs.KIND.name
DEFAULT_REFERENCE_FORMAT = crsarena.KIND.name


def corpus_format(name: str) -> CorpusFormat:
    """The format named `name`; a ValueError naming the known ones (and the closest) otherwise."""
    return look_up(CORPUS_FORMATS, name, "corpus format")


def schema_part() -> SchemaPart:
    """The formats' part of the config schema (crseval.core.config_checks.compose_schema): their names, in
    CORPUS_FORMATS order (`$defs.corpus_format`, which every setting that names a format refers to), the
    defaults, and the description of `sessions.import_format`, which gives each format's summary."""
    described = ", ".join(f"`{name}` ({kind.summary})" for name, kind in CORPUS_FORMATS.items())
    voice, realism = (
        ("properties", "simulator", "properties", key, "properties", "format") for key in ("voice", "realism")
    )
    return SchemaPart(
        settings={
            ("$defs", "corpus_format"): {"enum": list(CORPUS_FORMATS)},
            ("properties", "sessions", "properties", "import_format"): {
                "default": DEFAULT_IMPORT_FORMAT,
                "description": f"the format of the files `import_paths` names: {described}; docs/importing.md, "
                '"Importing a dialogue corpus"',
            },
            voice: {"default": DEFAULT_REFERENCE_FORMAT},
            realism: {"default": DEFAULT_REFERENCE_FORMAT},
        }
    )


def import_logs(
    paths: list[str | Path], matcher: ConceptMatcher | None, catalog_sha: str, config_sha: str, import_format: str
) -> tuple[dict[str, list[dict]], dict]:
    """The corpus `paths` in `import_format`: system -> session records, and the import report."""
    return corpus_format(import_format).import_logs(paths, matcher, catalog_sha, config_sha)


def sessions_per_system(paths: list[str | Path], import_format: str) -> dict[str, int]:
    """How many sessions an import of `paths` in `import_format` yields per system (for planning)."""
    return import_counts(paths, import_format)[0]


def import_counts(paths: list[str | Path], import_format: str) -> tuple[dict[str, int], bool]:
    """What the workflow plans with: the sessions per system an import of `paths` yields, and whether
    any of them carries people's verdict (a satisfaction label or any verdict: then the `human_agreement`
    rule joins the experiment)."""
    sessions, _ = corpus_format(import_format).import_logs(paths, None, "0" * 64, "0" * 64)
    labelled = any(has_human_verdict(record) for records in sessions.values() for record in records)
    return {system: len(records) for system, records in sessions.items()}, labelled


def import_votes(path: str | Path, sessions: dict[str, list[dict]], import_format: str) -> tuple[list[dict], dict]:
    """The votes of `path` on the imported `sessions`: the rows of the votes table and the votes report."""
    chosen = corpus_format(import_format)
    if not chosen.has_votes:
        raise CorpusError(f"{path}: the {import_format} format has no votes")
    return chosen.import_votes(path, sessions)


def config_problems(config: dict) -> Iterator[str]:
    """Votes belong to an imported corpus whose format has them; elsewhere they would be silently unused.
    The corpora of people's verdicts (human_agreement.corpora) name known formats that declare a verdict, each
    corpus once, with votes only where the format has them and only the verdicts it declares."""
    yield from _people_problems(config)
    sessions = config.get("sessions") if isinstance(config, dict) else None
    if not isinstance(sessions, dict) or sessions.get("import_votes") is None:
        return
    chosen = CORPUS_FORMATS.get(sessions.get("import_format"))
    if not imports_sessions(config):
        yield "sessions.import_votes: votes are read only with `source: import` (they are votes on imported dialogues)"
    elif chosen is not None and not chosen.has_votes:
        with_votes = " or ".join(f"`{name}`" for name, kind in CORPUS_FORMATS.items() if kind.has_votes)
        yield f"sessions.import_votes: the {chosen.name} format has no votes (votes come with {with_votes})"


def _people_problems(config: dict) -> Iterator[str]:
    section = config.get("human_agreement") if isinstance(config, dict) else None
    corpora = section.get("corpora") if isinstance(section, dict) else None
    if not isinstance(corpora, list):
        return
    seen: set[str] = set()
    for position, corpus in enumerate(corpora):
        if not isinstance(corpus, dict):
            continue
        key = f"human_agreement.corpora[{position}]"
        name, chosen = corpus.get("name"), CORPUS_FORMATS.get(corpus.get("format"))
        if isinstance(name, str) and name in seen:
            yield f"{key}.name: {name!r} names two corpora (each corpus's tables are under its name)"
        seen.add(name)
        if chosen is None:
            if isinstance(corpus.get("format"), str):
                yield f"{key}.format: {corpus['format']!r} is not a corpus format ({', '.join(CORPUS_FORMATS)})"
            continue
        if not chosen.verdicts:
            with_verdicts = ", ".join(n for n, kind in CORPUS_FORMATS.items() if kind.verdicts)
            yield f"{key}.format: the {chosen.name} format declares no verdict to judge against ({with_verdicts} do)"
        if corpus.get("votes") is not None and not chosen.has_votes:
            yield f"{key}.votes: the {chosen.name} format has no votes"
        declared = [verdict.name for verdict in chosen.verdicts]
        for wanted in corpus.get("verdicts") or []:
            if wanted not in declared:
                yield f"{key}.verdicts: {wanted!r} is not a verdict of the {chosen.name} format ({', '.join(declared)})"
