"""Shared helpers for nn tests: run a torch Module and an ember Module with the same
parameters on the same NumPy inputs and compare outputs, input gradients and
parameter gradients.

Typical use::

    from nnutil import make_pair, check_module
    tm, em = make_pair("Linear", 4, 3)                      # torch.nn.Linear / ember.nn.Linear
    check_module(tm, em, [rng.standard_normal((2, 4))])     # float32, train and eval

or for functions::

    check_fn(lambda lib, x, t: lib.nn.functional.mse_loss(x, t), [x, t])
"""
import numpy as np
import torch

import ember

TOL = {np.float32: dict(atol=1e-5, rtol=1e-4), np.float64: dict(atol=1e-10, rtol=1e-8)}


def np_of(t):
    """NumPy copy of a torch or ember tensor (or nested tuple/list of them)."""
    if isinstance(t, (tuple, list)):
        return type(t)(np_of(x) for x in t)
    if isinstance(t, torch.Tensor):
        return t.detach().cpu().numpy().copy()
    if isinstance(t, ember.Tensor):
        return np.array(t.detach().numpy(), copy=True)
    return t


def to_lib(lib, x, requires_grad=False):
    """A torch/ember tensor from NumPy array ``x``; floats get ``requires_grad`` if asked."""
    if not isinstance(x, np.ndarray):
        return x
    t = lib.from_numpy(np.array(x, copy=True, order="C"))
    if requires_grad and x.dtype.kind in "fc":
        t.requires_grad_(True)
    return t


def copy_params(tm, em):
    """Load torch module ``tm``'s state_dict into ember module ``em`` (strict, via NumPy)."""
    sd = {k: ember.from_numpy(np_of(v)) for k, v in tm.state_dict().items()}
    em.load_state_dict(sd)
    return em


def make_pair(name, *args, dtype=np.float32, **kwargs):
    """``torch.nn.<name>(*args, **kwargs)`` and the ember twin with identical parameters.

    ``name`` may be a string (class looked up in both ``nn`` namespaces) or a callable
    ``factory(lib)`` returning a module."""
    if callable(name):
        tm, em = name(torch), name(ember)
    else:
        tm = getattr(torch.nn, name)(*args, **kwargs)
        em = getattr(ember.nn, name)(*args, **kwargs)
    if dtype == np.float64:
        tm, em = tm.double(), em.double()
    copy_params(tm, em)
    return tm, em


def _flat(out):
    if isinstance(out, (tuple, list)):
        r = []
        for o in out:
            r.extend(_flat(o))
        return r
    return [out]


def _cotangents(outs, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(np_of(o).shape).astype(np_of(o).dtype)
            if o is not None and np_of(o).dtype.kind == "f" else None for o in outs]


def _wants_grad(grad, i):
    return grad is True or (not isinstance(grad, bool) and i in grad)


def run(lib, fn, inputs, grad=True, kwargs=None, seed=0):
    """Call ``fn(*tensors, **kwargs)``, then backward a fixed random cotangent.

    ``grad``: True (every float input requires grad), False, or a tuple of input indices.
    Returns (flat outputs as NumPy, input grads as NumPy or None, the input tensors)."""
    ts = [to_lib(lib, x, requires_grad=_wants_grad(grad, i)) for i, x in enumerate(inputs)]
    out = fn(*ts, **(kwargs or {}))
    outs = _flat(out)
    if grad:
        diff = [(o, c) for o, c in zip(outs, _cotangents(outs, seed))
                if c is not None and getattr(o, "requires_grad", False)]
        if diff:
            lib.autograd.backward([o for o, _ in diff], [lib.from_numpy(c) for _, c in diff])
    grads = [np_of(t.grad) if isinstance(t, lib.Tensor) and t.grad is not None else None
             for t in ts]
    return [np_of(o) for o in outs], grads, ts


