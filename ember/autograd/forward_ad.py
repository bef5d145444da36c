"""Forward-mode automatic differentiation (``torch.autograd.forward_ad``).

Inside ``dual_level()``, tensors made with ``make_dual(primal, tangent)`` carry a
tangent; a dispatch mode computes the tangent of every operator's output.  An
operator's ``jvp`` rule is used when it has one; otherwise the tangent is derived
from its vjp by the double-vjp identity: the vjp ``u -> J^H u`` is linear in
``u``, so ``J t`` is the gradient in ``u`` of ``Re<J^H u, t>`` -- one extra
backward pass through the (differentiable) vjp.  Every differentiable operator
therefore has forward-mode AD, checked against finite differences and torch.
"""
import collections
import threading

import numpy as np

from .._core.dispatch import DispatchMode
from .._core.state import SHARED, STATE
from .._core.tensor import Tensor, host_tensor

__all__ = ["dual_level", "make_dual", "unpack_dual", "UnpackedDualTensor", "enter_dual_level",
           "exit_dual_level"]

UnpackedDualTensor = collections.namedtuple("UnpackedDualTensor", ["primal", "tangent"])


class _Levels(threading.local):
    # forward AD is a dispatch mode, and dispatch modes are per thread: so is the level
    # entered with it (torch's levels are process-wide; see ember._core.state)
    def __init__(self):
        self.active = []


_LEVELS = _Levels()


class _JvpCtx:
    __slots__ = ("out", "needs_input_grad", "in_meta")

    def __init__(self, out, needs, in_meta):
        self.out, self.needs_input_grad, self.in_meta = out, needs, in_meta


def _tangent(a):
    return a._fw_tangent if isinstance(a, Tensor) else None


def _is_diff(t):
    return isinstance(t, Tensor) and (t.dtype.is_floating_point or t.dtype.is_complex)


def derived_jvp(op, args, params, out, tangents):
    """Output tangent(s) of ``op`` from its vjp (the double-vjp identity)."""
    from .backward import grad as _grad
    outs = tuple(out) if isinstance(out, (tuple, list)) else (out,)
    diff = [_is_diff(o) and i not in op.nondiff_outputs for i, o in enumerate(outs)]
    if not any(diff):  # comparisons, argmax, ...: integer/bool outputs carry no tangent
        return [None] * len(outs)
    if op.vjp is None:
        raise RuntimeError(f"Trying to use forward AD with {op.name} that does not support it "
                           f"because it has no derivative")
    prev = STATE.grad_enabled
    STATE.grad_enabled = True
    try:
        us = []
        for o, d in zip(outs, diff):
            u = host_tensor(np.zeros(tuple(o.shape), dtype=o.dtype.np), o) \
                if isinstance(o, Tensor) \
                else None
            if d:
                u._set_requires_grad(True)
            us.append(u)
        g = us[0] if op.n_out == 1 else tuple(us)
        ctx = _JvpCtx(out, tuple(t is not None for t in tangents),
                      [(a.shape, a.dtype.np) if isinstance(a, Tensor) else None
                       for a in args])
        gins = op.vjp(ctx, g, *args, **params)
        if not isinstance(gins, (tuple, list)):
            gins = (gins,)
        s = None
        for gi, t in zip(gins, tangents):
            if gi is None or t is None:
                continue
            term = (gi.conj() * t).real if (gi.is_complex() or t.is_complex()) else gi * t
            term = term.sum()
            s = term if s is None else s + term
        wanted = [u for u, d in zip(us, diff) if d]
        higher = any(isinstance(t, Tensor) and t._requires_grad for t in tangents) or any(
            isinstance(a, Tensor) and a._requires_grad for a in args)
        if s is None or not s._requires_grad:
            res = [None] * len(wanted)
        else:
            res = list(_grad(s, wanted, allow_unused=True, create_graph=higher))
    finally:
        STATE.grad_enabled = prev
    it = iter(res)
    tans = []
    for o, d in zip(outs, diff):
        if not d:
            tans.append(None)
            continue
        r = next(it)
        tans.append(r if r is not None else
                    host_tensor(np.zeros(tuple(o.shape), dtype=o.dtype.np), o))
    return tans


