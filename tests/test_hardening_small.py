"""Small hardenings, each a fault that once ended in a bare exception or passed silently:

- a template file against the profiles that speak from it: a voice it lacks, a group it lacks (the config check
  names both; at run time a missing group is named, not a bare KeyError), and a profile's values out of range;
- `crseval verify` on a malformed provenance.json, `crseval import-logs --out` naming a file;
- a `python` system's reply bounded as an `http` system's is;
- a name server that never answers, within an HTTP request's deadline.
"""

from __future__ import annotations

import copy
import json
import re
import socket
import threading
import time
from dataclasses import replace

import numpy as np
import pytest
import yaml
from conftest import REPO, default_config

from crseval.cli import main
from crseval.core.bounded_http import DEFAULT_MAX_REPLY_BYTES, BoundedPoster, Bounds, DeadlinePassed
from crseval.core.config_checks import ConfigError
from crseval.planning import check_config
from crseval.simulate.systems.external import ExternalSystemError
from crseval.simulate.systems.python_system import PythonSystem
from crseval.simulate.user.profiles import PROFILES, REALISTIC, UserProfile
from crseval.simulate.user.templates import SimulatorTextError, Templates, spoken_groups
from crseval.simulate.user.user_plan import SimulatorSettings

TEMPLATE_FILE = REPO / "resources" / "templates" / "user.yaml"


# --- templates and profiles -----------------------------------------------------------------------------------------


def templates_without(tmp_path, *paths: tuple[str, ...]):
    """The shipped template file with the groups at `paths` removed, written to tmp_path."""
    data = yaml.safe_load(TEMPLATE_FILE.read_text(encoding="utf-8"))
    for path in paths:
        parent = data
        for key in path[:-1]:
            parent = parent[key]
        del parent[path[-1]]
    file = tmp_path / "user.yaml"
    file.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    return file


def config_with(templates, profile: str = "explicit", **profiles) -> dict:
    config = default_config()
    config["simulator"]["templates"] = str(templates)
    config["simulator"]["profile"] = profile
    if profiles:
        config["simulator"]["profiles"] = profiles
    return config


def problems_of(config: dict) -> list[str]:
    try:
        check_config(config)
    except ConfigError as error:
        return error.problems
    return []


def test_the_shipped_templates_serve_every_built_in_profile():
    for name in PROFILES:
        if not PROFILES[name].needs_voice:
            assert problems_of(config_with(TEMPLATE_FILE, name)) == [], name


def test_a_realistic_user_whose_templates_lack_its_voice_is_a_config_problem(tmp_path):
    file = templates_without(tmp_path, ("voices", "casual"))
    problems = problems_of(config_with(file, "realistic"))
    assert any(
        p.startswith(f"simulator.templates: {file}: profile realistic (simulator.profile) speaks in the voice 'casual'")
        and "add voices.casual" in p
        for p in problems
    ), problems
    # the explicit user speaks no voice: the same file serves it
    assert problems_of(config_with(file, "explicit")) == []


def test_a_template_file_without_leave_names_the_group_and_the_profile_that_leaves(tmp_path):
    file = templates_without(tmp_path, ("leave",), ("voices", "casual", "leave"))
    config = config_with(file, "explicit", **{"shy": {"based_on": "implicit", "patience": 2}})
    config["systems"][0]["profile"] = "shy"
    problems = problems_of(config)
    assert len(problems) == 1 and problems[0].startswith(
        f"simulator.templates: {file}: profile shy (systems[0].profile)"
    )
    assert problems[0].split("does not have: ")[1].split(";")[0] == "leave"
    # a profile that never leaves (patience 0) does not need the group
    config = config_with(file, "explicit", **{"shy": {"based_on": "implicit", "patience": 0}})
    config["systems"][0]["profile"] = "shy"
    assert problems_of(config) == []


