"""The metric registry: every column a writer produces is declared, once, and documented.

The scorer runs every family on a simulated session (with ground truth) and an imported-like one
(without); the judge judges one session against a loopback server. Their columns must be exactly
the declared ones, a column declared as needing ground truth must be NaN without it, and
docs/metrics.md must carry the registry's column reference as it is now.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pyarrow.parquet
import pytest
from conftest import REPO, default_config, model_free_scorer
from fake_servers import FakeOllama
from test_judge import SESSION, make_judge, reply

from crseval.checks.validity import EXPECTATIONS
from crseval.core.columns import SESSION_ID_COLUMNS, Column
from crseval.language.concepts import ConceptMatcher
from crseval.metrics.response_stats import CLUSTER_KEYS
from crseval.metrics.scorer import FAMILIES
from crseval.metrics.tool_use import SESSION_NAMES as TOOL_USE
from crseval.simulate.sessions import SessionContext, run_session, session_seed
from crseval.simulate.systems.agents import AgentSettings, TemplateAgent
from crseval.simulate.user.templates import Templates
from crseval.simulate.user.user_plan import SimulatorSettings
from crseval.statistics import aggregate, column_registry

SESSION_IDS = {c.name for c in SESSION_ID_COLUMNS} - {"shard", "trial"}  # added by aggregate


@pytest.fixture(scope="module")
def scored(demo_index, catalog_files):
    """Every family on one simulated session and the same session stripped of its ground truth."""
    matcher = ConceptMatcher(demo_index.concepts, demo_index.films)
    context = SessionContext(
        demo_index,
        matcher,
        Templates.load(REPO / "resources" / "templates" / "user.yaml"),
        SimulatorSettings(shift_every=2),
        6,
        "0" * 64,
    )
    seed = session_seed(3, 0)
    agent = TemplateAgent(demo_index, matcher, AgentSettings(), seed)
    simulated = run_session(context, "template", agent, 0, seed, "0" * 64)
    imported = {
        **simulated,
        "session_id": "template/imported",
        "liked_titles": [],
        "turns": [{k: v for k, v in t.items() if k != "user_meta"} for t in simulated["turns"]],
    }
    settings = default_config()["scoring"]
    settings = {
        **settings,
        "metrics": list(FAMILIES),
        "cas": {**settings["cas"], "topics": "heuristic", "similarity": "tfidf"},
        "response_stats": {**settings["response_stats"], "embeddings": False, "persona_similarity": "tfidf"},
    }
    scorer = model_free_scorer(catalog_files, settings)
    return scorer.score([simulated, imported])


def test_the_scorer_writes_exactly_the_declared_columns(scored):
    sessions, turns = scored
    declared = [c.name for _, columns, _ in column_registry.WRITERS[1:-1] for c in columns]  # scorer and families
    assert sorted(set(sessions.columns) - SESSION_IDS) == sorted(declared)
    declared_turns = {c.name for _, _, columns in column_registry.WRITERS for c in columns} - {"shard", "trial"}
    assert set(turns.columns) == declared_turns
    assert (
        column_registry.undeclared(sessions.columns) == [] and column_registry.undeclared(turns.columns, "turns") == []
    )


def test_ground_truth_columns_are_exactly_those_missing_without_it(scored):
    sessions, _ = scored
    simulated, imported = sessions.iloc[0], sessions.iloc[1]
    for column in column_registry.SESSION_COLUMNS.values():
        if column.name not in sessions or not column.metric:
            continue
        if column.ground_truth:
            assert math.isnan(imported[column.name]), column.name
        elif column.name not in (*CLUSTER_KEYS, "embedding_diversity", *TOOL_USE, "rerecommended_after_rejection"):
            # every other metric has a value without ground truth (the clusters need embeddings, off here; the
            # template system calls no tool, so the tool_use columns are not measured; films offered again after
            # a turn-down are measured only where the user turned a film down)
            assert not pd.isna(imported[column.name]), column.name
    # goal metrics that need a user who keeps a wish to itself, a success, or a recorded ending (this session
    # is an explicit user's of the session format before profiles) are NaN by definition
    # (and the tool_use metrics, of a system that calls no tool)
    undefined_here = {"elicitation_rate", "undisclosed_met", "turns_to_undisclosed", "turns_to_success", "abandoned"}
    undefined_here |= set(TOOL_USE)
    measured = [
        c
        for c in column_registry.SESSION_COLUMNS.values()
        if c.ground_truth and c.name in sessions and c.name not in undefined_here
    ]
    assert sum(not pd.isna(simulated[c.name]) for c in measured) >= len(measured) - 2  # delays: NaN if none recovered


def test_the_judge_writes_exactly_its_declared_columns(small_index):
    matcher = ConceptMatcher(small_index.concepts, small_index.films)
    with FakeOllama(content=lambda body: reply()) as server:
        row = make_judge(server, matcher, samples=2).judge_session(SESSION)
    judge = {c.name for c in column_registry.WRITERS[-1][1]}
    assert set(row) - {"system", "session_id", "session_index"} == judge
    with FakeOllama(content=lambda body: "not json") as server:
        failed = make_judge(server, matcher, retries=0).judge_session(SESSION)
    assert set(failed) == set(row) and failed["judge_missing_reason"]


def test_a_column_nobody_declared_stops_the_aggregate():
    frame = pd.DataFrame({"system": ["a"], "session_id": ["a/0"], "tas": [0.1], "tas_bonus": [1.0]})
    with pytest.raises(ValueError, match="tas_bonus"):
        aggregate.to_table(frame)
    assert aggregate.to_table(frame.drop(columns="tas_bonus")).schema.field("tas").type == "double"


def test_a_column_is_declared_once():
    twice = (Column("x", "x", "0-1", True),), (Column("x", "x", "0-1", False),)
    with pytest.raises(ValueError, match="declared twice"):
        column_registry._by_name(*twice)


def test_docs_carry_the_column_reference_as_declared():
    document = (REPO / "docs" / "metrics.md").read_text(encoding="utf-8")
    assert column_registry.with_reference(document) == document, (
        "docs/metrics.md: rewrite the column reference with `.venv/bin/python -m crseval.statistics.column_registry "
        "docs/metrics.md`"
    )
    reference = document.partition(column_registry.DOCS_START)[2].partition(column_registry.DOCS_END)[0]
    for name in {*column_registry.SESSION_COLUMNS, *column_registry.TURN_COLUMNS}:
        assert f"| `{name}` |" in reference, name
    stale = column_registry.with_reference(document.replace("| `tas_copying` |", "| `tas_copy` |"))
    assert stale != document.replace("| `tas_copying` |", "| `tas_copy` |")


def test_every_validity_expectation_reads_a_declared_direction():
    for expectation in EXPECTATIONS:
        column = column_registry.session_column(expectation.metric)
        assert column.metric and isinstance(expectation.higher_is_better, bool), expectation.metric


def test_configured_metrics_are_declared_metrics():
    for name in default_config()["stats"]["metrics"]:
        assert column_registry.session_column(name).metric, name
    with pytest.raises(KeyError, match="declared by no metric family"):
        column_registry.session_column("tas_bonus")


def test_model_metrics_use_thesis_names_and_skip_what_is_not_a_metric():
    sessions = pd.DataFrame(
        {
            "system": ["a", "a"],
            "session_id": ["a/0", "a/1"],
            "turns": [6, 6],
            "judge_coherence": [4.0, 5.0],
            "judge_coherence_sd": [0.5, np.nan],
            "topic_recovery_rate": [0.2, 0.4],
        }
    )
    table = aggregate.model_metrics(sessions, resamples=200, seed=0)
    assert table.loc[0, "coherence"] == 4.5 and table.loc[0, "topic_recovery_rate"] == pytest.approx(0.3)
    assert not {"turns", "judge_coherence_sd", "judge_coherence"} & set(table.columns)


def test_turn_shards_written_one_by_one_are_the_concatenated_table(tmp_path):
    """aggregate copies turn shards into turns.parquet one at a time; the table is the one concatenating
    them gives: columns in order of first appearance, a column a shard lacks empty there, declared types."""
    first = pd.DataFrame(
        {"system": ["a", "a"], "session_id": ["a-0", "a-0"], "turn": [1, 2], "tas": [0.5, None], "shift": [True, False]}
    )
    second = pd.DataFrame({"system": ["b"], "session_id": ["b-0"], "turn": [1], "cc": [0.25], "unknown_titles": [2]})
    paths = []
    for number, frame in enumerate([first, second, first.iloc[:0]]):
        paths.append(str(tmp_path / f"shard-{number}.turns.parquet"))
        frame.to_parquet(paths[-1], index=False)
    rows = aggregate.write_shard_tables(paths, [0, 1, 2], "turns", tmp_path / "turns.parquet")
    together = pd.concat([pd.read_parquet(p).assign(shard=k) for k, p in enumerate(paths)], ignore_index=True)
    expected = aggregate.to_table(together, "turns")
    written = pyarrow.parquet.read_table(tmp_path / "turns.parquet")
    assert rows == 3 and written.equals(expected)
    assert written.column_names == ["system", "session_id", "turn", "tas", "shift", "shard", "cc", "unknown_titles"]
    assert written.column("cc").to_pylist() == [None, None, 0.25] and written.column("shard").to_pylist() == [0, 0, 1]
