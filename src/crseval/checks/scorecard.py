"""One scorecard per metric: the evidence the project has about it, in three parts, and whether that
evidence lets it lead the findings page.

- (a) **calibration** (stats/validity.csv of this experiment, or of the calibration experiment it names):
  does the metric order the calibration systems as they were built, under each user profile? A check a
  profile cannot show (a column that pools a session's foci, under a user whose shifts stay within one
  field: "cannot see a lag under this user"; "not measured") neither passes nor fails;
- (b) **stability** (stats/user_robustness.csv, with the same systems under several user profiles): do its
  conclusions (the best system, the pairs the tests tell apart) hold across the profiles?
- (c) **people**: its agreement with people's verdicts on several corpora (stats/people_agreement.csv,
  crseval.checks.people_agreement): shown when, pooled over the corpora, it agrees with people and is ahead
  of reply length (Holm-adjusted over the metrics), and on no corpus is its margin over reply length or over
  the system-identity baseline below zero with its whole interval. Where the experiment itself imports a
  corpus with verdicts (stats/human_agreement.csv) and names no corpora, that table stands in: agrees, and
  beats reply length.
A metric *leads* when it has a declared direction (a metric without one only describes: it is highest or
lowest, never better) and passes every part named in `human_agreement.lead`. Every metric that does not
lead gets the reason, in words, that the findings page prints beside it.
"""

from __future__ import annotations

import math

import pandas as pd

PARTS = ("calibration", "stability", "people")
CALIBRATION_CHECKS = ("adaptation", "echo", "prompt_echo", "elicitation")
CANNOT_SEE = "cannot see"  # the start of a validity verdict a profile cannot show (crseval.checks.validity)
POOLED = "pooled"
COLUMNS = [
    "metric",
    "label",
    "higher_is_better",
    "calibration",
    "calibration_detail",
    "stability",
    "stability_detail",
    "people",
    "people_detail",
    "people_c",
    "beyond_length",
    "beyond_length_low",
    "beyond_length_high",
    "leads",
    "reason",
]


def _calibration(validity: pd.DataFrame | None, metric: str) -> tuple[str, str]:
    """(pass | fail | not run, what each profile showed)."""
    if validity is None or not len(validity):
        return "not run", "no calibration systems were run"
    rows = validity[(validity["metric"] == metric) & validity["check"].isin(CALIBRATION_CHECKS)]
    verdicts = rows["verdict"].astype(str)
    judged = rows[verdicts.isin(["pass", "fail"])]
    if not len(judged):
        unseen = rows[verdicts.str.startswith(CANNOT_SEE)]
        if len(unseen):
            return "not run", "; ".join(_described(unseen))
        return "not run", "no calibration order is declared for it" if not len(rows) else "not measured"
    failed = judged[judged["verdict"] == "fail"]
    shown = _described(rows[verdicts.isin(["pass", "fail"]) | verdicts.str.startswith(CANNOT_SEE)])
    return ("fail" if len(failed) else "pass"), "; ".join(shown)


def _described(rows: pd.DataFrame) -> list[str]:
    """'<check> <verdict> (<profile>)' for each row."""
    has_profile = "profile" in rows
    return [
        f"{row['check']} {row['verdict']}"
        + (f" ({row['profile']})" if has_profile and pd.notna(row["profile"]) else "")
        for row in rows.to_dict("records")
    ]


def _stability(robustness: pd.DataFrame | None, metric: str) -> tuple[str, str]:
    """(holds | changes | not run, between which profiles it changes)."""
    if robustness is None or not len(robustness):
        return "not run", "the systems were not run under several user profiles"
    rows = robustness[robustness["metric"] == metric]
    if not len(rows):
        return "not run", "not compared across user profiles"
    changes = rows[rows["conclusion_changes"].astype(str).str.lower().isin(["true", "1", "1.0"])]
    profiles = sorted({p for pair in rows[["profile_a", "profile_b"]].itertuples(index=False) for p in pair})
    if not len(changes):
        return "holds", f"the conclusion holds under {', '.join(profiles)}"
    between = "; ".join(f"{a} and {b}" for a, b in changes[["profile_a", "profile_b"]].itertuples(index=False))
    return "changes", f"the conclusion changes between {between}"


