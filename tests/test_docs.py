"""The README and docs/ stay true of the tree.

The README is the short entry point (at most 160 lines); its rule table maps every rule of the
workflow to its rule file, script, library package and outputs; the README and docs/ link only to
files (and headings) that exist. Each checker is a plain function, also run on a broken example
here, so that a test that passes says something.
"""

from __future__ import annotations

import re
from pathlib import Path

from conftest import REPO

README = REPO / "README.md"
DOCS = REPO / "docs"
RULES = REPO / "workflow" / "rules"
SCRIPTS = REPO / "workflow" / "scripts"
LIBRARY = REPO / "src" / "crseval"
MAX_README_LINES = 160
RULE_TABLE_HEADER = ("rule", "rule file", "script", "package", "outputs")
PACKAGE_MAP_HEADER = ("package", "modules", "reads", "writes")

FENCE = re.compile(r"^```.*?^```", re.S | re.M)
CODE_SPAN = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)  # https:, mailto:, ...
RULE = re.compile(r"^\s*rule (\w+):", re.M)
SCRIPT = re.compile(r"^\s*script:\s*\n\s*\"([^\"]+)\"", re.M)
CRSEVAL_IMPORT = re.compile(r"^\s*(?:from|import) crseval\.(\w+)", re.M)


# ------------------------------------------------------------------ links


