"""The `stats` stage as one function: every comparison of the systems an experiment's tables allow.

`compare_systems` runs, on sessions.parquet, the omnibus tests with the BH adjustment over the
metrics, Tukey HSD, the pairwise and the paired tests with Holm and BH adjustments, the judge
correlations, sample-size planning and (when the judge ran) the judge's reliability; `write`
puts each table and summary at its output path, atomically. The rule script only connects paths.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from crseval.analysis import power, registry, stats
from crseval.core.io import atomic_path
from crseval.judge import reliability

TABLES = ("anova", "tukey", "pairwise", "paired", "correlations", "power_table")


@dataclass
class Comparison:
    tables: dict[str, pd.DataFrame]  # TABLES, and `reliability` when the judge ran
    texts: dict[str, str]  # summary, power, and `reliability_summary` when the judge ran
    compared: list[str]  # the metrics and judge scores compared, in order
    not_computed: list[str] = field(default_factory=list)  # configured metrics absent from the sessions
    paired_not_run: str = ""  # why the paired tests did not run (sessions do not pair), if they did not


def compare_systems(sessions: pd.DataFrame, settings: dict, judged: bool) -> Comparison:
    """Every comparison of the `stats` config section (`settings`) on the sessions table."""
    judges = [c for c in registry.JUDGE_SCORES if c in sessions] if judged else []
    metrics = [m for m in settings["metrics"] if m in sessions]
    not_computed = sorted(set(settings["metrics"]) - set(metrics))
    alpha, resamples, seed = settings["alpha"], settings["bootstrap_resamples"], settings["seed"]
    compared = metrics + judges
    anova = stats.omnibus_with_adjustment(pd.DataFrame([stats.omnibus(sessions, m, alpha) for m in compared]))
    tukey = pd.concat([stats.tukey(sessions, m, alpha) for m in compared] or [pd.DataFrame()], ignore_index=True)
    pairwise = stats.adjust(
        pd.DataFrame(
            [row for i, m in enumerate(compared) for row in stats.pairwise(sessions, m, resamples, seed + 1000 * i)]
        ),
        ["welch_t_p", "mannwhitney_p"],
    )
    pairs, pairing_reason = stats.pairing(sessions)
    if pairs:
        paired_rows = [
            row for i, m in enumerate(compared) for row in stats.paired(sessions, m, resamples, seed + 1000 * i + 500)
        ]
        paired = stats.adjust(pd.DataFrame(paired_rows), ["paired_t_p", "wilcoxon_p"])
    else:
        paired = pd.DataFrame(columns=["metric", "system_a", "system_b", "pairs", "note"])
    correlations = stats.correlations(sessions, metrics, judges, resamples, seed)
    target = settings["power"]
    planning = power.power_table(sessions, compared, alpha, target["power"], target["differences"], pairs)
    tables = {
        "anova": anova,
        "tukey": tukey,
        "pairwise": pairwise,
        "paired": paired,
        "correlations": correlations,
        "power_table": planning,
    }
    texts = {
        "summary": stats.markdown_summary(anova, tukey, pairwise, paired, correlations, pairing_reason, alpha),
        "power": power.power_markdown(planning, alpha, target["power"], pairing_reason),
    }
    if judged:
        tables["reliability"] = reliability.reliability_table(sessions, alpha, resamples, seed)
        texts["reliability_summary"] = reliability.reliability_markdown(tables["reliability"], alpha)
    return Comparison(tables, texts, compared, not_computed, "" if pairs else pairing_reason)


def write(comparison: Comparison, paths) -> None:
    """Each table (CSV) and text at `paths[name]` (a mapping or Snakemake's named output)."""
    for name, frame in comparison.tables.items():
        with atomic_path(Path(paths[name])) as temporary:
            frame.to_csv(temporary, index=False)
    for name, text in comparison.texts.items():
        with atomic_path(Path(paths[name])) as temporary:
            temporary.write_text(text)