class _ForwardADMode(DispatchMode):
    def __ember_dispatch__(self, op, args, kwargs):
        tangents = [_tangent(a) for a in args]
        if all(t is None for t in tangents):
            return op(*args, **kwargs)
        base = getattr(op, "base", None)
        if base is not None:  # in-place: tangent from the values before the write
            old = (args[0].clone(),) + tuple(args[1:])
            new_value = base(*old, **kwargs)
            tans = _jvp(base, old, kwargs, new_value, tangents)
            op(*args, **kwargs)
            args[0]._fw_tangent = tans[0]
            return args[0]
        out = op(*args, **kwargs)
        tans = _jvp(op, args, kwargs, out, tangents)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        for o, t in zip(outs, tans):
            if t is not None:
                o._fw_tangent = t
        return out


def _fit(t, o):
    # rules may leave broadcasting, dtype promotion and zero (None) tangents to this step, so
    # that they match the derived tangents: output shape and dtype, real part for real outputs
    if t is None:
        return host_tensor(np.zeros(tuple(o.shape), dtype=o.dtype.np), o)
    if t.dtype.is_complex and not o.dtype.is_complex:
        t = t.real
    if t.dtype != o.dtype:
        t = t.to(o.dtype)
    if t.shape != o.shape:
        t = t.expand(o.shape)
    return t


def explicit_jvp(op, args, params, out, tangents):
    """Output tangent(s) of ``op`` from its ``jvp`` rule, fitted to the outputs (derived from
    the vjp where the rule returns NotImplemented for these inputs)."""
    r = op.jvp(out, tangents, *args, **params)
    if r is NotImplemented:
        return derived_jvp(op, args, params, out, tangents)
    outs = tuple(out) if isinstance(out, (tuple, list)) else (out,)
    rs = list(r) if isinstance(r, (tuple, list)) else [r]
    return [_fit(t, o) if _is_diff(o) and i not in op.nondiff_outputs else None
            for i, (t, o) in enumerate(zip(rs, outs))]


def _jvp(op, args, params, out, tangents):
    if op.jvp is not None:
        return explicit_jvp(op, args, params, out, tangents)
    return derived_jvp(op, args, params, out, tangents)


def enter_dual_level():
    active = _LEVELS.active
    if active:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    mode = _ForwardADMode()
    mode.__enter__()
    active.append(mode)
    SHARED.forward += 1
    return 0


def exit_dual_level(*, level=None):
    mode = _LEVELS.active.pop()
    mode.__exit__(None, None, None)
    SHARED.forward -= 1


class dual_level:
    """Context manager for forward AD: dual tensors made inside carry tangents."""

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, *exc):
        exit_dual_level()


def make_dual(tensor, tangent, *, level=None):
    """A view of ``tensor`` that carries ``tangent`` (same shape) for forward AD."""
    if not _LEVELS.active:
        raise RuntimeError("To create a dual Tensor, you must be inside a dual_level context "
                           "(use ember.autograd.forward_ad.dual_level()).")
    if tuple(tangent.shape) != tuple(tensor.shape):
        raise RuntimeError(f"Trying to set a forward gradient that has a different size than "
                           f"that of the original Tensor, this is not supported. Tensor is of "
                           f"size {list(tensor.shape)} while the given forward gradient is of "
                           f"size {list(tangent.shape)}.")
    if not (tensor.is_floating_point() or tensor.is_complex()):
        raise ValueError(f"Expected primal to be floating point or complex, but got: "
                         f"{tensor.dtype}")
    dual = tensor.view_as(tensor)
    dual._fw_tangent = tangent
    return dual


def unpack_dual(tensor, *, level=None):
    """(primal, tangent) of a dual tensor; the tangent is None for ordinary tensors."""
    t = tensor._fw_tangent
    if t is None:
        return UnpackedDualTensor(tensor, None)
    active = _LEVELS.active
    prev = active[-1] if active else None
    if prev is not None:
        prev.__exit__(None, None, None)
    try:
        primal = tensor.view_as(tensor)
    finally:
        if prev is not None:
            prev.__enter__()
    return UnpackedDualTensor(primal, t)
