"""The `stats` stage as one function: every comparison of the systems an experiment's tables allow.

`compare_systems` runs, on sessions.parquet and under the config's analysis plan (crseval.statistics.analysis_plan),
the omnibus tests, the post-hoc comparisons of the recommended omnibus test, the pairwise and the
paired tests, the judge correlations (pooled and within system), sample-size planning, (when the
judge ran) the judge's reliability and (when the same systems met several user profiles) whether the
conclusions change with the user (crseval.statistics.user_robustness); `write` puts each table and
summary at its output path, atomically. The rule script only connects paths.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from crseval.core.io import atomic_path
from crseval.judge import reliability
from crseval.statistics import column_registry, correlation, power, summary, system_tests, trials, user_robustness
from crseval.statistics.analysis_plan import AnalysisPlan

TABLES = ("anova", "posthoc", "pairwise", "paired", "correlations", "power_table")


@dataclass
class SystemComparison:
    """The systems of one run compared on every metric (the `stats` rule); runs against a baseline are
    crseval.runs.compare.BaselineComparison."""

    # TABLES, `reliability` when the judge ran, `robustness` and `robustness_orders` under several user profiles
    tables: dict[str, pd.DataFrame]
    # summary, power, `reliability_summary` when the judge ran, `robustness_summary` under several user profiles
    texts: dict[str, str]
    compared: list[str]  # the metrics and judge scores compared, in order
    not_computed: list[str] = field(default_factory=list)  # configured metrics absent from the sessions
    paired_not_run: str = ""  # why the paired tests did not run (sessions do not pair), if they did not
    left_out: list[str] = field(default_factory=list)  # "metric: system: reason" for every system left out


def compare_systems(
    sessions: pd.DataFrame,
    settings: dict,
    judged: bool,
    own_model: dict[str, list[str]] | None = None,
    profiles: dict[str, dict[str, str]] | None = None,
    chance: pd.DataFrame | None = None,
) -> SystemComparison:
    """Every comparison of the `stats` config section (`settings`) on the sessions table; `own_model` maps a
    judge model to the systems under test that run on it (reliability.judged_by_own_model), for a warning;
    `profiles` holds the systems matched across user profiles ({label: {profile: system}},
    user_robustness.matched_systems): with two of them or more, under two profiles or more, the
    comparison of the conclusions under each profile is added.

    With repeated trials (a `trial` column, sessions.trials), the user is the unit: every test, interval
    and plan runs on each user's mean over its trials (crseval.statistics.trials.per_user), paired tests pair
    users, and the summary says so; `chance` (trials.chance_table, from the reliability_trials rule) lets
    the power plan weigh more users against more trials."""
    plan = AnalysisPlan.from_settings(settings)
    trials_sentence = ""
    if trials.has_trials(sessions):
        trials_sentence = trials.nesting_sentence(sessions)
        sessions = trials.per_user(sessions)
    judges = [c for c in column_registry.JUDGE_SCORES if c in sessions] if judged else []
    metrics = [m for m in settings["metrics"] if m in sessions]
    not_computed = sorted(set(settings["metrics"]) - set(metrics))
    compared = metrics + judges
    target = settings["power"]
    tables, pairs, pairing_reason = _system_tests(sessions, metrics, judges, plan, target)
    sentence = ""
    if profiles and user_robustness.applies(profiles):
        sentence = _add_robustness(tables, sessions, profiles, compared, plan)
    texts = {
        "summary": summary.markdown_summary(
            tables["anova"],
            tables["posthoc"],
            tables["pairwise"],
            tables["paired"],
            tables["correlations"],
            pairing_reason,
            plan,
            robustness_sentence=sentence,
            trials_sentence=trials_sentence,
        ),
        "power": power.power_markdown(tables["power_table"], plan.alpha, target["power"], pairing_reason),
    }
    if chance is not None and len(chance):
        _add_trials_plan(tables, texts, chance, target, plan)
    if "robustness" in tables:
        ignored = sorted(set(sessions["system"]) - {s for group in profiles.values() for s in group.values()})
        texts["robustness_summary"] = user_robustness.robustness_markdown(
            tables["robustness"], tables["robustness_orders"], profiles, ignored, plan.alpha, plan.resamples
        )
    if judged:
        tables["reliability"] = reliability.reliability_table(sessions, plan.alpha, plan.resamples, plan.seed)
        texts["reliability_summary"] = reliability.reliability_markdown(tables["reliability"], plan.alpha, own_model)
    left_out = [f"{r['metric']}: {r['left_out']}" for r in tables["anova"].to_dict("records") if r.get("left_out")]
    return SystemComparison(tables, texts, compared, not_computed, "" if pairs else pairing_reason, left_out)


def _system_tests(
    sessions: pd.DataFrame, metrics: list[str], judges: list[str], plan: AnalysisPlan, target: dict
) -> tuple[dict[str, pd.DataFrame], bool, str]:
    """The TABLES: the omnibus, post-hoc, pairwise and (where sessions pair) paired tests of the metrics and
    judge scores, the judge correlations and the power plan; whether sessions pair, and why not."""
    compared = metrics + judges
    anova = system_tests.omnibus_table(sessions, compared, plan)
    pairwise = system_tests.pairwise_table(sessions, compared, plan)
    posthoc = system_tests.posthoc_table(sessions, anova, plan, pairwise)
    pairs, pairing_reason = system_tests.pairing(sessions)
    if pairs:
        paired = system_tests.paired_table(sessions, compared, plan)
    else:
        paired = pd.DataFrame(columns=["metric", "system_a", "system_b", "pairs", "note"])
    correlations = plan.adjust(
        correlation.correlation_table(sessions, metrics, judges, resamples=plan.resamples, seed=plan.seed),
        ["p", "p_within"],
    )
    planning = power.power_table(sessions, compared, plan.alpha, target["power"], target["differences"], pairs)
    tables = {
        "anova": anova,
        "posthoc": posthoc,
        "pairwise": pairwise,
        "paired": paired,
        "correlations": correlations,
        "power_table": planning,
    }
    return tables, pairs, pairing_reason


def _add_robustness(
    tables: dict[str, pd.DataFrame], sessions: pd.DataFrame, profiles: dict, compared: list[str], plan: AnalysisPlan
) -> str:
    """The comparison of the conclusions under each user profile, into `tables`; the summary's sentence on it."""
    # the tests' verdicts on pairs: the paired table where sessions pair, else the pairwise one
    verdicts = tables["paired"] if len(tables["paired"]) else tables["pairwise"]
    tables["robustness"], tables["robustness_orders"] = user_robustness.robustness_table(
        sessions, profiles, compared, plan.resamples, plan.seed, plan.alpha, verdicts
    )
    return user_robustness.robustness_sentence(tables["robustness"], tables["robustness_orders"])


def _add_trials_plan(
    tables: dict[str, pd.DataFrame], texts: dict[str, str], chance: pd.DataFrame, target: dict, plan: AnalysisPlan
) -> None:
    """Users against trials per user for the next experiment, into `tables` and the power text."""
    ks = sorted({1, 2, 4, 8, int(chance["trials"].max())})
    tables["trials_plan"] = trials.users_for_trials(chance, target["differences"], plan.alpha, target["power"], ks)
    texts["power"] += "\n" + (
        trials.plan_markdown(tables["trials_plan"], plan.alpha, target["power"])
        if len(tables["trials_plan"])
        else "## Users x trials for the next experiment\n\nState a difference per metric in "
        "`stats.power.differences` to plan users against trials per user (docs/statistics.md).\n"
    )


def write(comparison: SystemComparison, paths) -> None:
    """Each table (CSV) and text at `paths[name]` (a mapping or Snakemake's named output)."""
    for name, frame in comparison.tables.items():
        with atomic_path(Path(paths[name])) as temporary:
            frame.to_csv(temporary, index=False)
    for name, text in comparison.texts.items():
        with atomic_path(Path(paths[name])) as temporary:
            temporary.write_text(text)
