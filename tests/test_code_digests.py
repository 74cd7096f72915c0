"""Hostile cases for code digests, the code a record names, and what `crseval verify` takes on trust.

Stray files beside the library (an editor's swap file, a patch's .orig) are no part of the package; a module edited
while a run is under way must not leave a record naming code no job ran; jobs of one stage that ran different code
are named; and a record verify cannot read, or whose stage digests do not match their settings, is not passed.
Job records are written with Snakemake's own writer, in the folder a run keeps them in.
"""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import REPO, load_test_config
from snakemake.persistence import MetadataRecord
from snakemake.persistence.file import FilePersistence

from crseval import provenance
from crseval import stage_digests as digests
from crseval.cli import main
from crseval.core.canonical import canonical_sha

SCRIPTS = ("index_catalog.py", "simulate.py", "train_lda.py", "score.py", "aggregate.py", "stats.py")
EXPERIMENT = "exp"
RESULTS = f"results/{EXPERIMENT}"


def library_tree(destination):
    """The library, the rule scripts and pyproject.toml: what a code digest reads, free to edit."""
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    shutil.copytree(REPO / "src", destination / "src", ignore=ignore)
    shutil.copytree(REPO / "workflow" / "scripts", destination / "workflow" / "scripts", ignore=ignore)
    shutil.copy2(REPO / "pyproject.toml", destination / "pyproject.toml")
    return destination


def score_digest(tree) -> str:
    return digests.code_digest([tree / "workflow" / "scripts" / "score.py"], tree / "src")


# ------------------------------------------------------------------ what a code digest covers


def test_stray_files_beside_modules_and_data_leave_the_code_digest_alone(tmp_path):
    tree = library_tree(tmp_path)
    before = score_digest(tree)
    metrics = tree / "src" / "crseval" / "metrics"
    (metrics / ".adherence.py.swp").write_bytes(b"b0VIM 9.0\x00swap")
    (metrics / "adherence.py.orig").write_text("# the module before a patch\n")
    (metrics / "notes.txt").write_text("to do\n")
    schemas = tree / "src" / "crseval" / "core" / "schemas"
    (schemas / ".session.schema.yaml.swp").write_bytes(b"swap")
    (schemas / "session.schema.yaml.orig").write_text("old: schema\n")
    assert score_digest(tree) == before
    # what the package declares still counts: a file its pattern takes, and an edit to the schema
    (schemas / "extra.schema.yaml").write_text("type: object\n")
    with_extra = score_digest(tree)
    assert with_extra != before
    schema = schemas / "session.schema.yaml"
    schema.write_text(schema.read_text() + "\n# an edit\n")
    assert score_digest(tree) not in (before, with_extra)


def test_the_package_data_is_what_pyproject_declares(tmp_path):
    tree = library_tree(tmp_path)
    base = score_digest(tree)
    pyproject = tree / "pyproject.toml"
    text = pyproject.read_text()
    (tree / "src" / "crseval" / "metrics" / "weights.csv").write_text("alpha,0.4\n")
    assert score_digest(tree) == base  # not declared: not shipped with the package, not its code
    declared = text.replace(
        "[tool.setuptools.package-data]\n", '[tool.setuptools.package-data]\n"crseval.metrics" = ["*.csv"]\n'
    )
    assert declared != text
    pyproject.write_text(declared)
    assert score_digest(tree) != base  # declared: shipped with the package, and so part of its code
    # a tree without pyproject.toml (the workflow's folders copied alone) takes the declaration crseval ships
    pyproject.unlink()
    assert score_digest(tree) == base


def test_the_library_ships_the_declaration_of_its_pyproject():
    assert digests.declared_package_data(REPO / "src") == digests.PACKAGE_DATA


