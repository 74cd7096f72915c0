"""The pages a run writes, fed what the outside can send: markup, script and URLs in system names, links,
error kinds and replies; NUL, right-to-left overrides and lone surrogates; a megabyte reply; NaN where a name or
a verdict should be; a system named twice; forty systems; `$` in a figure's label. Nothing of it may become
markup, script or an active link, a missing value must read as missing (not "nan"), and no page may fail.

tests/test_findings.py, tests/test_viewer.py and tests/test_figures.py hold the pages' ordinary behaviour."""

from __future__ import annotations

import hashlib
import json
import math
import re
from html.parser import HTMLParser

import matplotlib.pyplot as plt
import pandas as pd
import pytest
from test_viewer import IMPORTED, build_experiment, chunked, write

from crseval.reports import figures, findings, viewer

SCRIPT = "</script><script>alert(1)</script><!--"
ATTRIBUTE = "x\" onmouseover=\"alert(2)' onclick='alert(3)"
RLO = "\u202e"  # right-to-left override: reverses the display of whatever follows it
HOSTILE = f"{SCRIPT}{ATTRIBUTE}\x00{RLO}"
# the tags the findings page writes itself; an injected name would add another (script, img) or an attribute
FINDINGS_TAGS = {"html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "p", "small", "nav", "a"}
FINDINGS_TAGS |= {"ul", "li", "b", "span", "table", "tr", "th", "td", "bdi"}
FINDINGS_ATTRIBUTES = {"lang", "charset", "name", "content", "href", "class", "title"}


class Elements(HTMLParser):
    """Every start tag of a page with its attributes, and its text."""

    def __init__(self, page: str):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.text: list[str] = []
        self.feed(page)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)

    def handle_comment(self, data):
        raise AssertionError(f"a comment opened in the page: {data[:40]!r}")


def assert_inert(page: str) -> Elements:
    """`page` holds only the findings page's own elements and attributes, no script URL and no NUL."""
    parsed = Elements(page)
    assert {tag for tag, _ in parsed.tags} <= FINDINGS_TAGS
    assert {name for _, attrs in parsed.tags for name in attrs} <= FINDINGS_ATTRIBUTES
    for _, attrs in parsed.tags:
        href = re.sub(r"[\t\n\r]", "", attrs.get("href") or "").lstrip("\x00 ").lower()
        assert not re.match(r"(javascript|data|vbscript):", href), href
    assert "\x00" not in page
    return parsed


def model_metrics(systems: list, tas: list) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "model": systems,
            "sessions": [4] * len(systems),
            "tas": tas,
            "tas_ci_low": [t - 0.1 for t in tas],
            "tas_ci_high": [t + 0.1 for t in tas],
        }
    )


def page(metrics: pd.DataFrame, posthoc=None, sessions=None, **options) -> str:
    empty = pd.DataFrame()
    return findings.findings_page(
        options.pop("experiment", "demo"),
        metrics,
        ["tas"],
        empty if posthoc is None else posthoc,
        empty,
        empty,
        0.05,
        empty if sessions is None else sessions,
        **options,
    )


def test_names_links_and_error_kinds_stay_text():
    """A system name, an experiment name, a link label and an error kind holding markup, quotes, NUL and an RLO
    add no element, attribute or comment; javascript: hrefs (also spelled with a tab or leading spaces) become
    relative paths; the RLO name is isolated so "0.55" cannot display as "55.0"."""
    systems = [HOSTILE, "beta"]
    sessions = pd.DataFrame(
        {
            "system": systems * 2,
            "session_id": [f"{HOSTILE}/s0", "beta/s0", f"{HOSTILE}/s1", "beta/s1"],
            "tas": [0.5, 0.4, 0.6, 0.3],
            "tool_calls": [3, 1, 2, 1],
            "tool_errors": [1, 0, 2, 0],
            "tool_ignored": [0, 0, 0, 0],
            "tool_bound_turns": [0, 0, 0, 0],
        }
    )
    turns = pd.DataFrame({"system": [HOSTILE], "tool_error_kinds": [json.dumps([f"{RLO}{SCRIPT}: 12 turns"])]})
    posthoc = pd.DataFrame(
        {
            "metric": ["tas"],
            "test": [SCRIPT],
            "system_a": [HOSTILE],
            "system_b": ["beta"],
            "mean_diff": [0.15],
            "p_adj": [0.01],
            "testable": [True],
        }
    )
    links = {SCRIPT: "javascript:alert(4)", "tab": "java\tscript:alert(5)", "data": "  data:text/html,<b>x</b>"}
    text = page(
        model_metrics(systems, [0.55, 0.35]),
        posthoc,
        sessions,
        experiment=HOSTILE,
        links=links | {"summary": "../stats/summary.md"},
        viewer="JavaScript:alert(6)",
        turns=turns,
        scorecard=pd.DataFrame({"metric": ["tas"], "leads": [True], "reason": [""]}),
    )
    parsed = assert_inert(text)
    hrefs = [attrs["href"] for tag, attrs in parsed.tags if tag == "a"]
    assert hrefs[:5] == [
        "./JavaScript:alert(6)",
        "./javascript:alert(4)",
        "./java\tscript:alert(5)",
        "./  data:text/html,<b>x</b>",
        "../stats/summary.md",
    ]
    assert all(h.startswith("./JavaScript:alert(6)#session=") for h in hrefs[5:]) and len(hrefs) > 5
    # the RLO name is its own bidi isolate wherever it stands inside a sentence
    said = text.split("<h2>What this run concludes</h2>")[1].split("</ul>")[0]
    assert f"<bdi>{findings.esc(HOSTILE)}</bdi> leads with 0.55 [0.45, 0.65]" in said
    assert "\ufffd" in "".join(parsed.text)  # the NUL, shown as a replacement character
    assert f"<bdi>{findings.esc(RLO + SCRIPT)}</bdi> (1 turn)" in text


