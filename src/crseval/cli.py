"""Command line.

`crseval import-logs` converts a conversation corpus (legacy logs, CRSArena-Dial, JSON lines: `--format`)
into session files, and its votes (`--votes`) into a votes table. The workflow imports corpora itself
with `sessions.source: import`; this command is for looking at an import (or feeding sessions
elsewhere) without running the workflow.

`crseval eval-titles` measures title recognition against hand-labelled replies (format and
annotation guide: tests/data/title_labels/), e.g. a labelled set of your own system's replies, or with
`--corpus FORMAT` against the films a corpus marks in its replies (ReDial, IARD, INSPIRED, AB-ReDial).

`crseval config show config/<name>.yaml [more.yaml ...]` prints the config a run with these
`--configfile`s uses: shipped configs hold only what they change, the schema's defaults fill the rest.
Below it, as YAML comments (the output is still the config), the settings of each user profile the
systems meet, built-in or defined under `simulator.profiles`.

`crseval verify results/<experiment>` checks a results folder against its provenance.json: the
hashes of its tables, statistics, figures and input files, each stage digest against its settings, and
(with --configfile) the settings.

`crseval compare BASELINE RUN [RUN ...]` compares finished runs with a baseline (docs/comparing.md):
comparability stage by stage first (exit 2 when a run's catalog, user or metrics differ, unless
--allow-different), then paired differences per system and metric with regression flags
(--fail-on-regression: exit 1 when one is flagged). `crseval board RUN [RUN ...]` puts every system of
many runs in one table, grouped by comparability class. Both hold every run to its provenance record (exit 2
when the record does not describe its tables, unless --trust-mismatched-records) and write outside the runs.
"""

from __future__ import annotations

import argparse
import glob
import json
import math
import sys
from pathlib import Path

import yaml

from crseval.catalog.index import CatalogIndex
from crseval.core.config_checks import ConfigError, fill_defaults
from crseval.core.config_files import load_config_file
from crseval.core.io import write_json
from crseval.core.session_records import catalog_sha, write_sessions
from crseval.corpora.formats import CORPUS_FORMATS, CorpusError, import_logs, import_votes
from crseval.corpora.votes import write_votes
from crseval.language.concepts import ConceptMatcher
from crseval.language.title_labels import LabelError, evaluate, load_labels
from crseval.language.title_marks import evaluate_marks


def main(argv: list[str] | None = None) -> int:
    """`crseval <command> ...`: the command run on its arguments; its exit code."""
    args = _parser().parse_args(argv)
    run = {
        "import-logs": _import_logs,
        "eval-titles": _eval_titles,
        "verify": _verify,
        "compare": _compare,
        "board": _board,
        "config": _show_config,
    }[args.command]
    return run(args)


def _parser() -> argparse.ArgumentParser:
    """The command line: one subcommand each, in the order `crseval --help` lists them."""
    parser = argparse.ArgumentParser(prog="crseval")
    commands = parser.add_subparsers(dest="command", required=True)
    _add_import_logs(commands)
    _add_eval_titles(commands)
    _add_verify(commands)
    _add_compare(commands)
    _add_board(commands)
    _add_config(commands)
    return parser


def _add_import_logs(commands) -> None:
    importer = commands.add_parser("import-logs", help="convert a conversation corpus into session JSON lines")
    importer.add_argument("paths", nargs="+", help="corpus files or glob patterns")
    importer.add_argument(
        "--format",
        dest="import_format",
        choices=sorted(CORPUS_FORMATS),
        default="thesis_logs",
        help="corpus format (docs/importing.md; default: thesis_logs, the legacy logs)",
    )
    importer.add_argument(
        "--votes", type=Path, help="pairwise votes on the dialogues (crsarena: the votes CSV; jsonl: vote lines)"
    )
    importer.add_argument(
        "--catalog-index",
        required=True,
        type=Path,
        help="folder with films.parquet and concepts.parquet (results/<experiment>/catalog)",
    )
    importer.add_argument(
        "--out",
        required=True,
        type=Path,
        help="output folder: <system>.jsonl per system, import_report.json, and votes.parquet with --votes",
    )


