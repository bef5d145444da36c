"""Functional collectives (``torch.distributed._functional_collectives``): collectives that
return a new tensor instead of writing into their input.

ember runs them eagerly: the returned tensor already holds the result, and `wait_tensor`
returns it unchanged (torch returns an ``AsyncCollectiveTensor`` that waits on first use).
``group`` may be a ProcessGroup, a list of global ranks naming an existing group (or the
world), a 1-D ``DeviceMesh``, or a ``(DeviceMesh, dim)`` pair.  The ``*_autograd`` variants
are differentiable, through ``ember.distributed.nn.functional``.
"""
import numpy as np

from .._core.tensor import wrap
from ._reduce_op import ReduceOp

__all__ = ["all_reduce", "all_reduce_coalesced", "all_gather_tensor", "all_gather_tensor_autograd",
           "reduce_scatter_tensor", "reduce_scatter_tensor_autograd", "all_to_all_single",
           "all_to_all_single_autograd", "broadcast", "wait_tensor"]

_OPS = {"sum": ReduceOp.SUM, "avg": ReduceOp.AVG, "product": ReduceOp.PRODUCT,
        "min": ReduceOp.MIN, "max": ReduceOp.MAX, "band": ReduceOp.BAND, "bor": ReduceOp.BOR,
        "bxor": ReduceOp.BXOR}


def _dist():
    from .. import distributed as dist
    return dist


def _op(reduceOp):
    if isinstance(reduceOp, str):
        try:
            return _OPS[reduceOp.lower()]
        except KeyError:
            raise ValueError(f"Unrecognized reduce op {reduceOp!r}; expected one of "
                             f"{sorted(_OPS)}") from None
    return reduceOp


def _group(group):
    """The ProcessGroup that ``group`` names."""
    dist = _dist()
    from .device_mesh import DeviceMesh
    from .distributed_c10d import _S
    from ._process_group import ProcessGroup
    if group is None or isinstance(group, ProcessGroup):
        return group
    if isinstance(group, DeviceMesh):
        if group.ndim != 1:
            raise ValueError("Only 1D mesh is supported, pass in (DeviceMesh, int) together "
                             "if mesh > 1D")
        return group.get_group()
    if isinstance(group, tuple) and len(group) == 2 and isinstance(group[0], DeviceMesh):
        return group[0].get_group(group[1])
    if isinstance(group, list) and all(isinstance(r, int) for r in group):
        for pg, ranks in _S.groups.items():
            if sorted(ranks) == sorted(group) and dist.get_rank(pg) >= 0:
                return pg
        raise ValueError(f"no process group with ranks {group} exists on this rank; create it "
                         f"with new_group({group}) first")
    raise ValueError(f"Invalid group type {type(group).__name__}: expected a ProcessGroup, a "
                     f"list of ranks, a DeviceMesh or (DeviceMesh, int)")


def _plain(t):
    # the non-autograd variants compute on the values, as torch's functional collectives
    return t.detach()


def all_reduce(self, reduceOp, group, tag=""):
    """A new tensor: the reduction (``reduceOp``: "sum", "avg", "max", ...) of ``self``
    across ``group``."""
    out = _plain(self).clone().contiguous()
    _dist().all_reduce(out, op=_op(reduceOp), group=_group(group))
    return out


def all_reduce_coalesced(self, reduceOp, group, tag=""):
    """`all_reduce` of each tensor of the list ``self``."""
    return [all_reduce(t, reduceOp, group, tag) for t in self]


def _empty(shape, like):
    return wrap(np.empty(tuple(shape), dtype=like.dtype.np))