def test_missing_names_and_verdicts_read_as_missing():
    """A system name a CSV reader read as missing ("NA", "None"), a test, a check or a verdict that is missing
    show as "–" (not "nan", no crash); a validity row without a verdict is no check run."""
    validity = pd.DataFrame(
        {"metric": ["tas", "tas"], "check": ["adaptation", math.nan], "verdict": ["pass", math.nan]}
    )
    posthoc = pd.DataFrame(
        {
            "metric": ["tas"],
            "test": [math.nan],
            "system_a": [math.nan],
            "system_b": ["beta"],
            "mean_diff": [math.nan],
            "p_adj": [math.nan],
            "testable": [True],
        }
    )
    text = page(model_metrics([math.nan, "beta"], [0.2, 0.4]), posthoc, validity=validity)
    assert not re.search(r"\bnan\b", text, re.IGNORECASE)
    assert "2 systems (–, beta)" in text and "<th>–</th><th>beta</th>" not in text  # beta leads: first column
    assert "<th>beta</th><th>–</th>" in text and "<p><small>–, p adjusted by the plan." in text
    assert "<tr><td>–</td><td>beta</td><td class='num'>–</td><td class='num'>–</td>" in text
    assert "<td class='num pass'>1 of 1</td><td>adaptation pass</td>" in text
    scorecard = pd.DataFrame(
        {"metric": ["tas"], "calibration": ["pass"], "stability": [math.nan], "people": [math.nan]}
        | {"leads": [False], "reason": [math.nan]}
    )
    text = page(model_metrics(["alpha"], [0.5]), scorecard=scorecard)
    assert "<td class='pass' title='–'>pass</td><td class='' title='–'>–</td>" in text and "nan" not in text
    assert "Does not lead: no evidence." in text


def test_a_system_named_twice_keeps_each_rows_numbers():
    """Two rows of model_metrics with one name (two systems named "NA" and "None", both read back as missing)
    are two columns with their own means; before, the page failed on an ambiguous lookup."""
    text = page(model_metrics(["dup", "dup", "solo"], [0.1, 0.9, 0.5]))
    header = "<tr><th>metric</th><th>dup</th><th>solo</th><th>dup</th></tr>"
    assert header in text
    assert "<td class='num'>0.9 [0.8, 1] (1)</td><td class='num'>0.5 [0.4, 0.6] (2)</td>" in text
    assert "<td class='num'>0.1 [0, 0.2] (3)</td></tr>" in text


@pytest.mark.parametrize(
    "metrics",
    [
        pd.DataFrame(),  # no table at all
        pd.DataFrame({"model": [], "sessions": [], "tas": []}),  # zero sessions
        model_metrics(["one"], [math.nan]).assign(tas_ci_low=math.nan, tas_ci_high=math.nan),  # an all-NaN metric
    ],
)
def test_empty_and_all_missing_tables_give_a_page(metrics):
    text = page(metrics)
    assert_inert(text)
    assert not re.search(r"\bnan\b", text, re.IGNORECASE)


def test_forty_systems_with_long_names_stay_one_bounded_page():
    names = [f"system-{i:02d}-" + "x" * 88 for i in range(40)]
    text = page(model_metrics(names, [i / 40 for i in range(40)]))
    assert_inert(text)
    # the header's list and the table's column; the leader's name a third time, in the conclusions
    assert [text.count(name) for name in names] == [2] * 39 + [3]
    assert len(text) < 30_000


