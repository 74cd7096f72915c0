"""Stages `aggregate`, `stats` and `reliability_trials`: from per-shard tables to the comparison of the systems.

Reads the score and judge shards; writes `tables/` (`aggregate`: sessions, turns and each system's means
with their intervals) and `stats/` (omnibus, post-hoc, pairwise and paired tests in `system_tests` under
the analysis plan of `plan`, exact tests for small samples, effect sizes, sample-size planning, judge
correlations, repeated trials and whether conclusions change with the user profile; `comparison` runs
the stage as one function). `column_registry` says what every table column is, for every later stage.
"""
