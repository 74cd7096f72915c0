"""Figures: every figure function writes PNG and SVG, turn axes tick whole turns, recovery delays tick
the halves they plot, no text covers another or the data, the weight grid holds and marks the configured
TAS, the TAS scatter draws only the scores it has, and the validity figure from a calibration run."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import copy_workflow, default_config, run_snakemake, write_config
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.patches import Rectangle

from crseval.checks.validity import order_ranks, restrict_order, validity_table
from crseval.metrics import tas_weights
from crseval.metrics.grounded import TasSettings, session_means, tas_value
from crseval.reports import figures
from crseval.statistics import correlation
from crseval.statistics.aggregate import model_metrics

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


def test_turn_axes_tick_whole_turns(tmp_path, turns, captured):
    figures.tas_over_turns(turns, figures.palette(SYSTEMS), tmp_path / "tas_over_turns", seed=0)
    over_turns = captured[-1].axes[0]
    assert_integer_ticks(over_turns.xaxis)
    assert {1, 2, 3} <= {int(t) for t in visible_ticks(over_turns.xaxis)}


def shown_ticklabels(axis) -> list:
    """The tick labels matplotlib draws: those of ticks inside the view (the others are not drawn)."""
    low, high = sorted(axis.get_view_interval())
    return [t for loc, t in zip(axis.get_ticklocs(), axis.get_ticklabels()) if low - 1e-9 <= loc <= high + 1e-9]


def drawn_texts(figure) -> list[tuple[object, str, object]]:
    """(owner, text, window bbox) of every visible non-empty text after drawing: the figure's own texts
    (suptitle, notes) belong to the figure, titles, axis labels and tick labels to their axes."""
    canvas = FigureCanvasAgg(figure)  # a closed figure keeps no drawing canvas of its own
    canvas.draw()
    renderer = canvas.get_renderer()
    found = [(figure, t) for t in figure.texts + [figure._suptitle, figure._supxlabel, figure._supylabel] if t]
    for ax in figure.axes:
        if not ax.axison:
            continue
        labels = [ax.title, ax._left_title, ax._right_title, ax.xaxis.label, ax.yaxis.label]
        found += [(ax, t) for t in labels + shown_ticklabels(ax.xaxis) + shown_ticklabels(ax.yaxis)]
    return [(o, t.get_text(), t.get_window_extent(renderer)) for o, t in found if t.get_visible() and t.get_text()]


def assert_no_text_overlaps(figure):
    """No text of one owner (the figure, an axes) covers a text of another."""
    texts = drawn_texts(figure)
    clashes = [
        (a, b)
        for i, (owner_a, a, box_a) in enumerate(texts)
        for owner_b, b, box_b in texts[i + 1 :]
        if owner_a is not owner_b and box_a.overlaps(box_b)
    ]
    assert clashes == []


def test_recovery_delays_tick_the_means_they_plot_and_the_note_covers_no_dot(tmp_path, sessions, captured):
    """A session's delay is a mean over its shifts (0.5, 1.5 ...): every plotted value sits on a major or
    minor tick, not only whole turns; the note on the dots is outside the axes, away from every dot."""
    figures.recovery_box(sessions, figures.palette(SYSTEMS), tmp_path / "recovery_delay_box")
    figure = captured[-1]
    ax = figure.axes[0]
    plotted = {
        v for c in ("recovery_delay_cosine", "recovery_delay_jaccard", "avg_recovery_delay") for v in sessions[c]
    }
    assert any(not float(v).is_integer() for v in plotted)  # the fixture has half turns
    ticks = visible_ticks(ax.yaxis) + list(ax.yaxis.get_minorticklocs())
    assert all(np.isclose(ticks, v).any() for v in plotted), (sorted(plotted), ticks)
    texts = drawn_texts(figure)
    note = [box for _, text, box in texts if "each dot: one session's mean delay" in text]
    assert len(note) == 1 and not note[0].overlaps(ax.get_window_extent())
    dots = np.vstack([ax.transData.transform(c.get_offsets()) for c in ax.collections if len(c.get_offsets())])
    assert len(dots) == 3 * len(sessions) and not any(note[0].contains(x, y) for x, y in dots)
    assert not ax.get_legend().get_window_extent().overlaps(ax.get_window_extent())  # the legend covers no dot
    assert_no_text_overlaps(figure)


def test_scatter_draws_the_scores_it_has(tmp_path, sessions, captured):
    colours = figures.palette(SYSTEMS)
    shown = figures.tas_scatter(
        sessions, ["context_adaptation_score", *figures.JUDGE_SCORES], colours, tmp_path / "all"
    )
    # judge_personalization has no value: no panel
    assert shown == ["context_adaptation_score", "judge_proactiveness", "judge_coherence"]
    panels = [ax for ax in captured[-1].axes if ax.axison]
    assert len(panels) == 3
    rho, n = correlation.spearman(sessions["context_adaptation_score"], sessions["tas"])
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


def drawn_intervals(ax) -> dict[int, list[float]]:
    """System position -> the heights of every interval line drawn there (bar and caps)."""
    heights: dict[int, list[float]] = {}
    for collection in ax.collections:
        if collection.get_gid() == "interval":
            for segment in collection.get_segments():
                heights.setdefault(round(float(np.mean(segment[:, 0]))), []).extend(segment[:, 1].tolist())
    return heights


def test_metric_bars_draw_each_interval_within_the_values_it_summarises(tmp_path, sessions, captured):
    """Bootstrap (tas, coherence) and Wilson (a 0/1 recovery rate) intervals lie within the values of
    the system's sessions; a system of one session gets no error bar, sessions that agree a cap."""
    frame = sessions.assign(recovery_rate_cosine=(np.arange(len(sessions)) % 3 == 0).astype(float))
    frame.loc[frame.system == "alpha", "recovery_rate_cosine"] = 1.0  # no spread
    frame.loc[(frame.system == "beta") & (frame.session_id != "beta-0"), "judge_coherence"] = np.nan  # one session
    metrics = ["tas", "judge_coherence", "recovery_rate_cosine"]
    table = model_metrics(frame, resamples=2000, seed=0)
    figures.metric_bars(table, metrics, figures.palette(SYSTEMS), tmp_path / "metric_bars")
    assert_written(tmp_path / "metric_bars")
    axes = captured[0].axes
    for ax, metric in zip(axes, metrics):
        heights = drawn_intervals(ax)
        name = figures.column_registry.thesis_name(metric)
        for i, row in table.iterrows():
            values = frame.loc[frame.system == row["model"], metric].dropna()
            if row[f"{name}_n"] < 2:
                assert i not in heights, (metric, row["model"])
                continue
            assert min(heights[i]) >= values.min() and max(heights[i]) <= values.max(), (metric, row["model"])
            assert sorted({min(heights[i]), max(heights[i])}) == sorted({row[f"{name}_ci_low"], row[f"{name}_ci_high"]})
    coherence, recovery = axes[1], axes[2]
    assert 1 not in drawn_intervals(coherence) and "n=1" in [text.get_text() for text in coherence.texts]
    assert set(drawn_intervals(recovery)[0]) == {1.0}  # alpha: all sessions 1, a cap at 1
    assert set(table["recovery_rate_cosine_ci_method"]) == {"none", "Wilson"}
    assert table.loc[1, "coherence_note"] == "one session: no interval"


