"""Profiles a config defines (`simulator.profiles`): the schema and the config check take a good definition and
name every fault of a bad one by its key; planning resolves a defined profile to its settings as it does a
built-in; settings turn back into the profile; a profile's `fit` knobs take the learned voice's values with the
statistic behind each; and the built-ins' settings are those of before profiles could be defined."""

import copy
import json

import pytest
import yaml
from conftest import REPO, default_config

from crseval.core.config_checks import ConfigError
from crseval.planning import check_config, profiles_used, user_profile_settings, user_profiles_settings
from crseval.simulate.user.profiles import (
    FITTABLE,
    PROFILES,
    UserProfile,
    profile_from_settings,
    resolve_profile,
)

SHY = {
    "based_on": "realistic",
    "summary": "keeps a third of its wishes to itself and leaves after two misses",
    "disclosure": {"volunteer": 0.2, "on_ask": 0.45, "hidden": 0.35},
    "field_disclosure": {"actor": {"volunteer": 0.0, "on_ask": 0.5, "hidden": 0.5}},
    "patience": 2,
    "greeting": 0.0,
    "voice": "",
}
# What a learned voice's summary holds under `fitted`
# (crseval.simulate.user.voice_learning.fitted_knobs), written by hand.
FITTED = {
    "greeting": {"value": 0.3, "statistic": "share of opening turns that greet", "n": 120},
    "thanks": {"value": 0.02, "statistic": "share of user turns that thank", "n": 500},
    "question": {"value": 0.41, "statistic": "share of user turns with a question mark", "n": 500},
    "lowercase": {"value": 0.4, "statistic": "share of user turns with letters and no capital", "n": 490},
    "typo": {"value": 0.04, "statistic": "share of user turns with a word no English word list holds", "n": 500},
    "patience": {"value": 4, "statistic": "median user turns of the dialogues whose user was frustrated", "n": 31},
}


def with_profiles(profiles: dict, profile: str = "shy", **simulator) -> dict:
    config = default_config()
    config["simulator"].update(profile=profile, profiles=copy.deepcopy(profiles), **simulator)
    return config


def problems(config: dict) -> list[str]:
    with pytest.raises(ConfigError) as error:
        check_config(config)
    return str(error.value).splitlines()[1:]


def has(lines: list[str], *parts: str) -> bool:
    return any(all(part in line for part in parts) for line in lines)


# --- the config ----------------------------------------------------------------------------------


def test_a_defined_profile_is_taken_and_named_by_systems():
    config = with_profiles({"shy": SHY, "people": {"based_on": "implicit", "reveal_after": 0}})
    config["systems"][0]["profile"] = "people"
    check_config(config)
    assert profiles_used(config)[:2] == ["people", "shy"]


def test_config_show_prints_the_definition_and_the_resolved_settings(tmp_path, capsys):
    from crseval.cli import main

    overlay = tmp_path / "shy.yaml"
    overlay.write_text(yaml.safe_dump({"simulator": {"profile": "shy", "profiles": {"shy": SHY}}}))
    assert main(["config", "show", str(REPO / "config" / "config.yaml"), str(overlay)]) == 0
    out = capsys.readouterr().out
    shown = yaml.safe_load(out)  # the resolved settings are comments: the output is still the config
    assert shown["simulator"]["profiles"] == {"shy": SHY} and shown["simulator"]["profile"] == "shy"
    comments = "\n".join(line[4:] for line in out.splitlines() if line.startswith("#   "))
    assert yaml.safe_load(comments) == {"shy": resolve_profile("shy", shown["simulator"]).settings()}


