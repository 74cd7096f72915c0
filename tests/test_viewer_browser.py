"""The session viewer in a real browser: headless Chromium driven by Selenium, the page opened from file://.

The experiment is test_viewer.py's hand-written one (two systems meeting three simulated users, and one
imported dialogue whose texts hold markup). Checks what a reader sees: the list, its filters, a session's
chat with the simulator's hidden state and the titles, the same user side by side, the keys, and that the
page fits 1280 px; a tool-using system's calls folded under each reply. Leaves a screenshot in
tests/artifacts/viewer.png (and the list, side-by-side and tool-call views beside it).
"""

import json
import os
import shutil
import subprocess
import zipfile
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

import pytest
from test_viewer import (
    IMPORTED,
    INJECTION,
    NOT_JSON,
    SCRIPT,
    TOOL_SESSION,
    add_tool_session,
    add_trial,
    build_experiment,
    write,
)

# Installs Debian packages: only when asked (.ci/run asks).
SYSTEM_TESTS = "CRSEVAL_SYSTEM_TESTS"
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        os.environ.get(SYSTEM_TESTS) != "1",
        reason=f"installs chromium and chromium-driver with apt-get and drives them: run with {SYSTEM_TESTS}=1",
    ),
]
ARTIFACTS = Path(__file__).parent / "artifacts"
PACKAGES = ["chromium", "chromium-driver"]
CHROMIUM, DRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
WIDTH, HEIGHT = 1280, 900


def install_chromium():
    if shutil.which("chromium") and Path(DRIVER).exists():
        return
    if os.geteuid() != 0:
        pytest.skip("installing chromium needs root")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", *PACKAGES]):
        result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
        if result.returncode != 0:
            pytest.fail(f"{' '.join(command)} failed:\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}")


def chromium_driver():
    """Headless Chromium with a 1280 x 900 viewport."""
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(argument)
    options.add_argument(f"--window-size={WIDTH},{HEIGHT}")
    driver = webdriver.Chrome(options=options, service=Service(DRIVER))
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": WIDTH, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": False},
    )
    return driver


@pytest.fixture(scope="module")
def browser():
    install_chromium()
    pytest.importorskip("selenium")
    driver = chromium_driver()
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def page(browser, tmp_path):
    """The viewer of the hand-written experiment, opened; the experiment's records."""
    experiment = build_experiment(tmp_path / "results")
    write(experiment, tmp_path / "viewer")
    browser.get((tmp_path / "viewer" / "index.html").as_uri())
    wait_for(browser, "document.body.dataset.ready === '1'")
    return experiment


def wait_for(driver, condition: str, timeout: float = 10):
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, timeout).until(lambda d: d.execute_script(f"return {condition};"))


def texts(driver, selector: str) -> list[str]:
    return driver.execute_script(
        "return Array.from(document.querySelectorAll(arguments[0])).map(e => e.textContent);", selector
    )


def listed_ids(driver) -> list[str]:
    return texts(driver, "#list-body td.c-id")


def fits(driver) -> bool:
    return driver.execute_script("return document.documentElement.scrollWidth") <= WIDTH


def open_hash(driver, hash_: str, condition: str):
    driver.execute_script("location.hash = arguments[0];", hash_)
    wait_for(driver, condition)


