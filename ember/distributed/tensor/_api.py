"""DTensor: a global tensor laid out over a DeviceMesh as one local piece per rank.

ember's DTensor carries the layout (mesh, placements, global shape) and moves data between
layouts; it is not a Tensor subclass and runs no operators of its own: take ``to_local()``
or ``full_tensor()`` to compute.  Shards follow ``torch.chunk`` (uneven splits leave the
last ranks shorter or empty), and several mesh dimensions sharding one tensor dimension
split it in mesh order, as torch does.
"""
import numpy as np

from .placement_types import Partial, Placement, Replicate, Shard

__all__ = ["DTensor", "distribute_tensor", "local_box"]


def _dist():
    from ... import distributed as dist
    return dist


def _chunk_span(n, k, i):
    step = -(-n // k) if n else 0
    start = min(i * step, n)
    return start, max(0, min(n, start + step) - start)


def local_box(global_shape, mesh, placements, coordinate=None):
    """(offsets, sizes) of the piece that the rank at ``coordinate`` (default: this rank)
    holds of a tensor of ``global_shape`` laid out by ``placements`` over ``mesh``."""
    coord = mesh.get_coordinate() if coordinate is None else list(coordinate)
    offsets = [0] * len(global_shape)
    sizes = list(global_shape)
    if coord is None:
        return tuple(offsets), tuple([0] * len(global_shape))
    for mesh_dim, p in enumerate(placements):
        if isinstance(p, Shard):
            start, length = _chunk_span(sizes[p.dim], mesh.size(mesh_dim), coord[mesh_dim])
            offsets[p.dim] += start
            sizes[p.dim] = length
    return tuple(offsets), tuple(sizes)


def _normalize(placements, mesh, ndim):
    if placements is None:
        placements = [Replicate()] * mesh.ndim
    placements = list(placements)
    if len(placements) != mesh.ndim:
        raise ValueError(f"`placements` must have the same length as `device_mesh.ndim`! "
                         f"Found placements length: {len(placements)}, and device_mesh.ndim: "
                         f"{mesh.ndim}.")
    out = []
    for p in placements:
        if not isinstance(p, Placement):
            raise TypeError(f"placements must be Shard, Replicate or Partial, got {p!r}")
        if isinstance(p, Shard):
            if not -ndim <= p.dim < max(ndim, 1) or ndim == 0:
                raise IndexError(f"Shard({p.dim}) is out of range for a {ndim}-D tensor")
            p = Shard(p.dim % ndim)
        out.append(p)
    return tuple(out)


def _narrow(t, offsets, sizes):
    for d, (o, s) in enumerate(zip(offsets, sizes)):
        if o != 0 or s != t.shape[d]:
            t = t.narrow(d, o, s)
    return t


class DTensor:
    r"""A tensor of global shape ``shape`` distributed over ``device_mesh`` by ``placements``
    (one per mesh dimension).  Build one with `distribute_tensor` or `DTensor.from_local`.
    """

    def __init__(self, local_tensor, device_mesh, placements, shape, requires_grad=False):
        self._local_tensor = local_tensor
        self._device_mesh = device_mesh
        self._placements = tuple(placements)
        self._shape = tuple(int(s) for s in shape)

    # -- metadata ------------------------------------------------------------------------
    @property
    def device_mesh(self):
        return self._device_mesh

    @property
    def placements(self):
        return self._placements

    @property
    def shape(self):
        from ..._core.tensor import Size
        return Size(self._shape)

    def size(self, dim=None):
        return self.shape if dim is None else self._shape[dim]

    @property
    def dtype(self):
        return self._local_tensor.dtype

    @property
    def device(self):
        return self._local_tensor.device

    @property
    def ndim(self):
        return len(self._shape)

    def dim(self):
        return len(self._shape)

    def numel(self):
        return int(np.prod(self._shape, dtype=np.int64))

    @property
    def requires_grad(self):
        return self._local_tensor.requires_grad

    def __repr__(self):
        return (f"DTensor(local_tensor={self._local_tensor!r}, device_mesh={self._device_mesh!r}"
                f", placements={self._placements})")

    # -- data ----------------------------------------------------------------------------
    def to_local(self, *, grad_placements=None):
        """This rank's piece (a view, not a copy)."""
        return self._local_tensor

    def _local_box(self, coordinate=None):
        return local_box(self._shape, self._device_mesh, self._placements, coordinate)

    def full_tensor(self, *, grad_placements=None):
        """The whole tensor on every rank of the mesh (collective over the mesh)."""
        return self.redistribute(self._device_mesh,
                                 [Replicate()] * self._device_mesh.ndim).to_local()

    def _reduced_local(self):
        dist = _dist()
        local = self._local_tensor.detach().clone()
        for mesh_dim, p in enumerate(self._placements):
            if isinstance(p, Partial):
                group = self._device_mesh.get_group(mesh_dim)
                op = {"sum": dist.ReduceOp.SUM, "avg": dist.ReduceOp.AVG,
                      "max": dist.ReduceOp.MAX, "min": dist.ReduceOp.MIN}[p.reduce_op]
                dist.all_reduce(local, op=op, group=group)
        return local

    def _gather_full(self):
        """The full tensor from the shards: pieces are gathered along each sharded mesh
        dimension, last mesh dimension first, undoing the split order."""
        from .._ember import cat
        dist = _dist()
        local = self._reduced_local()
        mesh = self._device_mesh
        for mesh_dim in reversed(range(mesh.ndim)):
            p = self._placements[mesh_dim]
            if not isinstance(p, Shard):
                continue
            pieces = [None] * mesh.size(mesh_dim)
            dist.all_gather_object(pieces, local, group=mesh.get_group(mesh_dim))
            local = cat(pieces, dim=p.dim)
        return local

    def redistribute(self, device_mesh=None, placements=None, *, async_op=False,
                     forward_dtype=None, backward_dtype=None):
        """The same global tensor laid out by ``placements`` (collective over the mesh).
        As in torch, the mesh cannot change (torch raises the same NotImplementedError:
        take ``full_tensor()`` and ``distribute_tensor()`` onto the other mesh) and
        `Partial` is reachable only from `Partial`."""
        from .._ember import zeros_like
        mesh = device_mesh if device_mesh is not None else self._device_mesh
        if placements is None:
            raise RuntimeError("placements is needed for redistribute!")
        placements = _normalize(placements, mesh, self.ndim)
        for i, p in enumerate(placements):
            if isinstance(p, Partial) and (i >= len(self._placements)
                                           or self._placements[i] != p):
                src = self._placements[i] if i < len(self._placements) else None
                raise RuntimeError(f"Can not redistribute from {src} to {p}, "
                                   "redistributing to Partial is for internal use only!")
        if placements == self._placements:
            return self
        if mesh != self._device_mesh:
            raise NotImplementedError("Cross device mesh comm not supported yet!")
        full = self._gather_full()
        offsets, sizes = local_box(self._shape, mesh, placements)
        local = _narrow(full, offsets, sizes).contiguous()
        coord = mesh.get_coordinate()
        for mesh_dim, p in enumerate(placements):
            if isinstance(p, Partial) and coord is not None and coord[mesh_dim] != 0:
                local = zeros_like(local)
        if self.requires_grad:
            local.requires_grad_(True)
        return DTensor(local, mesh, placements, self._shape)

    @staticmethod
    def from_local(local_tensor, device_mesh=None, placements=None, *, run_check=False,
                   shape=None, stride=None, grad_placements=None):
        """A DTensor whose piece on this rank is ``local_tensor``.  The global shape is
        ``shape`` when given, else inferred by assuming even shards (a collective check of
        the pieces' shapes runs with ``run_check``)."""
        dist = _dist()
        if device_mesh is None:
            raise ValueError("DTensor.from_local: device_mesh is required")
        placements = _normalize(placements, device_mesh, local_tensor.dim())
        if shape is None:
            gshape = list(local_tensor.shape)
            for mesh_dim, p in enumerate(placements):
                if isinstance(p, Shard):
                    gshape[p.dim] *= device_mesh.size(mesh_dim)
            if run_check:
                for mesh_dim, p in enumerate(placements):
                    if isinstance(p, Shard):
                        sizes = [None] * device_mesh.size(mesh_dim)
                        dist.all_gather_object(sizes, int(local_tensor.shape[p.dim]),
                                               group=device_mesh.get_group(mesh_dim))
                        gshape[p.dim] = sum(sizes)
            shape = gshape
        shape = tuple(int(s) for s in shape)
        _, want = local_box(shape, device_mesh, placements)
        if tuple(local_tensor.shape) != want:
            raise ValueError(f"DTensor.from_local: the local tensor has shape "
                             f"{tuple(local_tensor.shape)}, but placements {placements} of "
                             f"global shape {shape} give this rank {want}")
        return DTensor(local_tensor, device_mesh, placements, shape)


def distribute_tensor(tensor, device_mesh=None, placements=None, *, src_data_rank=0):
    r"""Splits ``tensor`` over ``device_mesh`` by ``placements``: the value on global rank
    ``src_data_rank`` is broadcast first (``None`` takes every rank's own copy as is), then
    each rank keeps its piece.

    Example::
        >>> mesh = init_device_mesh("cpu", (2,))
        >>> d = distribute_tensor(ember.arange(8.), mesh, [Shard(0)])
        >>> d.to_local()           # rank 0: [0, 1, 2, 3]; rank 1: [4, 5, 6, 7]
    """
    from ..device_mesh import init_device_mesh
    dist = _dist()
    mesh = device_mesh if device_mesh is not None else init_device_mesh(
        "cpu", (dist.get_world_size(),))
    placements = _normalize(placements, mesh, tensor.dim())
    if any(isinstance(p, Partial) for p in placements):
        raise RuntimeError("distribute_tensor does not accept Partial placements")
    full = tensor.detach().clone().contiguous()
    if src_data_rank is not None:
        src_where = np.argwhere(mesh._mesh == int(src_data_rank))
        if not len(src_where):
            raise ValueError(f"src_data_rank {src_data_rank} is not in {mesh!r}")
        src = [int(c) for c in src_where[0]]
        coord = mesh.get_coordinate()
        # hop along mesh dimensions: first the line through src, then every line
        for mesh_dim in range(mesh.ndim):
            if coord is not None and all(coord[d] == src[d] for d in range(mesh_dim + 1,
                                                                           mesh.ndim)):
                group = mesh.get_group(mesh_dim)
                line = [slice(None) if d == mesh_dim else coord[d] for d in range(mesh.ndim)]
                owner = int(mesh._mesh[tuple(line)][src[mesh_dim]])
                dist.broadcast(full, src=owner, group=group)
    offsets, sizes = local_box(tuple(full.shape), mesh, placements)
    local = _narrow(full, offsets, sizes).contiguous()
    if tensor.requires_grad:
        local.requires_grad_(True)
    return DTensor(local, mesh, placements, tuple(full.shape))