def test_spearman_matches_scipy(sessions):
    from scipy.stats import spearmanr

    rho, n = correlation.spearman(sessions["judge_coherence"], sessions["tas"])
    assert n == len(sessions) and rho == pytest.approx(spearmanr(sessions["judge_coherence"], sessions["tas"])[0])
    assert np.isnan(correlation.spearman(sessions["judge_personalization"], sessions["tas"])[0])
    assert np.isnan(correlation.spearman(pd.Series([1.0] * 5), pd.Series(range(5), dtype=float))[0])


def test_order_ranks_share_tied_positions():
    assert order_ranks("oracle > lag1 > stubborn=random") == {
        "oracle": 1,
        "lag1": 2,
        "stubborn": 3.5,
        "random": 3.5,
    }
    assert order_ranks("parrot > oracle=lag1=lag2") == {"parrot": 1, "oracle": 3, "lag1": 3, "lag2": 3}
    assert restrict_order("oracle > lag1 > lag2 > stubborn=random", {"oracle", "random", "lag2"}) == (
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


@pytest.mark.parametrize("copies", [1, 3])
def test_validity_suptitle_and_panel_titles_do_not_overlap(validity, tmp_path, captured, copies):
    """Two lines of suptitle above rows of two-line panel titles, in a figure of two rows and in a tall one
    (a calibration run measures some twenty metrics): nothing covers anything."""
    measured = validity[validity["verdict"].isin(["pass", "fail"])]
    table = pd.concat([validity] + [measured] * (copies - 1), ignore_index=True)
    figures.validity_figure(table, tmp_path / "validity")
    figure = captured[-1]
    panels = [ax for ax in figure.axes if ax.axison]
    assert len(panels) == copies * len(measured) > 4  # two rows of panels or more
    texts = drawn_texts(figure)
    suptitle = next(box for owner, text, box in texts if owner is figure and text.startswith("Metric validity"))
    titles = [box for owner, text, box in texts if owner in panels and text.count("\n") == 1 and "tau" in text]
    assert len(titles) == len(panels) and not any(suptitle.overlaps(box) for box in titles)
    assert_no_text_overlaps(figure)


def turns_by_hand() -> pd.DataFrame:
    """Two systems: a-1 has turns (CC, CR, I) = (1, 0, 0) and (0, 1, 0.5), a-2 one turn (0.5, 0.5, 0);
    b-1 one turn (0, 0, 1). With unequal turn counts the mean of session means differs from the mean of turns."""
    rows = [
        ("a", "a-1", 1, 1.0, 0.0, 0.0),
        ("a", "a-1", 2, 0.0, 1.0, 0.5),
        ("a", "a-2", 1, 0.5, 0.5, 0.0),
        ("b", "b-1", 1, 0.0, 0.0, 1.0),
    ]
    return pd.DataFrame(rows, columns=["system", "session_id", "turn", "cc", "cr", "copying"])


CONFIGURED = {"alpha": 0.4, "beta": 0.4, "gamma": 0.2}


def tables_tas(turns: pd.DataFrame, weights: dict) -> dict[str, float]:
    """System -> `tas` of tables/model_metrics.csv, through the scorer's own session means and the aggregation."""
    settings = TasSettings(**weights)
    sessions = []
    for (system, session_id), group in turns.groupby(["system", "session_id"]):
        rows = [
            {
                "cc": t.cc,
                "cr": t.cr,
                "copying": t.copying,
                "tas": tas_value(t.cc, t.cr, t.copying, settings),
                "tas_rec": tas_value(0.0, 0.0, t.copying, settings),  # no film recommended
                "hallucinated_concepts": 0,
                "recommended": 0,
                "repeated_recommendations": 0,
            }
            for t in group.itertuples()
        ]
        sessions.append({"system": system, "session_id": session_id, **session_means(rows)})
    metrics = model_metrics(pd.DataFrame(sessions), resamples=200, seed=0)
    return dict(zip(metrics["model"], metrics["tas"]))


def test_weight_grid_holds_the_configured_weights():
    grid = tas_weights.weight_grid({"alpha": 0.3, "beta": 0.5, "gamma": 0.15})
    assert sorted(grid["cc_share"].unique()) == [0.0, 0.25, 0.3 / 0.8, 0.5, 0.75, 1.0]
    assert sorted(grid["gamma"].unique()) == [0.0, 0.1, 0.15, 0.2, 0.3, 0.4]
    assert np.allclose(grid["alpha"] + grid["beta"], 0.8)  # the configured sum everywhere
    own = grid[grid["configured"]]
    assert own[["alpha", "beta", "gamma"]].to_dict("records") == [{"alpha": 0.3, "beta": 0.5, "gamma": 0.15}]
    # a configured value on the grid is not there twice
    default = tas_weights.weight_grid(CONFIGURED)
    assert len(default) == 25 and default["configured"].sum() == 1
    assert default.loc[default["configured"], "cc_share"].item() == 0.5


def test_weight_sensitivity_configured_cell_is_the_tas_of_the_tables(tmp_path, captured):
    turns = turns_by_hand()
    table = tas_weights.sensitivity_table(turns, CONFIGURED)
    figures.weight_sensitivity(table, tmp_path / "weight_sensitivity")
    assert_written(tmp_path / "weight_sensitivity")
    own = table[table["configured"]].set_index("system")["tas"]
    # by hand: a-1 (0.4 + 0.3) / 2 = 0.35, a-2 0.4, a = 0.375; b-1 -0.2
    assert own.to_dict() == pytest.approx({"a": 0.375, "b": -0.2}, abs=1e-12)
    assert own.to_dict() == pytest.approx(tables_tas(turns, CONFIGURED), abs=1e-12)
    # another cell by hand: alpha 0.6, beta 0.2, gamma 0.4: a-1 (0.6 + 0.0) / 2 = 0.3, a-2 0.4, a = 0.35; b -0.4
    other = table[np.isclose(table["alpha"], 0.6) & np.isclose(table["gamma"], 0.4)].set_index("system")["tas"]
    assert other.to_dict() == pytest.approx({"a": 0.35, "b": -0.4}, abs=1e-12)
    assert other.to_dict() == pytest.approx(tables_tas(turns, {"alpha": 0.6, "beta": 0.2, "gamma": 0.4}), abs=1e-12)

    figure = captured[-1]
    panels = [ax for ax in figure.axes if ax.axison]
    assert [ax.get_title() for ax in panels] == ["a", "b"]
    for ax in panels:
        # columns alpha / beta over shares 0, 0.25, 0.5, 0.75, 1 of 0.8; rows gamma 0 .. 0.4: configured at (2, 2)
        assert [t.get_text() for t in ax.get_xticklabels()] == [
            "0 / 0.8",
            "0.2 / 0.6",
            "0.4 / 0.4",
            "0.6 / 0.2",
            "0.8 / 0",
        ]
        assert [t.get_text() for t in ax.get_yticklabels()] == ["0", "0.1", "0.2", "0.3", "0.4"]
        assert ax.get_xlabel() == "alpha / beta"
        boxes = [p for p in ax.patches if isinstance(p, Rectangle) and not p.get_fill()]
        assert [(b.get_x(), b.get_y(), b.get_width(), b.get_height()) for b in boxes] == [(2, 2, 1, 1)]
        inside = [t.get_text() for t in ax.texts if t.get_position() == (2.5, 2.5)]
        assert inside == [f"{own[ax.get_title()]:.3f}"]
    assert panels[0].get_ylabel() == "gamma"
    said = figure._suptitle.get_text() + " " + figure._supxlabel.get_text()
    assert "alpha = 0.4, beta = 0.4, gamma = 0.2" in " ".join(said.split())
    assert "alpha + beta kept at the configured 0.8" in " ".join(said.split())
    assert_no_text_overlaps(figure)


@pytest.mark.workflow
def test_figure_rules_follow_the_config(tmp_path):
    """Dry runs: tas_scatter with CAS or the judge, not without both; validity_figure only with
    at least three calibration systems."""
    workdir = copy_workflow(tmp_path)
    config = default_config()
    dry = run_snakemake(workdir, "-n", "--configfile", str(write_config(workdir, config))).stdout
    assert "figures/tas_scatter.png" in dry and "validity_figure" not in dry
    config["scoring"]["metrics"] = [m for m in config["scoring"]["metrics"] if m != "cas"]
    config["judge"]["enabled"] = False
    dry = run_snakemake(workdir, "-n", "--configfile", str(write_config(workdir, config, "bare.yaml"))).stdout
    assert "figures/tas_over_turns.png" in dry and "tas_scatter" not in dry


def test_distributions_without_a_distribution_column_say_so(tmp_path, sessions, captured):
    """A run whose families draw no distribution (goals alone) still gets the figure, saying why it is empty."""
    figures.distributions(sessions, ["not_a_column"], figures.palette(SYSTEMS), tmp_path / "distributions")
    assert_written(tmp_path / "distributions")
    assert "no metric of the selected families" in " ".join(t.get_text() for t in captured[-1].axes[0].texts)