def test_the_list_shows_every_session_and_filters(browser, page):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    assert sorted(listed_ids(browser)) == sorted(page["records"])
    assert browser.execute_script("return window.innerWidth") == WIDTH and fits(browser)
    ARTIFACTS.mkdir(exist_ok=True)
    browser.save_screenshot(str(ARTIFACTS / "viewer-list.png"))

    Select(browser.find_element(By.ID, "f-system")).select_by_value("oracle")
    wait_for(browser, "document.querySelectorAll('#list-body tr').length === 3")
    assert listed_ids(browser) == ["oracle/s00000", "oracle/s00001", "oracle/s00002"]
    Select(browser.find_element(By.ID, "f-system")).select_by_value("")
    box = browser.find_element(By.ID, "f-text")
    box.send_keys("s00001")
    wait_for(browser, "document.querySelectorAll('#list-body tr').length === 2")
    assert listed_ids(browser) == ["oracle/s00001", "template/s00001"]
    assert "q=s00001" in browser.execute_script("return location.hash")
    # a numeric range, through the page's own filter call
    assert browser.execute_script("return crsevalViewer.filter({text: '', where: 'tas < 0.3'})") == 4
    assert sorted(listed_ids(browser)) == ["oracle/s00001", IMPORTED, "template/s00000", "template/s00002"]
    assert browser.execute_script("return crsevalViewer.filter({where: '0.1 < tas <= 0.5, success = 0'})") == 2
    assert sorted(listed_ids(browser)) == ["template/s00000", "template/s00001"]
    browser.execute_script("crsevalViewer.filter({where: ''})")
    # sorting by a column header: TAS, highest first
    browser.find_element(By.CSS_SELECTOR, "th[data-key='tas']").click()
    assert listed_ids(browser)[:2] == ["oracle/s00002", "oracle/s00000"]
    assert texts(browser, "#list-body tr:first-child td.c-metric")[1] == "0.750"


def test_a_session_shows_the_chat_hidden_state_and_titles(browser, page):
    from selenium.webdriver.common.by import By

    record = page["records"]["oracle/s00000"]
    browser.find_element(By.CSS_SELECTOR, "#list-body tr[data-id='oracle/s00000']").click()
    wait_for(browser, "document.body.dataset.session === 'oracle/s00000' && !!document.querySelector('.chat')")
    assert browser.execute_script("return decodeURIComponent(location.hash)") == "#session=oracle/s00000"
    assert texts(browser, ".msg.user .text") == [t["user_text"] for t in record["turns"]]
    assert texts(browser, ".msg.system .text") == [t["system_text"] for t in record["turns"]]
    recommended = browser.execute_script(
        "return Array.from(document.querySelectorAll('.turn[data-turn]')).map("
        "t => Array.from(t.querySelectorAll('.msg.system .chip.rec')).map(c => c.textContent));"
    )
    assert recommended == [t["recommended_titles"] for t in record["turns"]]
    assert texts(browser, ".turn[data-turn='2'] .msg.system .chip.mention") == ["Casablanca"]
    # the per-turn scores and the hidden state beside each user turn
    assert texts(browser, ".turn[data-turn='2'] .turn-metrics .tm")[-1] == "TAS 0.620"
    assert len(browser.find_elements(By.CSS_SELECTOR, "aside.state")) == 3
    gold = texts(browser, ".turn[data-turn='1'] aside.state ul.gold li")
    assert gold == ["genre: comedysaid", "actor: Tom Hankshidden"]
    assert texts(browser, ".turn[data-turn='3'] aside.state .chip.shift") == ["shift"]
    assert "bridge" in texts(browser, ".turn[data-turn='3'] aside.state .kv .k")
    assert "comedy → genre: drama" in texts(browser, ".shift-line")[0]
    # the judge's scores and its reason
    judge = texts(browser, ".judge")[0]
    assert "proactiveness 3.500" in judge and "coherence 4" in judge and "follow the shift to drama" in judge
    assert fits(browser)
    ARTIFACTS.mkdir(exist_ok=True)
    browser.save_screenshot(str(ARTIFACTS / "viewer.png"))
    assert browser.execute_script("return [innerWidth, innerHeight]") == [WIDTH, HEIGHT]


