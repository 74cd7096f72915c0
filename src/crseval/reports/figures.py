"""Figures of an experiment (seaborn/matplotlib, PNG and SVG), one colour per system throughout.

The same tables draw the same bytes: SVG ids come from a fixed salt rather than a random one, no file
carries the date it was drawn, and the dots jittered over a box are jittered from a fixed seed.

Names are drawn as they are: a `$` in a system name or a label is a dollar sign, never TeX to parse (which
failed the figure on an unknown command such as `$\\foo$`). Each system keeps a colour of its own however
many there are: the colour-blind palette up to its 10 colours, evenly spaced hues beyond.
"""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402
from matplotlib.ticker import AutoMinorLocator, MaxNLocator  # noqa: E402

from crseval.checks.validity import order_ranks, restrict_order
from crseval.statistics import column_registry, correlation

plt.rcParams["svg.hashsalt"] = "crseval"  # SVG element ids: the same from run to run
plt.rcParams["text.parse_math"] = False  # names and labels are text: "$" is no mathtext
COLOURBLIND = 10  # colours of seaborn's colour-blind palette; it repeats them beyond
JITTER_SEED = 0  # seaborn jitters strip plots from numpy's global generator

JUDGE_SCORES = column_registry.JUDGE_SCORES


def label(metric: str) -> str:
    return column_registry.label(metric)


def palette(systems: list[str]) -> dict[str, tuple]:
    """A colour per system, distinct from every other system's (the colour-blind palette repeats after 10)."""
    count = max(len(set(systems)), 3)
    colours = sns.color_palette("colorblind" if count <= COLOURBLIND else "husl", n_colors=count)
    return {system: colours[i] for i, system in enumerate(sorted(set(systems)))}


def integer_ticks(ax, axis: str = "x") -> None:
    """Ticks at whole numbers only on a turn axis (no "2.5" turns), however few turns there are."""
    (ax.xaxis if axis == "x" else ax.yaxis).set_major_locator(MaxNLocator(integer=True))


def save(figure, stem: Path) -> None:
    stem.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(stem.with_suffix(".png"), dpi=130, bbox_inches="tight")
    figure.savefig(stem.with_suffix(".svg"), bbox_inches="tight", metadata={"Date": None})
    plt.close(figure)


def metric_bars(model_metrics: pd.DataFrame, metrics: list[str], colours: dict, stem: Path) -> None:
    """Mean per system, one panel per metric, with the 95% interval of model_metrics.csv where it has one.

    A system with one session (or none) has no interval and gets no error bar, not one of zero width;
    it is marked n=1 (n/a) instead. A mean that is missing or no finite number draws no bar and is marked
    n/a, so that it does not read as a mean of 0. Sessions that all agree keep their zero-width interval: a cap."""
    names = [column_registry.thesis_name(m) for m in metrics if column_registry.thesis_name(m) in model_metrics]
    columns = 4
    rows = math.ceil(len(names) / columns)
    figure, axes = plt.subplots(rows, columns, figsize=(4.2 * columns, 3.0 * rows), squeeze=False)
    systems = list(model_metrics["model"])
    positions = np.arange(len(systems))
    for ax, name in zip(axes.flat, names):
        means = pd.to_numeric(model_metrics[name], errors="coerce").to_numpy(float)
        means = np.where(np.isfinite(means), means, np.nan)
        ax.bar(positions, means, color=[colours[s] for s in systems])
        low, high = model_metrics[f"{name}_ci_low"].to_numpy(float), model_metrics[f"{name}_ci_high"].to_numpy(float)
        _interval_bars(ax, positions, low, high)
        ax.set_title(label(name), fontsize=10)
        ax.set_xticks(positions, systems, rotation=30, ha="right", fontsize=8)
        for i, n in enumerate(model_metrics[f"{name}_n"]):
            if n == 0 or np.isnan(means[i]):
                ax.text(i, 0, "n/a", ha="center", va="bottom", fontsize=7, gid="no-mean")
            elif n == 1:
                ax.text(i, means[i], "n=1", ha="center", va="bottom", fontsize=7)
    for ax in list(axes.flat)[len(names) :]:
        ax.axis("off")
    figure.suptitle("Mean per system with 95% confidence interval", y=1.0)
    figure.tight_layout()
    save(figure, stem)


