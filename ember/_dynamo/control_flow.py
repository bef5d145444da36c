"""``ember.cond``: data-dependent control flow that stays in one graph.

``cond(pred, true_fn, false_fn, operands)`` returns ``true_fn(*operands)`` if ``pred``
holds, else ``false_fn(*operands)`` (torch.cond).  Eagerly, and when ``pred`` is a Python
bool or a computed tensor, only the chosen branch runs.  Inside a compiled region with
``pred`` still pending, branching in Python would need its value (a graph break, an
error under ``fullgraph=True``); instead both branches are recorded and the result is
selected elementwise by ``pred`` (``where``), so the graph stays whole.  As in torch, the
branches must be free of side effects and return tensors of the same shapes and dtypes.
"""
from .._core.tensor import Tensor

__all__ = ["cond"]


def _flatten(x, out):
    if isinstance(x, Tensor):
        out.append(x)
        return "T"
    if type(x) in (tuple, list):
        return (type(x), tuple(_flatten(v, out) for v in x))
    raise RuntimeError(f"cond: the branches must return tensors or tuples/lists of tensors, "
                       f"got {type(x).__name__}")


def _unflatten(spec, it):
    if spec == "T":
        return next(it)
    kind, items = spec
    return kind(_unflatten(s, it) for s in items)


def cond(pred, true_fn, false_fn, operands=(), **kwargs):
    """Run ``true_fn(*operands)`` if ``pred`` else ``false_fn(*operands)`` (see the module
    docstring)."""
    if kwargs:
        raise TypeError(f"cond() got unexpected keyword arguments {sorted(kwargs)}")
    if not isinstance(operands, (tuple, list)):
        raise RuntimeError(f"cond: operands must be a tuple or list of tensors, got "
                           f"{type(operands).__name__}")
    if isinstance(pred, Tensor):
        if pred.numel() != 1:
            raise RuntimeError(f"cond: expected pred to be a bool or a tensor with a single "
                               f"element, got a tensor of shape {list(pred.shape)}")
        if "_lazy" not in pred.__dict__:
            pred = bool(pred)
    elif not isinstance(pred, (bool, int)):
        raise RuntimeError(f"cond: expected pred to be a bool or a tensor, got "
                           f"{type(pred).__name__}")
    if not isinstance(pred, Tensor):
        return (true_fn if pred else false_fn)(*operands)
    t_out, f_out = [], []
    t_spec = _flatten(true_fn(*operands), t_out)
    f_spec = _flatten(false_fn(*operands), f_out)
    if t_spec != f_spec:
        raise RuntimeError("cond: true_fn and false_fn must return the same structure of "
                           "outputs")
    from ..ops.pointwise import where
    p = pred.reshape(())
    chosen = []
    for i, (a, b) in enumerate(zip(t_out, f_out)):
        if tuple(a.shape) != tuple(b.shape) or a.dtype != b.dtype:
            raise RuntimeError(f"cond: output {i} of the branches differs: true_fn gives "
                               f"{list(a.shape)} {a.dtype}, false_fn {list(b.shape)} {b.dtype}")
        chosen.append(where(p, a, b))
    return _unflatten(t_spec, iter(chosen))