@pytest.mark.parametrize(
    "text, named",
    [
        ('[tool.setuptools.package-data]\n"crseval.core" = "schemas/*.yaml"\n', "package-data.crseval.core"),
        ("[tool.setuptools.package-data]\ncrseval = [3]\n", "package-data.crseval"),
        ("[tool.setuptools]\npackage-data = 5\n", "tool.setuptools.package-data"),
        ("[tool.setuptools.package-data\n", "not valid TOML"),
    ],
)
def test_a_malformed_declaration_is_named_by_file_and_field(tmp_path, text, named):
    tree = library_tree(tmp_path)
    (tree / "pyproject.toml").write_text(text)
    with pytest.raises(ValueError, match="pyproject.toml") as error:
        score_digest(tree)
    assert named in str(error.value)


# ------------------------------------------------------------------ the code a record names


def experiment_config() -> dict:
    config = load_test_config("calibration_demo")
    config["experiment"] = EXPERIMENT
    config["systems"] = config["systems"][:2]  # oracle and lag1
    return config


def planned(tree) -> dict[str, str]:
    """The `code` param each rule script's jobs get when the workflow plans (common.smk, library_code)."""
    return {script: digests.code_param(tree / "workflow" / "scripts" / script, tree / "src") for script in SCRIPTS}


class Run:
    """A finished run of `experiment_config()` in `workdir`: its outputs, and Snakemake's record of each job."""

    def __init__(self, workdir):
        self.workdir = workdir
        self.jobs = FilePersistence(path=workdir / ".snakemake")

    def job(self, rule: str, code: str, outputs: list[str], inputs: list[str], settings: str = "{}") -> list[str]:
        record = MetadataRecord(
            rule=rule,
            input=inputs,
            log=[f"{RESULTS}/logs/{outputs[0].replace('/', '_')}.log"],
            params=sorted(self.jobs._serialize_param_builtin(value) for value in (code, settings)),
            record_format_version=6,
            incomplete=False,
        )
        for output in outputs:
            path = self.workdir / output
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"made by {rule}\n")
            self.jobs._write_record(output, record)
        return outputs

    def run(self, code: dict[str, str], score_code: dict[str, str] | None = None) -> list[str]:
        """Every job, each with the code param of its script (`score_code`: per system, for the score jobs);
        the outputs the record describes."""
        catalog = self.job(
            "index_catalog", code["index_catalog.py"], [f"{RESULTS}/catalog/films.parquet"], ["catalog.json"]
        )
        topics = self.job("train_lda", code["train_lda.py"], [f"{RESULTS}/topics/topics.parquet"], catalog)
        scores = []
        for system in ("oracle", "lag1"):
            sessions = self.job(
                "simulate", code["simulate.py"], [f"{RESULTS}/sessions/{system}/shard-0.jsonl"], catalog
            )
            score = (score_code or {}).get(system, code["score.py"])
            scores += self.job(
                "score",
                score,
                [
                    f"{RESULTS}/scores/{system}/shard-0.sessions.parquet",
                    f"{RESULTS}/scores/{system}/shard-0.turns.parquet",
                ],
                [*sessions, *catalog, *topics],
            )
        tables = self.job("aggregate", code["aggregate.py"], [f"{RESULTS}/tables/sessions.parquet"], scores)
        stats = self.job("stats", code["stats.py"], [f"{RESULTS}/stats/anova.csv"], tables)
        return catalog + topics + tables + stats

    def record(self, outputs: list[str], source_dir) -> dict:
        return provenance.build(
            experiment_config(), source_dir=source_dir, outputs=outputs, results_dir=self.workdir / RESULTS
        )


def edited(path):
    """Append a comment to a module; returns the way back."""
    text = path.read_text()
    path.write_text(text + "\n# edited while the run was under way\n")
    return lambda: path.write_text(text)


