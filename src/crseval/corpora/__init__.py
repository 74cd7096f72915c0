"""Stage `import_logs`: conversation corpora read as session records, one module per corpus format.

Reads the corpus files and the catalog index; writes `sessions/<system>/shard-<k>.jsonl` (the same
records as `simulate`, without simulator ground truth) and `sessions/import_report.json` (every
repair, counted). `thesis_logs`: the thesis prototype's legacy logs.
"""