def test_side_by_side_aligns_the_same_user_in_each_system(browser, page):
    from selenium.webdriver.common.by import By

    open_hash(browser, "#session=oracle%2Fs00001", "document.body.dataset.session === 'oracle/s00001'")
    browser.find_element(By.TAG_NAME, "body").send_keys("s")
    wait_for(browser, "document.body.dataset.view === 'side' && !!document.querySelector('.side-grid')")
    assert texts(browser, ".side-head a") == ["oracle", "template"]
    assert browser.execute_script("return location.hash") == "#side=1"
    for system in ("oracle", "template"):
        record = page["records"][f"{system}/s00001"]
        cells = texts(browser, f".side-cell[data-system='{system}'] .s")
        assert cells == [t["system_text"] for t in record["turns"]]
    differs = browser.execute_script(
        "return Array.from(document.querySelectorAll('.side-cell')).map("
        "c => [c.dataset.system, c.dataset.turn, c.classList.contains('differs')]);"
    )
    assert differs == [
        ["oracle", "1", False],
        ["template", "1", False],  # the same opening reply
        ["oracle", "2", False],
        ["template", "2", True],
        ["oracle", "3", False],
        ["template", "3", True],
    ]
    assert texts(browser, ".side-cell[data-system='template'][data-turn='2'] .chip.unknown") == ["Moonlight Express"]
    assert fits(browser)
    browser.save_screenshot(str(ARTIFACTS / "viewer-side.png"))
    # checkboxes choose the columns; the hash keeps the choice
    browser.find_element(By.CSS_SELECTOR, ".picks input[value='oracle']").click()
    wait_for(browser, "document.querySelectorAll('.side-head').length === 1")
    assert texts(browser, ".side-head a") == ["template"]
    assert browser.execute_script("return location.hash") == "#side=1&systems=template"
    # Escape goes back to the session it came from, then to the list
    browser.find_element(By.TAG_NAME, "body").send_keys("\ue00c")
    wait_for(browser, "document.body.dataset.view === 'session'")
    assert browser.execute_script("return document.body.dataset.session") == "oracle/s00001"
    browser.find_element(By.TAG_NAME, "body").send_keys("\ue00c")
    wait_for(browser, "document.body.dataset.view === 'list'")
    # a deep link straight to a side-by-side view
    open_hash(browser, "#side=2&systems=template,oracle", "document.querySelectorAll('.side-head').length === 2")
    assert texts(browser, ".side-head a") == ["oracle", "template"]
    # user 0's number is also the imported dialogue's, which has no seeded user: offered, not chosen
    open_hash(browser, "#side=0", "document.body.dataset.side === '0'")
    picks = browser.execute_script(
        "return Array.from(document.querySelectorAll('.picks input')).map(i => [i.value, i.checked]);"
    )
    assert picks == [["oracle", True], ["realdialogs", False], ["template", True]]
    assert texts(browser, ".side-head a") == ["oracle", "template"]


def test_keys_move_open_and_focus_the_filter(browser, page):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    body = browser.find_element(By.TAG_NAME, "body")
    first = listed_ids(browser)
    body.send_keys("j", "j", Keys.ARROW_DOWN, "k")
    assert browser.execute_script("return document.querySelector('tr.cursor').dataset.id") == first[2]
    body.send_keys(Keys.ENTER)
    wait_for(browser, f"document.body.dataset.session === '{first[2]}' && !!document.querySelector('.chat')")
    body.send_keys("j")
    wait_for(browser, f"document.body.dataset.session === '{first[3]}'")
    body.send_keys("/")
    wait_for(browser, "document.body.dataset.view === 'list' && document.activeElement.id === 'f-text'")


def test_markup_in_a_session_stays_text(browser, page):
    browser.execute_script("window.__alerted = false; window.alert = () => { window.__alerted = true; };")
    open_hash(browser, f"#session={IMPORTED}", f"document.body.dataset.session === '{IMPORTED}'")
    assert texts(browser, ".msg.system .text")[0] == f"Try {INJECTION} or Aliens."
    assert texts(browser, ".msg.user .text")[0] == f"{SCRIPT} anything like Alien?"
    assert texts(browser, ".chat .chip.unknown") == ["<b>Fake Film</b>"]
    assert browser.execute_script("return document.querySelectorAll('img, b.chip, .chat script').length") == 0
    assert browser.execute_script("return window.__alerted") is False
    # an imported dialogue: no hidden state, a note instead
    assert browser.execute_script("return document.querySelectorAll('aside.state').length") == 0
    assert "no hidden state" in texts(browser, ".note")[0]
    assert fits(browser)