def test_a_module_edited_during_a_run_leaves_the_code_the_jobs_ran_with(tmp_path, monkeypatch, no_git_above):
    tree = library_tree(tmp_path / "tree")
    monkeypatch.chdir(tmp_path)
    run = Run(tmp_path)
    code = planned(tree)
    outputs = run.run(code)
    revert = edited(tree / "src" / "crseval" / "metrics" / "adherence.py")
    assert planned(tree)["score.py"] != code["score.py"]
    during = run.record(outputs, tree)  # the provenance job, while the module is edited
    revert()
    after = run.record(outputs, tree)  # the same jobs, the tree as they ran it
    assert json.dumps(during["stages"], sort_keys=True) == json.dumps(after["stages"], sort_keys=True)
    metrics = during["stages"]["metrics"]["settings"]["code"]
    assert f"code score.py={metrics['score.py']}" == code["score.py"]
    assert metrics["aggregate.py"] == digests.parse_code_param(code["aggregate.py"])["aggregate.py"]
    user = during["stages"]["user"]["settings"]["code"]
    assert user == {
        "crseval.simulate.user.simulator": digests.parse_code_param(code["simulate.py"])[
            "crseval.simulate.user.simulator"
        ]
    }
    ran = during["crseval"]["jobs"]
    assert ran["jobs"] == 8 and ran["ran_with"]["score.py"] == {metrics["score.py"]: 2}
    assert "code_from_tree" not in during["stages"]["metrics"]


def test_jobs_of_one_stage_that_ran_different_code_are_named(tmp_path, monkeypatch, no_git_above):
    tree = library_tree(tmp_path / "tree")
    monkeypatch.chdir(tmp_path)
    run = Run(tmp_path)
    code = planned(tree)
    revert = edited(tree / "src" / "crseval" / "metrics" / "adherence.py")
    later = planned(tree)["score.py"]
    revert()
    outputs = run.run(code, score_code={"lag1": later})  # lag1's shard scored again after the edit
    (tmp_path / RESULTS / "provenance.json").write_text(json.dumps(run.record(outputs, tree)))
    record = json.loads((tmp_path / RESULTS / "provenance.json").read_text())
    first, second = (digests.parse_code_param(param)["score.py"] for param in (code["score.py"], later))
    assert record["stages"]["metrics"]["settings"]["code"]["score.py"] == sorted([first, second])
    assert record["crseval"]["jobs"]["ran_with"]["score.py"] == {first: 1, second: 1}
    problems = provenance.verify(tmp_path / RESULTS)
    mixed = [line for line in problems if line.startswith("stage metrics:")]
    assert len(mixed) == 1 and "score.py" in mixed[0] and "2 different code digests" in mixed[0], problems
    assert not [line for line in problems if line.startswith("stage ") and line not in mixed], problems


def test_outputs_without_a_job_record_and_damaged_records_are_said_so(tmp_path, monkeypatch, no_git_above):
    tree = library_tree(tmp_path / "tree")
    monkeypatch.chdir(tmp_path)
    run = Run(tmp_path)
    outputs = run.run(planned(tree))
    stats = run.jobs._record_path(run.jobs._metadata_path, f"{RESULTS}/stats/anova.csv")
    with open(stats, "w") as handle:
        handle.write('{"rule": "stats", "params": "not a list"')
    record = run.record(outputs, tree)
    statistics = record["stages"]["statistics"]
    assert set(statistics["code_from_tree"]) == {"stats.py"}
    assert "stats/anova.csv" in record["crseval"]["jobs"]["unreadable"][0]
    assert statistics["settings"]["code"]["stats.py"] == digests.parse_code_param(planned(tree)["stats.py"])["stats.py"]


def test_a_job_record_past_the_bound_is_not_read(tmp_path, monkeypatch, no_git_above):
    tree = library_tree(tmp_path / "tree")
    monkeypatch.chdir(tmp_path)
    run = Run(tmp_path)
    outputs = run.run(planned(tree))
    monkeypatch.setattr(provenance, "MAX_JOB_RECORD_BYTES", 64)
    jobs = run.record(outputs, tree)["crseval"]["jobs"]
    assert jobs["jobs"] == 0 and "more than the 64 bytes" in jobs["unreadable"][0]


