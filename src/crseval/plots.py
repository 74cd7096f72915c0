"""Figures of an experiment (seaborn/matplotlib, PNG and SVG), one colour per system throughout."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

JUDGE = {"judge_proactiveness": "proactiveness", "judge_coherence": "coherence", "judge_personalization": "personalization"}
LABELS = {
    "tas": "grounded TAS", "tas_segment": "segment TAS", "recovery_rate_cosine": "recovery rate (cosine)",
    "missing_concepts": "missing concepts / turn", "hallucinated_concepts": "hallucinated concepts / turn",
    "rec_satisfaction": "recommendation satisfaction", "repeat_rate": "repeated recommendations",
    "cross_coherence": "cross-coherence (legacy)", "context_retention": "context retention (legacy)",
    "topic_recovery_rate": "topic recovery rate (legacy)", "topic_interference": "topic interference (legacy)",
    "context_adaptation_score": "CAS (legacy)", "adherence_f1": "topic adherence F1", "distinct_2": "distinct-2",
    "self_bleu": "self-BLEU", "perplexity": "perplexity (plot LM)", "embedding_diversity": "embedding diversity",
    "persona_similarity": "persona similarity", "avg_recovery_delay": "recovery delay (legacy, turns)",
    **{k: f"judge: {v}" for k, v in JUDGE.items()},
}


def label(metric: str) -> str:
    return LABELS.get(metric, metric.replace("_", " "))


def palette(systems: list[str]) -> dict[str, tuple]:
    colours = sns.color_palette("colorblind", n_colors=max(len(systems), 3))
    return {system: colours[i] for i, system in enumerate(sorted(systems))}


def save(figure, stem: Path) -> None:
    stem.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(stem.with_suffix(".png"), dpi=130, bbox_inches="tight")
    figure.savefig(stem.with_suffix(".svg"), bbox_inches="tight")
    plt.close(figure)


def metric_bars(model_metrics: pd.DataFrame, metrics: list[str], colours: dict, stem: Path) -> None:
    """Mean and 95% CI per system, one panel per metric."""
    names = [JUDGE.get(m, m) for m in metrics if JUDGE.get(m, m) in model_metrics]
    columns = 4
    rows = math.ceil(len(names) / columns)
    figure, axes = plt.subplots(rows, columns, figsize=(4.2 * columns, 3.0 * rows), squeeze=False)
    systems = list(model_metrics["model"])
    for ax, name in zip(axes.flat, names):
        means = model_metrics[name].to_numpy(float)
        low = means - model_metrics[f"{name}_ci_low"].to_numpy(float)
        high = model_metrics[f"{name}_ci_high"].to_numpy(float) - means
        ax.bar(range(len(systems)), means, yerr=np.nan_to_num(np.vstack([low, high])), capsize=3,
               color=[colours[s] for s in systems])
        ax.set_title(label(f"judge_{name}" if f"judge_{name}" in JUDGE else name), fontsize=10)
        ax.set_xticks(range(len(systems)), systems, rotation=30, ha="right", fontsize=8)
        for i, n in enumerate(model_metrics[f"{name}_n"]):
            if n == 0:
                ax.text(i, 0, "n/a", ha="center", va="bottom", fontsize=7)
    for ax in list(axes.flat)[len(names):]:
        ax.axis("off")
    figure.suptitle("Mean per system with 95% confidence interval", y=1.0)
    figure.tight_layout()
    save(figure, stem)


def judge_radar(model_metrics: pd.DataFrame, colours: dict, stem: Path) -> None:
    criteria = [c for c in JUDGE.values() if c in model_metrics]
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
    sns.heatmap(matrix, vmin=-1, vmax=1, cmap="vlag", annot=len(columns) <= 14, fmt=".2f", annot_kws={"size": 7},
                xticklabels=[label(c) for c in columns], yticklabels=[label(c) for c in columns], ax=ax,
                cbar_kws={"label": "Spearman rho"})
    ax.set_title("Spearman correlation between metrics across sessions")
    save(figure, stem)


def recovery_box(sessions: pd.DataFrame, colours: dict, stem: Path) -> None:
    columns = [c for c in ("recovery_delay_cosine", "recovery_delay_jaccard", "avg_recovery_delay") if c in sessions]
    long = sessions.melt(id_vars=["system"], value_vars=columns, var_name="measure", value_name="delay").dropna()
    figure, ax = plt.subplots(figsize=(8, 4))
    if len(long):
        order = sorted(colours)
        sns.boxplot(data=long, x="measure", y="delay", hue="system", hue_order=order, palette=colours, ax=ax,
                    fliersize=0, boxprops={"alpha": 0.4})
        sns.stripplot(data=long, x="measure", y="delay", hue="system", hue_order=order, palette=colours, ax=ax,
                      dodge=True, jitter=0.15, size=4, legend=False)
        ax.text(0.01, 0.98, "each dot: one session's mean delay", transform=ax.transAxes, va="top", fontsize=8, color="grey")
    ax.set_xticks(range(len(columns)), ["grounded, cosine (turns after shift)", "grounded, Jaccard", "legacy CAS (system turns)"][:len(columns)])
    ax.set_xlabel("")
    ax.set_ylabel("recovery delay")
    ax.set_title("Recovery delay per session (recovered shifts only)")
    save(figure, stem)


def tas_over_turns(turns: pd.DataFrame, colours: dict, stem: Path, seed: int) -> None:
    figure, ax = plt.subplots(figsize=(8, 4))
    sns.lineplot(data=turns, x="turn", y="tas", hue="system", palette=colours, errorbar=("ci", 95), seed=seed,
                 marker="o", ax=ax)
    if "shift" in turns and turns["shift"].notna().any():
        share = turns.groupby("turn")["shift"].mean()
        for turn in share[share >= 0.5].index:
            ax.axvline(turn, color="grey", linestyle="--", linewidth=1)
        ax.text(0.01, 0.98, "dashed: simulator shift turns", transform=ax.transAxes, va="top", fontsize=8, color="grey")
    ax.set_xlabel("turn")
    ax.set_ylabel("TAS(t)")
    ax.set_title("Grounded TAS per turn: mean and 95% CI per system")
    save(figure, stem)


def distributions(sessions: pd.DataFrame, metrics: list[str], colours: dict, stem: Path) -> None:
    columns = [m for m in metrics if m in sessions and sessions[m].notna().any()]
    figure, axes = plt.subplots(1, len(columns), figsize=(4.5 * len(columns), 4), squeeze=False)
    for ax, metric in zip(axes.flat, columns):
        sns.violinplot(data=sessions, x="system", y=metric, hue="system", palette=colours, cut=0, inner="point", ax=ax, legend=False)
        ax.set_title(label(metric))
        ax.set_ylabel("")
        ax.tick_params(axis="x", rotation=30)
    figure.suptitle("Distribution over sessions")
    figure.tight_layout()
    save(figure, stem)


def weight_sensitivity(turns: pd.DataFrame, stem: Path) -> pd.DataFrame:
    """Mean TAS per system for alpha in 0.1..0.9 (beta = 1 - alpha) and gamma in 0..0.4,
    recomputed from the per-turn CC, CR and copying values."""
    alphas = np.round(np.arange(0.1, 0.91, 0.2), 2)
    gammas = np.round(np.arange(0.0, 0.41, 0.1), 2)
    rows = []
    for alpha in alphas:
        for gamma in gammas:
            tas = alpha * turns["cc"] + (1 - alpha) * turns["cr"] - gamma * turns["copying"]
            session_tas = tas.groupby([turns["system"], turns["session_id"]]).mean()
            for system, value in session_tas.groupby(level=0).mean().items():
                rows.append({"alpha": alpha, "gamma": gamma, "system": system, "tas": value})
    table = pd.DataFrame(rows)
    systems = sorted(table["system"].unique())
    figure, axes = plt.subplots(1, len(systems), figsize=(3.6 * len(systems), 3.4), squeeze=False)
    vmin, vmax = table["tas"].min(), table["tas"].max()
    for ax, system in zip(axes.flat, systems):
        grid = table[table["system"] == system].pivot(index="gamma", columns="alpha", values="tas")
        sns.heatmap(grid, vmin=vmin, vmax=vmax, cmap="viridis", annot=True, fmt=".2f", annot_kws={"size": 7}, cbar=False, ax=ax)
        ax.set_title(system, fontsize=10)
        ax.set_xlabel("alpha (beta = 1 - alpha)")
        ax.set_ylabel("gamma")
    figure.suptitle("Mean TAS under other weights")
    figure.tight_layout()
    save(figure, stem)
    return table
