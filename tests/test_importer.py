"""Importing legacy logs: every defect rule on hand-made logs, the CLI, and the thesis logs end to end."""

import json
import math

import pandas as pd
import pytest
import yaml
from conftest import REFERENCE_LOGS, REPO, copy_workflow, run_snakemake

from crseval.corpora.thesis_logs import LogImportError, import_logs, pair_turns, repair_user_text, tracked_constraints


def log(path, conversation, model="mini:1b"):
    path.write_text(json.dumps({"model_name": model, "true_genre": "crime", "conversation": conversation}))
    return path


def msg(speaker, text, constraints=None):
    return {"speaker": speaker, "text": text, **({"constraints": constraints} if constraints else {})}


def test_pasted_record_is_replaced_by_its_film_name():
    from collections import Counter

    report = Counter()
    assert (
        repair_user_text("Which sort of plot has {'name': 'Starsky & Hutch', 'year': '2004', 'actor': ['Fred W", report)
        == "Which sort of plot has Starsky & Hutch"
    )
    assert repair_user_text("Tell me about {'year': '2004'} please", report) == "Tell me about please"
    assert report == {
        "structure pasted into a user turn: replaced by the film name": 1,
        "structure pasted into a user turn: removed": 1,
    }


def test_speaker_order_rules():
    from collections import Counter

    report = Counter()
    pairs = pair_turns(
        [
            msg("SYSTEM", "Welcome!"),
            msg("USER", "A crime film."),
            msg("USER", "With De Niro."),
            msg("SYSTEM", "Try Heat."),
            msg("USER", " "),
            msg("SYSTEM", "Or Casino."),
            msg("USER", "Thanks"),
        ],
        report,
    )
    assert [(p["user"]["text"], p["system"]["text"]) for p in pairs] == [
        ("A crime film. With De Niro.", "Try Heat. Or Casino.")
    ]
    assert report == {
        "opening SYSTEM message dropped": 1,
        "consecutive USER messages joined": 1,
        "empty USER message dropped": 1,
        "consecutive SYSTEM messages joined": 1,
        "final USER message without reply dropped": 1,
    }


def test_logged_constraints_become_tracked_constraints():
    from collections import Counter

    report = Counter()
    tracked = tracked_constraints(
        {
            "genre": "Crime Fiction",
            "plot": ["police"],
            "name": "You",
            "actor": ["Al Pacino"],
            "language": "English Language",
            "year": "1995",
        },
        report,
    )
    assert tracked == [
        {"field": "genre", "value": "crime", "negated": False},
        {"field": "actor", "value": "Al Pacino", "negated": False},
        {"field": "language", "value": "english", "negated": False},
        {"field": "year", "value": "1995", "negated": False},
    ]
    assert report == {"logged constraint field not tracked: plot": 1, "logged constraint field not tracked: name": 1}


def test_import_sessions_duplicates_and_report(tmp_path, matcher):
    conversation = [
        msg("USER", "A crime movie?"),
        msg("SYSTEM", "Heat and Casino.", {"genre": "crime"}),
        msg("USER", "More like {'name': 'Heat', 'year': '1995'}"),
        msg("SYSTEM", ""),
    ]
    files = [
        log(tmp_path / "mini:1b_session_mini:1b_3.json", conversation),
        log(tmp_path / "mini:1b_session_mini:1b_1.json", conversation[:2]),
        log(tmp_path / "zz_copy_7.json", conversation),
    ]  # sorts last: the copy
    sessions, report = import_logs(files, matcher, "a" * 64, "b" * 64)
    records = sessions["mini:1b"]
    assert [r["session_index"] for r in records] == [1, 3]
    second = records[1]
    assert [t["user_text"] for t in second["turns"]] == ["A crime movie?"]  # the last pair lost its empty reply
    assert second["turns"][0]["recommended_titles"] == ["Heat", "Casino"]
    assert second["turns"][0]["system_constraints"] == [{"field": "genre", "value": "crime", "negated": False}]
    assert (
        second["turns"][0]["user_meta"] is None
        and second["provenance"]["source_file"] == "mini:1b_session_mini:1b_3.json"
    )
    assert report["sessions"] == {"mini:1b": 2} and report["files"] == 3
    assert report["rules_applied"]["duplicate file skipped"] == 1
    assert report["rules_applied"]["empty SYSTEM message dropped"] == 1  # the skipped copy is not read further


