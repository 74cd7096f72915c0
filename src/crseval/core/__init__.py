"""Shared basics every stage uses; no stage logic.

Reads and writes nothing of its own: catalog field names and how a value is written in text
(`fields`), names that become paths (`names`), canonical JSON and its hash (`canonical`), atomic
writes and logs (`io`), URL redaction (`redact`), session records on disk with their schema
(`session_records`), the config checks the schema cannot express (`config_checks`), and what a
config asks of each job: LLM use, threads, requests in flight (`experiment`). The JSON schemas of
the config and of a session record are package data in `schemas/`.
"""
