"""Which sessions a shard holds: the unit of work of every per-session rule (simulate, import, score,
judge), shared by the workflow's planning and the stages, so it lives below them all."""

from __future__ import annotations


def shard_indices(count: int, shard_size: int, shard: int) -> range:
    """The session indices of shard `shard` when `count` sessions are cut into shards of `shard_size`."""
    return range(shard * shard_size, min((shard + 1) * shard_size, count))


def n_shards(count: int, shard_size: int) -> int:
    """How many shards `count` sessions make (the last may be short)."""
    return (count + shard_size - 1) // shard_size
