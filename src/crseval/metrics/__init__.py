"""Stage `score`: every metric family on a shard of sessions.

Reads a session shard, the catalog index and (legacy CAS with LDA topics) the topic model; writes
`scores/<system>/shard-<k>.sessions.parquet` and `.turns.parquet`. Families: grounded TAS
(`grounded`), legacy CAS (`legacy_cas`), topic adherence (`adherence`), goal metrics (`goals`), response
statistics (`response_stats`), tool use of systems that call the catalog toolkit (`tool_use`), behind one
interface (`family`) and run together by `scorer`. Each family
declares every column it writes (label, range, direction, ground truth, thesis name) with
crseval.core.columns.Column; crseval.statistics.column_registry gathers the declarations.
"""
