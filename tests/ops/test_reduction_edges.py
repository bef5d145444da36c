"""Reductions of empty, 0-dim and bool/int tensors with each way of giving dims, against
torch: the same results, or an exception of the same type."""
import warnings

import numpy as np
import pytest
import torch

import ember

OPS = ["sum", "prod", "mean", "nansum", "nanmean", "amax", "amin", "max", "min", "argmax",
       "argmin", "std", "var", "logsumexp", "cumsum", "cumprod", "all", "any", "median",
       "nanmedian", "count_nonzero", "aminmax", "std_mean", "var_mean", "norm", "cummax",
       "cummin", "logcumsumexp", "mode", "msort", "argsort", "sort"]
SHAPES = [(0,), (2, 0), (0, 3), (), (3,), (2, 3)]
DIMS = [((), {}), ((0,), {}), ((-1,), {"keepdim": True}), ((), {"dim": 0}), ((), {"dim": (0,)})]


def _flat(r):
    if isinstance(r, (tuple, list)):
        return [x for y in r for x in _flat(y)]
    return [r]


def _run(lib, name, x, args, kw):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # std/var's degrees-of-freedom warning, both sides
            r = getattr(lib, name)(x, *args, **kw)
    except Exception as e:  # noqa: BLE001 - the kind is compared with torch's
        return "raised", "RuntimeError" if isinstance(e, NotImplementedError) else type(e).__name__
    return "ok", [(str(t.dtype).split(".")[1], tuple(t.shape),
                   np.asarray(t.to(lib.float64).numpy())) for t in _flat(r)]


@pytest.mark.parametrize("name", OPS)
def test_reduction_edges_like_torch(name):
    for shape in SHAPES:
        a = (np.arange(int(np.prod(shape))) % 3).reshape(shape)
        for dtype in ("bool", "int64", "float32"):
            for args, kw in DIMS:
                t = _run(torch, name, torch.tensor(a).to(getattr(torch, dtype)), args, kw)
                e = _run(ember, name, ember.tensor(a).to(getattr(ember, dtype)), args, kw)
                where = (shape, dtype, args, kw)
                assert e[0] == t[0], (where, t, e)
                if t[0] == "raised":
                    assert e[1] == t[1], (where, t, e)
                    continue
                assert len(e[1]) == len(t[1]), where
                for (ed, es, ev), (td, ts, tv) in zip(e[1], t[1]):
                    assert (ed, es) == (td, ts), where
                    np.testing.assert_allclose(ev, tv, rtol=1e-4, err_msg=str(where))


@pytest.mark.parametrize("p", (-1, -0.5, -2, float("-inf"), float("inf")))
def test_norm_without_identity_on_empty_like_torch(p):
    for lib in (torch, ember):
        with pytest.raises(RuntimeError, match=f"cannot compute the {p:g} norm"):
            lib.norm(lib.zeros(0), p)
        assert lib.linalg.vector_norm(lib.ones(2, 0), p, dim=0).shape == (0,)


@pytest.mark.parametrize("name", ("sum", "prod", "cumsum", "cumprod"))
@pytest.mark.parametrize("out_dtype", ("int64", "bool", "float64", "float16"))
def test_out_dtype_is_the_accumulation_dtype_like_torch(name, out_dtype):
    # torch computes these in out's dtype (a float product into an int64 out truncates first)
    res = []
    for lib in (torch, ember):
        x = lib.tensor([[1.5, -2.0, 3.0], [0.5, 4.0, -1.0]])
        out = lib.empty(0, dtype=getattr(lib, out_dtype))
        try:
            r = getattr(lib, name)(x, 1, out=out)
            assert r is out
            res.append((str(r.dtype).split(".")[1], r.tolist()))
        except NotImplementedError as e:
            res.append(str(e))
    assert res[0] == res[1]


def test_cumulative_ops_refuse_a_bool_accumulator_like_torch():
    for lib in (torch, ember):
        x = lib.tensor([[1.5, -2.0, 3.0]])
        for call in (lambda: lib.cumsum(x, 1, dtype=lib.bool),
                     lambda: lib.cumprod(x > 0, 1, dtype=lib.bool),
                     lambda: (x > 0).cumsum(1, dtype=lib.bool)):
            with pytest.raises(NotImplementedError, match=r"_out_cpu\" not implemented for "
                                                          r"'Bool'"):
                call()
        assert lib.cumsum(x > 0, 1).dtype == lib.int64
