"""Stage `simulate`: one shard of sessions of one system under the shifting user.

Reads the catalog index, the user templates, a learned voice and the config slices of the system, the
simulator and the agent; writes `sessions/<system>/shard-<k>.jsonl` (resumable through `.progress/`).
Two wings that never import each other: the simulated user (`user`: what it wants and when that
shifts, how it words a turn, its profiles and learned voice) and the systems under test (`systems`:
the agent kinds, their registry, calibration systems, chat and tool-calling models, recommenders of
one's own). Between them: one session's dialogue and resumable shards (`sessions`) and the shard wired
from config (`shard`). Candidate retrieval lives in `crseval.catalog.retrieval`.
"""