def test_a_group_missing_at_run_time_is_named_not_a_bare_key_error(tmp_path):
    templates = Templates.load(templates_without(tmp_path, ("leave",), ("voices", "casual", "leave")))
    with pytest.raises(SimulatorTextError, match=r"no group 'leave'"):
        templates.pick(np.random.default_rng(0), "leave", voice="casual")
    with pytest.raises(SimulatorTextError, match=r"no group 'focus.decade'"):
        templates.pick(np.random.default_rng(0), "focus", "decade")


def test_a_group_that_is_no_list_of_texts_is_named(tmp_path):
    data = yaml.safe_load(TEMPLATE_FILE.read_text(encoding="utf-8"))
    data["voices"]["casual"]["thanks"] = []
    data["greeting"] = "Hi!"
    file = tmp_path / "user.yaml"
    file.write_text(yaml.safe_dump(data), encoding="utf-8")
    problems = problems_of(config_with(file, "realistic"))
    assert any(p.endswith("not lists of one or more texts: voices.casual.thanks") for p in problems), problems
    # the casual voice has its own greetings: only a voiceless user draws the common ones
    assert not any("greeting" in p for p in problems), problems
    assert any(
        p.endswith("greeting") for p in problems_of(config_with(file, "x", x={"based_on": "realistic", "voice": ""}))
    )


class Recording(Templates):
    """Templates that remember every group drawn from."""

    def __init__(self, templates: Templates):
        super().__init__(templates.data, templates.version)
        self.drawn: set[tuple[str, ...]] = set()

    def pick(self, rng, *keys, voice=""):
        self.drawn.add(keys)
        return super().pick(rng, *keys, voice=voice)


@pytest.mark.parametrize("profile", ["explicit", "implicit", "realistic"])
def test_every_group_a_user_draws_from_is_one_the_check_requires(demo_index, profile):
    """The list the check goes by is the code's: sessions against systems that satisfy, miss and say nothing."""
    from crseval.language.concepts import ConceptMatcher
    from crseval.simulate.sessions import SessionContext, run_session
    from crseval.simulate.systems.agents import AgentSettings, TemplateAgent
    from crseval.simulate.systems.calibration import OracleAgent, RandomAgent

    templates = Recording(Templates.load(TEMPLATE_FILE))
    settings = SimulatorSettings(shift_every=3, contradiction_rate=0.3)
    matcher = ConceptMatcher(demo_index.concepts, demo_index.films)
    context = SessionContext(demo_index, matcher, templates, settings, 10, "0" * 64, profile=PROFILES[profile])
    for agent in (TemplateAgent, OracleAgent, RandomAgent):
        for seed in range(6):
            run_session(context, agent.__name__, agent(demo_index, matcher, AgentSettings(), seed), 0, seed, "0" * 64)
    allowed = set(spoken_groups(PROFILES[profile], settings.field_order))
    assert templates.drawn - allowed == set()
    assert len(templates.drawn) > 10


@pytest.mark.parametrize("field, value", [("patience", -1), ("reveal_after", -3), ("greeting", 7.0)])
def test_a_profile_refuses_values_out_of_range_as_the_config_does(field, value):
    with pytest.raises(ValueError, match=rf"profile realistic: {field} is {value!r}, not a"):
        replace(REALISTIC, **{field: value})
    with pytest.raises(ValueError, match=rf"{field} is {value!r}"):
        UserProfile(**{**REALISTIC.__dict__, field: value})
    config = config_with(TEMPLATE_FILE, "mine", mine={"based_on": "realistic", field: value})
    assert any(p.startswith(f"simulator.profiles.mine.{field}: ") for p in problems_of(config)), problems_of(config)


# --- the command line -----------------------------------------------------------------------------------------------

