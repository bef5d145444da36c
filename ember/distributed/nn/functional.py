"""Differentiable collectives (``torch.distributed.nn.functional``).

Each function runs the collective of ``ember.distributed`` on a copy of its input (the
inputs are left alone) and returns new tensors that autograd can differentiate through.  A
collective's gradient is the adjoint collective: broadcast <-> reduce to the source, gather
<-> scatter, all_gather <-> reduce_scatter, all_to_all <-> all_to_all in the other
direction, and all_reduce's gradient is the all_reduce of the gradients.  The backward
collectives are themselves these functions, so higher derivatives work too.  As with any
collective, every rank of the group must run the same backward.

``src``/``dst`` are global ranks (as in ``ember.distributed``); ``group`` None is the
default group.
"""
import numpy as np

from ..._core.tensor import wrap
from ...autograd.function import Function
from .._reduce_op import ReduceOp

__all__ = ["broadcast", "gather", "scatter", "reduce", "reduce_scatter", "all_gather",
           "_all_gather_base", "all_to_all", "all_to_all_single", "all_reduce"]


def _dist():
    from ... import distributed as dist
    return dist


# fresh buffers for the collectives to write into (no autograd history of their own)
def _zeros_like(t):
    return wrap(np.zeros_like(t._data))


def _empty_like(t):
    return wrap(np.empty_like(t._data))


def _empty(shape, like):
    return wrap(np.empty(tuple(shape), dtype=like.dtype.np))


def _is_me(rank, group):
    # src/dst are global ranks: compare with this process's global rank
    dist = _dist()
    dist.get_rank(group)  # raises when the default group does not exist
    return dist.get_rank() == rank


def broadcast(tensor, src, group=None):
    """Broadcasts ``tensor`` from rank ``src``: every rank gets a copy of src's tensor.

    Gradient: the sum of every rank's output gradient, on ``src`` (zeros elsewhere)."""
    return _Broadcast.apply(src, group, tensor)


def gather(tensor, dst=0, group=None):
    """Gathers ``tensor`` from every rank on rank ``dst``: a tuple of one tensor per rank
    (zeros on the other ranks).

    Gradient: rank i's input gets dst's output gradient i (a scatter)."""
    return _Gather.apply(dst, group, tensor)


def scatter(tensors, src=0, group=None):
    """Scatters ``tensors`` (one per rank, all of one shape; only ``src``'s are read):
    rank i gets a copy of ``tensors[i]``.

    Gradient: ``src``'s ``tensors[i]`` gets rank i's output gradient (a gather)."""
    return _Scatter.apply(src, group, *tensors)


def reduce(tensor, dst, op=ReduceOp.SUM, group=None):
    """Reduces ``tensor`` across ranks onto rank ``dst``; the other ranks get a copy of
    their input back.

    Gradient (for SUM): every rank's input gets ``dst``'s output gradient (a broadcast)."""
    return _Reduce.apply(dst, op, group, tensor)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None):
    """Reduces ``input_list`` (one tensor per rank) across ranks and scatters it: rank i's
    result is the reduction of every rank's ``input_list[i]``, written into ``output`` and
    returned.

    Gradient (for SUM): every rank's ``input_list[i]`` gets rank i's output gradient (an
    all_gather)."""
    return _ReduceScatter.apply(op, group, output, *input_list)


def all_gather(tensor, group=None):
    """Gathers ``tensor`` from every rank: a tuple of one tensor per rank, on every rank.

    Gradient: the sum over ranks of each rank's output gradient for this rank's slot (a
    reduce_scatter)."""
    return _AllGather.apply(group, tensor)


def _all_gather_base(output_tensor, input_tensor, group=None):
    """Gathers ``input_tensor`` from every rank into ``output_tensor`` (concatenated along
    dim 0) and returns it.

    Gradient: the summed output gradients' block of this rank (reduce_scatter_tensor)."""
    return _AllGatherBase.apply(output_tensor, input_tensor, group)


def all_to_all(output_tensor_list, input_tensor_list, group=None):
    """Rank j's ``input_tensor_list[i]`` lands in rank i's output slot j; returns the
    outputs as a tuple (also written into ``output_tensor_list``).

    Gradient: the all_to_all of the output gradients in the other direction."""
    return _AllToAll.apply(group, output_tensor_list, *input_tensor_list)


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None,
                      group=None):
    """Splits ``input`` along dim 0 (by ``input_split_sizes``, default evenly), sends
    piece i to rank i and concatenates what arrives into ``output``, which is returned.

    Gradient: the all_to_all_single of the output gradient with the split sizes swapped."""
    return _AllToAllSingle.apply(group, output, output_split_sizes, input_split_sizes, input)


def all_reduce(tensor, op=ReduceOp.SUM, group=None):
    """Reduces ``tensor`` across ranks; every rank gets the result as a new tensor.

    Gradient: the all_reduce (with the same op) of the output gradients; for SUM this is
    the gradient of the sum, the sum of every rank's output gradient."""
    return _AllReduce.apply(op, group, tensor)


# ---- the autograd Functions ---------------------------------------------------------------
class _Broadcast(Function):
    @staticmethod
    def forward(ctx, src, group, tensor):
        ctx.src, ctx.group = src, group
        out = tensor.clone()
        _dist().broadcast(out, src, group=group)
        return out

    @staticmethod
    def backward(ctx, grad_output):
        gx = _Reduce.apply(ctx.src, ReduceOp.SUM, ctx.group, grad_output)
        if not _is_me(ctx.src, ctx.group):
            gx = _zeros_like(gx)
        return None, None, gx


