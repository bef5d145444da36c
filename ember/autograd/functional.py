"""``ember.autograd.functional``: jacobian, hessian, vjp, jvp, hvp, vhp (the torch API).

Inputs and outputs may be a Tensor or a tuple of Tensors, and results are shaped
exactly as torch's (tuples nested by output then input).  ``vectorize=True``
computes Jacobian rows with one vmapped vjp instead of a Python loop;
``strategy='forward-mode'`` builds Jacobians from vmapped jvps.
"""
import numpy as np

from .._core.tensor import Tensor, host_tensor
from .backward import grad as _grad
from .grad_mode import enable_grad

# ``vmap`` and ``jacfwd`` for the vectorized and forward-mode jacobians: ember.func, which is
# built on autograd, registers them here when it loads (autograd cannot import it)
FUNC_TRANSFORMS = {}

__all__ = ["jacobian", "hessian", "vjp", "jvp", "hvp", "vhp"]


def _as_tuple(x, arg_name, fn_name):
    is_tuple = isinstance(x, tuple)
    xs = x if is_tuple else (x,)
    for i, el in enumerate(xs):
        if not isinstance(el, Tensor):
            if is_tuple:
                raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a "
                                f"tuple of Tensors but the value at index {i} has type "
                                f"{type(el)}.")
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a "
                            f"tuple of Tensors but the given {arg_name} has type {type(el)}.")
    return is_tuple, xs


def _prepare_inputs(inputs, create_graph):
    out = []
    for x in inputs:
        if create_graph and x._requires_grad:
            out.append(x.view_as(x))
        else:
            out.append(x.detach().requires_grad_(True))
    return tuple(out)


def _zeros(x):
    return host_tensor(np.zeros(tuple(x.shape), dtype=x.dtype.np), x)


def _grads(outputs, inputs, grad_outputs, create_graph, strict, what):
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o._requires_grad]
    if not pairs:
        if strict:
            raise RuntimeError(f"The output of the user-provided function is independent of "
                               f"input 0. This is not allowed in strict mode.")
        return tuple(None for _ in inputs)
    res = _grad([o for o, _ in pairs], inputs, grad_outputs=[g for _, g in pairs],
                retain_graph=True, create_graph=create_graph, allow_unused=True)
    if strict:
        for i, r in enumerate(res):
            if r is None:
                raise RuntimeError(f"The output of the user-provided function is independent of "
                                   f"input {i}. This is not allowed in strict mode.")
    return res


def _fill(res, like, create_graph):
    out = []
    for r, x in zip(res, like):
        if r is None:
            r = _zeros(x)
        elif not create_graph:
            r = r.detach()
        out.append(r)
    return tuple(out)


