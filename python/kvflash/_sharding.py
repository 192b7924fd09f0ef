"""The sharding of a context-parallel KV cache (docs/distributed.md), written once for every
operator's wrapper in distributed.py: the two descriptions, each rank's part of the global
positions (its local lengths, the global position of each local position, its block-table
columns), and the argument checks the sharding arithmetic needs before any collective."""
import operator
from dataclasses import dataclass
from typing import Sequence

import torch
import torch.distributed as dist

from . import _host_lengths


@dataclass(frozen=True)
class ContiguousShards:
    """Rank r holds global token positions [bounds[r], bounds[r+1]) (len(bounds) = world + 1).

    ``bounds``: a list / tuple of ints or a 1-D integer CPU tensor; kept as a tuple of ints.
    """
    bounds: Sequence[int]

    def __post_init__(self):
        b = _host_lengths(self.bounds, "bounds", "ContiguousShards")
        if b is None:
            raise ValueError("[ContiguousShards] bounds must be a list of ints or a 1-D integer "
                             "CPU tensor, got None")
        try:
            b = tuple(operator.index(x) for x in b)
        except TypeError:
            raise ValueError(f"[ContiguousShards] bounds must hold ints, got {list(b)!r}") from None
        object.__setattr__(self, "bounds", b)


@dataclass(frozen=True)
class RoundRobinBlocks:
    """Paged cache: logical block j of every sequence is on rank j % world_size."""


def _fail(op, message):
    raise ValueError(f"[{op}] {message}")


def _check_sharding(op, sharding):
    if not isinstance(sharding, (ContiguousShards, RoundRobinBlocks)):
        _fail(op, f"sharding must be ContiguousShards or RoundRobinBlocks, got {sharding!r}")


def _check_tensor(op, name, t, ranks):
    if not isinstance(t, torch.Tensor):
        _fail(op, f"{name} must be a tensor, got a {type(t).__name__}")
    if t.dim() not in ranks:
        _fail(op, f"{name} must be {' or '.join(map(str, ranks))}-D, got shape {tuple(t.shape)}")


def _host_ints(op, name, value):
    """A length list (list / tuple / 1-D integer CPU tensor, or None) as a list of ints."""
    value = _host_lengths(value, name, op)
    if value is None:
        return None
    try:
        return [operator.index(x) for x in value]
    except TypeError:
        _fail(op, f"{name} must hold ints, got {list(value)!r}")


def _tensor_ints(op, name, value):
    """SFA's length tensors (or a list / 1-D integer CPU tensor) as a list of ints, or None."""
    if isinstance(value, torch.Tensor) and value.dim() == 1 and value.device.type != "cpu":
        value = value.cpu()
    return _host_ints(op, name, value)


def _world(group):
    return dist.get_world_size(group), dist.get_rank(group)


def _check_bounds(sharding, world, rank, local_len):
    b = list(sharding.bounds)
    if len(b) != world + 1 or b[0] != 0 or any(x > y for x, y in zip(b, b[1:])):
        raise ValueError(f"ContiguousShards.bounds {b} must be {world + 1} non-decreasing "
                         f"positions starting at 0")
    if b[rank + 1] - b[rank] != local_len:
        raise ValueError(f"rank {rank} holds positions [{b[rank]}, {b[rank + 1]}) but its key "
                         f"has {local_len} positions")
    return b[rank], b[-1]


def _check_round_robin_cache(op, layout, block_table, lengths, key):
    """What RoundRobinBlocks needs of a paged PA_BSND cache (the SFA and indexer paths): the
    layout, a 2-D block table, the KV lengths (layout / lengths: (argument name, value)), and the
    single-process ops' block-size rule (src/ops/sfa/sfa_validate.cpp, src/ops/li/li_validate.cpp),
    which _rr_lengths divides by. Returns the block size."""
    if layout[1] != "PA_BSND":
        _fail(op, f"RoundRobinBlocks (a paged cache) needs {layout[0]} PA_BSND, got {layout[1]!r}")
    if block_table is None:
        _fail(op, "RoundRobinBlocks (a paged cache) needs block_table")
    if lengths[1] is None:
        _fail(op, f"RoundRobinBlocks (a paged cache) needs {lengths[0]}")
    _check_tensor(op, "block_table", block_table, (2,))
    bs = key.shape[1]
    if bs < 16 or bs > 1024 or bs % 16:
        _fail(op, f"key block_size (dim 1 = {bs}) must be a multiple of 16 in [16, 1024]")
    return bs


