"""Fuzzing the two readers of untrusted files: legacy logs and the catalog.

Whatever a file holds, the reader either returns a result that the rest of the pipeline can use (schema-valid
sessions under safe folder names; a catalog whose tables can be built and whose report can be written) or stops
with its own named error. Any other exception is a bug. Derandomized, so a failure reproduces in CI.
"""

import json
import tempfile
from pathlib import Path

import jsonschema
from conftest import REPO
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crseval.catalog.build import CatalogError, concepts_table, films_table, load_catalog
from crseval.core.names import is_safe_name
from crseval.core.session_records import load_schema
from crseval.corpora.thesis_logs import LogImportError, import_logs, read_log

FUZZ = settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
VALIDATOR = jsonschema.Draft202012Validator(
    load_schema(REPO / "src" / "crseval" / "core" / "schemas" / "session.schema.yaml")
)
# where the generated logs go: numbers and stems that collide across folders, and a file without a number
LOG_PATHS = ["a/log_0.json", "b/log_0.json", "a/log.json", "b/log_1.json"]


def mostly(common, rare, share_rare=4):
    """`rare` in one draw out of `share_rare`, else `common` (st.one_of merges equal branches, so it cannot weight)."""
    return st.integers(0, share_rare - 1).flatmap(lambda n: rare if n == 0 else common)


# odd unicode: combining marks, right-to-left, zero-width and NUL characters, astral planes, quotes and braces
ODD_CHARS = st.one_of(
    st.characters(exclude_categories=["Cs"]),
    st.sampled_from(
        [
            "\u0301",
            "\u202e",
            "\u200b",
            "\x00",
            "\ufeff",
            "\U0001f3ac",
            "ß",
            "ﬀ",
            "İ",
            "\u2028",
            "{",
            "}",
            "'",
            '"',
            "\\",
            " ",
        ]
    ),
)
ODD_TEXT = st.text(ODD_CHARS, max_size=40)
LONE_SURROGATE_TEXT = st.text(st.characters(categories=["Cs"]), min_size=1, max_size=3)  # a writer's broken escapes
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    ODD_TEXT,
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(ODD_TEXT, inner, max_size=4)),
    max_leaves=12,
)
PASTED = st.sampled_from(
    [
        "{'name': 'Heat', 'year': '1995'}",
        "{'name': 'Alien', 'plot': 'A crew {finds",
        "{'year': '1",
        '{"name": "Schindler\'s List"}',
        "}",
        "{",
        "{'name': }",
        "{'a': {'b': {'name': 'Up'}}}",
        "'",
        "{'name': 'Heat\\'s'}",
        "{ 'x' :",
    ]
)
WORDS = st.sampled_from(["I like", "Heat", "and also", "Casino", "Heat and Casino"])
USER_TEXT = st.lists(st.one_of(ODD_TEXT, PASTED, WORDS), min_size=1, max_size=6).map(" ".join)
FIELDS = st.sampled_from(["genre", "actor", "director", "writer", "language", "year", "plot", "name", ""])
CONSTRAINTS = st.one_of(
    st.dictionaries(FIELDS, JSON_VALUES, max_size=4), st.dictionaries(FIELDS, ODD_TEXT, max_size=4), JSON_VALUES
)
MESSAGE = st.fixed_dictionaries(
    {"speaker": st.sampled_from(["USER", "SYSTEM"] * 4 + [" user ", "ASSISTANT", ""]), "text": USER_TEXT},
    optional={"constraints": CONSTRAINTS},
)
BROKEN_MESSAGE = st.one_of(
    st.fixed_dictionaries(
        {}, optional={"speaker": JSON_VALUES, "text": st.one_of(USER_TEXT, JSON_VALUES), "constraints": CONSTRAINTS}
    ),
    st.fixed_dictionaries({"speaker": st.just("USER"), "text": LONE_SURROGATE_TEXT}),
    JSON_VALUES,
)
MODEL_NAMES = st.one_of(
    st.sampled_from(["m", "../../m", "/abs/m", "..", ".", "", "a b/c", "qwen:7b", "-m-", "m" * 120]), ODD_TEXT
)
GOOD_LOG = st.fixed_dictionaries(
    {"model_name": MODEL_NAMES, "conversation": st.lists(MESSAGE, max_size=8)},
    optional={"true_genre": st.one_of(ODD_TEXT, JSON_VALUES)},
)
BROKEN_LOG = st.one_of(
    st.fixed_dictionaries(
        {"model_name": MODEL_NAMES, "conversation": st.lists(st.one_of(MESSAGE, BROKEN_MESSAGE), max_size=4)}
    ),
    st.fixed_dictionaries(
        {},
        optional={
            "model_name": st.one_of(JSON_VALUES, LONE_SURROGATE_TEXT),
            "conversation": st.one_of(JSON_VALUES, st.lists(MESSAGE, max_size=2)),
            "true_genre": JSON_VALUES,
        },
    ),
    JSON_VALUES,
)
LOGS = mostly(GOOD_LOG, BROKEN_LOG)  # mostly readable files, so the import goes deep
# text no JSON encoder writes: huge numbers, deep nesting, truncation, invalid escapes, a byte order mark
RAW_DEFECTS = st.sampled_from(
    [
        '{"model_name": "m", "conversation": [], "n": 1' + "0" * 5000 + "}",
        '{"model_name": "m", "conversation": [' + "[" * 50_000 + "]" * 50_000 + "]}",
        '{"model_name": "m", "conversation": [{"speaker": "USER", "text": "\\ud800"}, {"speaker": "SYSTEM", "text": "x"}]}',  # noqa: E501
        '{"model_name": "m", "conversation": [{"speaker": "USER", "text": "a"}, {"speaker": "SYSTEM", "text": "b"}]',
        '{"model_name": 1e999999, "conversation": []}',
        "NaN",
        "",
        "\ufeff{}",
        '{"model_name": "m", "model_name": 1}',
    ]
)


