"""One scorecard per metric: what the project knows about it, joined.

- calibration (stats/validity.csv of an experiment with calibration systems): the adaptation check
  (does the metric order oracle > lagging > stubborn > random?) and the echo check (does it rank the
  parrot, which copies the user's words and never follows a shift, below the oracle?);
- real users (stats/human_agreement.csv): its verdict against the users' satisfied/frustrated
  verdicts, and whether it separates them better than reply length does.
A metric passes when every check that could be run passed: it orders the calibration systems as
built, is not fooled by echoing, agrees with users (or, without a declared direction, is associated
with their verdict) and beats the reply-length floor. A check that was not run is `not run`, and a
metric with none run does not pass.
"""

from __future__ import annotations

import pandas as pd

USER_PASS = {"agrees", "associated"}
# Variants of one measure: the scorecard, not taste, says which leads (the one passing more of its checks).
RIVALS = (("tas", "tas_rec"),)


def _check(validity: pd.DataFrame | None, metric: str, check: str) -> str:
    if validity is None:
        return "not run"
    rows = validity[(validity["metric"] == metric) & (validity["check"] == check)]
    if "profile" in rows and (rows["profile"] == "explicit").any():  # the user the checks were written for
        rows = rows[rows["profile"] == "explicit"]
    verdict = str(rows["verdict"].iloc[0]) if len(rows) else "not run"
    return "not run" if verdict == "not measured" else verdict


def scorecard(validity: pd.DataFrame | None, agreement: pd.DataFrame | None) -> pd.DataFrame:
    """One row per metric named in either table: the checks, and whether the metric passes them all."""
    metrics = []
    for table in (validity, agreement):
        if table is not None:
            names = table.loc[table.get("kind", pd.Series("metric", index=table.index)) == "metric", "metric"]
            metrics = list(dict.fromkeys([*metrics, *names]))
    rows = []
    for metric in metrics:
        row = {
            "metric": metric,
            "adaptation": _check(validity, metric, "adaptation"),
            "echo": _check(validity, metric, "echo"),
            "users": "not run",
            "oriented_auc": float("nan"),
            "beats_length": "not run",
        }
        if agreement is not None and metric in set(agreement["metric"]):
            found = agreement[agreement["metric"] == metric].iloc[0]
            row["users"] = found["verdict"]
            row["oriented_auc"] = found["oriented_auc"]
            if found["verdict"] != "not measured":
                row["beats_length"] = "yes" if bool(found["beats_length"]) else "no"
        checks = [row["adaptation"], row["echo"], row["users"], row["beats_length"]]
        run = [c for c in checks if c not in ("not run", "not measured")]
        passed = [
            row["adaptation"] in ("pass", "not run"),
            row["echo"] in ("pass", "not run"),
            row["users"] in USER_PASS | {"not run"},
            row["beats_length"] in ("yes", "not run"),
        ]
        row["checks_run"] = len(run)
        row["checks_passed"] = sum(ok for ok, check in zip(passed, checks) if check not in ("not run", "not measured"))
        row["passes"] = bool(run) and all(passed)
        rows.append(row)
    columns = [
        "metric",
        "adaptation",
        "echo",
        "users",
        "oriented_auc",
        "beats_length",
        "checks_run",
        "checks_passed",
        "passes",
    ]
    return pd.DataFrame(rows, columns=columns)


def markdown(card: pd.DataFrame, labels: dict[str, str]) -> str:
    """The scorecard as markdown, metrics ordered by the evidence behind them: how many checks could be run
    first, then how many passed, so that a metric that passed the one check it could run does not head one
    that passed three of four."""
    by_evidence = card.sort_values(["checks_run", "checks_passed"], ascending=False, kind="stable")
    checked = by_evidence[by_evidence["checks_run"] > 0]
    lines = ["# Metric scorecard", ""]
    if len(checked):
        ranked = ", ".join(
            f"{labels.get(r['metric'], r['metric'])} {r['checks_passed']} of {r['checks_run']}"
            + (" (every check run passed)" if r["passes"] else "")
            for r in checked.to_dict("records")
        )
        lines.append(f"**Metrics by the evidence behind them (checks passed of checks run; 4 exist): {ranked}.**")
    else:
        lines.append("**No check could be run on any metric.**")
    passing = checked[checked["passes"]]
    if len(passing):
        names = ", ".join(f"{labels.get(m, m)} ({k} of 4)" for m, k in zip(passing["metric"], passing["checks_run"]))
        lines += ["", f"Metrics that pass every check run (checks run of 4): {names}."]
    else:
        lines += ["", "No metric passes every check that was run."]
    lines += _leads(card, labels)
    lines += [
        "",
        "Adaptation and echo: the calibration systems (stats/validity.csv of a calibration experiment); users: the "
        "verdict against real users' satisfied/frustrated judgements (agrees, or associated for metrics without a "
        "declared direction, counts as passing); beats length: separates the verdicts better than reply length "
        "(bootstrap CI of the margin above 0). `not run`: that evidence was not available.",
        "",
        "| metric | adaptation | echo | users (oriented AUC) | beats length | checks passed | passes |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in by_evidence.to_dict("records"):
        auc = "" if pd.isna(row["oriented_auc"]) else f" ({row['oriented_auc']:.2f})"
        lines.append(
            f"| {labels.get(row['metric'], row['metric'])} | {row['adaptation']} | {row['echo']} | "
            f"{row['users']}{auc} | {row['beats_length']} | {row['checks_passed']} of {row['checks_run']} | "
            f"{'yes' if row['passes'] else 'no'} |"
        )
    return "\n".join(lines) + "\n"


def _leads(card: pd.DataFrame, labels: dict[str, str]) -> list[str]:
    """For each pair of rival variants in the card, which passes more of its checks (a tie leads neither)."""
    lines = []
    by_metric = card.set_index("metric")
    for first, second in RIVALS:
        if first not in by_metric.index or second not in by_metric.index:
            continue
        a, b = by_metric.loc[first], by_metric.loc[second]
        name_a, name_b = labels.get(first, first), labels.get(second, second)
        counts = f"{a['checks_passed']} of {a['checks_run']} checks against {b['checks_passed']} of {b['checks_run']}"
        if a["checks_passed"] == b["checks_passed"]:
            lines.append(f"\n{name_a} and {name_b} pass as many checks ({counts}): neither leads.")
        else:
            leader, other = (name_a, name_b) if a["checks_passed"] > b["checks_passed"] else (name_b, name_a)
            lines.append(f"\n{leader} leads {other}: {name_a} passes {counts} for {name_b}.")
    return lines
