"""Stages `aggregate`, `stats`, `validity` and `plots`: from per-shard tables to comparisons and figures.

Reads the score and judge shards; writes `tables/` (`aggregate`), `stats/` (omnibus, pairwise and
paired tests in `stats`, effect sizes in `effects`, sample-size planning in `power`, the
calibration systems' validity table in `validity`) and `figures/` (`figures`).
"""
