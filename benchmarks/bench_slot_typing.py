"""How often the project's rules type a word of a real user turn as a catalog value the turn does not state.

    python benchmarks/bench_slot_typing.py [--inspired ../shared/data/inspired/dev.tsv]
        [--catalog ../shared/data/opendialkg_movie_data.json] [--cache DIR]

The learned voice (crseval.simulate.user.voice_learning) turns every value and film the rules read in a real
user turn into a typed slot, and the simulated user fills the slot with its own wish: a word the rules type
where the person named no value becomes a wish the person never said. INSPIRED's dev split has, for each
row, the text and the source's own delexicalisation (`text_with_placeholder`: `[MOVIE_GENRE_0]`,
`[MOVIE_P_ACTOR_0]`, `[MOVIE_P_DIRECTOR_0]`, `[MOVIE_P_PEOPLE_0]`, `[MOVIE_TITLE_0]`, ...), which serves as
the truth here. Each SEEKER row is read with the csv module (tab-separated, no quoting, `QUOTATION_MARK`
as a double quote, as crseval.corpora.inspired reads it; no merging of a seeker's rows into turns), taken as
people see it (crseval.simulate.user.voice.visible_text), and read with
`crseval.language.user_acts.read_turn` and the full catalog's matcher; the spans of its values and titles
are those read_turn replaces (the title recogniser and the tracker's statements, checked against the
reading). The placeholders are placed in the text by a diff of the two columns' tokens; where the diff
gives several placeholders one stretch of text (placeholders the source wrote side by side, dropping the
words or commas between them), each stands for the whole stretch, and the notes printed below the tables
count them.

Printed (numbers only, never corpus text), each share with its 95% Wilson interval:
- per field, the value slots the rules type and the share of them on a placeholder of the same kind
  (precision; a person placeholder counts for actor, director and writer), then the same among slots
  typed as a wish, among wishes in turns whose act is `request`, and among the turns a voice keeps (the
  reading has no `untyped` reason). The source leaves years and languages in the text, so their slots have
  no placeholder to fall on: counted, no precision;
- per field, precision again with a slot also counted as stated where its words are marked as that kind in
  another row of the split (the source marks a genre or a name in one row and leaves it in the text of
  another): with the strict share, a bracket for the rows the source left unmarked;
- per placeholder kind, the share the rules type as a slot of that kind (recall).

The catalog index is built once (crseval.catalog.build.build_index, the config's default plot keyword
settings) and cached under `--cache` (default: a folder under the system's temporary folder), named by the
catalog's and the non-genre list's sha256.
"""

from __future__ import annotations

import argparse
import csv
import difflib
import hashlib
import re
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from crseval.catalog.build import build_index
from crseval.checks.agreement import wilson_interval
from crseval.core.io import write_parquet
from crseval.language.concepts import ConceptMatcher
from crseval.language.tracker import extract_statements
from crseval.language.user_acts import TurnReading, read_turn
from crseval.simulate.user.voice import visible_text

REPO = Path(__file__).resolve().parents[1]
NON_GENRES = REPO / "resources" / "wordlists" / "non_genre_values.tsv"
KEYWORDS = {"per_film": 5, "min_df": 2, "max_df": 0.5, "lemmatize": True}  # the config's defaults
QUOTE_TOKEN = "QUOTATION_MARK"  # how INSPIRED writes a double quote
# The source's placeholder kinds and the slots (catalog fields, or "title") each stands for.
KINDS = {
    "MOVIE_GENRE": ("genre",),
    "MOVIE_P_ACTOR": ("actor",),
    "MOVIE_P_DIRECTOR": ("director",),
    "MOVIE_P_PEOPLE": ("actor", "director", "writer"),
    "MOVIE_TITLE": ("title",),
    "MOVIE_PLOT": ("plot",),
}
FIELDS = ("genre", "actor", "director", "writer", "language", "year", "title")
NO_PLACEHOLDER = ("language", "year")  # the source leaves them in the text
_PLACEHOLDER = re.compile(r"\[([A-Z_]+?)(?:_\d+)?\]")
_TOKEN = re.compile(r"\[[A-Z_]+?(?:_\d+)?\]|\w+|[^\w\s]")


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    kinds: tuple[str, ...]  # the slots it may be (a placeholder), or the one a slot is
    role: str = ""  # wish, exclusion, context ("" for a title or a placeholder)


