"""The user templates file against the profiles that speak from it: a voice it lacks and a group it lacks are
config problems named by the check, a group missing at run time is named rather than a bare KeyError, and every
group a user draws from is one the check requires; a profile refuses values out of range as the config does."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import yaml
from conftest import REPO, default_config

from crseval.core.config_checks import ConfigError
from crseval.planning import check_config
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
