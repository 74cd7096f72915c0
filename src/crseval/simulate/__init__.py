"""Stage `simulate`: one shard of sessions of one system under the shifting user.

Reads the catalog index, the user templates and the config slices of the system, the simulator
and the agent; writes `sessions/<system>/shard-<k>.jsonl` (resumable through `.progress/`).
The rule-based user (`user`), the systems under test (`agents`) and calibration systems of known
behaviour (`calibration`), catalog retrieval (`retrieval`), one session's dialogue and resumable
shards (`sessions`), and the shard wired from config (`shard`).
"""