def _interval_bars(ax, positions: np.ndarray, low: np.ndarray, high: np.ndarray, cap: float = 0.12) -> None:
    """Error bars drawn from the interval's own ends (an interval need not be symmetric about the mean),
    only where there is one with finite ends; every line carries the gid "interval"."""
    drawn = np.isfinite(low) & np.isfinite(high)
    x, low, high = positions[drawn], low[drawn], high[drawn]
    ax.vlines(x, low, high, colors="black", linewidth=1, gid="interval")
    for ends in (low, high):
        ax.hlines(ends, x - cap, x + cap, colors="black", linewidth=1, gid="interval")


def judge_radar(model_metrics: pd.DataFrame, colours: dict, stem: Path) -> None:
    criteria = [column_registry.thesis_name(c) for c in JUDGE_SCORES if column_registry.thesis_name(c) in model_metrics]
    angles = np.linspace(0, 2 * np.pi, len(criteria), endpoint=False).tolist()
    figure = plt.figure(figsize=(5.5, 5.5))
    ax = figure.add_subplot(polar=True)
    for _, row in model_metrics.iterrows():
        values = [row[c] for c in criteria]
        if all(np.isnan(values)):
            continue
        ax.plot(angles + angles[:1], values + values[:1], color=colours[row["model"]], label=row["model"], linewidth=2)
        ax.fill(angles + angles[:1], values + values[:1], color=colours[row["model"]], alpha=0.1)
    ax.set_xticks(angles, criteria)
    ax.set_ylim(1, 5)
    ax.set_yticks([1, 2, 3, 4, 5])
    ax.set_title("LLM judge, mean score (1-5)")
    ax.legend(loc="upper right", bbox_to_anchor=(1.35, 1.1), fontsize=8)
    save(figure, stem)


def correlation_heatmap(sessions: pd.DataFrame, metrics: list[str], stem: Path) -> None:
    columns = [m for m in metrics if m in sessions and sessions[m].notna().sum() > 2 and sessions[m].nunique() > 1]
    matrix = sessions[columns].corr(method="spearman")
    size = max(6, 0.5 * len(columns) + 2)
    figure, ax = plt.subplots(figsize=(size, size * 0.85))
    sns.heatmap(
        matrix,
        vmin=-1,
        vmax=1,
        cmap="vlag",
        annot=len(columns) <= 14,
        fmt=".2f",
        annot_kws={"size": 7},
        xticklabels=[label(c) for c in columns],
        yticklabels=[label(c) for c in columns],
        ax=ax,
        cbar_kws={"label": "Spearman rho"},
    )
    ax.set_title("Spearman correlation between metrics across sessions")
    save(figure, stem)