@pytest.mark.parametrize(
    "change, key, words",
    [
        ({"greeting": 1.5}, "simulator.profiles.shy.greeting", "greater than the maximum of 1"),
        ({"typo": -0.1}, "simulator.profiles.shy.typo", "less than the minimum of 0"),
        ({"patience": -1}, "simulator.profiles.shy.patience", "less than the minimum of 0"),
        ({"reveal_after": 1.5}, "simulator.profiles.shy.reveal_after", "is not of type 'integer'"),
        ({"colour": "red"}, "simulator.profiles.shy", "'colour' was unexpected"),
        ({"based_on": "realistc"}, "simulator.profiles.shy.based_on", "did you mean 'realistic'"),
        ({"fit": ["question"]}, "simulator.profiles.shy.fit[0]", "'question' is not one of"),
        ({"field_disclosure": {"actr": SHY["disclosure"]}}, "simulator.profiles.shy.field_disclosure", "'actor'"),
        ({"disclosure": {"volunteer": 0.5, "on_ask": 0.5}}, "simulator.profiles.shy.disclosure", "'hidden'"),
        (
            {"disclosure": {"volunteer": 0.5, "on_ask": 0.4, "hidden": 0.2}},
            "simulator.profiles.shy.disclosure",
            "volunteer 0.5 + on_ask 0.4 + hidden 0.2 = 1.1; the three shares of a disclosure sum to 1",
        ),
        (
            {"field_disclosure": {"year": {"volunteer": 0.5, "on_ask": 0.0, "hidden": 0.0}}},
            "simulator.profiles.shy.field_disclosure.year",
            "= 0.5; the three shares of a disclosure sum to 1",
        ),
        ({"greeting": float("nan")}, "simulator.profiles.shy.greeting", "not a finite number"),
    ],
)
def test_a_bad_definition_is_named_at_its_key(change, key, words):
    assert has(problems(with_profiles({"shy": {**SHY, **change}})), f"{key}: ", words)


def test_based_on_is_required():
    definition = {key: value for key, value in SHY.items() if key != "based_on"}
    assert has(problems(with_profiles({"shy": definition})), "simulator.profiles.shy: 'based_on' is a required")


@pytest.mark.parametrize(
    "name, words",
    [
        ("realistic", "'realistic' is a built-in profile (explicit, implicit, realistic, learned)"),
        ("explicit", "'explicit' is a built-in profile"),
        ("shy\n", "'shy\\n' ends in a line break: a name must be a letter or digit"),
        ("my user", "'my user' does not match"),
        ("../up", "'../up' does not match"),
    ],
)
def test_a_defined_profile_needs_a_safe_name_that_no_built_in_has(name, words):
    lines = problems(with_profiles({name: SHY}, profile="explicit"))
    assert has(lines, "simulator.profiles: ", words), lines


def test_a_profile_must_be_known():
    config = with_profiles({"shy": SHY}, profile="shyy")
    config["systems"][1]["profile"] = "implict"
    lines = problems(config)
    known = "known: explicit, implicit, realistic, learned, shy"
    assert has(lines, "simulator.profile: unknown user profile 'shyy' (did you mean 'shy'?)", known)
    assert has(lines, "systems[1].profile: unknown user profile 'implict' (did you mean 'implicit'?)", known)
    with pytest.raises(ValueError, match="unknown user profile 'shyy' \\(did you mean 'shy'\\?\\); known: .*shy"):
        resolve_profile("shyy", {"profiles": {"shy": SHY}})


def test_fit_and_the_learned_voice_need_a_corpus_when_a_system_meets_the_profile():
    profiles = {"shy": {**SHY, "fit": ["greeting", "patience"]}, "people": {"based_on": "learned"}}
    lines = problems(with_profiles(profiles))
    assert has(lines, "simulator.profiles.shy.fit: profile shy takes greeting, patience from the voice", "corpus")
    assert not has(lines, "simulator.profiles.people")  # no system meets it
    config = with_profiles(profiles, profile="people")
    assert has(problems(config), "simulator.profiles.people: profile people speaks with the voice learned")
    config["simulator"]["voice"]["corpus"] = "dialogues.json"  # a profile that is not `learned` may fit too
    config["systems"][0]["profile"] = "shy"
    check_config(config)


# --- resolution ----------------------------------------------------------------------------------