def assert_close(a, b, what="", **tol):
    """Compare NumPy results (ember ``a`` vs torch ``b``), dtype and shape included."""
    if a is None or b is None:
        assert a is None and b is None, f"{what}: ember {a is None and 'None'} vs torch " \
                                        f"{b is None and 'None'}"
        return
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape, f"{what}: shape {a.shape} vs torch {b.shape}"
    assert a.dtype == b.dtype, f"{what}: dtype {a.dtype} vs torch {b.dtype}"
    if not tol:
        tol = TOL.get(a.dtype.type, dict(atol=1e-5, rtol=1e-4))
    if a.dtype.kind in "biu":
        np.testing.assert_array_equal(a, b, err_msg=what)
    else:
        np.testing.assert_allclose(a, b, err_msg=what, equal_nan=True, **tol)


def check_fn(fn, inputs, *, grad=True, kwargs=None, **tol):
    """Run ``fn(lib, *tensors, **kwargs)`` with torch and ember; compare outputs and grads
    (``grad``: True, False or the indices of the inputs to differentiate)."""
    e_out, e_g, _ = run(ember, lambda *a, **k: fn(ember, *a, **k), inputs, grad, kwargs)
    t_out, t_g, _ = run(torch, lambda *a, **k: fn(torch, *a, **k), inputs, grad, kwargs)
    assert len(e_out) == len(t_out)
    for i, (a, b) in enumerate(zip(e_out, t_out)):
        assert_close(a, b, f"output {i}", **tol)
    if grad:
        for i, (a, b) in enumerate(zip(e_g, t_g)):
            assert_close(a, b, f"grad of input {i}", **tol)
    return e_out


def check_module(tm, em, inputs, *, modes=("train", "eval"), grad=True, kwargs=None,
                 param_grads=True, **tol):
    """Compare modules ``tm`` (torch) and ``em`` (ember) on NumPy ``inputs`` in each mode:
    outputs, input grads and parameter grads (by name)."""
    for mode in modes:
        getattr(tm, mode)()
        getattr(em, mode)()
        for m in (tm, em):
            m.zero_grad(set_to_none=True)
        e_out, e_g, _ = run(ember, em, inputs, grad, kwargs)
        t_out, t_g, _ = run(torch, tm, inputs, grad, kwargs)
        assert len(e_out) == len(t_out), f"{mode}: {len(e_out)} outputs vs torch {len(t_out)}"
        for i, (a, b) in enumerate(zip(e_out, t_out)):
            assert_close(a, b, f"{mode}: output {i}", **tol)
        if not grad:
            continue
        for i, (a, b) in enumerate(zip(e_g, t_g)):
            assert_close(a, b, f"{mode}: grad of input {i}", **tol)
        if param_grads:
            ep = dict(em.named_parameters())
            tp = dict(tm.named_parameters())
            assert sorted(ep) == sorted(tp), f"parameters {sorted(ep)} vs torch {sorted(tp)}"
            for k in tp:
                assert_close(np_of(ep[k].grad) if ep[k].grad is not None else None,
                             np_of(tp[k].grad) if tp[k].grad is not None else None,
                             f"{mode}: grad of parameter {k}", **tol)


def check_pair(name, *args, inputs, dtypes=(np.float32, np.float64), kwargs=None, **kw):
    """``make_pair`` + ``check_module`` for each dtype; inputs cast to that dtype if float."""
    for dt in dtypes:
        tm, em = make_pair(name, *args, dtype=dt, **(kwargs or {}))
        xs = [x.astype(dt) if isinstance(x, np.ndarray) and x.dtype.kind == "f" else x
              for x in inputs]
        check_module(tm, em, xs, **kw)


def same_error(fn, *args, **kwargs):
    """Assert ``fn(lib, ...)`` raises the same exception type in torch and ember; return both."""
    errs = []
    for lib in (torch, ember):
        conv = [to_lib(lib, a) for a in args]
        try:
            fn(lib, *conv, **kwargs)
        except Exception as e:  # noqa: BLE001 - the type is what we compare
            errs.append(e)
        else:
            errs.append(None)
    te, ee = errs
    assert te is not None, "torch did not raise"
    assert ee is not None, f"ember did not raise (torch raised {type(te).__name__}: {te})"
    assert isinstance(ee, type(te)), f"ember raised {type(ee).__name__}: {ee}; torch " \
                                     f"{type(te).__name__}: {te}"
    return te, ee
