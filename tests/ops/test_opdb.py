"""Generic operator tests driven by the op database (see tests/opdb/core.py)."""
import numpy as np
import pytest
import torch

import ember
from opdb.all import OPS
from opdb.core import HALVES, flatten, to_lib, to_numpy

SEED = 1234


def _cases():
    for op in OPS:
        for dt in op.dtypes:
            yield pytest.param(op, dt, id=f"{op.name}-{dt}")


def _xfail(op, test):
    if test in op.xfail:
        pytest.xfail(op.xfail[test])


def _compare(op, e_out, t_out, dtype, where):
    e_flat, t_flat = flatten(e_out), flatten(t_out)
    assert len(e_flat) == len(t_flat), f"{where}: {len(e_flat)} outputs vs torch's {len(t_flat)}"
    for i, (e, t) in enumerate(zip(e_flat, t_flat)):
        if isinstance(t, torch.Tensor):
            assert isinstance(e, ember.Tensor), f"{where}: output {i} is {type(e).__name__}"
            ea, ed = to_numpy(e)
            ta, td = to_numpy(t)
            if op.check_dtype:
                assert ed == td, f"{where}: output {i} dtype {ed}, torch gives {td}"
            assert ea.shape == ta.shape, f"{where}: output {i} shape {ea.shape} vs {ta.shape}"
            if op.compare is not None:
                op.compare(ea, ta)
                continue
            atol, rtol = (op.half_atol, op.half_rtol) if dtype in HALVES else (op.atol, op.rtol)
            if ta.dtype.kind in "fc":
                np.testing.assert_allclose(ea, ta, atol=atol, rtol=rtol, equal_nan=True,
                                           err_msg=where)
            else:
                np.testing.assert_array_equal(ea, ta, err_msg=where)
        else:
            assert e == t or (e != e and t != t), f"{where}: output {i} {e!r} vs torch {t!r}"


@pytest.mark.parametrize("op,dtype", list(_cases()))
def test_values_match_torch(op, dtype):
    _xfail(op, "values")
    rng = np.random.default_rng(SEED)
    for s in op.samples(dtype, rng):
        where = f"{op.name}[{dtype}] sample {s.name}"
        try:
            t_out = op.call(torch, to_lib(torch, s.args), to_lib(torch, s.kwargs))
        except Exception as exc:  # torch rejects it: ember must reject it the same way
            with pytest.raises(type(exc)):
                op.call(ember, to_lib(ember, s.args), to_lib(ember, s.kwargs))
            continue
        e_out = op.call(ember, to_lib(ember, s.args), to_lib(ember, s.kwargs))
        _compare(op, e_out, t_out, dtype, where)


def _grad_inputs(lib, s):
    args = []
    leaves = []
    for i, a in enumerate(s.args):
        want = (s.grad_args is None or i in s.grad_args) and isinstance(a, np.ndarray) and \
            a.dtype.kind in "fc"
        if isinstance(a, list):
            t = [to_lib(lib, x, requires_grad=(s.grad_args is None or i in s.grad_args)
                        and x.dtype.kind in "fc") for x in a]
            leaves.extend(x for x in t if x.requires_grad)
        else:
            t = to_lib(lib, a, requires_grad=want)
            if want:
                leaves.append(t)
        args.append(t)
    return args, leaves


def _weighted_sum(lib, out, rng_seed):
    rng = np.random.default_rng(rng_seed)
    total = None
    for o in flatten(out):
        if isinstance(o, (torch.Tensor, ember.Tensor)) and o.dtype.is_floating_point or \
                isinstance(o, (torch.Tensor, ember.Tensor)) and o.dtype.is_complex:
            w = rng.uniform(0.5, 1.5, tuple(o.shape))
            wt = lib.from_numpy(w.astype(np.float64)).to(o.dtype)
            term = (o * wt).sum()
            if o.dtype.is_complex:
                term = term.real + term.imag
            total = term if total is None else total + term
    return total


def _grad_cases():
    for op in OPS:
        if op.grad:
            dts = [d for d in ("float64", "complex128") if d in op.dtypes or
                   (d == "float64" and "float32" in op.dtypes)]
            for dt in dts:
                yield pytest.param(op, dt, id=f"{op.name}-{dt}")


@pytest.mark.parametrize("op,dtype", list(_grad_cases()))
def test_grads_match_torch(op, dtype):
    _xfail(op, "grad")
    rng = np.random.default_rng(SEED)
    for s in op.samples(dtype, rng):
        where = f"{op.name}[{dtype}] sample {s.name}"
        t_args, t_leaves = _grad_inputs(torch, s)
        if not t_leaves:
            continue
        try:
            t_out = op.call(torch, t_args, to_lib(torch, s.kwargs))
        except Exception:
            continue
        t_loss = _weighted_sum(torch, t_out, SEED)
        if t_loss is None or not t_loss.requires_grad:
            continue
        t_grads = torch.autograd.grad(t_loss, t_leaves, allow_unused=True)
        e_args, e_leaves = _grad_inputs(ember, s)
        e_out = op.call(ember, e_args, to_lib(ember, s.kwargs))
        e_loss = _weighted_sum(ember, e_out, SEED)
        assert e_loss is not None and e_loss.requires_grad, f"{where}: ember output has no grad"
        e_grads = ember.autograd.grad(e_loss, e_leaves, allow_unused=True)
        for k, (eg, tg) in enumerate(zip(e_grads, t_grads)):
            if tg is None:
                assert eg is None or not np.any(eg._data), f"{where}: grad {k} should be None/0"
                continue
            assert eg is not None, f"{where}: grad {k} missing"
            np.testing.assert_allclose(eg._data, tg.detach().resolve_conj().numpy(), atol=op.grad_atol,
                                       rtol=op.grad_rtol, equal_nan=True,
                                       err_msg=f"{where}: grad {k}")


def _gradcheck_cases():
    for op in OPS:
        if op.grad and op.gradcheck:
            yield pytest.param(op, id=op.name)


@pytest.mark.parametrize("op", list(_gradcheck_cases()))
def test_gradcheck(op):
    _xfail(op, "gradcheck")
    rng = np.random.default_rng(SEED)
    dtype = "float64" if ("float32" in op.dtypes or "float64" in op.dtypes) else "complex128"
    for s in op.samples(dtype, rng):
        args, leaves = _grad_inputs(ember, s)
        if not leaves or any(x.numel() == 0 for x in leaves):
            continue
        idx = [i for i, a in enumerate(args) if isinstance(a, ember.Tensor) and a.requires_grad]

        def f(*xs):
            full = list(args)
            for i, x in zip(idx, xs):
                full[i] = x
            return op.call(ember, full, to_lib(ember, s.kwargs))
        if not idx:
            continue
        assert ember.autograd.gradcheck(f, tuple(args[i] for i in idx), eps=1e-6, atol=1e-5,
                                        rtol=1e-3)
        return  # one sample is enough: finite differences are slow


def _error_cases():
    for op in OPS:
        if op.errors is not None:
            yield pytest.param(op, id=op.name)


@pytest.mark.parametrize("op", list(_error_cases()))
def test_errors_match_torch(op):
    rng = np.random.default_rng(SEED)
    for s, exc in op.errors(rng):
        with pytest.raises(exc):
            op.call(torch, to_lib(torch, s.args), to_lib(torch, s.kwargs))
        with pytest.raises(exc):
            op.call(ember, to_lib(ember, s.args), to_lib(ember, s.kwargs))
