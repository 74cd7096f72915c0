"""Stage `judge`: the PEPPER-style LLM judge, and how far its scores can be trusted.

Reads a session shard and the catalog index; writes `judge/<system>/shard-<k>.parquet` (scores,
rationales, or the reason a judgement is missing). `llm_judge` judges, `judge_columns` names the criteria
and their table columns, `geval` weighs the score digits' token probabilities (G-Eval), `reliability`
(read by `stats`) measures agreement between the judge's samples and whether it separates systems.
"""
