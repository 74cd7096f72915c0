"""Each default is written once, in the config schema: a settings class built without arguments is the
class built from the schema's defaults of its section."""

from __future__ import annotations

import pytest

from crseval.catalog.topics import LdaSettings
from crseval.core.config_checks import schema_defaults
from crseval.metrics.grounded import TasSettings
from crseval.metrics.legacy_cas import CasSettings
from crseval.simulate.systems.agents import AgentSettings
from crseval.simulate.user.user_plan import SimulatorSettings

SETTINGS = {
    ("agent",): AgentSettings,
    ("simulator",): SimulatorSettings,
    ("lda",): LdaSettings,
    ("scoring", "tas"): TasSettings,
    ("scoring", "cas"): CasSettings,
}


@pytest.mark.parametrize("path", SETTINGS, ids=".".join)
def test_a_settings_class_defaults_to_the_schemas_defaults(path):
    cls = SETTINGS[path]
    assert cls() == cls.from_config(schema_defaults(*path))


def test_the_schema_defaults_are_handed_out_as_copies():
    assert schema_defaults("agent")["candidates"] == AgentSettings().candidates
    section = schema_defaults("agent")
    section["candidates"] += 1  # a copy: the schema's defaults are not changed by a caller
    assert schema_defaults("agent")["candidates"] == AgentSettings().candidates