def _fmt(value: float, signed: bool = False) -> str:
    return "–" if value is None or pd.isna(value) else (f"{value:+.2f}" if signed else f"{value:.2f}")


def _people(people: pd.DataFrame | None, users: pd.DataFrame | None, metric: str, alpha: float) -> dict:
    """The people part: shown | not shown | not run, in words, with the pooled C and margin over length."""
    empty = {"people_c": math.nan, "beyond_length": math.nan, "beyond_length_low": math.nan}
    empty["beyond_length_high"] = math.nan
    if people is not None and len(people):
        return _people_from_corpora(people, metric, alpha) | {}
    if users is not None and len(users) and metric in set(users["metric"]):
        row = users[users["metric"] == metric].iloc[0]
        verdict = str(row["verdict"])
        beats = bool(row.get("beats_length")) if verdict != "not measured" else False
        margin = {
            "people_c": row.get("oriented_auc", math.nan),
            "beyond_length": row.get("beyond_length", math.nan),
            "beyond_length_low": row.get("beyond_length_low", math.nan),
            "beyond_length_high": row.get("beyond_length_high", math.nan),
        }
        if verdict == "agrees" and beats:
            return {
                "people": "shown",
                "people_detail": "agrees with this corpus's users and beats reply length",
            } | margin
        said = "no value in these dialogues" if verdict == "not measured" else f"{verdict} with users"
        if verdict == "agrees":
            said += ", but no better than reply length"
        return {"people": "not shown", "people_detail": said} | margin
    return {"people": "not run", "people_detail": "no corpus of people's verdicts was named"} | empty


def _people_from_corpora(people: pd.DataFrame, metric: str, alpha: float) -> dict:
    rows = people[people["metric"] == metric]
    pooled = rows[rows["corpus"] == POOLED]
    if not len(pooled):
        return {
            "people": "not shown",
            "people_detail": "no value in the corpora's dialogues",
            "people_c": math.nan,
            "beyond_length": math.nan,
            "beyond_length_low": math.nan,
            "beyond_length_high": math.nan,
        }
    row = pooled.iloc[0]
    found = {
        "people_c": row["value"],
        "beyond_length": row["beyond_length"],
        "beyond_length_low": row["beyond_length_low"],
        "beyond_length_high": row["beyond_length_high"],
    }
    margin = f"C {_fmt(row['value'])}, {_fmt(row['beyond_length'], True)} [{_fmt(row['beyond_length_low'], True)}, "
    margin += f"{_fmt(row['beyond_length_high'], True)}] beyond reply length"
    if row["verdict"] == "not measured":
        return {"people": "not shown", "people_detail": "not measured on the corpora"} | found
    if row["verdict"] not in ("agrees", "associated"):
        return {"people": "not shown", "people_detail": f"{row['verdict']} with people pooled ({margin})"} | found
    holm = row.get("p_beyond_length_holm", math.nan)
    if not (pd.notna(holm) and holm < alpha):
        said = f"not shown ahead of reply length pooled ({margin}; Holm p {_fmt(holm)})"
        return {"people": "not shown", "people_detail": said} | found
    corpora = rows[(rows["corpus"] != POOLED) & rows.get("in_pool", pd.Series(True, index=rows.index)).astype(bool)]
    behind = [
        f"behind {baseline} on {corpus['corpus']} ({_fmt(corpus[column], True)} "
        f"[{_fmt(corpus[column + '_low'], True)}, {_fmt(corpus[column + '_high'], True)}])"
        for corpus in corpora.to_dict("records")
        for column, baseline in (("beyond_length", "reply length"), ("beyond_system", "system identity"))
        if pd.notna(corpus.get(f"{column}_high")) and corpus[f"{column}_high"] < 0
    ]
    if behind:
        return {"people": "not shown", "people_detail": "; ".join(behind)} | found
    said = f"{row['verdict']} with people and ahead of reply length pooled ({margin}; Holm p {_fmt(holm)})"
    return {"people": "shown", "people_detail": said} | found


