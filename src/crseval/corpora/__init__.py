"""Stage `import_logs`: conversation corpora read as session records, one module per corpus format.

Reads the corpus files (and the votes on them, where the format has votes) and the catalog index;
writes `sessions/<system>/shard-<k>.jsonl` (the same records as `simulate`, without simulator
ground truth, with the dialogues' human labels), `sessions/import_report.json` (every repair,
counted) and `tables/votes.parquet`. Formats (crseval.corpora.formats): `thesis_logs`, the thesis
prototype's legacy logs; `crsarena`, CRSArena-Dial; `jsonl`, one dialogue per line for a corpus of
your own. The rules every dialogue shares are in `dialogue`, those of every vote in `votes`.
"""