def test_side_by_side_keeps_the_trial(browser, tmp_path):
    from selenium.webdriver.common.by import By

    experiment = build_experiment(tmp_path / "results")
    add_trial(experiment, tmp_path / "results")
    write(experiment, tmp_path / "viewer")
    browser.get((tmp_path / "viewer" / "index.html").as_uri() + "#session=oracle%2Fs00002%2Ft1")
    wait_for(browser, "document.body.dataset.session === 'oracle/s00002/t1'")
    assert "trial" in texts(browser, "dl.facts dt")
    browser.find_element(By.TAG_NAME, "body").send_keys("s")
    wait_for(browser, "document.body.dataset.view === 'side' && !!document.querySelector('.side-grid')")
    assert browser.execute_script("return location.hash") == "#side=2&trial=1"
    for system in ("oracle", "template"):
        record = experiment["records"][f"{system}/s00002/t1"]
        assert texts(browser, f".side-cell[data-system='{system}'] .s") == [t["system_text"] for t in record["turns"]]


def test_a_session_id_that_is_not_a_session_is_refused_without_a_fetch(browser, page):
    """An id in the address that names no session, a name every JavaScript object has among them, shows "no
    such session" and loads no data file (a plain-object lookup found Object.prototype for `__proto__` and
    asked for data/undefined.js)."""
    for sid in ("__proto__", "constructor", "toString", "hasOwnProperty", "valueOf", "oracle/s99999", ""):
        message = f"no such session: {sid}"
        open_hash(
            browser,
            f"#session={quote(sid, safe='')}",
            f"document.body.dataset.view === 'list' && document.getElementById('error').textContent === {message!r}",
        )
        assert browser.execute_script("return document.getElementById('error').hidden") is False
        loaded = browser.execute_script(
            "return Array.from(document.scripts).map(s => s.getAttribute('src')).filter(Boolean);"
        )
        assert loaded == ["list.js"], f"#session={sid} loaded {loaded}"
    # a real session still opens afterwards
    open_hash(browser, "#session=oracle%2Fs00000", "document.body.dataset.session === 'oracle/s00000'")
    assert browser.execute_script("return document.getElementById('error').hidden") is True