def _rr_positions(n_local_blocks, block_size, world, rank):
    """Global position of each local position of a round-robin paged shard."""
    p = torch.arange(n_local_blocks * block_size)
    return ((p // block_size) * world + rank) * block_size + p % block_size


def _rr_lengths(lengths, block_size, world, rank):
    """Tokens of each sequence that lie in the blocks rank owns (closed form: the indexer asks
    it for every query row's causal threshold)."""
    out = []
    for n in lengths:
        nblocks = -(-n // block_size)
        owned = max(0, (nblocks - rank + world - 1) // world)  # blocks j = rank, rank + world, ...
        # every owned block is full but the sequence's last one, when rank owns it
        short = block_size - n % block_size if n % block_size and (nblocks - 1) % world == rank \
            else 0
        out.append(owned * block_size - short)
    return out


def _local_block_table(block_table, world, rank, rows):
    """RoundRobinBlocks: the columns of this rank's blocks (logical blocks rank, rank + world,
    ...), or one unused column (never read) when it owns none."""
    local_bt = block_table[:, rank::world].contiguous()
    if local_bt.shape[1] == 0:
        local_bt = torch.zeros((rows, 1), dtype=block_table.dtype)
    return local_bt


@dataclass(frozen=True)
class _Shard:
    """This rank's part of every sequence: its first global position ``off`` and its ``n``
    positions (ContiguousShards), or its block-table columns and block size (RoundRobinBlocks)."""
    world: int
    rank: int
    off: int = 0
    n: int = 0
    block_table: torch.Tensor = None
    block_size: int = 0

    def lengths(self, global_lengths):
        """The tokens of each sequence (of the given global lengths) that lie in this shard."""
        if self.block_table is None:
            return [min(max(x - self.off, 0), self.n) for x in global_lengths]
        return _rr_lengths(global_lengths, self.block_size, self.world, self.rank)

    def positions(self):
        """The global position of each local position."""
        if self.block_table is None:
            return torch.arange(self.off, self.off + self.n)
        return _rr_positions(self.block_table.shape[1], self.block_size, self.world, self.rank)

    def to_local(self, pos):
        """(local position, whether this rank holds it) of global positions pos."""
        if self.block_table is None:
            return pos - self.off, (pos >= self.off) & (pos < self.off + self.n)
        bs = self.block_size
        j = pos // bs
        return (j // self.world) * bs + pos % bs, (j % self.world) == self.rank


def _contiguous_shard(sharding, group, n):
    """ContiguousShards: this rank's shard of n positions (checked against the bounds) and the
    global sequence length."""
    world, rank = _world(group)
    off, s_glob = _check_bounds(sharding, world, rank, n)
    return _Shard(world, rank, off=off, n=n), s_glob


def _round_robin_shard(group, block_table, block_size, rows):
    """RoundRobinBlocks: this rank's shard of a paged cache (its block-table columns; ``rows`` for
    the unused column of a rank with no blocks)."""
    world, rank = _world(group)
    return _Shard(world, rank, block_table=_local_block_table(block_table, world, rank, rows),
                  block_size=block_size)


def _slice_last(t, index):
    """t[..., index] for a mask / pse over global positions (None stays None)."""
    if t is None:
        return None
    idx = index.clamp(max=t.shape[-1] - 1)  # positions past the tensor are never read
    return t.index_select(t.dim() - 1, idx.to(t.device)).contiguous()