def seeker_rows(path: Path) -> list[tuple[str, str]]:
    """(text, text with placeholders) of every SEEKER row, as people see them."""
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))
    return [
        (
            visible_text(row["text"].replace(QUOTE_TOKEN, '"')),
            visible_text(row["text_with_placeholder"].replace(QUOTE_TOKEN, '"')),
        )
        for row in rows
        if row["speaker"].strip() == "SEEKER"
    ]


def placeholder_spans(text: str, delexicalised: str) -> tuple[list[Span], Counter]:
    """Where in `text` each placeholder of `delexicalised` stands (a diff of their tokens), with counts of
    placeholders that stand for nothing and of spans two placeholders share."""
    words = [(m.group(0).lower(), m.start(), m.end()) for m in _TOKEN.finditer(text)]
    marked = [
        m.group(0) if _PLACEHOLDER.fullmatch(m.group(0)) else m.group(0).lower() for m in _TOKEN.finditer(delexicalised)
    ]
    matcher = difflib.SequenceMatcher(None, [w for w, _, _ in words], marked, autojunk=False)
    spans, notes = [], Counter()
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        kinds = [_PLACEHOLDER.fullmatch(token).group(1) for token in marked[j1:j2] if _PLACEHOLDER.fullmatch(token)]
        if tag == "equal" or not kinds:
            continue
        if i1 == i2:
            notes["placeholder standing for no word"] += len(kinds)
            continue
        if len(kinds) > 1:
            notes["placeholders sharing one span"] += len(kinds)
        if len(kinds) < j2 - j1:
            notes["placeholder aligned with other words"] += len(kinds)
        for kind in kinds:
            spans.append(Span(words[i1][1], words[i2 - 1][2], KINDS.get(kind, (kind.lower(),))))
    return spans, notes


def typed_spans(text: str, matcher: ConceptMatcher) -> tuple[TurnReading, list[Span]]:
    """read_turn's reading of `text` and the spans it types: each value (its field and role) and title, the
    spans read_turn replaces by slots."""
    reading = read_turn(text, matcher)
    references = sorted(matcher.title_recognizer.recognise(text, by_user=True).references, key=lambda r: r.start)
    statements = extract_statements(matcher, text, [r.title for r in references])
    if tuple((m.field, m.value, role) for m, role in statements) != reading.statements:
        raise AssertionError("the spans read here are not read_turn's statements")
    spans = [Span(m.start, m.end, (m.field,), role) for m, role in statements]
    return reading, spans + [Span(r.start, r.end, ("title",)) for r in references]


def overlaps(one: Span, other: Span) -> bool:
    return one.start < other.end and other.start < one.end


def surface(text: str, span: Span) -> str:
    """The words of a span, lower case, without the marks around them."""
    return " ".join(re.findall(r"\w+", text[span.start : span.end].lower()))


def tally(rows: list[tuple[str, str]], matcher: ConceptMatcher) -> tuple[Counter, Counter]:
    """Counts of typed slots and placeholders, and of their agreement, over every row. A slot is `hit` on a
    placeholder of its kind, `marked` also where its words are marked as its kind in some row of the split
    (the source's own words for the kind: a bound for the rows whose marking the source left out)."""
    counts, notes = Counter(), Counter()
    truths = []
    for text, delexicalised in rows:
        truth, row_notes = placeholder_spans(text, delexicalised)
        truths.append(truth)
        notes.update(row_notes)
    marked_as = {
        (kind, surface(text, place))
        for (text, _), truth in zip(rows, truths)
        for place in truth
        for kind in place.kinds
    }
    for (text, _), truth in zip(rows, truths):
        reading, typed = typed_spans(text, matcher)
        notes["rows"] += 1
        notes["rows the voice leaves out"] += bool(reading.untyped)
        for slot in typed:
            field = slot.kinds[0]
            hit = any(field in place.kinds and overlaps(slot, place) for place in truth)
            groups = ["all"]
            if slot.role == "wish":
                groups.append("wish")
                if reading.act == "request":
                    groups.append("wish in request")
            if not reading.untyped:
                groups.append("kept")
            for group in groups:
                counts[(field, group, "n")] += 1
                counts[(field, group, "hit")] += hit
                counts[(field, group, "marked")] += hit or (field, surface(text, slot)) in marked_as
        for place in truth:
            kind = "people" if len(place.kinds) > 1 else place.kinds[0]
            counts[("recall", kind, "n")] += 1
            counts[("recall", kind, "hit")] += any(s.kinds[0] in place.kinds and overlaps(s, place) for s in typed)
            counts[("recall", kind, "any")] += any(overlaps(s, place) for s in typed)
    return counts, notes


