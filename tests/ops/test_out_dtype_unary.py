"""``out=`` dtype rules of the unary ops against torch: ops that keep their input's dtype
(neg, abs, floor, sgn, bitwise_not, clamp with scalar bounds, ...) take only an ``out`` of
that dtype ("Found dtype Double but expected Float"), floating ops (sin, exp, ...) cast into
any ``out`` the result can be cast to, index_select/gather/tril/triu want the input's dtype,
the *_copy ops, diag and msort want the result's dtype, and isnan/isinf/isfinite/isreal have
no ``out=`` at all."""
import numpy as np
import pytest
import torch

import ember
from tests.opdb.db_pointwise import _UNARY

IN_DTYPES = ("float32", "int64", "bool", "complex64")
OUT_DTYPES = ("float32", "float64", "float16", "int64", "int32", "bool", "complex64",
              "complex128")
EXTRA = ("conj_physical", "negative", "absolute", "fix", "bitwise_not", "logical_not", "isposinf", "isneginf",
         "signbit", "nan_to_num", "rad2deg", "deg2rad", "logit", "isnan", "isinf", "isfinite",
         "isreal")
NAMES = sorted({n for n, *_ in _UNARY} | set(EXTRA))
VALUES = [[1.5, -2.0, 0.0], [3.0, 0.5, -0.25]]


def _input(lib, dt):
    x = lib.tensor(VALUES)
    if dt == "complex64":
        return lib.complex(x, -x)
    return x.to(getattr(lib, dt))


def _outcome(lib, fn, in_dt, out_dt):
    out = lib.empty(0, dtype=getattr(lib, out_dt))
    try:
        r = fn(lib, _input(lib, in_dt), out)
    except (RuntimeError, TypeError, NotImplementedError) as e:
        return type(e).__name__, str(e).replace("ember", "torch")
    assert r is out
    return str(r.dtype).split(".")[1], np.array(r.tolist())


def _same(name, fn):
    for in_dt in IN_DTYPES:
        for out_dt in OUT_DTYPES:
            e, t = _outcome(ember, fn, in_dt, out_dt), _outcome(torch, fn, in_dt, out_dt)
            where = f"{name}({in_dt}, out={out_dt})"
            assert e[0] == t[0], (where, e, t)
            if isinstance(t[1], str):
                assert e[1] == t[1], where
            else:
                np.testing.assert_allclose(e[1], t[1], rtol=2e-3, atol=1e-6, err_msg=where)


@pytest.mark.parametrize("name", NAMES)
def test_unary_out_dtype_like_torch(name):
    _same(name, lambda lib, x, out: getattr(lib, name)(x, out=out))


OTHERS = {
    "round_decimals": lambda l, x, o: l.round(x, decimals=1, out=o),
    "clamp": lambda l, x, o: l.clamp(x, -1, 1, out=o),
    "clamp_float_bounds": lambda l, x, o: l.clamp(x, 0.5, 1.5, out=o),
    "clamp_min": lambda l, x, o: l.clamp_min(x, 0, out=o),
    "clamp_max": lambda l, x, o: l.clamp_max(x, 0, out=o),
    "clip": lambda l, x, o: l.clip(x, -1, 1, out=o),
    # tensor bounds promote and cast into out, as a ternary op
    "clamp_tensor_bounds": lambda l, x, o: l.clamp(x, l.tensor(0.0, dtype=l.float64), out=o),
    "index_select": lambda l, x, o: l.index_select(x, 1, l.tensor([2, 0]), out=o),
    "gather": lambda l, x, o: l.gather(x, 1, l.tensor([[1], [0]]), out=o),
    "tril": lambda l, x, o: l.tril(x, out=o),
    "triu": lambda l, x, o: l.triu(x, 1, out=o),
    "diag": lambda l, x, o: l.diag(x, out=o),
    "msort": lambda l, x, o: l.msort(x, out=o),
    "i0": lambda l, x, o: l.i0(x, out=o),
    "alias_copy": lambda l, x, o: l.alias_copy(x, out=o),
    "t_copy": lambda l, x, o: l.t_copy(x, out=o),
    "diagonal_copy": lambda l, x, o: l.diagonal_copy(x, out=o),
    "squeeze_copy": lambda l, x, o: l.squeeze_copy(x[:1], out=o),
    "norm": lambda l, x, o: l.norm(x, out=o),
    "norm_dim": lambda l, x, o: l.norm(x, 2, 1, out=o),
    "histc": lambda l, x, o: l.histc(x, 4, out=o),
    "view_as_real_copy": lambda l, x, o: l.view_as_real_copy(x.to(l.complex64), out=o),
}


@pytest.mark.parametrize("name", sorted(OTHERS))
def test_out_dtype_like_torch(name):
    _same(name, OTHERS[name])
