"""Config files as crseval reads them (crseval.core.config_files) and the bounds on a plan (crseval.planning).

Each hostile file is refused with a ConfigFileError naming the file, its line and what to change, by
`crseval config show` and by a Snakemake run alike, within a second; any text at all ends in a config or
a named error (hypothesis, over random YAML-ish text and over mutations of the shipped configs).
"""

from __future__ import annotations

import copy
import subprocess
import sys
import time

import pytest
import yaml
from conftest import REPO, default_config
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from snakemake.common.configfile import load_configfile

from crseval.cli import main
from crseval.core.config_checks import ConfigError, exact_pattern
from crseval.core.config_files import (
    MAX_ALIASES,
    MAX_BYTES,
    MAX_DEPTH,
    MAX_VALUES,
    ConfigFileError,
    check_config_files,
    load_config_file,
)
from crseval.planning import check_config, check_session_and_job_counts, effective_config

SECOND = 1.0
DEFAULT = REPO / "config" / "config.yaml"


def billion_laughs(at: str = "extra") -> str:
    """Nine levels of nine aliases: under 600 bytes that stand for 9**9 values."""
    lines = [f"{at}:", '  l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"  l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, 9)]
    return "\n".join(lines) + "\n"


def write(tmp_path, text: str | bytes, name: str = "hostile.yaml"):
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return path


def refused(path, *words: str) -> str:
    """The problem `crseval config show` (with the default config first) names for `path`, within a second."""
    started = time.perf_counter()
    with pytest.raises(ConfigError) as caught:
        effective_config(DEFAULT, path)
    assert time.perf_counter() - started < SECOND
    message = str(caught.value)
    for word in words:
        assert word in message, message
    return message


# ------------------------------------------------------------------ what the loader refuses


def test_a_key_given_twice_is_refused_naming_both_lines(tmp_path):
    path = write(tmp_path, "systems:\n  - {name: a, agent: random}\nsystems:\n  - {name: b, agent: random}\n")
    with pytest.raises(
        ConfigFileError, match=rf"{path}, line 3: key 'systems' is given twice, at line 1 and at line 3"
    ):
        load_config_file(path)
    nested = write(tmp_path, "lda:\n  passes: 3\n  iterations: 5\n  passes: 4\n", "nested.yaml")
    refused(nested, "line 4: key 'passes' is given twice, at line 2 and at line 4")
    keys_that_are_one = write(tmp_path, "lda:\n  1: a\n  0x1: b\n", "ints.yaml")  # YAML reads both as 1
    refused(keys_that_are_one, "key 1 is given twice, at line 2 and at line 3")
    refused(write(tmp_path, "lda: {passes: 3, passes: 4}\n", "flow.yaml"), "key 'passes' is given twice, on line 1")


def test_keys_a_merge_gives_may_be_given_beside_it(tmp_path):
    path = write(tmp_path, "base: &base {temperature: 0.5, top_p: 0.9}\nuse:\n  <<: *base\n  temperature: 0.7\n")
    assert load_config_file(path)["use"] == {"temperature": 0.7, "top_p": 0.9}


@pytest.mark.parametrize("at", ["extra", "sessions"])  # an unknown key, and a known one whose value the schema shows
def test_an_alias_bomb_is_refused_within_a_second(tmp_path, at):
    refused(write(tmp_path, billion_laughs(at)), f"more than {MAX_VALUES:,} keys and values (aliases written out)")


def test_aliases_are_read_within_their_bounds(tmp_path):
    shared = "options: &o {temperature: 0.5}\n" + "".join(f"s{i}: *o\n" for i in range(MAX_ALIASES))
    assert load_config_file(write(tmp_path, shared))["s0"] == {"temperature": 0.5}
    one_more = write(tmp_path, shared + "last: *o\n", "more.yaml")
    with pytest.raises(ConfigFileError, match=f"more than {MAX_ALIASES} aliases"):
        load_config_file(one_more)
    itself = write(tmp_path, "a: &a [1, *a]\n", "itself.yaml")
    with pytest.raises(ConfigFileError, match="line 1: \\*a names the value it stands in"):
        load_config_file(itself)
    deep = "a: &a " + "[" * 20 + "1" + "]" * 20 + "\nb: " + "[" * 20 + "*a" + "]" * 20 + "\n"
    with pytest.raises(ConfigFileError, match=f"line 2: nested more than {MAX_DEPTH} levels"):  # 21 + 20 levels
        load_config_file(write(tmp_path, deep, "deep.yaml"))


def test_the_shipped_configs_are_read_as_pyyaml_reads_them():
    for path in sorted([*REPO.glob("config/*.yaml"), *REPO.glob("config/test/*.yaml")]):
        assert load_config_file(path) == yaml.safe_load(path.read_text(encoding="utf-8")), path


@pytest.mark.parametrize(
    "text, line",
    [
        ("experiment: x\nlda: " + "[" * 60_000 + "]" * 60_000 + "\n", 2),
        ("".join(" " * i + f"k{i}:\n" for i in range(40)), 32),
    ],
)
def test_deep_nesting_is_refused_naming_its_line(tmp_path, text, line):
    refused(write(tmp_path, text), f"line {line}: nested more than {MAX_DEPTH} levels deep")


def test_a_file_that_is_not_utf8_is_refused_naming_the_byte(tmp_path):
    path = write(tmp_path, "experiment: demo\ncatalog:\n  path: caf\u00e9.json\n".encode("latin-1"))
    refused(path, f"{path}, line 3: byte 37 (b'\\xe9') is not UTF-8")


def test_a_file_past_the_size_bound_is_refused_unread(tmp_path):
    path = write(tmp_path, "experiment: demo\n" + "#" * MAX_BYTES + "\n")
    refused(path, f"{path}: larger than {MAX_BYTES // 1024} KiB")


def test_a_yte_template_is_refused_not_rendered(tmp_path):
    path = write(tmp_path, '__use_yte__: true\nexperiment: ?"demo" + "2"\n')
    refused(path, f"{path}: __use_yte__ asks Snakemake to render the file as a YTE template")


@pytest.mark.parametrize(
    "text, words",
    [
        ("lda:\n  passes: 2024-13-45\n", "line 2: '2024-13-45' cannot be read as tag:yaml.org,2002:timestamp"),
        ("lda:\n  passes: " + "9" * 5000 + "\n", "line 2: '99999"),
        ("lda:\n  ? [a]\n  : 1\n", "line 2: a key must be a single value"),
        ("lda: !!python/object:os.system {}\n", "line 1, column 6: could not determine a constructor"),
        ("- a\n- b\n", "holds a list; a config file holds a mapping of settings (`key: value` lines)"),
        ("# nothing but a comment\n", "holds no settings; a config file holds a mapping"),
        ("a: 1\n---\nb: 2\n", "expected a single document"),
        ("a: [1\n", "line 2"),
    ],
)
def test_what_yaml_cannot_build_is_named_by_its_line(tmp_path, text, words):
    refused(write(tmp_path, text), words)


def test_a_json_file_is_read_as_json_as_snakemake_reads_it(tmp_path):
    path = write(tmp_path, '{"experiment": "demo", "lda": {"passes": 1e1}}', "config.json")
    assert load_config_file(path) == {"experiment": "demo", "lda": {"passes": 10.0}}  # YAML 1.1 reads "1e1" as text
    tabs = write(tmp_path, '{\n\t"experiment": "demo",\n\t"lda": {"passes": 1e1}\n}', "tabs.json")
    assert load_config_file(tabs) == load_configfile(tabs) == {"experiment": "demo", "lda": {"passes": 10.0}}
    not_json = write(tmp_path, "experiment:\tdemo\n", "tab.yaml")  # a tab YAML refuses, and Snakemake with it
    with pytest.raises(ConfigFileError, match="line 1, column 12: .*found character '\\\\t'"):
        load_config_file(not_json)
    twice = write(tmp_path, '{"experiment": "a",\n "experiment": "b"}', "twice.json")
    with pytest.raises(ConfigFileError, match="line 2: key 'experiment' is given twice"):
        load_config_file(twice)


def test_every_file_is_named_at_once(tmp_path):
    twice, missing = write(tmp_path, "a: 1\na: 2\n", "twice.yaml"), tmp_path / "missing.yaml"
    with pytest.raises(ConfigFileError) as caught:
        check_config_files([twice, DEFAULT, missing])
    assert caught.value.problems == [
        f"{twice}, line 2: key 'a' is given twice, at line 1 and at line 2: YAML would keep the second and drop the "
        "first without a word, so give it once",
        f"{missing}: cannot be read: No such file or directory",
    ]


def test_a_config_given_as_a_value_is_bounded_too():
    """A module's config or --config values reach check_config without the loader: the same bounds hold there."""
    config = copy.deepcopy(default_config())
    config["extra"] = loop = []
    loop.append(loop)
    started = time.perf_counter()
    with pytest.raises(ConfigError, match=f"config: nested more than {MAX_DEPTH} levels deep"):
        check_config(config)
    config["extra"] = [[0] * 1000] * 1000  # a million values, shared
    with pytest.raises(ConfigError, match=f"config: more than {MAX_VALUES:,} keys and values"):
        check_config(config)
    assert time.perf_counter() - started < SECOND


# ------------------------------------------------------------------ names, exactly


@pytest.mark.parametrize(
    "change, where",
    [
        (lambda c: c.update(experiment="demo\n"), "experiment: 'demo\\n' ends in a line break: a name must be"),
        (lambda c: c["systems"][0].update(name="random\n"), "systems[0].name: 'random\\n' ends in a line break"),
        (
            lambda c: c["simulator"]["profiles"].update({"shy\n": {"based_on": "explicit"}}),
            "simulator.profiles: 'shy\\n' ends in a line break",
        ),
        (
            lambda c: c["judge"].update(panel=[{"name": "second\n", "backend": c["judge"]["backend"]}]),
            "judge.panel[0].name: 'second\\n' ends in a line break",
        ),
    ],
)
def test_a_name_ending_in_a_line_break_is_refused(change, where):
    config = copy.deepcopy(default_config())
    config["judge"].setdefault("backend", {"type": "ollama", "model": "m", "host": "http://127.0.0.1:1"})
    change(config)
    with pytest.raises(ConfigError) as caught:
        check_config(config)
    assert where in str(caught.value)


def test_a_schema_pattern_ends_where_the_text_ends():
    assert exact_pattern("^[a-z]+$") == r"^[a-z]+\Z"
    assert exact_pattern("^[$a]\\$$") == r"^[$a]\$\Z"  # a `$` in a class or escaped is a dollar sign


# ------------------------------------------------------------------ the bounds on a plan


@pytest.mark.parametrize(
    "change, words",
    [
        (
            {"trials": 1_000_000},
            "sessions: the experiment plans 24,000,000 sessions (4 systems x sessions.count 6 x sessions.trials "
            "1,000,000), more than sessions.max_sessions (1,000,000)",
        ),
        (
            {"count": 1_000_000},
            "sessions: the experiment plans 4,000,008 per-shard jobs (1,333,336 shards of sessions.shard_size 3, "
            "3 jobs each), more than sessions.max_jobs (20,000)",
        ),
        ({"count": 10**40, "shard_size": 10**40}, "sessions: the experiment plans 40,000,000,000,"),
    ],
)
def test_a_plan_past_its_bounds_is_named_before_anything_is_planned(change, words):
    config = copy.deepcopy(default_config())
    config["sessions"].update({"count": 6, "shard_size": 3, **change})
    started = time.perf_counter()
    with pytest.raises(ConfigError) as caught:
        check_config(config)
    assert time.perf_counter() - started < SECOND
    assert words in str(caught.value)


def with_bounds(config: dict, sessions: int, jobs: int) -> dict:
    return {**config, "sessions": {**config["sessions"], "max_sessions": sessions, "max_jobs": jobs}}


def test_the_bounds_on_a_plan_may_be_raised_and_hold_for_an_imported_corpus():
    config = copy.deepcopy(default_config())
    config["sessions"].update(count=300_000, shard_size=3)  # 1,200,000 sessions in 400,000 shards
    config["sessions"].update(max_sessions=2_000_000, max_jobs=2_000_000)
    check_config(config)
    config["judge"]["enabled"] = False  # two jobs a shard
    with pytest.raises(
        ConfigError, match="sessions: the experiment plans 40 per-shard jobs .* more than sessions.max_jobs \\(39\\)"
    ):
        check_session_and_job_counts(with_bounds(config, 100, 39), {"a": 30, "b": 30})
    with pytest.raises(
        ConfigError, match="sessions: the experiment plans 101 sessions \\(the imported dialogues of 2 systems\\)"
    ):
        check_session_and_job_counts(with_bounds(config, 100, 1000), {"a": 100, "b": 1})


# ------------------------------------------------------------------ crseval config show and a Snakemake run alike


def test_config_show_names_the_problem_of_a_hostile_file(tmp_path, capsys):
    path = write(tmp_path, billion_laughs())
    started = time.perf_counter()
    assert main(["config", "show", str(DEFAULT), str(path)]) == 2
    assert time.perf_counter() - started < SECOND
    err = capsys.readouterr().err
    assert err.startswith("crseval config show: 1 problem in the config") and f"{path}, line 5: more than" in err


@pytest.mark.workflow
def test_a_snakemake_run_refuses_what_config_show_refuses(workflow_copy):
    """Snakemake reads --configfile before the Snakefile runs; the Snakefile reads every file again, with
    crseval's loader, before anything walks the config (before the fix: the alias bomb ran past 120 s)."""
    files = [
        write(workflow_copy, "experiment: a\nexperiment: b\n", "twice.yaml"),
        write(workflow_copy, billion_laughs(), "laughs.yaml"),
        write(workflow_copy, '__use_yte__: true\nexperiment: ?"demo"\n', "yte.yaml"),
    ]
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--configfile", *map(str, files)],
        cwd=workflow_copy,
        capture_output=True,
        text=True,
        timeout=120,
    )
    output = result.stdout + result.stderr
    assert result.returncode != 0
    for path in files:
        try:
            load_config_file(path)
        except ConfigFileError as error:
            assert error.problems[0] in output, output