def scorecard(
    metrics: dict[str, tuple[str, bool | None]],
    *,
    validity: pd.DataFrame | None = None,
    robustness: pd.DataFrame | None = None,
    people: pd.DataFrame | None = None,
    users: pd.DataFrame | None = None,
    lead: tuple[str, ...] | list[str] = ("people",),
    alpha: float = 0.05,
) -> pd.DataFrame:
    """One row per metric of `metrics` (column -> (label, declared direction)): the three parts, whether it
    leads under `lead`, and why not."""
    unknown = set(lead) - set(PARTS)
    if unknown:
        raise ValueError(f"human_agreement.lead: {sorted(unknown)} not among {PARTS}")
    rows = []
    for metric, (label, direction) in metrics.items():
        row = {"metric": metric, "label": label, "higher_is_better": direction}
        row["calibration"], row["calibration_detail"] = _calibration(validity, metric)
        row["stability"], row["stability_detail"] = _stability(robustness, metric)
        row |= _people(people, users, metric, alpha)
        passed = {"calibration": row["calibration"] == "pass", "stability": row["stability"] == "holds"}
        passed["people"] = row["people"] == "shown"
        missing = [part for part in lead if not passed[part]]
        if direction is None:
            row["leads"], row["reason"] = False, "its direction is undeclared: it describes, it does not rank"
        elif missing:
            row["leads"] = False
            row["reason"] = "; ".join(f"{part}: {row[f'{part}_detail']}" for part in missing)
        else:
            row["leads"], row["reason"] = True, ""
        rows.append(row)
    return pd.DataFrame(rows, columns=COLUMNS)


def markdown(card: pd.DataFrame, lead: tuple[str, ...] | list[str]) -> str:
    """stats/scorecard.md: the metrics that may lead first, then every metric's three parts."""
    needed = " and ".join(lead) if lead else "nothing (every metric with a direction may lead)"
    leading = card[card["leads"].astype(bool)]
    lines = [
        "# Metric scorecard",
        "",
        f"A metric leads the findings page when it has a declared direction and passes {needed} "
        "(`human_agreement.lead`). **Calibration**: it orders the calibration systems as built under every user "
        "profile that can show it. **Stability**: its conclusions hold across the user profiles. **People**: it "
        "agrees with people's verdicts and is ahead of reply length over the pooled corpora (Holm-adjusted), and "
        "behind neither reply length nor system identity on any corpus (stats/people_agreement.md).",
        "",
    ]
    if len(leading):
        lines.append("**Metrics that may lead:** " + ", ".join(leading["label"].astype(str)) + ".")
    else:
        lines.append(f"**No metric has the evidence to lead** ({needed}).")
    lines += [
        "",
        "| metric | calibration | stability | people | C pooled | beyond length [95% CI] | leads | why not |",
        "|---|---|---|---|---|---|---|---|",
    ]
    order = card.assign(_lead=~card["leads"].astype(bool))
    order = order.sort_values(["_lead", "beyond_length"], ascending=[True, False])
    for row in order.to_dict("records"):
        interval = f"{_fmt(row['beyond_length'], True)} [{_fmt(row['beyond_length_low'], True)}, "
        interval += f"{_fmt(row['beyond_length_high'], True)}]"
        lines.append(
            f"| {row['label']} | {row['calibration']} | {row['stability']} | {row['people']} | "
            f"{_fmt(row['people_c'])} | {interval} | {'yes' if row['leads'] else 'no'} | {row['reason']} |"
        )
    return "\n".join(lines) + "\n"