MALFORMED = {
    "a list": ([1, 2], "holds a JSON list, not an object"),
    "schema_version text": ({"schema_version": "2", "outputs": []}, "schema_version is '2', not a whole number"),
    "outputs an object": ({"schema_version": 2, "outputs": {"a": 1}}, "outputs is a JSON object, not an array"),
    "an output without path": ({"schema_version": 2, "outputs": [{"sha256": "ab"}]}, "outputs[0].path is missing"),
    "an output that is text": ({"schema_version": 2, "outputs": ["tables/x.parquet"]}, "outputs[0] is a JSON string"),
    "a prompt path that is a number": (
        {"schema_version": 2, "outputs": [], "prompts": [{"path": 3, "sha256": "ab"}]},
        "prompts[0].path is 3, not a file path",
    ),
    "prompts used by a number": (
        {"schema_version": 2, "outputs": [], "prompts": [{"path": "p.txt", "used_by": 5}]},
        "prompts[0].used_by is 5",
    ),
    "a model file that is text": (
        {"schema_version": 2, "outputs": [], "models": [{"file": "m.gguf"}]},
        "models[0].file is a JSON string, not an object",
    ),
    "a catalog that is text": ({"schema_version": 2, "outputs": [], "catalog": "c.json"}, "catalog is a JSON string"),
    "other inputs null": ({"schema_version": 2, "outputs": [], "other_inputs": None}, None),
}


@pytest.mark.parametrize("case", MALFORMED, ids=list(MALFORMED))
def test_verify_names_what_is_malformed_in_provenance_json(tmp_path, capsys, case):
    record, named = MALFORMED[case]
    results = tmp_path / "results" / "exp"
    results.mkdir(parents=True)
    (results / "provenance.json").write_text(json.dumps(record))
    code = main(["verify", str(results)])
    error = capsys.readouterr().err
    if named is None:  # null where a list may be: nothing to check, nothing wrong
        assert code == 0, error
        return
    assert code == 2 and error.startswith(f"crseval verify: {results / 'provenance.json'} ") and named in error, error
    assert "Traceback" not in error


def test_verify_names_an_unreadable_configfile(tmp_path, capsys):
    results = tmp_path / "results" / "exp"
    results.mkdir(parents=True)
    (results / "provenance.json").write_text(json.dumps({"schema_version": 2, "outputs": []}))
    broken = tmp_path / "broken.yaml"
    broken.write_text("simulator: [unclosed\n")
    assert main(["verify", str(results), "--configfile", str(broken)]) == 2
    error = capsys.readouterr().err
    assert error.startswith(f"crseval verify: --configfile {broken}: ") and f"{broken}, line 2" in error, error
    broken.write_text("- a list\n")
    assert main(["verify", str(results), "--configfile", str(broken)]) == 2
    assert "holds a list; a config file holds a mapping of settings" in capsys.readouterr().err
    # read as the workflow reads a config: bounded, so a few lines of aliases cannot make a billion values
    broken.write_text(
        "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
        + "".join(f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}]\n" for p, c in zip("abcdefgh", "bcdefghi"))
    )
    assert main(["verify", str(results), "--configfile", str(broken)]) == 2
    error = capsys.readouterr().err
    assert "Traceback" not in error and str(broken) in error and "values" in error, error


def test_import_logs_to_an_existing_file_is_named_before_anything_is_read(tmp_path, capsys):
    out = tmp_path / "sessions.jsonl"
    out.write_text("mine\n")
    code = main(
        ["import-logs", str(tmp_path / "none.json"), "--catalog-index", str(tmp_path / "none"), "--out", str(out)]
    )
    assert code == 2
    assert capsys.readouterr().err.startswith(f"crseval import-logs: --out {out} is a file, not a folder")
    assert out.read_text() == "mine\n"


def test_import_logs_to_a_folder_under_a_file_is_named(tmp_path, capsys, catalog_files):
    corpus = tmp_path / "corpus.jsonl"
    turns = [{"role": "user", "text": "Hi"}, {"role": "system", "text": "Try Heat."}]
    corpus.write_text(json.dumps({"dialogue_id": "d1", "system": "mine", "turns": turns}) + "\n")
    blocker = tmp_path / "file"
    blocker.write_text("")
    out = blocker / "sessions"
    arguments = ["import-logs", str(corpus), "--format", "jsonl", "--catalog-index", str(catalog_files)]
    code = main([*arguments, "--out", str(out)])
    error = capsys.readouterr().err
    assert code == 2 and error.startswith(f"crseval import-logs: cannot write to --out {out}: "), error