def _gathered_to_dim(flat, n, gather_dim):
    """``flat`` (n blocks stacked along dim 0) as the blocks' concatenation along
    ``gather_dim``: a reshape and a movedim, so autograd sees through it."""
    d = gather_dim % flat.dim()
    if d == 0:
        return flat
    shape = list(flat.shape)
    blocks = flat.reshape([n, shape[0] // n] + shape[1:]).movedim(0, d)
    out = list(blocks.shape)
    return blocks.reshape(out[:d] + [out[d] * out[d + 1]] + out[d + 2:])


def all_gather_tensor(self, gather_dim, group, tag=""):
    """A new tensor: ``self`` of every rank of ``group`` concatenated along ``gather_dim``."""
    dist = _dist()
    pg = _group(group)
    n = dist.get_world_size(pg)
    src = _plain(self).contiguous()
    if src.dim() == 0:
        src = src.reshape(1)
    shape = list(src.shape)
    shape[0] *= n
    out = _empty(shape, src)
    dist.all_gather_into_tensor(out, src, group=pg)
    return _gathered_to_dim(out, n, gather_dim)


def all_gather_tensor_autograd(self, gather_dim, group, tag=""):
    """`all_gather_tensor` that autograd differentiates (gradient: reduce_scatter)."""
    from .nn.functional import _all_gather_base
    pg = _group(group)
    n = _dist().get_world_size(pg)
    src = self.contiguous()
    shape = list(src.shape)
    shape[0] *= n
    out = _all_gather_base(_empty(shape, src), src, group=pg)
    return _gathered_to_dim(out, n, gather_dim)


def _scatter_ready(self, n, scatter_dim):
    """``self`` with its n blocks along ``scatter_dim`` stacked along dim 0 instead."""
    d = scatter_dim % self.dim()
    shape = list(self.shape)
    if shape[d] % n:
        raise ValueError(f"input dimension {scatter_dim} ({shape[d]}) must be a multiple of "
                         f"the group's size {n}")
    if d != 0:
        blocks = self.reshape(shape[:d] + [n, shape[d] // n] + shape[d + 1:]).movedim(d, 0)
        self = blocks.reshape([n * shape[0]] + list(blocks.shape[2:]))
    return self.contiguous()


def reduce_scatter_tensor(self, reduceOp, scatter_dim, group, tag=""):
    """A new tensor: this rank's block (along ``scatter_dim``) of the reduction of ``self``
    across ``group``."""
    dist = _dist()
    pg = _group(group)
    n = dist.get_world_size(pg)
    src = _scatter_ready(_plain(self), n, scatter_dim)
    shape = list(src.shape)
    shape[0] //= n
    out = _empty(shape, src)
    # with the blocks moved to dim 0, this rank's block already has the input's layout
    dist.reduce_scatter_tensor(out, src, op=_op(reduceOp), group=pg)
    return out


def reduce_scatter_tensor_autograd(self, reduceOp, scatter_dim, group, tag=""):
    """`reduce_scatter_tensor` that autograd differentiates (gradient: all_gather); the sum
    only, as in torch."""
    from .nn.functional import reduce_scatter
    op = _op(reduceOp)
    if op != ReduceOp.SUM:
        raise RuntimeError("reduce_scatter_tensor_autograd: only reduceOp 'sum' has a gradient")
    pg = _group(group)
    n = _dist().get_world_size(pg)
    parts = self.chunk(n, dim=scatter_dim)
    out = _empty(parts[0].shape, self)
    return reduce_scatter(out, [p.contiguous() for p in parts], op=op, group=pg)


def all_to_all_single(self, output_split_sizes, input_split_sizes, group, tag=""):
    """A new tensor: ``self``'s dim-0 pieces exchanged between the ranks of ``group``."""
    pg = _group(group)
    src = _plain(self).contiguous()
    rows = (sum(output_split_sizes) if output_split_sizes is not None
            else src.shape[0])
    out = _empty([rows] + list(src.shape[1:]), src)
    _dist().all_to_all_single(out, src, output_split_sizes, input_split_sizes, group=pg)
    return out


def all_to_all_single_autograd(self, output_split_sizes, input_split_sizes, group, tag=""):
    """`all_to_all_single` that autograd differentiates."""
    from .nn.functional import all_to_all_single as a2a
    pg = _group(group)
    rows = sum(output_split_sizes) if output_split_sizes is not None else self.shape[0]
    out = _empty([rows] + list(self.shape[1:]), self)
    return a2a(out, self, output_split_sizes, input_split_sizes, group=pg)


def broadcast(self, src, group, tag=""):
    """A new tensor: ``self`` of global rank ``src``."""
    out = _plain(self).clone().contiguous()
    _dist().broadcast(out, src, group=_group(group))
    return out


def wait_tensor(tensor):
    """Waits for a functional collective's result: ember's are complete on return."""
    return tensor
