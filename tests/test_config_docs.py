"""config/README.md's tables are generated from the config schema (crseval.core.config_docs), so a
key's type, bounds, default and meaning are written once; the README must be up to date. The schema is
the one a config is checked against: the file's with every kind's keys and names composed in."""

import pytest
from conftest import REPO

from crseval.core.config_docs import SHARED, composed_schema, documented, kind, main, render, table
from crseval.planning import config_schema

README = REPO / "config" / "README.md"
SCHEMA = config_schema()
# every keyword the schema may use: JSON Schema's, and the re-runs annotation of the README's last column
KEYWORDS = {
    *("$schema", "$defs", "$ref", "description", "default", "type", "enum", "const", "pattern", "format"),
    *("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength", "minItems", "maxItems"),
    *("uniqueItems", "items", "properties", "additionalProperties", "required", "if", "then", "allOf"),
    "propertyNames",
    "x-reruns",
}


def test_the_readme_is_up_to_date_with_the_schema():
    text = README.read_text(encoding="utf-8")
    assert render(text, SCHEMA) == text, "run: python -m crseval.core.config_docs config/README.md"


def test_the_command_line_documents_the_schema_the_kinds_compose():
    assert composed_schema() is SCHEMA


def test_every_section_of_the_schema_has_one_table():
    names = documented(README.read_text(encoding="utf-8"))
    assert sorted(names) == sorted([*SCHEMA["properties"], *SHARED])


def test_every_key_is_a_row_with_its_bounds_and_default():
    text = README.read_text(encoding="utf-8")
    for line in (
        "| `lda.top_words` | int in [1, 5] | `5` |",
        "| `stats.alpha` | number in (0, 1) | `0.05` |",
        "| `agent.track_plot_keywords` | bool | `false` |",
        "| `sessions.import_paths` | glob pattern | required with `source: import` |",
        "| `systems[*].lag` | int >= 1 | required with `agent: lagging` |",
        "| `backend.n_ctx` | int >= 256 | optional, only with `type: llamacpp` |",
        "| `scoring.cas.delay_range` | 2 numbers >= 0 | `[1, 6]` |",
    ):
        assert line in text, line


def test_the_schema_uses_only_known_keywords():
    """A typo, or a comma in a YAML flow mapping (`{description: a, b}` makes a key `b`), is no keyword:
    JSON Schema ignores it silently."""

    def walk(node, path):
        if isinstance(node, dict):
            for key, value in node.items():
                if path[-1:] not in (("properties",), ("$defs",)):
                    assert key in KEYWORDS, f"{'/'.join(path)}: {key!r}"
                walk(value, (*path, key))
        elif isinstance(node, list):
            for value in node:
                walk(value, path)

    walk(SCHEMA, ())


def test_a_key_without_a_description_is_an_error():
    schema = {"properties": {"lda": {"type": "object", "properties": {"passes": {"type": "integer"}}}}}
    with pytest.raises(ValueError, match="lda.passes: the config schema gives no description"):
        table("lda", schema)
    with pytest.raises(KeyError, match="'ldb'"):
        table("ldb", schema)


@pytest.mark.parametrize(
    "schema, words",
    [
        ({"type": "integer", "minimum": 1, "maximum": 1024}, "int in [1, 1024]"),
        ({"type": "number", "exclusiveMinimum": 0, "maximum": 1}, "number in (0, 1]"),
        ({"type": "number", "exclusiveMinimum": 0}, "number > 0"),
        ({"type": "number", "maximum": 1}, "number <= 1"),
        ({"enum": ["a", "b", "c"]}, "`a`, `b` or `c`"),
        ({"type": "array", "minItems": 3, "maxItems": 3, "items": {"type": "integer"}}, "3 ints"),
        (
            {"type": "array", "minItems": 1, "uniqueItems": True, "items": {"enum": ["x"]}},
            "list of `x` (at least 1, no repeats)",
        ),
        ({"type": "object", "additionalProperties": {"type": "number"}}, "map of name -> number"),
        ({"type": "string", "minLength": 1}, "non-empty string"),
    ],
)
def test_types_and_bounds_in_words(schema, words):
    assert kind(schema, SCHEMA) == words


def test_check_exits_1_on_a_stale_readme_and_rewrites_it(tmp_path, capsys):
    stale = tmp_path / "README.md"
    stale.write_text(
        README.read_text(encoding="utf-8").replace("| `lda.num_topics` | int >= 2 |", "| `lda.num_topics` | int >= 3 |")
    )
    assert main(["--check", str(stale)]) == 1
    assert "not up to date" in capsys.readouterr().out
    assert main([str(stale)]) == 0
    assert main(["--check", str(stale)]) == 0
    assert stale.read_text(encoding="utf-8") == README.read_text(encoding="utf-8")