class _Gather(Function):
    @staticmethod
    def forward(ctx, dst, group, tensor):
        ctx.dst, ctx.group = dst, group
        dist = _dist()
        outs = [_zeros_like(tensor) for _ in range(dist.get_world_size(group))]
        tensor = tensor.contiguous()
        if _is_me(dst, group):
            dist.gather(tensor, outs, dst, group=group)
        else:
            dist.gather(tensor, None, dst, group=group)
        return tuple(outs)

    @staticmethod
    def backward(ctx, *grad_outputs):
        return (None, None, _Scatter.apply(ctx.dst, ctx.group, *grad_outputs))


class _Scatter(Function):
    @staticmethod
    def forward(ctx, src, group, *tensors):
        ctx.src, ctx.group = src, group
        dist = _dist()
        if len(tensors) != dist.get_world_size(group):
            raise ValueError(f"scatter: expected one tensor per rank "
                             f"({dist.get_world_size(group)}), got {len(tensors)}")
        if any(t.shape != tensors[0].shape for t in tensors):
            raise ValueError("scatter: the tensors to scatter must all have one shape, got "
                             f"{[tuple(t.shape) for t in tensors]}")
        out = _zeros_like(tensors[0])
        if _is_me(src, group):
            dist.scatter(out, [t.contiguous() for t in tensors], src, group=group)
        else:
            dist.scatter(out, None, src, group=group)
        return out

    @staticmethod
    def backward(ctx, grad_output):
        return (None, None) + _Gather.apply(ctx.src, ctx.group, grad_output)


class _Reduce(Function):
    @staticmethod
    def forward(ctx, dst, op, group, tensor):
        ctx.dst, ctx.group = dst, group
        out = tensor.clone()
        _dist().reduce(out, dst, op=op, group=group)
        return out

    @staticmethod
    def backward(ctx, grad_output):
        return None, None, None, _Broadcast.apply(ctx.dst, ctx.group, grad_output)


class _ReduceScatter(Function):
    @staticmethod
    def forward(ctx, op, group, output, *input_list):
        ctx.group = group
        _dist().reduce_scatter(output, [t.contiguous() for t in input_list], op=op,
                               group=group)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        return (None, None, None) + _AllGather.apply(ctx.group, grad_output)


class _AllGather(Function):
    @staticmethod
    def forward(ctx, group, tensor):
        ctx.group = group
        dist = _dist()
        tensor = tensor.contiguous()
        outs = [_empty_like(tensor) for _ in range(dist.get_world_size(group))]
        dist.all_gather(outs, tensor, group=group)
        return tuple(outs)

    @staticmethod
    def backward(ctx, *grad_outputs):
        me = _dist().get_rank(ctx.group)
        gx = _empty_like(grad_outputs[me])
        return None, _ReduceScatter.apply(ReduceOp.SUM, ctx.group, gx, *grad_outputs)


class _AllGatherBase(Function):
    @staticmethod
    def forward(ctx, output_tensor, input_tensor, group):
        ctx.group = group
        _dist().all_gather_into_tensor(output_tensor, input_tensor.contiguous(), group=group)
        return output_tensor

    @staticmethod
    def backward(ctx, grad_output):
        dist = _dist()
        n = dist.get_world_size(ctx.group)
        shape = list(grad_output.shape)
        if shape[0] % n:
            raise RuntimeError(f"Tensor with dimensions: {shape} does not have first dimension "
                               f"divisible by world_size: {n}")
        shape[0] //= n
        gx = _empty(shape, grad_output)
        dist.reduce_scatter_tensor(gx, grad_output.contiguous(), ReduceOp.SUM, ctx.group)
        return None, gx, None


class _AllToAll(Function):
    @staticmethod
    def forward(ctx, group, out_tensor_list, *tensors):
        ctx.group = group
        ctx.input_shapes = [tuple(t.shape) for t in tensors]
        _dist().all_to_all(out_tensor_list, [t.contiguous() for t in tensors], group=group)
        return tuple(out_tensor_list)

    @staticmethod
    def backward(ctx, *grad_outputs):
        back = [_empty(s, grad_outputs[0]) for s in ctx.input_shapes]
        return (None, None) + _AllToAll.apply(ctx.group, back, *grad_outputs)


class _AllToAllSingle(Function):
    @staticmethod
    def forward(ctx, group, output, output_split_sizes, input_split_sizes, input):
        ctx.group = group
        ctx.input_shape = tuple(input.shape)
        ctx.back_output_splits = input_split_sizes
        ctx.back_input_splits = output_split_sizes
        _dist().all_to_all_single(output, input.contiguous(),
                                  output_split_sizes=output_split_sizes,
                                  input_split_sizes=input_split_sizes, group=group)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        gx = _empty(ctx.input_shape, grad_output)
        return (None, None, None, None,
                _AllToAllSingle.apply(ctx.group, gx, ctx.back_output_splits,
                                      ctx.back_input_splits, grad_output.contiguous()))


class _AllReduce(Function):
    @staticmethod
    def forward(ctx, op, group, tensor):
        ctx.op, ctx.group = op, group
        out = tensor.clone().contiguous()
        _dist().all_reduce(out, op=op, group=group)
        return out

    @staticmethod
    def backward(ctx, grad_output):
        return None, None, _AllReduce.apply(ctx.op, ctx.group, grad_output)
