"""Statistics: the comparison of systems on the experiment's tables (tests, effects, power, judge reliability,
and whether the conclusions change with the simulated user)."""

from crseval.statistics import user_robustness

# The same systems under several user profiles: {label: {profile: system name}} for the config's entries
# identical except for `name` and `profile` (crseval.statistics.user_robustness.matched_systems). With two such
# systems or more, under two profiles or more, `stats` also says whether the conclusions change with the user.
USER_PROFILE_GROUPS = (
    user_robustness.matched_systems(config["systems"], EXPERIMENT.profile_of)
    if len(EXPERIMENT.profiles_used) >= 2
    else {}
)
ROBUSTNESS = user_robustness.applies(USER_PROFILE_GROUPS)


if TRIALS > 1:

    rule reliability_trials:
        """Each simulated user met each system several times (sessions.trials): pass^k and pass@k of session
        success, and the share of each metric's variance between trials of the same user
        (crseval.statistics.trials)."""
        input:
            sessions=rules.aggregate.output.sessions,
        output:
            table=f"{RESULTS}/stats/reliability_trials.csv",
            chance=f"{RESULTS}/stats/reliability_trials_chance.csv",
            summary=report(
                f"{RESULTS}/stats/reliability_trials.md",
                caption="../report/reliability_trials.rst",
                category="Statistical tests",
            ),
            png=report(f"{RESULTS}/figures/pass_k.png", caption="../report/pass_k.rst", category="Statistical tests"),
            svg=f"{RESULTS}/figures/pass_k.svg",
        log:
            f"{RESULTS}/logs/reliability_trials.log",
        conda:
            ENV
        params:
            stats=config_slice("stats"),
            judged=JUDGE["enabled"],
            # the library code the script runs: an edit to it re-runs this rule (crseval.stage_digests)
            code=library_code("reliability_trials.py"),
        script:
            "../scripts/reliability_trials.py"


rule stats:
    input:
        sessions=rules.aggregate.output.sessions,
        # with repeated trials, how much of each metric is chance: the power plan weighs users against trials
        chance=rules.reliability_trials.output.chance if TRIALS > 1 else [],
    output:
        **(
            {
                "reliability": f"{RESULTS}/stats/judge_reliability.csv",
                "reliability_summary": report(
                    f"{RESULTS}/stats/judge_reliability.md",
                    caption="../report/judge_reliability.rst",
                    category="Judge",
                ),
            }
            if JUDGE["enabled"]
            else {}
        ),
        **(
            {
                "robustness": f"{RESULTS}/stats/user_robustness.csv",
                "robustness_orders": f"{RESULTS}/stats/user_robustness_orders.csv",
                "robustness_summary": report(
                    f"{RESULTS}/stats/user_robustness.md",
                    caption="../report/user_robustness.rst",
                    category="Statistical tests",
                ),
            }
            if ROBUSTNESS
            else {}
        ),
        # with repeated trials: users needed per system at each number of trials
        **({"trials_plan": f"{RESULTS}/stats/power_trials.csv"} if TRIALS > 1 else {}),
        anova=f"{RESULTS}/stats/anova.csv",
        posthoc=f"{RESULTS}/stats/posthoc.csv",
        pairwise=f"{RESULTS}/stats/pairwise.csv",
        paired=f"{RESULTS}/stats/paired.csv",
        correlations=f"{RESULTS}/stats/correlations.csv",
        power_table=f"{RESULTS}/stats/power.csv",
        summary=report(
            f"{RESULTS}/stats/summary.md", caption="../report/stats_summary.rst", category="Statistical tests"
        ),
        power=report(f"{RESULTS}/stats/power.md", caption="../report/power.rst", category="Statistical tests"),
    log:
        f"{RESULTS}/logs/stats.log",
    conda:
        ENV
    params:
        stats=config_slice("stats"),
        judged=JUDGE["enabled"],
        # the models only (for the warning when a judge is also a system under test), not the judges' options
        judge_backends=canonical(
            [JUDGE["backend"], *(entry["backend"] for entry in JUDGE.get("panel", []))] if JUDGE["enabled"] else []
        ),
        system_backends=canonical([{"name": s["name"], "backend": s.get("backend")} for s in config["systems"]]),
        # each matched system's name under each user profile it met ({label: {profile: system}}), empty when
        # the conclusions are not compared across users
        user_profiles=canonical(USER_PROFILE_GROUPS if ROBUSTNESS else {}),
        # the library code the script runs: an edit to it re-runs this rule (crseval.stage_digests)
        code=library_code("stats.py"),
    script:
        "../scripts/stats.py"