def _add_eval_titles(commands) -> None:
    titles = commands.add_parser(
        "eval-titles", help="precision and recall of title recognition on labelled replies or a corpus's film marks"
    )
    titles.add_argument(
        "files",
        nargs="+",
        help="label file: one JSON line per reply (see tests/data/title_labels/GUIDE.md); "
        "with --corpus, the corpus files or glob patterns",
    )
    titles.add_argument(
        "--corpus",
        metavar="FORMAT",
        choices=sorted(CORPUS_FORMATS),
        help="read the files as a corpus of this format and score the recognition of each reply against the "
        "films the corpus marks in it (formats whose replies mark films: redial, iard, inspired, ab_redial)",
    )
    titles.add_argument("--logs", type=Path, help="folder of the legacy logs the labels point into")
    titles.add_argument(
        "--catalog-index", required=True, type=Path, help="folder with films.parquet and concepts.parquet"
    )
    titles.add_argument(
        "--errors", action="store_true", help="also list every reply where recognition and labels (or marks) differ"
    )


def _add_verify(commands) -> None:
    checker = commands.add_parser(
        "verify",
        help="check a results folder against its provenance.json (output and input hashes, stage digests, settings)",
    )
    checker.add_argument("results", type=Path, help="results/<experiment>")
    checker.add_argument(
        "--workdir", type=Path, help="folder the workflow ran in, for relative input paths (default: above results/)"
    )
    checker.add_argument(
        "--configfile", type=Path, help="also list every setting of this config that differs from the recorded one"
    )


def _add_config(commands) -> None:
    shown = commands.add_parser("config", help="the effective config of one or more config files")
    shown.add_argument("action", choices=["show"])
    shown.add_argument("files", nargs="+", type=Path, help="config files, merged in order as --configfile merges them")


def _add_compare(commands) -> None:
    compare = commands.add_parser(
        "compare", help="compare finished runs with a baseline: comparability, paired differences, regressions"
    )
    compare.add_argument("baseline", type=Path, help="results/<experiment> of the baseline run")
    compare.add_argument("runs", nargs="+", type=Path, help="results/<experiment> of each run to compare with it")
    compare.add_argument("--out", type=Path, help="output folder (default: results/compare/<baseline>-vs-<runs>)")
    compare.add_argument(
        "--map",
        action="append",
        default=[],
        metavar="RUN_NAME=BASELINE_NAME",
        help="a system renamed in the runs: compare it with the baseline's system of that name (repeatable)",
    )
    compare.add_argument(
        "--tolerance",
        action="append",
        default=[],
        metavar="[METRIC=]VALUE",
        help="a difference within this many units of the metric is never flagged (all metrics, or one; default 0)",
    )
    compare.add_argument(
        "--adjusted", action="store_true", help="flag by p adjusted over every row (the plan's correction), not raw p"
    )
    compare.add_argument(
        "--allow-different",
        action="store_true",
        help="compare runs whose catalog, user or metrics differ, under a heading that says what differs",
    )
    compare.add_argument("--top", type=int, default=10, help="changed sessions listed per system (default 10)")
    compare.add_argument(
        "--fail-on-regression", action="store_true", help="exit 1 when a regression is flagged (for CI jobs)"
    )
    _add_trust(compare)


def _add_board(commands) -> None:
    board = commands.add_parser("board", help="every system of many runs in one table, by comparability class")
    board.add_argument("runs", nargs="+", type=Path, help="results/<experiment> of each run")
    board.add_argument("--out", type=Path, default=Path("results/board"), help="output folder (default results/board)")
    board.add_argument(
        "--metric",
        action="append",
        default=[],
        help="a metric column to show (repeatable; default: the first run's stats.metrics)",
    )
    _add_trust(board)


def _add_trust(command) -> None:
    """The option compare and board share: read a run its provenance record does not describe."""
    command.add_argument(
        "--trust-mismatched-records",
        action="store_true",
        help="read a run whose provenance.json does not describe its tables (a table changed since, a stage digest "
        "not that of its settings) under a heading that says so, instead of refusing it",
    )


# ------------------------------------------------------------------ import-logs


class _ImportRefused(Exception):
    """Why `crseval import-logs` stops without writing (exit 2), said after the command's name."""


def _import_logs(args: argparse.Namespace) -> int:
    """The corpus imported into one <system>.jsonl per system, its votes into votes.parquet, and the import
    report beside them; the sessions per system printed."""
    try:
        _check_out_folder(args.out)  # before the import, which may take long
        files = sorted({f for pattern in args.paths for f in (glob.glob(pattern) or [pattern])})
        matcher, summary = _import_catalog(args.catalog_index)
        sessions, votes, report = _imported(files, matcher, summary, args.import_format, args.votes)
        _write_import(sessions, votes, report, args.out)
    except _ImportRefused as error:
        print(f"crseval import-logs: {error}", file=sys.stderr)
        return 2
    print(json.dumps(report["sessions"]))
    return 0