def as_file_text(value) -> str:
    return json.dumps(value)  # escapes lone surrogates as \ud800, as a buggy writer would


def check_import(texts: list[str | bytes], matcher) -> None:
    with tempfile.TemporaryDirectory() as folder:
        paths = []
        for name, text in zip(LOG_PATHS, texts):
            path = Path(folder) / name
            path.parent.mkdir(exist_ok=True)
            path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass"))
            paths.append(path)
        for path in paths:
            try:
                read_log(path)
            except LogImportError:
                pass
        try:
            sessions, report = import_logs(paths, matcher, "a" * 64, "b" * 64)
        except LogImportError:
            return
    json.dumps(report, ensure_ascii=False, allow_nan=False).encode("utf-8")
    for system, records in sessions.items():
        assert is_safe_name(system)
        assert len({r["session_index"] for r in records}) == len(records)
        assert len({r["session_id"] for r in records}) == len(records)
        for record in records:
            VALIDATOR.validate(record)
            json.dumps(record, ensure_ascii=False).encode("utf-8")  # as the CLI and the workflow write it


@FUZZ
@given(log=st.one_of(LOGS.map(as_file_text), RAW_DEFECTS))
def test_any_log_file_imports_or_fails_with_a_log_import_error(matcher, log):
    check_import([log], matcher)


@FUZZ
@given(logs=st.lists(GOOD_LOG.map(as_file_text), min_size=2, max_size=4))
def test_several_readable_logs_import_or_fail_with_a_log_import_error(matcher, logs):
    """Readable files only, so that most runs get through to numbering, naming and title recognition."""
    check_import(logs, matcher)


@FUZZ
@given(raw=st.binary(max_size=200))
def test_any_bytes_import_or_fail_with_a_log_import_error(matcher, raw):
    check_import([raw], matcher)


NAMES = st.lists(ODD_TEXT, max_size=3)
FILM_NAMES = mostly(st.text(ODD_CHARS, min_size=1, max_size=30).filter(str.strip), ODD_TEXT)
GOOD_FILM = st.fixed_dictionaries(
    {"name": FILM_NAMES},
    optional={
        "year": st.one_of(ODD_TEXT, st.integers(), st.floats(), st.sampled_from(["1995", "1995-05", "c. 1941"])),
        "plot": ODD_TEXT,
        "original_id": st.one_of(ODD_TEXT, st.integers(), st.floats()),
        "rating": JSON_VALUES,
        **{
            name: st.one_of(NAMES, ODD_TEXT, st.lists(st.one_of(ODD_TEXT, st.none()), max_size=3))
            for name in ("genre", "actor", "director", "writer", "language")
        },
    },
)
FILM_FIELDS = ("name", "year", "plot", "original_id", "genre", "actor", "director", "writer", "language")
BROKEN_FILM = st.one_of(
    st.fixed_dictionaries({}, optional={name: JSON_VALUES for name in FILM_FIELDS}),
    st.fixed_dictionaries(
        {"name": st.one_of(ODD_TEXT, LONE_SURROGATE_TEXT), "actor": st.lists(LONE_SURROGATE_TEXT, max_size=1)}
    ),
    JSON_VALUES,
)
TITLES = st.one_of(ODD_TEXT, st.sampled_from(["Heat", "Heat ", " Heat", "He  at", "He at", "", " ", "\u2028Heat\t"]))
CATALOGS = mostly(
    st.dictionaries(TITLES, mostly(GOOD_FILM, BROKEN_FILM, share_rare=12), min_size=1, max_size=5), JSON_VALUES
)
RAW_CATALOG_DEFECTS = st.sampled_from(
    [
        '{"Heat": {"name": "Heat", "n": 1' + "0" * 5000 + "}}",
        '{"Heat": {"name": "Heat", "genre": ' + "[" * 50_000 + "]" * 50_000 + "}}",
        '{"Heat": {"name": "\\ud800"}}',
        '{"\\udc00": {"name": "Heat"}}',
        '{"Heat": {"name": "Heat", "year": 1e999999}}',
        '{"Heat": {"name": "Heat"}, "Heat": 1}',
        '{"Heat": {"name": "Heat"}',
        "",
    ]
)


def check_catalog(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "catalog.json"
        path.write_bytes(data)
        try:
            films, report = load_catalog(path)
        except CatalogError:
            return
    titles = [film.title for film in films]
    assert len(set(titles)) == len(titles)
    films_table(films, [[] for _ in films])
    concepts_table(films)
    json.dumps(report.as_dict(), ensure_ascii=False).encode("utf-8")


@FUZZ
@given(catalog=st.one_of(CATALOGS.map(as_file_text), RAW_CATALOG_DEFECTS))
def test_any_catalog_file_loads_or_fails_with_a_catalog_error(catalog):
    check_catalog(catalog.encode("utf-8", "surrogatepass"))


@FUZZ
@given(raw=st.one_of(st.binary(max_size=200), st.binary(max_size=40).map(lambda tail: b'{"H\xe9at": {"n": "' + tail)))
def test_any_catalog_bytes_load_or_fail_with_a_catalog_error(raw):
    check_catalog(raw)