def test_a_tool_using_systems_calls_unfold_under_each_reply(browser, tmp_path):
    """The toolbot's turns (test_viewer.tool_record): each reply has its calls folded; unfolded, one row per
    call with its status, arguments, result or error and latency; the committed film marked among the
    recommendations; markup in arguments, titles and excerpts stays text."""
    from selenium.webdriver.common.by import By

    experiment = build_experiment(tmp_path / "results")
    record = add_tool_session(experiment, tmp_path / "results")
    write(experiment, tmp_path / "viewer")
    browser.get((tmp_path / "viewer" / "index.html").as_uri())
    wait_for(browser, "document.body.dataset.ready === '1'")
    browser.execute_script("window.__alerted = false; window.alert = () => { window.__alerted = true; };")
    opened = f"document.body.dataset.session === {TOOL_SESSION!r}"
    open_hash(browser, f"#session={quote(TOOL_SESSION, safe='')}", opened)
    assert texts(browser, ".msg.system .text") == [t["system_text"] for t in record["turns"]]
    # folded by default; the summary counts the calls, the errors, the ignored and how a turn ended
    assert browser.execute_script("return Array.from(document.querySelectorAll('details.tools')).map(d => d.open)") == [
        False,
        False,
    ]
    assert browser.find_element(By.CSS_SELECTOR, ".turn[data-turn='1'] table.tool-calls").is_displayed() is False
    assert texts(browser, ".turn[data-turn='1'] details.tools summary span") == [
        "5 tool calls: search_films ×2, film_details ×2, recommend",
        "1 error",
        "1 ignored",
    ]
    assert texts(browser, ".turn[data-turn='2'] details.tools summary span") == [
        "3 tool calls: search_films ×3",
        "2 errors",
        "ended at the call bound",
    ]
    assert texts(browser, ".turn[data-turn='3'] .tools.none span") == [
        "0 tool calls",
        "ended with a message, nothing committed",
    ]
    # the committed film among the recommendations, marked
    assert texts(browser, ".turn[data-turn='1'] .msg.system .chip.rec") == ["Halloween"]
    assert texts(browser, ".turn[data-turn='1'] .chip.rec.committed") == ["Halloween"]
    marker = "return getComputedStyle(document.querySelector('.chip.rec.committed'), '::before').content"
    assert "✓" in browser.execute_script(marker)
    assert texts(browser, ".turn[data-turn='2'] .chip.rec") == []
    # unfolded: one row per call
    for turn in ("1", "2"):
        browser.find_element(By.CSS_SELECTOR, f".turn[data-turn='{turn}'] details.tools summary").click()
    wait_for(browser, "document.querySelectorAll('details.tools[open]').length === 2")
    first = ".turn[data-turn='1'] tr.tool-call"
    assert browser.find_element(By.CSS_SELECTOR, first).is_displayed()
    assert texts(browser, f"{first} .tool-name") == [c["name"] for c in record["turns"][0]["tool_calls"]]
    assert browser.execute_script(
        f"return Array.from(document.querySelectorAll({first!r})).map(r => r.dataset.status)"
    ) == ["ok", "error", "ok", "ok", "ignored"]
    assert texts(browser, f"{first} .tool-status") == ["ok", "error", "ok", "ok", "ignored"]
    assert texts(browser, f"{first} .tool-args")[0] == '{"genre":["horror"],"keywords":"' + INJECTION + '"}'
    assert texts(browser, f"{first} .tool-outcome") == [
        "2 of 12 found: Halloween · <b>The Thing</b>",
        "unknown film id: 99999",
        "Halloween (id 7)",
        "committed: Halloween",
        "after the turn's recommend",
    ]
    assert texts(browser, f"{first} .tool-latency") == ["0.500 s", "0.001 s", "0.012 s", "0.250 s", "0 s"]
    styles = browser.execute_script(
        "return ['ok', 'error', 'ignored'].map(s => getComputedStyle("
        "document.querySelector('.tool-status-chip.s-' + s)).backgroundColor)"
    )
    assert len(set(styles)) == 3
    raw = browser.find_element(By.CSS_SELECTOR, ".turn[data-turn='2'] .tool-args.raw")
    assert raw.text == NOT_JSON and "not JSON" in raw.get_attribute("title")
    assert browser.execute_script("return document.querySelectorAll('img, b, .chat script').length") == 0
    assert browser.execute_script("return window.__alerted") is False
    assert fits(browser)
    browser.execute_script("document.querySelector(\".turn[data-turn='1']\").scrollIntoView()")
    ARTIFACTS.mkdir(exist_ok=True)
    browser.save_screenshot(str(ARTIFACTS / "viewer-tools.png"))
    # side by side with the other systems: the toolbot's cell has its calls folded too
    open_hash(browser, "#side=1&systems=oracle,toolbot", "document.querySelectorAll('.side-head').length === 2")
    cell = ".side-cell[data-system='toolbot'][data-turn='1']"
    assert texts(browser, f"{cell} details.tools summary span")[1:] == ["1 error", "1 ignored"]
    assert texts(browser, f"{cell} .chip.rec.committed") == ["Halloween"]
    assert texts(browser, ".side-cell[data-system='oracle'] .tools") == []
    assert fits(browser)


def report_items(report_html: Path) -> dict:
    """The items of a Snakemake report (report.html's `var results = {...}`): path -> name, data_uri, rule."""
    text = report_html.read_text(encoding="utf-8")
    start = text.index("{", text.index("var results =", text.index('<script id="results">')))
    items, _ = json.JSONDecoder().raw_decode(text, start)
    return items