def _check_out_folder(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise _ImportRefused(
            f"--out {out} is a file, not a folder (the sessions are written into a folder, "
            "one <system>.jsonl each); name a folder, new or existing"
        )


def _import_catalog(catalog_index: Path) -> tuple[ConceptMatcher, str]:
    """The matcher of the catalog the films are recognised against, and the sha of its summary ("0"s without)."""
    try:
        index = CatalogIndex.read(catalog_index / "films.parquet", catalog_index / "concepts.parquet")
    except (OSError, ValueError) as error:
        raise _ImportRefused(f"--catalog-index {catalog_index}: cannot read the catalog: {error}") from error
    summary = catalog_sha(catalog_index / "summary.json") if (catalog_index / "summary.json").exists() else "0" * 64
    return ConceptMatcher(index.concepts, index.films), summary


def _imported(files: list[str], matcher: ConceptMatcher, summary: str, import_format: str, votes_path: Path | None):
    """The sessions per system, the votes (None without --votes) and the import report."""
    votes = None
    try:
        sessions, report = import_logs(files, matcher, summary, "0" * 64, import_format)
        if votes_path is not None:
            votes, report["votes"] = import_votes(votes_path, sessions, import_format)
    except CorpusError as error:
        raise _ImportRefused(str(error)) from error
    return sessions, votes, report


def _write_import(sessions: dict, votes, report: dict, out: Path) -> None:
    """Every file of the import into `out`, after checking that no system's file would land outside it."""
    targets = {system: out / f"{system}.jsonl" for system in sessions}
    for system, target in targets.items():  # the importer gives safe names; this guards the folder if it ever did not
        if not target.resolve().is_relative_to(out.resolve()):
            raise _ImportRefused(
                f"system {system!r} would be written outside the output folder {out} "
                f"(to {target.resolve()}); nothing written"
            )
    try:
        out.mkdir(parents=True, exist_ok=True)
        for system, records in sessions.items():
            write_sessions(records, targets[system])
        if votes is not None:
            write_votes(votes, out / "votes.parquet")
        write_json(report, out / "import_report.json")
    except OSError as error:  # a file where a folder is wanted, no permission, a full disk
        raise _ImportRefused(f"cannot write to --out {out}: {type(error).__name__}: {error}") from error


# ------------------------------------------------------------------ the other commands


def _show_config(args: argparse.Namespace) -> int:
    # the planner asks every kind's registry: loaded by the config commands only, not by import-logs
    from crseval.planning import effective_config, user_profiles_settings

    try:
        config = effective_config(*args.files)
    except (ConfigError, OSError, yaml.YAMLError) as error:
        print(f"crseval config show: {error}", file=sys.stderr)
        return 2
    print(yaml.safe_dump(config, sort_keys=False, allow_unicode=True, width=120), end="")
    profiles = user_profiles_settings(config)
    if profiles:
        print("# The user profiles the systems meet, as their simulate jobs record them (a `fit` knob takes the")
        print("# learned voice's value when the sessions are simulated):")
        shown = yaml.safe_dump(profiles, sort_keys=False, allow_unicode=True, width=116, default_flow_style=None)
        print("".join(f"#   {line}" for line in shown.splitlines(keepends=True)), end="")
    return 0


def _eval_titles(args: argparse.Namespace) -> int:
    if args.corpus is None and (len(args.files) != 1 or args.logs is None):
        print(
            "crseval eval-titles: name one label file and its --logs folder, or --corpus FORMAT and the corpus files",
            file=sys.stderr,
        )
        return 2
    try:
        index = CatalogIndex.read(args.catalog_index / "films.parquet", args.catalog_index / "concepts.parquet")
    except (OSError, ValueError) as error:
        print(
            f"crseval eval-titles: --catalog-index {args.catalog_index}: cannot read the catalog: {error}",
            file=sys.stderr,
        )
        return 2
    recognizer = ConceptMatcher(index.concepts, index.films).title_recognizer
    if args.corpus is not None:
        return _eval_titles_on_marks(args, recognizer)
    try:
        replies = load_labels(args.files[0], args.logs)
    except (LabelError, OSError) as error:
        print(f"crseval eval-titles: {error}", file=sys.stderr)
        return 2
    result = evaluate(recognizer, replies)
    if not args.errors:
        result.pop("errors")
    print(json.dumps(result, indent=2, ensure_ascii=False))
    return 0


def _eval_titles_on_marks(args: argparse.Namespace, recognizer) -> int:
    """The corpus imported as its importer reads it (bounded as every import is), without recognising
    films, then each reply's films recognised and compared with the films the corpus marks in it."""
    files = sorted({f for pattern in args.files for f in (glob.glob(pattern) or [pattern])})
    try:
        sessions, _ = import_logs(files, None, "0" * 64, "0" * 64, args.corpus)
    except CorpusError as error:
        print(f"crseval eval-titles: {error}", file=sys.stderr)
        return 2
    records = [record for records in sessions.values() for record in records]
    if not any("marked_titles" in turn for record in records for turn in record["turns"]):
        print(
            f"crseval eval-titles: no reply of {', '.join(files)} marks its films in the {args.corpus} format: "
            "nothing to measure against (formats whose replies mark films: redial, iard, inspired, ab_redial)",
            file=sys.stderr,
        )
        return 2
    result = {
        "corpus": args.corpus,
        "sessions": len(records),
        **evaluate_marks(recognizer, records, errors=args.errors),
    }
    print(json.dumps(result, indent=2, ensure_ascii=False))
    return 0


def _verify(args) -> int:
    from crseval.planning import config_schema  # the planner asks every kind's registry, as for `config show`
    from crseval.provenance import ProvenanceError, verify  # it loads the planner: as for `config show`

    config = None
    if args.configfile is not None:
        try:  # bounded in size, depth and aliases, as the workflow reads a --configfile
            config = load_config_file(args.configfile)
        except ConfigError as error:
            print(f"crseval verify: --configfile {args.configfile}: {error}", file=sys.stderr)
            return 2
        fill_defaults(config, config_schema())
    try:
        problems = verify(args.results, workdir=args.workdir, config=config)
    except ProvenanceError as error:
        print(f"crseval verify: {error}", file=sys.stderr)
        return 2
    for problem in problems:
        print(f"{args.results}: {problem}")
    if problems:
        print(
            f"crseval verify: {len(problems)} difference(s) from {args.results / 'provenance.json'}; "
            "re-run the workflow (snakemake) to bring tables and record together",
            file=sys.stderr,
        )
        return 1
    print(f"{args.results}: every output and input matches provenance.json")
    return 0


def _pairs(values: list[str], option: str, number: bool = False) -> dict:
    """`--option A=B` values as a dict (a bare value under "*" where allowed); ValueError naming the bad one."""
    pairs = {}
    for value in values:
        key, sep, given = value.rpartition("=")
        if number:
            if sep and not key.strip():
                raise ValueError(f"{option} {value!r}: no metric named before '=' (a value alone is every metric's)")
            key = key if sep else "*"
            try:
                pairs[key] = float(given)
            except ValueError:
                raise ValueError(f"{option} {value!r}: {given!r} is not a number") from None
            if not 0 <= pairs[key] < math.inf:  # an infinite tolerance flags nothing: the gate off
                raise ValueError(f"{option} {value!r}: a tolerance is a finite non-negative number")
        elif not sep or not key or not given:
            raise ValueError(f"{option} {value!r} is not NAME=NAME")
        else:
            pairs[key] = given
    return pairs


def _read_runs(paths: list[Path]):
    """The runs in `paths`, each labelled by its folder's name; a label taken already gets " (2)", " (3)"...
    (a run compared with itself, or two experiments of one name in different places)."""
    from crseval.runs.comparability import read_run  # loaded for compare and board alone, as below

    runs, seen = [], {}
    for path in paths:
        run = read_run(path)
        seen[run.name] = seen.get(run.name, 0) + 1
        if seen[run.name] > 1:
            run.name = f"{run.name} ({seen[run.name]})"
        runs.append(run)
    return runs


def _compare(args) -> int:
    # the runs package reads results folders only: loaded for these commands alone
    from crseval.runs.comparability import RunError, printable
    from crseval.runs.compare import compare
    from crseval.runs.compare_page import write_comparison

    try:
        system_map = _pairs(args.map, "--map")
        tolerance = _pairs(args.tolerance, "--tolerance", number=True)
        if args.top < 1:
            raise ValueError(f"--top {args.top}: the changed sessions listed per system, at least 1")
        baseline, *runs = _read_runs([args.baseline, *args.runs])
        names = [baseline.name, *(run.name for run in runs)]
        out = args.out or Path("results") / "compare" / "-vs-".join(names)
        _writable_outside_the_runs(out, [baseline, *runs], "the comparison")
        _check_records([baseline, *runs], args.trust_mismatched_records)
        result = compare(
            baseline,
            runs,
            system_map=system_map,
            allow_different=args.allow_different,
            tolerance=tolerance,
            adjusted=args.adjusted,
            top=args.top,
        )
    except (RunError, ValueError) as error:
        print(f"crseval compare: {_said(error)}", file=sys.stderr)
        return 2
    _warn_mismatches("compare", [baseline, *runs])
    code = result.exit_code(args.fail_on_regression)
    try:
        written = write_comparison(result, out, code)
    except OSError as error:  # a file where the folder is wanted, no permission, a full disk
        print(f"crseval compare: cannot write to {out}: {type(error).__name__}: {error}", file=sys.stderr)
        return 2
    for compared in result.runs:
        if compared.refused:
            print(
                f"crseval compare: {printable(compared.run.name)} is not comparable with {printable(baseline.name)}: "
                + printable("; ".join(stage.describe() for stage in compared.comparability.refused), 2000)
                + " (--allow-different compares them anyway)",
                file=sys.stderr,
            )
            continue
        flagged = compared.regressions
        against = printable(baseline.name)
        print(f"{printable(compared.run.name)}: {len(flagged)} regression(s) flagged against {against}")
        for row in flagged.to_dict("records"):
            print(
                f"  {printable(str(row['system']))} {printable(str(row['metric']))}: {row['diff']:+.4g} "
                f"[{row['ci_low']:.4g}, {row['ci_high']:.4g}], p {row['p']:.3g}, {row['users']} users"
            )
    print(f"written: {written['compare.html']}")
    return code


def _writable_outside_the_runs(out: Path, runs, what: str) -> None:
    """ValueError when the output folder is a run's results folder or inside one (what is written goes beside
    the runs, never into the folders the workflow owns and provenance.json describes), or is a file: said
    before any run is checked or any table read."""
    target = out.resolve()
    for run in runs:
        folder = Path(run.path).resolve()
        if target == folder or folder in target.parents:
            raise ValueError(f"--out {out} is inside the results folder of {run.path}; write {what} elsewhere")
    if out.exists() and not out.is_dir():
        raise ValueError(f"cannot write to {out}: it is a file, not a folder")


def _check_records(runs, trust_mismatched: bool) -> None:
    """Hold every run to its provenance record (crseval.runs.comparability.Run.check_record)."""
    for run in runs:
        run.check_record(trust_mismatched)


def _said(error: Exception) -> str:
    """An error of compare or board for the terminal, what a record does not describe with the way past it."""
    from crseval.runs.comparability import RecordMismatch, printable  # loaded for compare and board alone

    text = printable(str(error), 4000)
    if isinstance(error, RecordMismatch):
        text += " (--trust-mismatched-records reads it anyway, under a heading that says so)"
    return text


def _warn_mismatches(command: str, runs) -> None:
    from crseval.runs.comparability import RECORD_MISMATCH_HEADING, printable  # for compare and board alone

    for run in runs:
        for problem in run.mismatches:
            print(
                f"crseval {command}: {printable(run.name)}: {RECORD_MISMATCH_HEADING}: {printable(problem, 2000)}",
                file=sys.stderr,
            )


def _board(args) -> int:
    # the runs package reads results folders only: loaded for these commands alone
    from crseval.runs.board import BoardRun, write_board
    from crseval.runs.comparability import RunError, class_key

    try:
        runs = _read_runs(args.runs)
        metrics = args.metric or list(runs[0].record["config"]["stats"].get("metrics") or [])
        if not metrics:
            raise ValueError(f"{runs[0].path}: its record names no stats.metrics; name the metrics with --metric")
        _writable_outside_the_runs(args.out, runs, "the board")
        _check_records(runs, args.trust_mismatched_records)
        entries = []
        for run in runs:
            key, label = class_key(run)
            tables = run.model_metrics(), run.pass_k()  # read first: what they do not match is noted on the run
            entries.append(BoardRun(run.name, str(run.path), key, label, *tables, tuple(run.mismatches)))
        written = write_board(entries, metrics, args.out)
    except (RunError, ValueError) as error:
        print(f"crseval board: {_said(error)}", file=sys.stderr)
        return 2
    _warn_mismatches("board", runs)
    classes = len({entry.class_key for entry in entries})
    print(f"{len(entries)} runs in {classes} comparability class(es): {written['html']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
