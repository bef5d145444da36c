"""DTensor factories (``torch.distributed.tensor.ones`` and friends): the global tensor is
made once, identically on every rank, and each rank keeps its piece."""
from ._api import distribute_tensor

__all__ = ["empty", "full", "ones", "rand", "randn", "zeros"]


def _sizes(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        return tuple(size[0])
    return tuple(size)


def _make(build, size, dtype, requires_grad, device_mesh, placements, src_data_rank):
    from ..device_mesh import init_device_mesh
    from ... import distributed as dist
    mesh = device_mesh if device_mesh is not None else init_device_mesh(
        "cpu", (dist.get_world_size(),))
    full = build(_sizes(size), dtype)
    d = distribute_tensor(full, mesh, placements, src_data_rank=src_data_rank)
    if requires_grad:
        d.to_local().requires_grad_(True)
    return d


def ones(*size, dtype=None, layout=None, requires_grad=False, device_mesh=None,
         placements=None):
    """A DTensor of ones of global ``size`` laid out by ``placements``."""
    from .._ember import ones as _ones
    return _make(lambda s, dt: _ones(s, dtype=dt), size, dtype, requires_grad, device_mesh,
                 placements, None)


def zeros(*size, requires_grad=False, dtype=None, layout=None, device_mesh=None,
          placements=None):
    """A DTensor of zeros of global ``size`` laid out by ``placements``."""
    from .._ember import zeros as _zeros
    return _make(lambda s, dt: _zeros(s, dtype=dt), size, dtype, requires_grad, device_mesh,
                 placements, None)


def empty(*size, dtype=None, layout=None, requires_grad=False, device_mesh=None,
          placements=None):
    """A DTensor of global ``size`` with unset values (here: zeros)."""
    return zeros(*size, dtype=dtype, requires_grad=requires_grad, device_mesh=device_mesh,
                 placements=placements)


def full(size, fill_value, *, dtype=None, layout=None, requires_grad=False, device_mesh=None,
         placements=None):
    """A DTensor of global ``size`` filled with ``fill_value``."""
    from .._ember import full as _full
    return _make(lambda s, dt: _full(s, fill_value, dtype=dt), (tuple(size),), dtype,
                 requires_grad, device_mesh, placements, None)


def rand(*size, requires_grad=False, dtype=None, layout=None, device_mesh=None,
         placements=None):
    """A DTensor of uniform random values; rank 0's draw is the global tensor (so the
    pieces form one consistent tensor whatever each rank's generator holds)."""
    from .._ember import rand as _rand
    return _make(lambda s, dt: _rand(s, dtype=dt), size, dtype, requires_grad, device_mesh,
                 placements, 0)


def randn(*size, requires_grad=False, dtype=None, layout=None, device_mesh=None,
          placements=None):
    """A DTensor of normal random values; rank 0's draw is the global tensor."""
    from .._ember import randn as _randn
    return _make(lambda s, dt: _randn(s, dtype=dt), size, dtype, requires_grad, device_mesh,
                 placements, 0)