def follow_every_link(driver, page: Path, root: Path, records: dict) -> int:
    """Open `page` and follow each of its links: every target is a file under `root`; every HTML target (the
    viewer) loads, and a link to a session shows that session's turns. Returns the number of links."""
    driver.get(page.as_uri())
    assert driver.find_element("css selector", "h1").text == "Findings: calibration-demo"
    hrefs = driver.execute_script("return Array.from(document.querySelectorAll('a[href]')).map(a => a.href);")
    assert hrefs, f"{page} has no links"
    for href in hrefs:
        url = urlsplit(href)
        target = Path(unquote(url.path))
        assert url.scheme == "file" and target.is_file(), f"{page}: {href} is no file"
        assert target.resolve().is_relative_to(root.resolve()), f"{page}: {href} leaves {root}"
        assert target.stat().st_size > 0, f"{page}: {href} is empty"
    for href in dict.fromkeys(hrefs):
        url = urlsplit(href)
        if not url.path.endswith(".html"):
            continue
        driver.get("about:blank")
        driver.get(href)
        sid = unquote(url.fragment.removeprefix("session=")) if url.fragment.startswith("session=") else None
        if sid is None:
            wait_for(driver, "document.body.dataset.ready === '1' && document.body.dataset.view === 'list'")
            assert driver.execute_script("return crsevalViewer.filter({})") == len(records), href
            continue
        wait_for(driver, f"document.body.dataset.session === {sid!r} && document.body.dataset.view === 'session'")
        assert texts(driver, ".msg.user .text") == [t["user_text"] for t in records[sid]["turns"]], href
    return len(hrefs)


def test_a_runs_viewer_and_findings_open_from_the_folder_and_from_the_report(browser, workflow_copy):
    """config/test/calibration_demo.yaml run through the workflow: its viewer opens from the results folder
    and from the zip report, lists every session, and shows two systems side by side on one seed with the
    texts of their session records; every link of the findings page (the viewer, the sessions behind the
    extremes, the summaries and tables) reaches its target from the folder and from the unpacked zip, where
    the report's Findings entry opens the page with the zip's links."""
    from conftest import run_snakemake

    config = str(workflow_copy / "config" / "test" / "calibration_demo.yaml")
    run_snakemake(workflow_copy, "--configfile", config)
    results = workflow_copy / "results" / "calibration-demo"
    records = {}
    for shard in sorted((results / "sessions").glob("*/shard-*.jsonl")):
        for line in shard.read_text().splitlines():
            record = json.loads(line)
            records[record["session_id"]] = record
    run_snakemake(workflow_copy, "--configfile", config, "--report", str(results / "report.zip"))
    with zipfile.ZipFile(results / "report.zip") as archive:
        archive.extractall(workflow_copy / "unzipped")
    in_report = [p for p in (workflow_copy / "unzipped").rglob("index.html") if (p.parent / "list.js").exists()]
    assert len(in_report) == 1
    for viewer in (results / "viewer" / "index.html", in_report[0]):
        browser.get(viewer.as_uri())
        wait_for(browser, "document.body.dataset.ready === '1'")
        assert browser.execute_script("return crsevalViewer.filter({text: '', where: ''})") == len(records)
        open_hash(browser, "#side=2&systems=oracle,random", "document.querySelectorAll('.side-head').length === 2")
        assert texts(browser, ".side-head a") == ["oracle", "random"]
        for system in ("oracle", "random"):
            cells = texts(browser, f".side-cell[data-system='{system}'] .s")
            assert cells == [t["system_text"] for t in records[f"{system}/s00002"]["turns"]]
        assert records["oracle/s00002"]["seed"] == records["random/s00002"]["seed"]  # the same simulated user
    # the findings page, as the report's Findings entry opens it from the zip's report.html
    (report_html,) = (workflow_copy / "unzipped").rglob("report.html")
    entries = [item for item in report_items(report_html).values() if item["job_properties"]["rule"] == "findings"]
    assert len(entries) == 1 and entries[0]["name"] == "findings.html"
    pages = {
        results / "findings" / "index.html": results,
        report_html.parent / entries[0]["data_uri"]: report_html.parent,
    }
    followed = {page: follow_every_link(browser, page, root, records) for page, root in pages.items()}
    assert len(set(followed.values())) == 1 and min(followed.values()) > 4  # the same links in both
