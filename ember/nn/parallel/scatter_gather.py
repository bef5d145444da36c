"""scatter / gather of nested inputs and outputs across devices (``torch.nn.parallel``).

On CPU every target is the host: scatter splits tensors into chunks along ``dim`` (one
per target, as ``Tensor.chunk`` does), gather concatenates them back."""
from ..._core.tensor import Tensor

__all__ = ["scatter", "scatter_kwargs", "gather"]


def _chunks(t, n, dim):
    return list(t.chunk(n, dim))


def scatter(inputs, target_gpus, dim=0):
    """Slices tensors into approximately equal chunks and distributes them across
    ``target_gpus``; other objects are referenced by every chunk."""
    n = len(target_gpus)

    def scatter_map(obj):
        if isinstance(obj, Tensor):
            return _chunks(obj, n, dim)
        if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # namedtuple
            return [type(obj)(*args) for args in zip(*map(scatter_map, obj))]
        if isinstance(obj, tuple) and len(obj) > 0:
            return list(zip(*map(scatter_map, obj)))
        if isinstance(obj, list) and len(obj) > 0:
            return [list(i) for i in zip(*map(scatter_map, obj))]
        if isinstance(obj, dict) and len(obj) > 0:
            return [type(obj)(i) for i in zip(*map(scatter_map, obj.items()))]
        return [obj for _ in range(n)]

    return scatter_map(inputs)


def scatter_kwargs(inputs, kwargs, target_gpus, dim=0):
    """Scatters ``inputs`` and ``kwargs``, padding the shorter list so both have one entry
    per chunk."""
    scattered_inputs = scatter(inputs, target_gpus, dim) if inputs else []
    scattered_kwargs = scatter(kwargs, target_gpus, dim) if kwargs else []
    if len(scattered_inputs) < len(scattered_kwargs):
        scattered_inputs.extend(() for _ in range(len(scattered_kwargs) - len(scattered_inputs)))
    elif len(scattered_kwargs) < len(scattered_inputs):
        scattered_kwargs.extend({} for _ in range(len(scattered_inputs) - len(scattered_kwargs)))
    return tuple(scattered_inputs), tuple(scattered_kwargs)


def gather(outputs, target_device, dim=0):
    """Gathers tensors from the chunks' outputs onto ``target_device`` by concatenating
    them along ``dim``; nested tuples, lists and dicts are gathered element-wise."""
    from ...ops.shape import cat

    def gather_map(outs):
        out = outs[0]
        if isinstance(out, Tensor):
            if out.dim() == 0:  # torch unsqueezes scalars into a vector
                return cat([o.reshape(1) for o in outs], 0)
            return cat(list(outs), dim)
        if out is None:
            return None
        if isinstance(out, dict):
            if not all(len(out) == len(d) for d in outs):
                raise ValueError("All dicts must have the same number of keys")
            return type(out)((k, gather_map([d[k] for d in outs])) for k in out)
        if isinstance(out, tuple) and hasattr(out, "_fields"):
            return type(out)._make(map(gather_map, zip(*outs)))
        return type(out)(map(gather_map, zip(*outs)))

    return gather_map(outputs)