def recovery_box(sessions: pd.DataFrame, colours: dict, stem: Path) -> None:
    """Boxes over sessions with every session's dot; a session's delay is the mean over its recovered
    shifts (0.5, 1.5 ...), so the delay axis ticks fractions where the range is small, not whole turns."""
    columns = [c for c in ("recovery_delay_cosine", "recovery_delay_jaccard", "avg_recovery_delay") if c in sessions]
    long = sessions.melt(id_vars=["system"], value_vars=columns, var_name="measure", value_name="delay").dropna()
    figure, ax = plt.subplots(figsize=(8, 4))
    if len(long):
        order = sorted(colours)
        layout = dict(data=long, x="measure", y="delay", hue="system", hue_order=order, palette=colours, ax=ax)
        sns.boxplot(
            **layout,
            fliersize=0,
            boxprops={"alpha": 0.4},
        )
        np.random.seed(JITTER_SEED)  # the dots' jitter, the same from run to run
        sns.stripplot(
            **layout,
            dodge=True,
            jitter=0.15,
            size=4,
            legend=False,
        )
        sns.move_legend(ax, "upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, title="system")  # off the dots
    ax.set_xticks(
        range(len(columns)),
        ["grounded, cosine (turns after shift)", "grounded, Jaccard", "legacy CAS (system turns)"][: len(columns)],
    )
    ax.set_xlabel("")
    ax.set_ylabel("recovery delay (turns)")
    ax.yaxis.set_major_locator(MaxNLocator(steps=[1, 2.5, 5, 10]))  # 0.25 or 0.5 apart over a turn or two
    ax.yaxis.set_minor_locator(AutoMinorLocator(2))
    ax.set_title(
        "Recovery delay per session (recovered shifts only)\n"
        "each dot: one session's mean delay over its recovered shifts; box: quartiles over sessions",
        fontsize=10,
    )
    save(figure, stem)


def tas_over_turns(turns: pd.DataFrame, colours: dict, stem: Path, seed: int) -> None:
    figure, ax = plt.subplots(figsize=(8, 4))
    sns.lineplot(
        data=turns, x="turn", y="tas", hue="system", palette=colours, errorbar=("ci", 95), seed=seed, marker="o", ax=ax
    )
    if "shift" in turns and turns["shift"].notna().any():
        share = turns.groupby("turn")["shift"].mean()
        for turn in share[share >= 0.5].index:
            ax.axvline(turn, color="grey", linestyle="--", linewidth=1)
        ax.text(0.01, 0.98, "dashed: simulator shift turns", transform=ax.transAxes, va="top", fontsize=8, color="grey")
    ax.set_xlabel("turn")
    integer_ticks(ax, "x")
    ax.set_ylabel("TAS(t)")
    ax.set_title("Grounded TAS per turn: mean and 95% CI per system")
    save(figure, stem)


def distributions(sessions: pd.DataFrame, metrics: list[str], colours: dict, stem: Path) -> None:
    columns = [m for m in metrics if m in sessions and sessions[m].notna().any()]
    figure, axes = plt.subplots(1, max(len(columns), 1), figsize=(4.5 * max(len(columns), 1), 4), squeeze=False)
    if not columns:  # no selected family draws a distribution (e.g. goals alone): say so, do not fail
        axes[0, 0].set_axis_off()
        axes[0, 0].text(0.5, 0.5, "no metric of the selected families has a distribution figure", ha="center")
    for ax, metric in zip(axes.flat, columns):
        sns.violinplot(
            data=sessions,
            x="system",
            y=metric,
            hue="system",
            palette=colours,
            cut=0,
            inner="point",
            ax=ax,
            legend=False,
        )
        ax.set_title(label(metric))
        ax.set_ylabel("")
        ax.tick_params(axis="x", rotation=30)
    figure.suptitle("Distribution over sessions")
    figure.tight_layout()
    save(figure, stem)


# The sensitivity figure's grid: CC's share of alpha + beta, and gamma (each with the configured value added).
def fill_phrases(phrases: list[str], width: int) -> str:
    """The phrases joined by spaces, a new line where the next phrase would pass `width` characters:
    lines break between phrases only, never inside "gamma = 0.2"."""
    lines = [phrases[0]]
    for phrase in phrases[1:]:
        if len(lines[-1]) + 1 + len(phrase) > width:
            lines.append(phrase)
        else:
            lines[-1] += " " + phrase
    return "\n".join(lines)


def weight_sensitivity(table: pd.DataFrame, stem: Path) -> None:
    """One heatmap per system of crseval.metrics.tas_weights.sensitivity_table (mean TAS per system and
    weights), the configured cell boxed."""
    cells = table.drop_duplicates(["alpha", "beta", "gamma"])
    systems = sorted(table["system"].unique())
    own = cells[cells["configured"]].iloc[0]
    total = own["alpha"] + own["beta"]
    across = cells.drop_duplicates("cc_share").set_index("cc_share").sort_index()
    shares, gammas = list(across.index), sorted(cells["gamma"].unique())
    column_labels = [f"{a:.3g} / {b:.3g}" for a, b in zip(across["alpha"], across["beta"])]
    figure, axes = plt.subplots(
        math.ceil(len(systems) / 4),
        min(len(systems), 4),  # four panels a row at most, so that the cells stay legible
        figsize=(max(0.7 * len(shares) * min(len(systems), 4) + 1.2, 6.0), 3.4 * math.ceil(len(systems) / 4) + 0.4),
        squeeze=False,
        layout="constrained",
    )
    vmin, vmax = table["tas"].min(), table["tas"].max()
    for ax, system in zip(axes.flat, systems):
        grid = table[table["system"] == system].pivot(index="gamma", columns="cc_share", values="tas")
        sns.heatmap(
            grid.loc[gammas, shares],
            vmin=vmin,
            vmax=vmax,
            cmap="viridis",
            annot=True,
            fmt=".3f",
            annot_kws={"size": 7},
            cbar=False,
            xticklabels=column_labels,
            yticklabels=[f"{g:.3g}" for g in gammas],
            ax=ax,
        )
        ax.add_patch(
            Rectangle(
                (shares.index(own["cc_share"]), gammas.index(own["gamma"])),
                1,
                1,
                fill=False,
                edgecolor="red",
                linewidth=2.5,
                clip_on=False,
            )
        )
        ax.set_title(system, fontsize=10)
        ax.set_xlabel("alpha / beta", fontsize=9)
        ax.set_ylabel("gamma" if ax in axes[:, 0] else "", fontsize=9)
        ax.tick_params(axis="x", labelrotation=45, labelsize=8)
        ax.tick_params(axis="y", labelrotation=0, labelsize=8)
    for ax in list(axes.flat)[len(systems) :]:
        ax.axis("off")
    width = figure.get_figwidth()  # lines fit the figure: about 13 characters per inch at 10 pt, 16 at 8 pt
    weights_said = f"(alpha = {own['alpha']:g}, beta = {own['beta']:g}, gamma = {own['gamma']:g}),"
    figure.suptitle(
        fill_phrases(
            ["Mean TAS per system under other weights;", "red box: the configured weights", weights_said]
            + ["whose TAS the tables report"],
            int(13 * width),
        ),
        fontsize=10,
    )
    figure.supxlabel(
        fill_phrases(
            ["TAS = alpha CC + beta CR - gamma I.", "Across: weight moved between CC (alpha) and CR (beta),"]
            + [f"alpha + beta kept at the configured {total:g}.", "Down: the copying penalty gamma."],
            int(16 * width),
        ),
        fontsize=8,
    )
    save(figure, stem)


def tas_scatter(sessions: pd.DataFrame, others: list[str], colours: dict, stem: Path) -> list[str]:
    """One point per session: grounded TAS against each of `others` (the legacy CAS, the judge's
    criteria), coloured by system, Spearman rho over all sessions in each panel's title. A column
    that is absent or has no value beside a TAS value gets no panel. Returns the columns shown."""
    has_tas = sessions["tas"].notna() if "tas" in sessions else pd.Series(False, index=sessions.index)
    shown = [c for c in others if c in sessions and (sessions[c].notna() & has_tas).any()]
    figure, axes = plt.subplots(1, max(len(shown), 1), figsize=(4.2 * max(len(shown), 1), 3.8), squeeze=False)
    rng = np.random.default_rng(0)
    for ax, column in zip(axes.flat, shown):
        pairs = sessions[["system", "tas", column]].dropna()
        for system in sorted(colours):
            points = pairs[pairs["system"] == system]
            x = points[column].to_numpy(float)
            if column in JUDGE_SCORES:  # whole-point scores: spread the dots sideways so that equal scores stay visible
                x = x + rng.uniform(-0.15, 0.15, len(x))
            ax.scatter(x, points["tas"], s=18, alpha=0.7, color=colours[system], label=system, edgecolors="none")
        rho, n = correlation.spearman(sessions[column], sessions["tas"])
        ax.set_title(f"Spearman rho = {'n/a' if rho != rho else f'{rho:.2f}'} (n = {n})", fontsize=10)
        ax.set_xlabel(label(column))
        ax.set_ylabel(label("tas"))
        if column in JUDGE_SCORES:  # the judge's 1-5 scale, whole points (means of k samples fall in between)
            ax.set_xlim(0.7, 5.3)
            ax.set_xticks(range(1, 6))
    if shown:
        handles = [plt.Line2D([], [], marker="o", linestyle="", color=colours[s], label=s) for s in sorted(colours)]
        figure.legend(handles=handles, loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8, title="system")
        figure.suptitle("Grounded TAS against the other scores, one point per session")
    else:
        axes.flat[0].axis("off")
        axes.flat[0].text(0.5, 0.5, "no legacy CAS or judge scores to compare with TAS", ha="center", va="center")
    figure.tight_layout()
    save(figure, stem)
    return shown


def validity_figure(table: pd.DataFrame, stem: Path) -> list[str]:
    """Measured against expected rank of each calibration system, one panel per measured metric
    of the validity table (crseval.checks.validity), with the diagonal of perfect agreement; Kendall's tau,
    its CI and the verdict in the title. Metrics without a measured order are listed below the
    panels. Expected ranks are over the systems the experiment has. Returns the metrics drawn."""
    measured = table[table["measured_order"].notna() & (table["measured_order"].astype(str).str.strip() != "")]
    skipped = table[~table.index.isin(measured.index)]
    several_profiles = "profile" in table and table["profile"].nunique() > 1  # then each panel names its own
    systems = sorted({s for order in measured["measured_order"] for s in order_ranks(order)})
    colours = palette(systems)
    columns = min(4, max(len(measured), 1))
    rows = max(math.ceil(len(measured) / columns), 1)
    figure, axes = plt.subplots(
        rows, columns, figsize=(3.3 * columns, 3.3 * rows + 0.6), squeeze=False, layout="constrained"
    )
    for ax, row in zip(axes.flat, measured.itertuples()):
        got = order_ranks(row.measured_order)
        expected = order_ranks(restrict_order(row.expected_order, set(got)))
        n = len(got)
        ax.plot([1, n], [1, n], color="grey", linestyle="--", linewidth=1, zorder=0)
        for system, rank in got.items():
            if system not in expected:
                continue
            ax.scatter(expected[system], rank, s=40, color=colours[system], zorder=2)
            ax.annotate(system, (expected[system], rank), xytext=(4, 2), textcoords="offset points", fontsize=7)
        ax.set_xlim(0.5, n + 0.7)
        ax.set_ylim(0.5, n + 0.5)
        integer_ticks(ax, "x")
        integer_ticks(ax, "y")
        ax.set_xlabel("expected rank", fontsize=8)
        ax.set_ylabel("measured rank", fontsize=8)
        tau = "n/a" if row.tau != row.tau else f"{row.tau:.2f}"
        ci = "" if row.tau_ci_low != row.tau_ci_low else f" [{row.tau_ci_low:.2f}, {row.tau_ci_high:.2f}]"
        check = f" ({row.check})" if getattr(row, "check", "adaptation") != "adaptation" else ""
        if several_profiles:
            check = f" ({row.check}, {row.profile})"
        ax.set_title(
            f"{label(row.metric)}{check}\ntau = {tau}{ci}: {row.verdict}",
            fontsize=9,
            color={"pass": "tab:green", "fail": "tab:red"}.get(row.verdict, "black"),
        )
    for ax in list(axes.flat)[len(measured) :]:
        ax.axis("off")
    if not len(measured):
        axes.flat[0].text(0.5, 0.5, "no metric could be measured", ha="center", va="center")
    if len(skipped):
        reasons = [str(r.verdict).removeprefix("not measured").strip(" ()") for r in skipped.itertuples()]
        named = dict.fromkeys(f"{m} ({why})" if why else m for m, why in zip(skipped["metric"], reasons))
        note = "Not measured: " + ", ".join(named)  # once per metric and reason, whatever the check
        figure.text(0.01, 0.0, textwrap.fill(note, 45 * columns), fontsize=8, color="grey", ha="left", va="top")
    figure.suptitle(
        "Metric validity: measured vs expected rank of the calibration systems\n(1 = best; dashed: perfect agreement)"
    )
    save(figure, stem)
    return list(measured["metric"])


VERDICT_COLOURS = {
    "agrees": "#1b9e77",
    "disagrees": "#d95f02",
    "associated": "#7570b3",
    "no evidence": "#999999",
    "not measured": "#dddddd",
}


def human_agreement_figure(dialogues: pd.DataFrame, systems: pd.DataFrame, stem: Path) -> None:
    """Left: oriented AUC of every metric and reference predictor for the users' verdicts, with its CI,
    coloured by verdict, the reply-length reference as a dashed line. Right: each system's satisfaction
    rate (Wilson interval) against its Bradley-Terry strength from the votes, when there are votes."""
    shown = dialogues[dialogues["auc"].notna()].sort_values("oriented_auc")
    voted = "bt_strength" in systems and systems["bt_strength"].notna().any()
    figure, axes = plt.subplots(
        1,
        2 if voted else 1,
        figsize=(13 if voted else 7, max(3.5, 0.28 * len(shown) + 1.5)),
        squeeze=False,
        layout="constrained",
    )
    ax = axes[0, 0]
    positions = np.arange(len(shown))
    colours = [VERDICT_COLOURS[v] for v in shown["verdict"]]
    low, high = shown["oriented_ci_low"].to_numpy(), shown["oriented_ci_high"].to_numpy()
    values = shown["oriented_auc"].to_numpy()
    ax.hlines(positions, low, high, colors=colours, linewidth=2)
    ax.scatter(values, positions, color=colours, zorder=3, s=22)
    ax.axvline(0.5, color="black", linewidth=0.8)
    length = dialogues.loc[dialogues["metric"] == "reference: words per reply", "oriented_auc"]
    if len(length) and not math.isnan(length.iloc[0]):
        ax.axvline(length.iloc[0], color="grey", linestyle="--", linewidth=1)
    names = [("◆ " if kind == "reference" else "") + text for kind, text in zip(shown["kind"], shown["label"])]
    ax.set_yticks(positions, names, fontsize=8)
    ax.set_xlim(0, 1)
    ax.set_xlabel("oriented AUC for the user's verdict (0.5: no separation; dashed: words per reply)")
    ax.set_title("Per dialogue: does the metric separate satisfied from frustrated?", fontsize=10)
    handles = [plt.Line2D([], [], color=c, marker="o", linestyle="-", label=v) for v, c in VERDICT_COLOURS.items()]
    ax.legend(handles=handles, fontsize=7, loc="lower right", title="after Holm", title_fontsize=7)
    if voted:
        ax = axes[0, 1]
        frame = systems.dropna(subset=["bt_strength", "satisfaction_rate"])
        ax.errorbar(
            frame["bt_strength"],
            frame["satisfaction_rate"],
            xerr=[frame["bt_strength"] - frame["bt_low"], frame["bt_high"] - frame["bt_strength"]],
            yerr=[frame["satisfaction_rate"] - frame["rate_low"], frame["rate_high"] - frame["satisfaction_rate"]],
            fmt="o",
            color="#444444",
            ecolor="#bbbbbb",
        )
        for row in frame.itertuples():
            ax.annotate(
                row.system,
                (row.bt_strength, row.satisfaction_rate),
                fontsize=7,
                xytext=(4, 3),
                textcoords="offset points",
            )
        ax.set_xlabel("Bradley-Terry log-strength from pairwise votes (95% CI)")
        ax.set_ylabel("share of dialogues the user was satisfied with (95% Wilson)")
        ax.set_title("Per system: the two human rankings", fontsize=10)
    save(figure, stem)


def user_realism_figure(words: dict[str, list[int]], shares: pd.DataFrame, stem: Path) -> None:
    """Each user's words per turn beside the real users' (share of turns, 40 words and longer in the last
    bin), and its shares of turns (questions, greetings, thanks, reactions...). `words`: user -> words of each turn,
    the real users under "real users"; `shares`: one row per user, a column per share."""
    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4), layout="constrained")
    colours = palette(list(words))
    bins = np.arange(0, 42, 2)
    for user, counts in words.items():
        clipped = np.minimum(np.asarray(counts, float), 40)
        weights = np.full(len(clipped), 1 / max(len(clipped), 1))
        left.hist(clipped, bins=bins, weights=weights, histtype="step", linewidth=1.6, color=colours[user], label=user)
    left.set_xlabel("words per user turn (40: 40 or more)")
    left.set_ylabel("share of turns")
    left.legend(fontsize=8)
    positions = np.arange(len(shares.columns))
    width = 0.8 / max(len(shares), 1)
    for i, (user, row) in enumerate(shares.iterrows()):
        right.bar(positions + i * width, row.to_numpy(float), width, color=colours[user], label=user)
    right.set_xticks(
        positions + width * (len(shares) - 1) / 2,
        [c.replace("_", " ") for c in shares.columns],
        rotation=30,
        ha="right",
    )
    right.set_ylabel("share of user turns")
    figure.suptitle("Simulated users beside real users")
    save(figure, stem)