def test_import_logs_names_a_catalog_index_it_cannot_read(tmp_path, capsys):
    code = main(
        ["import-logs", str(tmp_path / "x.json"), "--catalog-index", str(tmp_path), "--out", str(tmp_path / "o")]
    )
    assert code == 2
    assert capsys.readouterr().err.startswith(
        f"crseval import-logs: --catalog-index {tmp_path}: cannot read the catalog"
    )


# --- a python system's reply ----------------------------------------------------------------------------------------

LARGE_REPLIES = """
class Large:
    def __init__(self, size=0, dict_form=False, wide=False):
        self.size, self.dict_form, self.wide = size, dict_form, wide

    def start_session(self, session_id, seed):
        pass

    def respond(self, turn, user_text, history):
        text = ("é" if self.wide else "a") * self.size
        if self.dict_form:
            return {"reply": "Try these.", "recommended": [text[i:i + 100] for i in range(0, len(text), 100)]}
        return text
"""


@pytest.fixture
def large_replies(tmp_path, monkeypatch):
    (tmp_path / "large_replies.py").write_text(LARGE_REPLIES)
    monkeypatch.syspath_prepend(str(tmp_path))
    return "large_replies:Large"


def python_system(entry_point, **options) -> PythonSystem:
    system = PythonSystem("mine", entry_point, options=options)
    system.start("mine/s00001", 7)
    return system


def test_a_python_reply_at_the_http_bound_is_taken(large_replies):
    assert DEFAULT_MAX_REPLY_BYTES == 1 << 20
    envelope = len('{"reply": "", "recommended": null, "constraints": null}')  # the JSON the bound counts
    reply = python_system(large_replies, size=DEFAULT_MAX_REPLY_BYTES - envelope).answer(1, "Hi", [])
    assert len(reply.text) == DEFAULT_MAX_REPLY_BYTES - envelope
    with pytest.raises(ExternalSystemError, match="a reply of 1,048,577 bytes"):
        python_system(large_replies, size=DEFAULT_MAX_REPLY_BYTES - envelope + 1).answer(1, "Hi", [])


@pytest.mark.parametrize(
    "options, shown",
    [
        ({"size": 300 << 20}, "a reply of at least 314,572,800 bytes"),
        ({"size": 600_000, "wide": True}, "a reply of 1,200,055 bytes"),  # characters under the bound, bytes over
        ({"size": 2 << 20, "dict_form": True}, "a reply of at least 2,097,162 bytes"),
    ],
)
def test_a_python_reply_over_the_http_bound_is_a_named_error_of_its_turn(large_replies, options, shown):
    system = python_system(large_replies, **options)
    with pytest.raises(ExternalSystemError) as error:
        system.answer(3, "Hi", [])
    message = str(error.value)
    assert message.startswith(
        f"system 'mine' ({large_replies}), session mine/s00001, turn 3: respond() returned {shown}"
    )
    assert "more than the bound of 1,048,576 bytes (max_reply_bytes" in message and not error.value.transient


def test_a_python_bound_takes_the_http_range(large_replies):
    assert python_system(large_replies).max_reply_bytes == DEFAULT_MAX_REPLY_BYTES
    system = PythonSystem("mine", large_replies, options={"size": 2000}, max_reply_bytes=1000)
    system.start("mine/s00001", 7)
    with pytest.raises(ExternalSystemError, match="bound of 1,000 bytes"):
        system.answer(1, "Hi", [])
    for bound in (0, (64 << 20) + 1, True, 1.5):
        with pytest.raises(ValueError, match=r"system 'mine': max_reply_bytes must be 1 to 67108864 bytes"):
            PythonSystem("mine", large_replies, max_reply_bytes=bound)