@pytest.mark.parametrize(
    "content, pattern",
    [
        ("{not json", r"cannot be read as JSON"),
        ('["a list"]', r"expected an object with 'model_name'"),
        ('{"model_name": "m", "conversation": [{"speaker": "USER"}]}', r"message 0 needs 'speaker' and 'text'"),
    ],
)
def test_unreadable_file_fails_with_its_name(tmp_path, matcher, content, pattern):
    bad = tmp_path / "broken_1.json"
    bad.write_text(content)
    with pytest.raises(LogImportError, match=rf"broken_1.json: {pattern}"):
        import_logs([bad], matcher, "a" * 64, "b" * 64)


def test_cli_import(tmp_path, small_index):
    import pyarrow as pa

    from crseval.cli import main
    from crseval.core.io import write_parquet

    index_dir = tmp_path / "catalog"
    index_dir.mkdir()
    write_parquet(
        pa.Table.from_pandas(small_index.films.reset_index(drop=True), preserve_index=False),
        index_dir / "films.parquet",
    )
    write_parquet(pa.Table.from_pandas(small_index.concepts, preserve_index=False), index_dir / "concepts.parquet")
    log(tmp_path / "a_1.json", [msg("USER", "Crime?"), msg("SYSTEM", 'I recommend "Heat".')])
    assert (
        main(
            ["import-logs", str(tmp_path / "*.json"), "--catalog-index", str(index_dir), "--out", str(tmp_path / "out")]
        )
        == 0
    )
    assert json.loads((tmp_path / "out" / "mini:1b.jsonl").read_text())["turns"][0]["recommended_titles"] == ["Heat"]
    assert (
        main(
            [
                "import-logs",
                str(tmp_path / "missing.json"),
                "--catalog-index",
                str(index_dir),
                "--out",
                str(tmp_path / "o2"),
            ]
        )
        == 2
    )


PROTOTYPE = {  # the prototype's own scorer on these 300 logs: cross_coherence, context_retention, CAS
    "gemma:2b": (0.0754, 0.0999, 0.1309),
    "llama2:latest": (0.0697, 0.1881, 0.1625),
    "llama3:instruct": (0.1119, 0.2054, 0.1899),
    "mistral:7b": (0.0999, 0.1460, 0.1601),
    "qwen:4b": (0.0445, 0.0942, 0.1145),
    "qwen:7b": (0.0696, 0.0863, 0.1308),
}


@pytest.mark.workflow
@pytest.mark.skipif(not REFERENCE_LOGS.exists(), reason="the thesis logs are not beside the repository")
def test_thesis_logs_reproduce_the_published_coherence_and_retention(tmp_path):
    workdir = copy_workflow(tmp_path)
    text = (REPO / "config" / "thesis_logs.yaml").read_text().replace("../shared/data", str(REFERENCE_LOGS.parent))
    config = yaml.safe_load(text)
    config["scoring"]["metrics"] = ["tas", "cas"]  # the two families the published table has
    (workdir / "thesis.yaml").write_text(yaml.safe_dump(config))
    run_snakemake(workdir, "--configfile", "thesis.yaml")
    results = workdir / "results" / "thesis-logs"
    metrics = pd.read_csv(results / "tables" / "model_metrics.csv").set_index("model")
    for model, (cc, cr, cas) in PROTOTYPE.items():
        assert abs(metrics.loc[model, "cross_coherence"] - cc) < 0.005, model
        assert abs(metrics.loc[model, "context_retention"] - cr) < 0.005, model
        assert abs(metrics.loc[model, "context_adaptation_score"] - cas) < 0.02, model
    sessions = pd.read_parquet(results / "tables" / "sessions.parquet")
    assert len(sessions) == 300 and math.isnan(sessions["dst_f1"].iloc[0]) and sessions["cas_shifts"].mean() > 15
    report = json.loads((results / "sessions" / "import_report.json").read_text())
    assert report["rules_applied"]["structure pasted into a user turn: replaced by the film name"] == 17
