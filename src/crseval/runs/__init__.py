"""Comparing runs: what two or more finished experiments share and how their numbers differ.

Reads results folders (their provenance.json with its per-stage digests, tables/sessions.parquet,
tables/model_metrics.csv, the trials' pass^k) and writes comparisons outside them: whether runs are
comparable stage by stage (`comparability`), the paired differences of each system's metrics over the
same simulated users with intervals, exact tests and regression flags (`paired`), the entry point of
`crseval compare` (`compare`), its page, tables and summary (`compare_page`) and the board of many runs
grouped by comparability class (`board`). Nothing here runs a stage of the workflow.
"""