def test_a_python_reply_over_the_bound_stops_the_shard_and_keeps_nothing_of_it(large_replies, catalog_files, tmp_path):
    """As an http system's reply over its bound: the job fails naming the turn; nothing reaches the reply cache."""
    from crseval.catalog.index import CatalogIndex
    from crseval.language.concepts import ConceptMatcher
    from crseval.simulate.systems.external import ExternalAgent, ReplyCache

    index = CatalogIndex.read(catalog_files / "films.parquet", catalog_files / "concepts.parquet")
    system = PythonSystem("mine", large_replies, options={"size": 2 << 20})
    agent = ExternalAgent(system, index, ConceptMatcher(index.concepts, index.films), 7, ReplyCache(tmp_path / "cache"))
    with pytest.raises(ExternalSystemError, match="turn 1: respond[(][)] returned a reply of at least 2,097,152 bytes"):
        agent.respond(1, "Hi")
    assert not any((tmp_path / "cache").rglob("*.json"))


# --- a resolver that never answers ----------------------------------------------------------------------------------


def test_a_name_server_that_never_answers_fails_the_request_within_its_deadline(monkeypatch):
    released = threading.Event()
    asked = []

    def hanging(host, *args, **kwargs):
        asked.append(host)
        released.wait(30)
        raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")

    for variable in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setattr(socket, "getaddrinfo", hanging)
    poster = BoundedPoster()
    try:
        started = time.monotonic()
        with pytest.raises(DeadlinePassed) as error:
            poster.post("http://crs.example.invalid:8765/", b"{}", {}, Bounds(max_bytes=1024, deadline_s=0.5))
        elapsed = time.monotonic() - started
    finally:
        released.set()
        poster.close()
    assert asked == ["crs.example.invalid"]
    assert 0.5 <= elapsed < 0.5 + 0.3, elapsed  # the deadline, not the resolver's 30 s
    assert str(error.value) == (
        "no complete reply within the deadline of 0.5 s (the whole request): no connection had been made "
        "(resolving the host name 'crs.example.invalid' or connecting to it had not finished)"
    )


def test_an_answer_before_the_deadline_still_arrives_whole():
    """The request runs in a worker thread now: its reply, and its own errors, reach the caller unchanged."""
    from hostile_services import Service, answer

    with Service(answer({"reply": "Try Heat."})) as service:
        poster = BoundedPoster()
        reply = poster.post(service.url, b"{}", {}, Bounds(max_bytes=1024, deadline_s=5))
        assert reply.status == 200 and json.loads(reply.body) == {"reply": "Try Heat."}
        assert copy.copy(service.requests[0].body) == b"{}"
        poster.close()


@pytest.mark.parametrize(
    "text, problem",
    [
        ('{"a": NaN}', "NaN is no JSON value"),
        ("[1, -Infinity]", "-Infinity is no JSON value"),
        ('{"a": 1e400}', "the number 1e400 is out of a double's range"),
        ('{"a": 1, "b": {"c": 2, "c": 3}}', "the key 'c' is given twice in one object"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ("1" * 5_000, "Exceeds the limit"),  # Python's own bound on converting digits, named rather than raised
    ],
)
def test_strict_json_refuses_what_json_has_not(text, problem):
    """The one strict reader of outside JSON (tool calls, corpora, voices): each refusal says what it refused;
    text that is no JSON at all stays json.JSONDecodeError, so that callers can say where."""
    from crseval.core.io import StrictJSONError, strict_json_loads

    with pytest.raises(StrictJSONError, match=re.escape(problem)):
        strict_json_loads(text)
    with pytest.raises(json.JSONDecodeError):
        strict_json_loads('{"a": ')
    assert strict_json_loads('{"a": [1, 2.5, "x"], "b": {"c": null}}') == {"a": [1, 2.5, "x"], "b": {"c": None}}
    with pytest.raises(StrictJSONError, match="a number of 21 digits; at most 20"):
        strict_json_loads("1" * 21, max_int_digits=20)