def test_planning_resolves_a_defined_profile_to_its_settings():
    config = with_profiles({"shy": SHY})
    config["systems"][0]["profile"] = "implicit"
    settings = user_profile_settings(config["systems"][1], config)
    expected = {
        **PROFILES["realistic"].settings(),
        "name": "shy",
        "disclosure": SHY["disclosure"],
        "field_disclosure": SHY["field_disclosure"],
        "patience": 2,
        "greeting": 0.0,
        "voice": "",
    }
    assert settings == expected and list(settings) == list(expected)
    assert user_profile_settings(config["systems"][0], config) == PROFILES["implicit"].settings()
    assert list(user_profiles_settings(config)) == ["implicit", "shy"]
    profile = resolve_profile("shy", config["simulator"])
    assert profile.summary == SHY["summary"] and not profile.is_explicit and profile.disclose(0.19) == "volunteer"
    # field_disclosure replaces realistic's whole: a director is disclosed as any wish now
    assert profile.disclose(0.1, "actor") == "on_ask" and profile.disclose(0.1, "director") == "volunteer"
    assert resolve_profile("realistic", config["simulator"]) is PROFILES["realistic"]
    unsaid = resolve_profile("x", {"profiles": {"x": {"based_on": "explicit"}}})
    assert unsaid.summary == "defined in the config: `explicit` with nothing set"
    assert unsaid.settings() == {**PROFILES["explicit"].settings(), "name": "x"}


def test_resolving_refuses_what_the_config_check_refuses():
    with pytest.raises(ValueError, match="profile shy: greeting is 2, not a share in \\[0, 1\\]"):
        resolve_profile("shy", {"profiles": {"shy": {**SHY, "greeting": 2}}})
    with pytest.raises(ValueError, match="profile shy: no field 'patients' \\(did you mean 'patience'\\?\\)"):
        resolve_profile("shy", {"profiles": {"shy": {**SHY, "patients": 2}}})
    with pytest.raises(ValueError, match="profile implicit: a built-in profile's name"):
        resolve_profile("implicit", {"profiles": {"implicit": SHY}})
    with pytest.raises(ValueError, match="a profile's name must be"):
        resolve_profile("shy\n", {"profiles": {"shy\n": SHY}})


@pytest.mark.parametrize(
    "field, value, words",
    [
        ("patience", -1, "patience is -1, not a whole number >= 0"),
        ("reveal_after", -2, "reveal_after is -2, not a whole number >= 0"),
        ("patience", 2.5, "patience is 2.5, not a whole number >= 0"),
        ("greeting", 1.01, "greeting is 1.01, not a share in \\[0, 1\\]"),
        ("full_stop", -0.5, "full_stop is -0.5, not a share in \\[0, 1\\]"),
        ("typo", float("nan"), "typo is nan, not a share"),
        ("thanks", True, "thanks is True, not a share"),
        ("fit", ("question",), "fit names 'question' \\(the voice's question share sets no knob\\)"),
        ("fit", ("greting",), "fit names 'greting' \\(did you mean 'greeting'\\?\\)"),
        ("disclosure", (0.5, 0.5, 0.5), "disclosure shares .* must be >= 0 and sum to 1"),
    ],
)
def test_a_profile_refuses_a_value_out_of_its_range(field, value, words):
    from dataclasses import replace

    with pytest.raises(ValueError, match=f"profile realistic: {words}"):
        replace(PROFILES["realistic"], **{field: value})


# --- settings, and fitted knobs ------------------------------------------------------------------


@pytest.mark.parametrize("name", [*PROFILES, "shy", "fitted"])
def test_settings_turn_back_into_the_profile(name):
    simulator = {"profiles": {"shy": SHY, "fitted": {**SHY, "fit": list(FITTABLE)}}}
    profile = resolve_profile(name, simulator)
    if name == "fitted":
        profile = profile.with_fitted(FITTED)
    settings = profile.settings()
    assert profile_from_settings(settings, profile.summary) == profile
    assert profile_from_settings(json.loads(json.dumps(settings)), profile.summary) == profile  # as a job reads them
    assert profile_from_settings(settings).settings() == settings
    with pytest.raises(ValueError, match="no field 'colour'"):
        profile_from_settings({**settings, "colour": "red"})