# ------------------------------------------------------------------ what verify takes on trust


def verified_folder(tmp_path, monkeypatch) -> tuple:
    """results/exp/ with a record built for the experiment (no outputs), which verify passes."""
    monkeypatch.chdir(tmp_path)
    results = tmp_path / RESULTS
    results.mkdir(parents=True)
    record = provenance.build(experiment_config(), source_dir=REPO, results_dir=results)
    write(results, record)
    assert provenance.verify(results) == []
    return results, record


def write(results, record) -> None:
    (results / "provenance.json").write_text(json.dumps(record))


def test_verify_refuses_a_record_format_it_does_not_read(tmp_path, monkeypatch, no_git_above, capsys):
    results, record = verified_folder(tmp_path, monkeypatch)
    write(results, record | {"schema_version": 99, "stages": {"metrics": {"digest": "forged"}}})
    with pytest.raises(provenance.ProvenanceError, match="record format 99.*reads formats 2 to 3"):
        provenance.verify(results)
    assert main(["verify", str(results)]) == 2
    assert "record format 99" in capsys.readouterr().err


def test_verify_checks_every_stage_digest_against_its_settings(tmp_path, monkeypatch, no_git_above, capsys):
    results, record = verified_folder(tmp_path, monkeypatch)
    stages = record["stages"]
    stages["statistics"]["settings"]["stats"]["alpha"] = 0.5  # settings forged, digest kept
    stages["metrics"]["digest"] = "0" * 64  # digest forged
    stages["systems"]["lag1"]["settings"]["system"]["lag"] = 9
    write(results, record)
    assert provenance.verify(results) == [
        "stage metrics: digest 000000000000... is not the sha256 of the settings recorded beside it "
        f"({canonical_sha(stages['metrics']['settings'])[:12]}...)",
        "stage statistics: digest "
        f"{stages['statistics']['digest'][:12]}... is not the sha256 of the settings recorded beside it "
        f"({canonical_sha(stages['statistics']['settings'])[:12]}...)",
        "stage systems.lag1: digest "
        f"{stages['systems']['lag1']['digest'][:12]}... is not the sha256 of the settings recorded beside it "
        f"({canonical_sha(stages['systems']['lag1']['settings'])[:12]}...)",
    ]
    assert main(["verify", str(results)]) == 1
    assert "stage metrics: digest" in capsys.readouterr().out


@pytest.mark.parametrize(
    "stages, named",
    [
        (None, "stages is missing"),
        ([], "stages is a JSON array, not an object"),
        ({"catalog": "x"}, "stages.catalog is a JSON string, not a {digest, settings} object"),
        ({"metrics": {"digest": 5, "settings": {}}}, "stages.metrics.digest is 5, not a sha256"),
        ({"judge": {"digest": "ab", "settings": []}}, "stages.judge.settings is a JSON array, not an object"),
        ({"systems": {"oracle": {"digest": "ab"}}}, "stages.systems.oracle.settings is missing, not an object"),
    ],
)
def test_verify_names_malformed_stages(tmp_path, monkeypatch, no_git_above, stages, named):
    results, record = verified_folder(tmp_path, monkeypatch)
    if stages is None:
        del record["stages"]
    elif isinstance(stages, dict):
        for key, value in stages.items():
            if key == "systems":
                record["stages"]["systems"].update(value)
            else:
                record["stages"][key] = value
    else:
        record["stages"] = stages
    write(results, record)
    with pytest.raises(provenance.ProvenanceError, match="malformed") as error:
        provenance.verify(results)
    assert named in str(error.value)


def test_verify_reads_no_record_past_its_bound(tmp_path, monkeypatch, no_git_above):
    results, _ = verified_folder(tmp_path, monkeypatch)
    monkeypatch.setattr(provenance, "MAX_RECORD_BYTES", 100)
    with pytest.raises(provenance.ProvenanceError, match="more than the 100 bytes"):
        provenance.verify(results)