def share(hit: int, n: int) -> str:
    """hit / n with its 95% Wilson interval."""
    if not n:
        return "-"
    low, high = wilson_interval(hit, n)
    return f"{hit / n:.3f} [{low:.3f}, {high:.3f}]"


def table(counts: Counter) -> str:
    """The three tables of the module docstring, as Markdown."""
    groups = ("all", "wish", "wish in request", "kept")
    lines = [
        "| slot | typed | precision | wish: n | precision | wish in request: n | precision | kept turns: n "
        "| precision |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for field in FIELDS:
        cells = [field]
        for group in groups:
            n, hit = counts[(field, group, "n")], counts[(field, group, "hit")]
            cells += [str(n), "no placeholder" if field in NO_PLACEHOLDER and n else share(hit, n)]
        lines.append("| " + " | ".join(cells) + " |")
    pooled = [f for f in FIELDS if f not in NO_PLACEHOLDER and f != "title"]
    cells = ["genre+actor+director+writer"]
    for group in groups:
        n = sum(counts[(f, group, "n")] for f in pooled)
        cells += [str(n), share(sum(counts[(f, group, "hit")] for f in pooled), n)]
    lines += ["| " + " | ".join(cells) + " |", ""]
    lines += [
        "| slot | typed | precision | counting the source's words of the kind as stated | wish in request: n "
        "| precision | counting the source's words |",
        "|---|---|---|---|---|---|---|",
    ]
    for field in [*pooled, "title"]:
        cells = [field]
        for group in ("all", "wish in request"):
            n = counts[(field, group, "n")]
            cells += [str(n), share(counts[(field, group, "hit")], n), share(counts[(field, group, "marked")], n)]
        lines.append("| " + " | ".join(cells) + " |")
    lines += [""]
    lines += ["| placeholder | n | typed as its kind (recall) | typed as any slot |", "|---|---|---|---|"]
    for kind in ("genre", "actor", "director", "people", "title", "plot"):
        n = counts[("recall", kind, "n")]
        if n:
            hit, anything = counts[("recall", kind, "hit")], counts[("recall", kind, "any")]
            lines.append(f"| {kind} | {n} | {share(hit, n)} | {share(anything, n)} |")
    return "\n".join(lines)


def catalog_matcher(catalog: Path, cache: Path) -> ConceptMatcher:
    """The full catalog's ConceptMatcher, its index built once and cached under `cache`."""
    digest = hashlib.sha256()
    for path in (catalog, NON_GENRES):
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    digest.update(repr(sorted(KEYWORDS.items())).encode())
    folder = cache / digest.hexdigest()[:16]
    films, concepts = folder / "films.parquet", folder / "concepts.parquet"
    if not (films.exists() and concepts.exists()):
        folder.mkdir(parents=True, exist_ok=True)
        film_table, concept_table, _ = build_index(catalog, NON_GENRES, KEYWORDS)
        write_parquet(film_table, films)
        write_parquet(concept_table, concepts)
    return ConceptMatcher(pd.read_parquet(concepts), pd.read_parquet(films))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inspired", type=Path, default=REPO.parent / "shared" / "data" / "inspired" / "dev.tsv")
    parser.add_argument("--catalog", type=Path, default=REPO.parent / "shared" / "data" / "opendialkg_movie_data.json")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "crseval-bench-slot-typing")
    arguments = parser.parse_args(argv)
    for path in (arguments.inspired, arguments.catalog):
        if not path.is_file():
            print(f"{path}: no such file", file=sys.stderr)
            return 2
    started = time.perf_counter()
    matcher = catalog_matcher(arguments.catalog, arguments.cache)
    rows = seeker_rows(arguments.inspired)
    counts, notes = tally(rows, matcher)
    print(table(counts))
    print()
    for note, count in sorted(notes.items()):
        print(f"{note}: {count}")
    print(f"time: {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
