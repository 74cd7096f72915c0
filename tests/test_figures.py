"""Figures: every figure function writes PNG and SVG, turn axes tick whole turns, the TAS scatter
draws only the scores it has, and the validity figure from a calibration run."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import REPO, copy_workflow, run_snakemake, write_config

from crseval.analysis import figures
from crseval.analysis.validity import validity_table

SYSTEMS = ["alpha", "beta", "gamma"]
CALIBRATION_ROLES = ["oracle", "lag1", "lag2", "stubborn", "random", "parrot"]


@pytest.fixture
def sessions() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    rows = []
    for k, system in enumerate(SYSTEMS):
        for i in range(8):
            tas = 0.2 * k + rng.uniform(0, 0.3)
            rows.append(
                {
                    "system": system,
                    "session_id": f"{system}-{i}",
                    "tas": tas,
                    "context_adaptation_score": tas + rng.normal(0, 0.1),
                    "judge_proactiveness": float(rng.integers(1, 6)),
                    "judge_coherence": float(rng.integers(1, 6)),
                    "judge_personalization": np.nan,  # the judge gave no score for this criterion
                    "recovery_delay_cosine": float(rng.integers(0, 3)) + 0.5 * (i % 2),
                    "recovery_delay_jaccard": float(rng.integers(0, 3)),
                    "avg_recovery_delay": float(rng.integers(1, 4)),
                }
            )
    return pd.DataFrame(rows)


@pytest.fixture
def turns() -> pd.DataFrame:
    """Three turns only: the case where matplotlib's default locator ticks 1.25, 1.5 ..."""
    rng = np.random.default_rng(4)
    rows = []
    for system in SYSTEMS:
        for i in range(4):
            for turn in (1, 2, 3):
                cc, cr = rng.uniform(0, 1, 2)
                rows.append(
                    {
                        "system": system,
                        "session_id": f"{system}-{i}",
                        "turn": turn,
                        "shift": turn == 2,
                        "cc": cc,
                        "cr": cr,
                        "copying": rng.uniform(0, 0.2),
                        "tas": 0.4 * cc + 0.4 * cr,
                    }
                )
    return pd.DataFrame(rows)


@pytest.fixture
def validity() -> pd.DataFrame:
    """A validity table from hand-made calibration sessions: TAS follows the construction, the
    legacy CAS is noise, the judge's column is absent (not measured)."""
    rng = np.random.default_rng(5)
    rows = []
    for rank, role in enumerate(CALIBRATION_ROLES):
        for _ in range(10):
            rows.append(
                {
                    "system": role,
                    "tas": 1.0 - 0.15 * rank + rng.normal(0, 0.02),
                    "context_adaptation_score": rng.uniform(0, 1),
                    "tas_copying": float(role == "parrot"),
                    "recovery_rate_cosine": max(0.0, 1.0 - 0.3 * rank) + rng.normal(0, 0.02),
                }
            )
    return validity_table(pd.DataFrame(rows), resamples=50, seed=1)


@pytest.fixture
def captured(monkeypatch) -> list:
    """Every figure a plot function saves (the figure object outlives plt.close)."""
    saved = []
    original = figures.save

    def save(figure, stem):
        saved.append(figure)
        original(figure, stem)

    monkeypatch.setattr(figures, "save", save)
    return saved


def assert_written(stem):
    png, svg = stem.with_suffix(".png"), stem.with_suffix(".svg")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000, png
    assert "<svg" in svg.read_text()[:2000] and svg.stat().st_size > 5000, svg


def visible_ticks(axis) -> list[float]:
    low, high = sorted(axis.get_view_interval())
    return [t for t in axis.get_ticklocs() if low - 1e-9 <= t <= high + 1e-9]


def assert_integer_ticks(axis):
    ticks = visible_ticks(axis)
    assert ticks and all(float(t).is_integer() for t in ticks), ticks
    labels = [t.get_text().replace("\N{MINUS SIGN}", "-") for t in axis.get_ticklabels() if t.get_text()]
    assert labels and all(text.lstrip("-").isdigit() for text in labels), labels


def test_every_figure_writes_png_and_svg(tmp_path, sessions, turns, validity):
    colours = figures.palette(SYSTEMS)
    figures.tas_over_turns(turns, colours, tmp_path / "tas_over_turns", seed=0)
    figures.recovery_box(sessions, colours, tmp_path / "recovery_delay_box")
    figures.tas_scatter(
        sessions, ["context_adaptation_score", *figures.JUDGE_SCORES], colours, tmp_path / "tas_scatter"
    )
    figures.validity_figure(validity, tmp_path / "validity")
    for name in ("tas_over_turns", "recovery_delay_box", "tas_scatter", "validity"):
        assert_written(tmp_path / name)


def test_turn_axes_tick_whole_turns(tmp_path, sessions, turns, captured):
    colours = figures.palette(SYSTEMS)
    figures.tas_over_turns(turns, colours, tmp_path / "tas_over_turns", seed=0)
    figures.recovery_box(sessions, colours, tmp_path / "recovery_delay_box")
    over_turns, recovery = (figure.axes[0] for figure in captured)
    assert_integer_ticks(over_turns.xaxis)
    assert {1, 2, 3} <= {int(t) for t in visible_ticks(over_turns.xaxis)}
    assert_integer_ticks(recovery.yaxis)  # recovery delay, in turns


