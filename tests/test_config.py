"""Config schema: shipped configs validate; unknown keys and wrong types fail naming the key."""

import copy

import pytest
import yaml
from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from conftest import REPO, default_config, run_snakemake, write_config

SCHEMA = str(REPO / "workflow" / "schemas" / "config.schema.yaml")


@pytest.mark.parametrize("name", ["config.yaml", "opendialkg.yaml"])
def test_shipped_configs_validate(name):
    validate(yaml.safe_load((REPO / "config" / name).read_text()), SCHEMA)


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda c: c["lda"].update(no_belw=3), "'no_belw' was unexpected"),
        (lambda c: c.update(extra=1), "'extra' was unexpected"),
        (lambda c: c["lda"].update(passes="twenty"), "'twenty' is not of type 'integer'"),
        (lambda c: c["catalog"]["plot_keywords"].update(max_df=1.5), "1.5 is greater than the maximum of 1"),
        (lambda c: c["lda"].update(coherence="c_w"), "'c_w' is not one of"),
        (lambda c: c.update(experiment="has space"), "does not match"),
        (lambda c: c["lda"].pop("passes"), "'passes' is a required property"),
    ],
)
def test_bad_config_fails_naming_the_key(mutate, message):
    config = copy.deepcopy(default_config())
    mutate(config)
    with pytest.raises(WorkflowError, match=message):
        validate(config, SCHEMA)


def test_workflow_refuses_a_bad_config_at_start(workflow_copy):
    config = default_config()
    config["lda"]["no_belw"] = 3
    result = run_snakemake(workflow_copy, "-n", "--configfile", str(write_config(workflow_copy, config)), check=False)
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert "'no_belw' was unexpected" in output and "['lda']" in output


@pytest.mark.parametrize(
    "mutate",
    [
        lambda c: c["systems"][0].pop("backend"),
        lambda c: c["systems"][0]["backend"].update(type="vllm"),
        lambda c: c["systems"][0]["backend"].update(type="ollama"),  # no host
        lambda c: c["systems"].append({"name": "bad name", "agent": "template"}),
        lambda c: c["simulator"]["paraphrase"].update(enabled=True),  # no backend/options
        lambda c: c["simulator"].update(field_order=["genre", "genre"]),
    ],
)
def test_bad_system_or_simulator_config_fails(mutate):
    config = copy.deepcopy(default_config())
    mutate(config)
    with pytest.raises(WorkflowError):
        validate(config, SCHEMA)


def test_duplicate_system_names_fail_at_start(workflow_copy):
    config = default_config()
    config["systems"].append(dict(config["systems"][-1]))
    result = run_snakemake(workflow_copy, "-n", "--configfile", str(write_config(workflow_copy, config)), check=False)
    assert result.returncode != 0 and "unique name" in result.stdout + result.stderr