def anchors(markdown: str) -> set[str]:
    """The anchors a markdown file's headings get on GitHub: lower case, punctuation dropped,
    spaces as hyphens, a repeated heading suffixed -1, -2..."""
    seen: dict[str, int] = {}
    found = set()
    for line in FENCE.sub("", markdown).splitlines():
        heading = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not heading:
            continue
        slug = re.sub(r"[^\w\- ]", "", heading.group(1).lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def relative_links(markdown: str) -> list[str]:
    """Link targets that point inside the repository (not URLs), outside code."""
    text = CODE_SPAN.sub("", FENCE.sub("", markdown))
    return [target for target in LINK.findall(text) if not EXTERNAL.match(target)]


def broken_links(path: Path) -> list[str]:
    """Each relative link of the markdown file `path` whose file, or whose heading in a markdown
    target, does not exist."""
    broken = []
    for target in relative_links(path.read_text(encoding="utf-8")):
        file_part, _, anchor = target.partition("#")
        destination = (path.parent / file_part).resolve() if file_part else path
        if not destination.exists():
            broken.append(f"{path.name}: {target} (no such file)")
        elif anchor and destination.suffix == ".md" and anchor not in anchors(destination.read_text(encoding="utf-8")):
            broken.append(f"{path.name}: {target} (no such heading in {destination.name})")
    return broken


def test_readme_is_short():
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_README_LINES, f"README.md has {lines} lines; move detail into docs/"


def test_readme_keeps_both_quick_start_commands():
    readme = README.read_text(encoding="utf-8")
    for marker in ("quickstart:run", "quickstart:test"):
        assert re.search(rf"<!-- {marker} -->\n```bash\n\.?[^\n]*pip install[^\n]*\n```", readme), marker


def test_links_of_readme_and_docs_resolve():
    pages = [README, *sorted(DOCS.glob("*.md"))]
    assert len(pages) > 1
    assert [problem for page in pages for problem in broken_links(page)] == []


def test_broken_links_are_found(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "guide.md").write_text("# Guide\n\n## Running it, `fast`\n\n## Running it, `fast`\n")
    page = tmp_path / "README.md"
    page.write_text(
        "[ok](docs/guide.md) [ok](docs/guide.md#running-it-fast) [ok](docs/guide.md#running-it-fast-1)\n"
        "[web](https://example.org/missing.md) `[code](missing.md)`\n"
        "```\n[fenced](missing.md)\n```\n"
        "[gone](docs/missing.md) [bad anchor](docs/guide.md#running) [self](#nowhere)\n"
    )
    assert broken_links(page) == [
        "README.md: docs/missing.md (no such file)",
        "README.md: docs/guide.md#running (no such heading in guide.md)",
        "README.md: #nowhere (no such heading in README.md)",
    ]


# ------------------------------------------------------------------ tables


def table(markdown: str, header: tuple[str, ...]) -> list[list[str]]:
    """The rows (cells stripped) of the markdown table whose header row is `header`."""
    lines = markdown.splitlines()
    for start, line in enumerate(lines):
        if tuple(cell.strip() for cell in line.strip().strip("|").split("|")) == header:
            rows = []
            for row in lines[start + 2 :]:
                if not row.startswith("|"):
                    break
                rows.append([cell.strip() for cell in row.strip().strip("|").split("|")])
            return rows
    raise AssertionError(f"no table with header {' | '.join(header)}")


def code(cell: str) -> list[str]:
    """The `code` spans of a table cell."""
    return re.findall(r"`([^`]+)`", cell)


def defined_rules(rules_dir: Path) -> dict[str, tuple[str, str | None]]:
    """Rule name -> (the rule file defining it, the file name of its script)."""
    rules = {}
    for path in sorted(rules_dir.glob("*.smk")):
        text = path.read_text(encoding="utf-8")
        starts = list(RULE.finditer(text))
        for match, following in zip(starts, [*starts[1:], None]):
            block = text[match.end() : following.start() if following else len(text)]
            script = SCRIPT.search(block)
            rules[match.group(1)] = (path.name, Path(script.group(1)).name if script else None)
    return rules


def rule_table_problems(rows: list[list[str]], rules: dict, scripts: Path, library: Path) -> list[str]:
    """What the rule table gets wrong about the rules, their files, scripts and packages."""
    problems = []
    named = {}
    for row in rows:
        rule_cell, rule_file, script, package, outputs = row
        name = code(rule_cell)[0]
        named[name] = row
        if name not in rules:
            problems.append(f"{name}: no such rule in the rule files")
            continue
        defined_in, runs = rules[name]
        if code(rule_file) != [defined_in]:
            problems.append(f"{name}: defined in {defined_in}, the table says {rule_file}")
        if code(script) != [runs]:
            problems.append(f"{name}: runs {runs}, the table says {script}")
        script_text = (scripts / runs).read_text(encoding="utf-8") if runs and (scripts / runs).exists() else ""
        for target in code(package):
            module = target.removesuffix("/").removesuffix(".py")
            if not (library / target).exists():
                problems.append(f"{name}: no package or module {target} in the library")
            elif module not in CRSEVAL_IMPORT.findall(script_text):
                problems.append(f"{name}: {runs} does not import crseval.{module}")
        if not code(package) or not code(outputs):
            problems.append(f"{name}: no package or no outputs named")
    problems += [f"{name}: missing from the table" for name in rules if name not in named]
    return problems


def test_readme_rule_table_matches_the_rule_files():
    rows = table(README.read_text(encoding="utf-8"), RULE_TABLE_HEADER)
    rules = defined_rules(RULES)
    assert {"index_catalog", "simulate", "score", "stats", "provenance"} <= set(rules)
    assert rule_table_problems(rows, rules, SCRIPTS, LIBRARY) == []


def test_rule_table_problems_are_found(tmp_path):
    rules_dir, scripts, library = tmp_path / "rules", tmp_path / "scripts", tmp_path / "crseval"
    for folder in (rules_dir, scripts, library / "catalog", library / "metrics"):
        folder.mkdir(parents=True)
    (rules_dir / "catalog.smk").write_text(
        'rule index_catalog:\n    output:\n        "a"\n    script:\n        "../scripts/index_catalog.py"\n\n'
        'rule train_lda:\n    script:\n        "../scripts/train_lda.py"\n'
    )
    (rules_dir / "score.smk").write_text(
        'if True:\n\n    rule score:\n        script:\n            "../scripts/score.py"\n'
    )
    (scripts / "index_catalog.py").write_text("from crseval.catalog.build import build_index\n")
    (scripts / "score.py").write_text("from crseval.core.io import log_to\n")
    rules = defined_rules(rules_dir)
    assert rules == {
        "index_catalog": ("catalog.smk", "index_catalog.py"),
        "train_lda": ("catalog.smk", "train_lda.py"),
        "score": ("score.smk", "score.py"),
    }
    rows = table(
        "| rule | rule file | script | package | outputs |\n|---|---|---|---|---|\n"
        "| `index_catalog` | `catalog.smk` | `index_catalog.py` | `catalog/` | `catalog/films.parquet` |\n"
        "| `score` (per shard) | `catalog.smk` | `scores.py` | `metrics/` | `scores/` |\n"
        "| `judge` | `judge.smk` | `judge.py` | `judge/` | `judge/` |\n"
        "| `provenance` | `provenance.smk` | `provenance.py` | `provenance.py` | |\n",
        RULE_TABLE_HEADER,
    )
    assert rule_table_problems(rows[:1], {"index_catalog": rules["index_catalog"]}, scripts, library) == []
    assert rule_table_problems(rows, rules, scripts, library) == [
        "score: defined in score.smk, the table says `catalog.smk`",
        "score: runs score.py, the table says `scores.py`",
        "score: score.py does not import crseval.metrics",
        "judge: no such rule in the rule files",
        "provenance: no such rule in the rule files",
        "train_lda: missing from the table",
    ]


def test_architecture_maps_every_library_package():
    rows = table((DOCS / "architecture.md").read_text(encoding="utf-8"), PACKAGE_MAP_HEADER)
    mapped = [code(row[0])[0] for row in rows]
    packages = sorted(p.name for p in LIBRARY.iterdir() if (p / "__init__.py").exists())
    assert sorted(mapped) == packages