def test_scatter_draws_the_scores_it_has(tmp_path, sessions, captured):
    colours = figures.palette(SYSTEMS)
    shown = figures.tas_scatter(
        sessions, ["context_adaptation_score", *figures.JUDGE_SCORES], colours, tmp_path / "all"
    )
    # judge_personalization has no value: no panel
    assert shown == ["context_adaptation_score", "judge_proactiveness", "judge_coherence"]
    panels = [ax for ax in captured[-1].axes if ax.axison]
    assert len(panels) == 3
    rho, n = figures.spearman(sessions["context_adaptation_score"], sessions["tas"])
    assert panels[0].get_xlabel() == figures.label("context_adaptation_score") and n == len(sessions)
    assert panels[0].get_title() == f"Spearman rho = {rho:.2f} (n = {n})"
    assert all(len(ax.collections) == len(SYSTEMS) for ax in panels)  # one colour per system

    # CAS not computed and no judge: the columns are absent
    without = sessions.drop(columns=["context_adaptation_score", *figures.JUDGE_SCORES])
    assert (
        figures.tas_scatter(without, ["context_adaptation_score", *figures.JUDGE_SCORES], colours, tmp_path / "none")
        == []
    )
    assert_written(tmp_path / "none")  # the declared output still exists, with a note
    # CAS not among the requested scores (scoring.metrics without cas): no CAS panel even if the column is there
    assert figures.tas_scatter(sessions, list(figures.JUDGE_SCORES), colours, tmp_path / "judge") == [
        "judge_proactiveness",
        "judge_coherence",
    ]
    # a score whose only values sit beside a missing TAS is no panel either
    lone = sessions.assign(tas=np.nan)
    assert figures.tas_scatter(lone, ["context_adaptation_score"], colours, tmp_path / "lone") == []


def test_spearman_matches_scipy(sessions):
    from scipy.stats import spearmanr

    rho, n = figures.spearman(sessions["judge_coherence"], sessions["tas"])
    assert n == len(sessions) and rho == pytest.approx(spearmanr(sessions["judge_coherence"], sessions["tas"])[0])
    assert np.isnan(figures.spearman(sessions["judge_personalization"], sessions["tas"])[0])
    assert np.isnan(figures.spearman(pd.Series([1.0] * 5), pd.Series(range(5), dtype=float))[0])


def test_order_ranks_share_tied_positions():
    assert figures.order_ranks("oracle > lag1 > stubborn=random") == {
        "oracle": 1,
        "lag1": 2,
        "stubborn": 3.5,
        "random": 3.5,
    }
    assert figures.order_ranks("parrot > oracle=lag1=lag2") == {"parrot": 1, "oracle": 3, "lag1": 3, "lag2": 3}
    assert figures.restrict_order("oracle > lag1 > lag2 > stubborn=random", {"oracle", "random", "lag2"}) == (
        "oracle > lag2 > random"
    )


def test_validity_figure_draws_measured_metrics_and_notes_the_rest(tmp_path, validity, captured):
    drawn = figures.validity_figure(validity, tmp_path / "validity")
    measured = validity[validity["verdict"].isin(["pass", "fail"])]["metric"].tolist()
    assert drawn == measured and {"tas", "context_adaptation_score", "tas_copying"} <= set(drawn)
    figure = captured[-1]
    panels = [ax for ax in figure.axes if ax.axison]
    assert len(panels) == len(drawn)
    titles = {ax.get_title().splitlines()[0]: ax.get_title() for ax in panels}
    assert titles[figures.label("tas")].endswith(": pass") and "tau = 1.00" in titles[figures.label("tas")]
    tas_panel = next(ax for ax in panels if ax.get_title().startswith(figures.label("tas") + "\n"))
    points = np.vstack([c.get_offsets() for c in tas_panel.collections])
    assert len(points) == len(CALIBRATION_ROLES) - 1  # the parrot has no expected rank for TAS
    assert np.allclose(points[:, 0], points[:, 1])  # on the diagonal
    assert_integer_ticks(tas_panel.xaxis)
    note = " ".join(t.get_text() for t in figure.texts)
    assert note.startswith("Not measured:") and "judge_personalization" in note and "dst_f1" in note


@pytest.mark.workflow
def test_figure_rules_follow_the_config(tmp_path):
    """Dry runs: tas_scatter with CAS or the judge, not without both; validity_figure only with
    at least three calibration systems."""
    workdir = copy_workflow(tmp_path)
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    dry = run_snakemake(workdir, "-n", "--configfile", str(write_config(workdir, config))).stdout
    assert "figures/tas_scatter.png" in dry and "validity_figure" not in dry
    config["scoring"]["metrics"] = [m for m in config["scoring"]["metrics"] if m != "cas"]
    config["judge"]["enabled"] = False
    dry = run_snakemake(workdir, "-n", "--configfile", str(write_config(workdir, config, "bare.yaml"))).stdout
    assert "figures/tas_over_turns.png" in dry and "tas_scatter" not in dry


@pytest.mark.workflow
def test_calibration_run_draws_the_validity_figure(tmp_path):
    """A small calibration experiment (config/test/calibration_demo.yaml: six calibration systems, 6 sessions
    of 8 turns, demo catalog): the validity figure beside stats/validity.csv, the TAS scatter against CAS (no judge)."""
    workdir = copy_workflow(tmp_path)
    results = "results/calibration-demo"
    run = run_snakemake(workdir, "--configfile", "config/test/calibration_demo.yaml")  # rule all asks for the figure
    assert "rule validity_figure:" in run.stdout + run.stderr
    for name in ("validity", "tas_scatter", "tas_over_turns"):
        assert_written(workdir / results / "figures" / name)
    table = pd.read_csv(workdir / results / "stats" / "validity.csv")
    assert {"tas", "context_adaptation_score"} <= set(table.loc[table["verdict"].isin(["pass", "fail"]), "metric"])
    log = (workdir / results / "logs" / "validity_figure.log").read_text()
    assert f"{(table['verdict'].isin(['pass', 'fail'])).sum()} metrics drawn" in log
    assert "TAS scatter against context_adaptation_score" in (workdir / results / "logs" / "plots.log").read_text()