def test_with_fitted_takes_the_voice_values_and_records_the_statistic_behind_each():
    profile = resolve_profile("shy", {"profiles": {"shy": {**SHY, "fit": ["greeting", "typo", "patience"]}}})
    assert profile.settings()["fit"] == ["greeting", "typo", "patience"] and "fitted" not in profile.settings()
    fitted = profile.with_fitted(FITTED)
    assert (fitted.greeting, fitted.typo, fitted.patience) == (0.3, 0.04, 4)
    assert (fitted.thanks, fitted.lowercase) == (profile.thanks, profile.lowercase)  # not in `fit`: kept
    assert fitted.settings()["fitted"] == {knob: FITTED[knob] for knob in ("greeting", "typo", "patience")}
    assert fitted.with_fitted(FITTED) == fitted
    assert PROFILES["realistic"].with_fitted(FITTED) is PROFILES["realistic"]  # nothing to fit
    assert profile.with_fitted({**FITTED, "patience": {**FITTED["patience"], "value": 4.0}}).patience == 4


def test_with_fitted_names_the_knob_the_voice_has_no_value_for():
    profile = resolve_profile("shy", {"profiles": {"shy": {**SHY, "fit": ["greeting", "patience"]}}})
    no_frustrated_users = {**FITTED, "patience": {**FITTED["patience"], "value": None, "n": 0}}
    with pytest.raises(ValueError, match="profile shy: fit takes patience from the learned voice, .*n = 0"):
        profile.with_fitted(no_frustrated_users)
    with pytest.raises(ValueError, match="fit takes greeting from the learned voice, which has no value for it"):
        profile.with_fitted({})
    with pytest.raises(ValueError, match="greeting is 1.5, not a share"):
        profile.with_fitted({**FITTED, "greeting": {**FITTED["greeting"], "value": 1.5}})


# --- the built-ins -------------------------------------------------------------------------------

_REALISTIC = {
    "name": "realistic",
    "disclosure": {"volunteer": 0.45, "on_ask": 0.4, "hidden": 0.15},
    "reveal_after": 2,
    "restate_focus": 0.5,
    "terse": 0.5,
    "greeting": 0.42,
    "thanks": 0.05,
    "why": 0.8,
    "reason": 0.15,
    "lowercase": 0.25,
    "typo": 0.05,
    "patience": 3,
    "voice": "casual",
    "full_stop": 0.15,
    "field_disclosure": {
        field: {"volunteer": 0.15, "on_ask": 0.5, "hidden": 0.35}
        for field in ("actor", "director", "writer", "language", "year", "plot_keyword")
    },
}
_QUIET = {"terse": 0.0, "greeting": 0.0, "thanks": 0.0, "why": 0.0, "lowercase": 0.0, "typo": 0.0, "patience": 0}
_PLAIN = {"voice": "", "full_stop": 1.0, "field_disclosure": {}}
# The built-ins' settings as simulate jobs and provenance recorded them before profiles could be defined (`learned`
# and `fit` are left out while unset).
BEFORE = {
    "explicit": {
        **_REALISTIC,
        "name": "explicit",
        "disclosure": {"volunteer": 1.0, "on_ask": 0.0, "hidden": 0.0},
        "reveal_after": 0,
        "restate_focus": 1.0,
        **_QUIET,
        "reason": 0.0,
        **_PLAIN,
    },
    "implicit": {
        **_REALISTIC,
        "name": "implicit",
        "disclosure": {"volunteer": 0.3, "on_ask": 0.5, "hidden": 0.2},
        **_QUIET,
        "reason": 0.5,
        **_PLAIN,
    },
    "realistic": _REALISTIC,
    # `learned` is recorded only where it is true, and `wants` where it is not "catalog", before the field
    # disclosure as the dataclass orders them; it asks about a film offered less often than `realistic` (people
    # ask about one in 6% of turns)
    "learned": {
        **{key: value for key, value in _REALISTIC.items() if key != "field_disclosure"},
        "why": 0.3,
        "name": "learned",
        "learned": True,
        "wants": "people",
        "field_disclosure": _REALISTIC["field_disclosure"],
    },
}


def test_the_built_in_profiles_are_unchanged():
    assert list(PROFILES) == list(BEFORE)
    for name, profile in PROFILES.items():
        assert isinstance(profile, UserProfile) and not profile.fit and not profile.fitted
        assert json.dumps(profile.settings()) == json.dumps(BEFORE[name]), name  # the same keys in the same order