def _tuple_back(is_tuple, xs):
    return xs if is_tuple else xs[0]


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), v^T J)``: the vector-Jacobian product at ``inputs``."""
    with enable_grad():
        is_in_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _prepare_inputs(inputs, create_graph)
        outputs = func(*inputs)
        is_out_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "vjp")
        v = _vector_like(v, outputs, "vjp", "outputs", "the user-provided function returns")
        res = _grads(outputs, inputs, v, create_graph, strict, "vjp")
    outs = tuple(o if create_graph else o.detach() for o in outputs)
    return _tuple_back(is_out_tuple, outs), _tuple_back(is_in_tuple, _fill(res, inputs,
                                                                            create_graph))


def _vector_like(v, targets, fn_name, target_name, when):
    """``v`` as a tuple shaped like ``targets``; ``None`` stands for ones, allowed only when
    there is a single one-element target."""
    if v is None:
        if len(targets) != 1 or targets[0].numel() != 1:
            raise RuntimeError(f"The vector v can only be None if {when} a single Tensor with a "
                               f"single element.")
        return (host_tensor(np.ones(tuple(targets[0].shape), dtype=targets[0].dtype.np),
                            targets[0]),)
    _, v = _as_tuple(v, "v", fn_name)
    _check_shapes(v, targets, "v", target_name)
    return v


def _check_shapes(vs, outs, vname, oname):
    if len(vs) != len(outs):
        raise RuntimeError(f"The given {vname} should contain a single Tensor per {oname}.")
    for i, (a, b) in enumerate(zip(vs, outs)):
        if a.shape != b.shape:
            raise RuntimeError(f"Mismatch in tensor shapes: entry {i} in {vname} has size "
                               f"{list(a.shape)} but the {oname} has size {list(b.shape)}")


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), J v)``: the Jacobian-vector product (by the double-backward trick)."""
    with enable_grad():
        is_in_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _prepare_inputs(inputs, create_graph)
        v = _vector_like(v, inputs, "jvp", "input", "the input to the user-provided "
                                                     "function is")
        outputs = func(*inputs)
        is_out_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "jvp")
        us = tuple(_zeros(o).requires_grad_(True) for o in outputs)
        gin = _grads(outputs, inputs, us, True, strict, "jvp")
        pairs = [(g, vi) for g, vi in zip(gin, v) if g is not None]
        if not pairs:
            res = tuple(None for _ in outputs)
        else:
            res = _grad([g for g, _ in pairs], us, grad_outputs=[vi for _, vi in pairs],
                        create_graph=create_graph, allow_unused=True)
    outs = tuple(o if create_graph else o.detach() for o in outputs)
    return _tuple_back(is_out_tuple, outs), _tuple_back(is_out_tuple, _fill(res, outputs,
                                                                             create_graph))


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False,
             strategy="reverse-mode"):
    """The Jacobian of ``func`` at ``inputs``: for tuple outputs/inputs a tuple (per output) of
    tuples (per input) of tensors shaped ``out.shape + in.shape``."""
    if strategy not in ("forward-mode", "reverse-mode"):
        raise ValueError('Expected strategy to be either "forward-mode" or "reverse-mode". Hint: '
                         'If your function has more outputs than inputs, "forward-mode" tends to '
                         'be more performant. Otherwise, prefer to use "reverse-mode".')
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError("torch.autograd.functional.jacobian: `create_graph=True` "
                                      "and `strategy=\"forward-mode\"` are not supported together"
                                      " (yet). Please either set `create_graph=False` or "
                                      "`strategy=\"reverse-mode\"`.")
        if not vectorize:
            raise NotImplementedError("torch.autograd.functional.jacobian: `strategy=\"forward-"
                                      "mode\"` requires `vectorize=True`.")
    with enable_grad():
        is_in_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _prepare_inputs(inputs, create_graph)
        outputs = func(*inputs)
        is_out_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function",
                                          "jacobian")
        if strategy == "forward-mode":
            jac = _jacobian_forward(func, inputs, outputs)
        elif vectorize:
            jac = _jacobian_vectorized(outputs, inputs, create_graph, strict)
        else:
            jac = _jacobian_loop(outputs, inputs, create_graph, strict)
    if not is_in_tuple:
        jac = tuple(row[0] for row in jac)
    return jac if is_out_tuple else jac[0]


def _jacobian_loop(outputs, inputs, create_graph, strict):
    jac = []
    for o in outputs:
        rows = [[] for _ in inputs]
        flat = o.reshape(-1)
        for k in range(flat.numel()):
            gs = _grad([flat[k]], inputs, retain_graph=True, create_graph=create_graph,
                       allow_unused=True) if flat._requires_grad else (None,) * len(inputs)
            for i, (g, x) in enumerate(zip(gs, inputs)):
                if g is None:
                    if strict:
                        raise RuntimeError(f"Output 0 of the user-provided function is "
                                           f"independent of input {i}. This is not allowed in "
                                           f"strict mode.")
                    g = _zeros(x)
                rows[i].append(g if create_graph else g.detach())
        from ..ops.shape import stack
        jac.append(tuple((stack(r, 0) if r else _zeros(x).reshape((0,) + tuple(x.shape)))
                         .reshape(tuple(o.shape) + tuple(x.shape)) for r, x in zip(rows, inputs)))
    return tuple(jac)


