"""Stage `simulate`: one shard of sessions of one system under the shifting user.

Reads the catalog index, the user templates and the config slices of the system, the simulator
and the agent; writes `sessions/<system>/shard-<k>.jsonl` (resumable through `.progress/`).
The simulated user: the rule-based user (`user`), its behaviour profiles (`profiles`) and the voice
learned from people (`voice`). The systems under test: the agent kinds and their registry (`agent_kind`,
`kinds`), the built-in agents (`agents`), calibration systems of known behaviour (`calibration`), a chat
model (`chat`), a tool-calling model (`tools_agent`), and recommenders of one's own (`external`,
`http_system`, `python_system`). One session's dialogue and resumable shards (`sessions`), and the
shard wired from config (`shard`). Candidate retrieval lives in `crseval.catalog.retrieval`.
"""