# ------------------------------------------------------------------ any text: a config or a named error

YAMLISH = st.lists(
    st.sampled_from([*"abk01:-[]{}&*!|>'\"#?,.%@ \t\n", "<<", "- ", ": ", "\u00e9", "\x00", "\ufeff", "\u2028"]),
    max_size=120,
).map("".join)
SNIPPETS = [
    b"&a ",
    b"*a",
    b"<<: *a\n",
    b": ",
    b"- ",
    b"[",
    b"]",
    b"{",
    b"}",
    b"\n",
    b"  ",
    b"\t",
    b"#",
    b"'",
    b'"',
    b"!!python/object/apply:os.system ['true']",
    b"__use_yte__: true\n",
    b"experiment: x\n",
    b"systems:\n",
    b"? ",
    b"---\n",
    b"%YAML 1.1\n",
    b"\xe9",
    b"\xff",
    b"1e400",
    b".nan",
    b"2024-13-45",
    b"&b [*b]",
    b"\\n",
    b"x\n",
]
SHIPPED = [
    path.read_bytes() for path in (DEFAULT, REPO / "config" / "paper.yaml", REPO / "config" / "user_profiles.yaml")
]


@st.composite
def mutated_configs(draw) -> bytes:
    text = draw(st.sampled_from(SHIPPED))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(text)))
        kind = draw(st.sampled_from(["insert", "delete", "repeat line"]))
        if kind == "insert":
            text = text[:at] + draw(st.sampled_from(SNIPPETS)) + text[at:]
        elif kind == "delete":
            text = text[:at] + text[at + draw(st.integers(1, 40)) :]
        else:
            lines = text.splitlines(keepends=True) or [b""]
            i = draw(st.integers(0, len(lines) - 1))
            text = b"".join(lines[: i + 1] + lines[i:])
    return text


def ends_in_a_config_or_a_named_error(path) -> None:
    try:
        assert isinstance(load_config_file(path), dict)
    except ConfigFileError:
        pass
    try:
        assert isinstance(effective_config(path), dict)
    except ConfigError:  # a ConfigFileError, or a problem of the config the file holds
        pass


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    effective_config(DEFAULT)  # the schema and its validator, once
    return tmp_path_factory.mktemp("texts")


@settings(max_examples=150, deadline=1000, suppress_health_check=[HealthCheck.too_slow])
@given(text=YAMLISH)
def test_any_yamlish_text_ends_in_a_config_or_a_named_error(scratch, text):
    ends_in_a_config_or_a_named_error(write(scratch, text))


@settings(max_examples=50, deadline=1000, suppress_health_check=[HealthCheck.too_slow])
@given(data=mutated_configs())
def test_any_mutation_of_a_config_ends_in_a_config_or_a_named_error(scratch, data):
    path = write(scratch, data)
    ends_in_a_config_or_a_named_error(path)
    try:
        settings = load_config_file(path)
    except ConfigFileError:
        return
    assert settings == load_configfile(path)  # what crseval reads, Snakemake reads alike
