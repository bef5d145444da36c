"""``Tensor.backward``, ``autograd.backward`` and ``autograd.grad``; tensor hooks."""
import numpy as _np

from .._core.device import namespace_of
from .._core.node import RemovableHandle
from .._core.overrides import overridable
from .._core.state import STATE
from .._core.tensor import Tensor, wrap
from ..ops import decomposition_vjp as _decomposition_vjp
from .engine import run_backward

__all__ = ["backward", "grad"]


def _as_tuple(x):
    if x is None:
        return None
    if isinstance(x, Tensor):
        return (x,)
    return tuple(x)


def _make_grads(outputs, grads, is_grads_batched=False):
    out = []
    for i, o in enumerate(outputs):
        g = grads[i] if grads is not None and i < len(grads) else None
        if g is None:
            d = o._data
            if o._requires_grad and d.size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if d.dtype.kind == "c":
                raise RuntimeError("grad can be implicitly created only for real scalar outputs "
                                   f"but got {o.dtype}")
            # (the usual loss is a 0-d NumPy array: NumPy's C constructor, not np.ones)
            g = wrap(_np.array(1, d.dtype) if type(d) is _np.ndarray and not d.ndim else
                     namespace_of(d).ones(d.shape, dtype=d.dtype))
        elif not isinstance(g, Tensor):
            g = wrap(namespace_of(o._data).full(o.shape, g, dtype=o.dtype.np))
        else:
            if g.shape != o.shape:
                raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of "
                                   f"{g.shape} and output[{i}] has a shape of {o.shape}.")
            if g.dtype.is_complex != o.dtype.is_complex:
                raise RuntimeError(f"For complex Tensors, both grad_output and output are required"
                                   f" to have the same dtype. Mismatch in dtype: grad_output[{i}] "
                                   f"has a dtype of {g.dtype} and output[{i}] has a dtype of "
                                   f"{o.dtype}.")
        out.append(g)
    return out


@overridable  # a function mode or tensor-like override sees it, as torch's __torch_function__
def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, grad_variables=None,
             inputs=None):
    """Computes the sum of gradients of ``tensors`` w.r.t. graph leaves, into their ``.grad``."""
    # as torch's: inside vmap a batched gradient cannot go into an unbatched leaf's .grad
    if STATE.intercept and any(getattr(m, "refuses_requires_grad", False) for m in STATE.modes):
        raise RuntimeError("backward() called inside a functorch transform. This is not "
                           "supported, please use functorch.grad or functorch.vjp instead or "
                           "call backward() outside of functorch transforms.")
    tensors = _as_tuple(tensors)
    grad_tensors = _as_tuple(grad_tensors if grad_tensors is not None else grad_variables)
    if inputs is not None:
        inputs = _as_tuple(inputs)
        if not inputs:
            raise RuntimeError("'inputs' argument to backward() cannot be empty.")
    for i, t in enumerate(tensors):
        if not t._requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a "
                               f"grad_fn")
    grads = _make_grads(tensors, grad_tensors)
    if retain_graph is None:
        retain_graph = create_graph
    run_backward(tensors, grads, retain_graph, create_graph, inputs=inputs, accumulate=True)


@overridable
def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """Computes and returns the sum of gradients of ``outputs`` w.r.t. ``inputs``."""
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads="
                         "True, but got: allow_unused=False.")
    if allow_unused is None:
        allow_unused = materialize_grads
    outputs = _as_tuple(outputs)
    inputs_t = _as_tuple(inputs)
    grad_outputs = _as_tuple(grad_outputs)
    for i, t in enumerate(outputs):
        if not t._requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a "
                               f"grad_fn")
    for t in inputs_t:
        if not isinstance(t, Tensor):
            raise TypeError(f"grad(): inputs must be Tensors, got {type(t).__name__}")
    if is_grads_batched:
        return _grad_batched(outputs, inputs_t, grad_outputs, retain_graph, create_graph,
                             allow_unused, materialize_grads)
    grads = _make_grads(outputs, grad_outputs)
    if retain_graph is None:
        retain_graph = create_graph
    res = run_backward(outputs, grads, retain_graph, create_graph, inputs=inputs_t,
                       accumulate=False, allow_unused=allow_unused)
    if materialize_grads:
        res = [r if r is not None else
               wrap(namespace_of(i._data).zeros(i.shape, dtype=i.dtype.np))
               for r, i in zip(res, inputs_t)]
    return tuple(res)


def _tensor_backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    """Computes the gradient of current tensor w.r.t. graph leaves."""
    # Tensor.backward is routed itself (route_tensor_methods): call what backward wraps
    _backward_impl(self, gradient, retain_graph, create_graph, inputs=inputs)


def _register_hook(self, hook):
    """Registers a backward hook ``hook(grad) -> Tensor or None`` on this tensor."""
    if not self._requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if self.grad_fn is None:
        if self._hooks is None:
            self._hooks = []
        self._hooks.append(hook)
        return RemovableHandle(self._hooks, hook)
    return self.grad_fn._add_tensor_hook(self._output_nr, hook)


def _register_post_accumulate_grad_hook(self, hook):
    """Registers ``hook(tensor)`` to run after the gradient is accumulated into ``.grad``."""
    if self.grad_fn is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    if self._post_acc_hooks is None:
        self._post_acc_hooks = []
    self._post_acc_hooks.append(hook)
    return RemovableHandle(self._post_acc_hooks, hook)


_backward_impl = backward.__wrapped_impl__
Tensor.backward = _tensor_backward
Tensor.register_hook = _register_hook
Tensor.register_post_accumulate_grad_hook = _register_post_accumulate_grad_hook
# fused backward ops below autograd differentiate their decompositions with it
_decomposition_vjp.GRAD.append(grad.__wrapped_impl__)


def _grad_batched(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused,
                  materialize_grads):
    """grad(..., is_grads_batched=True): dim 0 of each grad_output is a batch of vectors, one
    vector-Jacobian product each, stacked along dim 0 of every input's gradient (torch vmaps
    the backward pass; the values are the same)."""
    batched = [g for g in (grad_outputs or ()) if isinstance(g, Tensor)]
    if not batched:
        raise RuntimeError("grad(): is_grads_batched=True needs grad_outputs that are Tensors "
                           "with a leading batch dimension")
    for i, (o, g) in enumerate(zip(outputs, grad_outputs)):
        if isinstance(g, Tensor) and g.shape[1:] != o.shape:
            raise RuntimeError(
                "If `is_grads_batched=True`, we interpret the first dimension of each "
                "grad_output as the batch dimension. The sizes of the remaining dimensions are "
                "expected to match the shape of corresponding output, but a mismatch was "
                f"detected: grad_output[{i}] has a shape of {g.shape} and output[{i}] has a "
                f"shape of {o.shape}. If you only want some tensors in `grad_output` to be "
                "considered batched, consider using vmap.")
    n = batched[0].shape[0]
    rows = []
    for b in range(n):
        gb = tuple(g[b] if isinstance(g, Tensor) else g for g in grad_outputs)
        keep = True if b < n - 1 else retain_graph
        rows.append(grad(outputs, inputs, gb, retain_graph=keep, create_graph=create_graph,
                         allow_unused=allow_unused, materialize_grads=materialize_grads))
    from ..ops.shape import stack
    out = []
    for j, inp in enumerate(inputs):
        col = [r[j] for r in rows]
        if all(c is None for c in col):
            out.append(None)
            continue
        out.append(stack([c if c is not None else inp.new_zeros(inp.shape) for c in col]))
    return tuple(out)