def pass_k_figure(passes: pd.DataFrame | None, stem: Path) -> None:
    """pass^k against k per system (crseval.statistics.trials.pass_table), with its bootstrap interval as a
    band where it has one: how fast the chance of succeeding on every one of k tries at the same user falls.
    Without a table (no success metric) or without rows, an empty panel that says so."""
    passes = passes if passes is not None else pd.DataFrame(columns=["system", "k", "pass_hat_k"])
    systems = list(dict.fromkeys(passes["system"]))
    colours = palette(systems)
    figure, ax = plt.subplots(figsize=(6.5, 4))
    for system in systems:
        rows = passes[(passes["system"] == system) & passes["pass_hat_k"].notna()].sort_values("k")
        k = rows["k"].to_numpy(float)
        low, high = rows["ci_low"].to_numpy(float), rows["ci_high"].to_numpy(float)
        ax.plot(k, rows["pass_hat_k"], marker="o", color=colours[system], label=system, clip_on=False)
        band = ~(np.isnan(low) | np.isnan(high))
        ax.fill_between(k, low, high, where=band, color=colours[system], alpha=0.15, linewidth=0, gid="interval")
    ax.set_ylim(0, 1)
    integer_ticks(ax, "x")
    ax.set_xlabel("k (tries at the same user)")
    ax.set_ylabel("pass^k")
    ax.set_title(
        "pass^k: success on every one of k tries at the same user\n"
        "line: mean over users; band: bootstrap CI over users",
        fontsize=10,
    )
    if systems:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, title="system")
    else:
        ax.text(0.5, 0.5, "no success values: pass^k not computed", ha="center", va="center", transform=ax.transAxes)
    save(figure, stem)