def _jacobian_vectorized(outputs, inputs, create_graph, strict):
    from ..ops.creation import eye
    vmap = FUNC_TRANSFORMS["vmap"]
    jac = []
    for o in outputs:
        n = o.numel()
        if not o._requires_grad:
            jac.append(tuple(_zeros(x).reshape((1,) * 0 + tuple(x.shape)).expand(
                *(tuple(o.shape) + tuple(x.shape))).clone() for x in inputs))
            continue
        basis = eye(n, dtype=o.dtype).reshape((n,) + tuple(o.shape))

        def row(v):
            gs = _grad([o], inputs, grad_outputs=[v], retain_graph=True,
                       create_graph=create_graph, allow_unused=True, materialize_grads=True)
            return tuple(gs)
        rows = vmap(row)(basis)
        jac.append(tuple((r if create_graph else r.detach()).reshape(tuple(o.shape) +
                                                                      tuple(x.shape))
                         for r, x in zip(rows, inputs)))
    return tuple(jac)


def _jacobian_forward(func, inputs, outputs):
    jacfwd = FUNC_TRANSFORMS["jacfwd"]
    n = len(inputs)
    detached = tuple(x.detach() for x in inputs)
    j = jacfwd(lambda *xs: func(*xs), argnums=tuple(range(n)))(*detached)
    if isinstance(j, tuple) and len(outputs) > 1:
        return tuple(tuple(jj) for jj in j)
    return (tuple(j),) if isinstance(j, tuple) else ((j,),)


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """The Hessian of scalar ``func`` at ``inputs`` (nested tuples for tuple inputs)."""
    is_in_tuple, inputs_t = _as_tuple(inputs, "inputs", "hessian")

    def inner(*xs):
        out = func(*xs)
        is_t, outs = _as_tuple(out, "outputs of the user-provided function", "hessian")
        if is_t or outs[0].numel() != 1:
            raise RuntimeError("The function given to hessian should return a single Tensor "
                               "with a single element.")
        gs = _grads(outs, xs, (host_tensor(np.ones(tuple(outs[0].shape),
                                                   dtype=outs[0].dtype.np), outs[0]),), True,
                    strict,
                    "hessian")
        return tuple(g if g is not None else _zeros(x) for g, x in zip(gs, xs))
    res = jacobian(inner, inputs_t, create_graph=create_graph, strict=strict,
                   vectorize=vectorize, strategy=outer_jacobian_strategy)
    if not is_in_tuple:
        return res[0][0] if isinstance(res, tuple) and isinstance(res[0], tuple) else res[0]
    return res


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), v^T H)``: the vector-Hessian product."""
    with enable_grad():
        is_in_tuple, inputs = _as_tuple(inputs, "inputs", "vhp")
        inputs = _prepare_inputs(inputs, create_graph)
        v = _vector_like(v, inputs, "vhp", "input", "the input to the user-provided "
                                                     "function is")
        out = func(*inputs)
        is_t, outs = _as_tuple(out, "outputs of the user-provided function", "vhp")
        if is_t or outs[0].numel() != 1:
            raise RuntimeError("The function given in vhp should return a single Tensor with a "
                               "single element.")
        g = _grads(outs, inputs, (host_tensor(np.ones(tuple(outs[0].shape),
                                                      dtype=outs[0].dtype.np), outs[0]),),
                   True, strict,
                   "vhp")
        pairs = [(gi, vi) for gi, vi in zip(g, v) if gi is not None and gi._requires_grad]
        res = _grad([a for a, _ in pairs], inputs, grad_outputs=[b for _, b in pairs],
                    create_graph=create_graph, allow_unused=True) if pairs else \
            (None,) * len(inputs)
    value = outs[0] if create_graph else outs[0].detach()
    return value, _tuple_back(is_in_tuple, _fill(res, inputs, create_graph))


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), H v)``: the Hessian-vector product (equal to vhp for symmetric H)."""
    return vhp(func, inputs, v, create_graph, strict)