@pytest.fixture(scope="module")
def hostile_viewer(tmp_path_factory):
    """The viewer's experiment with the imported dialogue's replies replaced: a megabyte reply opening with a
    script and a comment, a NUL, an RLO; a reply with a lone surrogate (a JSON escape no UTF-8 encodes); the
    page titled with a placeholder of the template."""
    root = tmp_path_factory.mktemp("hostile")
    experiment = build_experiment(root / "results")
    record = json.loads(json.dumps(experiment["records"][IMPORTED]))
    record["turns"][0]["system_text"] = HOSTILE + "y" * 1_000_000
    record["turns"][1]["system_text"] = "lone \ud800 surrogate"
    experiment["shards"][-1].write_text(json.dumps(record, ensure_ascii=True) + "\n", encoding="utf-8")
    output = root / "viewer"
    counts = write(experiment, output, title=f"/*{{{{js}}}}*/ {SCRIPT}")
    return output, counts


def test_a_megabyte_reply_is_cut_with_its_length_and_digest(hostile_viewer):
    output, counts = hostile_viewer
    assert counts["bytes"] < 250_000  # the reply is not carried whole
    turns = chunked(output)[IMPORTED][1]["turns"]
    shown = turns[0]["system_text"]
    assert len(shown) == viewer.TEXT_SHOWN and shown.startswith(HOSTILE)
    assert turns[0]["system_cut"] == {
        "chars": len(HOSTILE) + 1_000_000,
        "shown": viewer.TEXT_SHOWN,
        "sha256": hashlib.sha256((HOSTILE + "y" * 1_000_000).encode()).hexdigest()[:16],
    }
    assert "system_cut" not in turns[1] and "user_cut" not in turns[0]
    assert turns[1]["system_text"] == "lone \ud800 surrogate"  # kept as its escape, read back the same
    # the page says what it shows, and side by side tells long replies apart by their digest
    script = (viewer.ASSETS / "viewer.js").read_text(encoding="utf-8")
    assert "cutNote(t.system_cut)" in script and 'sameText(first, t, "system_cut")' in script


def test_no_data_file_can_close_its_script_or_open_a_comment(hostile_viewer):
    output, _ = hostile_viewer
    for path in [output / "list.js", *sorted((output / "data").glob("*.js"))]:
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"</script|<!--|<script|-->", text, re.IGNORECASE), path
        assert "\x00" not in text and "\\u003c/script\\u003e" in text, path  # the title; the reply in its chunk
    chunk = (output / "data" / "0.js").read_text(encoding="utf-8")
    assert "\\u0000\u202e" in chunk and "lone \\ud800 surrogate" in chunk


def test_a_title_holding_a_placeholder_stays_text(hostile_viewer):
    """The title is escaped and the placeholders filled in one pass: `/*{{js}}*/` in the title is not replaced
    by the viewer's script (before, the whole script landed in <title> and, as markup, in <h1>)."""
    output, _ = hostile_viewer
    page = (output / "index.html").read_text(encoding="utf-8")
    script = (viewer.ASSETS / "viewer.js").read_text(encoding="utf-8")
    assert page.count(script.splitlines()[0]) == 1
    parsed = Elements(page)
    scripts = [attrs for tag, attrs in parsed.tags if tag == "script"]
    assert scripts == [{}, {"src": "list.js", "onerror": "window.crsevalViewer.missing('list.js')"}, {}]
    title = re.search(r"<title>(.*?)</title>", page, re.DOTALL)[1]
    assert title == "/*{{js}}*/ &lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;&lt;!--"


def test_figure_labels_are_text_and_a_missing_mean_is_marked(tmp_path, monkeypatch):
    """A `$` in a system name is drawn as a dollar sign (mathtext failed the figure on `$\\foo$`); a mean that is
    missing or infinite draws no bar and says n/a, so that it does not read as 0."""
    drawn = []
    monkeypatch.setattr(figures, "save", lambda figure, stem: drawn.append(figure))
    systems = ["a$\\foo{$b", "missing", "endless"]
    metrics = model_metrics(systems, [0.3, math.nan, math.inf]).assign(tas_n=[4, 4, 4])
    figures.metric_bars(metrics, ["tas"], figures.palette(systems), tmp_path / "bars")
    (figure,) = drawn
    figure.canvas.draw()  # mathtext is parsed when the text is drawn
    ax = figure.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == systems
    marked = [(t.get_position()[0], t.get_text()) for t in ax.texts if t.get_gid() == "no-mean"]
    assert marked == [(1, "n/a"), (2, "n/a")]
    plt.close(figure)


def test_every_system_has_a_colour_of_its_own():
    forty = [f"s{i:02d}" for i in range(40)]
    assert len(set(figures.palette(forty).values())) == 40
    assert len(set(figures.palette(forty[:10]).values())) == 10
