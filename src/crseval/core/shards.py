"""Which sessions a shard holds: the unit of work of every per-session rule (simulate, import, score,
judge), shared by the workflow's planning and the stages, so it lives below them all."""

from __future__ import annotations


def shard_indices(count: int, shard_size: int, shard: int) -> range:
    """The session indices of shard `shard` when `count` sessions are cut into shards of `shard_size`."""
    return range(shard * shard_size, min((shard + 1) * shard_size, count))


def n_shards(count: int, shard_size: int) -> int:
    """How many shards `count` sessions make (the last may be short)."""
    return (count + shard_size - 1) // shard_size


def shard_name(shard: int, trial: int = 0) -> str:
    """The name of a shard in paths: its number, with `-t<trial>` for a repeated trial (sessions.trials), so
    that trial 0 keeps the name it has without trials and adding trials leaves every existing shard alone."""
    return str(shard) if trial == 0 else f"{shard}-t{trial}"


def parse_shard_name(name: str) -> tuple[int, int]:
    """(shard, trial) of a shard name written by `shard_name`."""
    shard, _, trial = str(name).partition("-t")
    return int(shard), int(trial or 0)
