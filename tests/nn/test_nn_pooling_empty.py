"""Pooling of inputs with empty dimensions and of integer inputs, against torch: which
calls raise (with torch's message, which differs per kernel) and which return."""
import itertools

import pytest
import torch

import ember

_OPS = {
    "max_pool": lambda F, n, x: getattr(F, f"max_pool{n}d")(x, 1),
    "max_pool_indices": lambda F, n, x: getattr(F, f"max_pool{n}d")(x, 1, return_indices=True),
    "avg_pool": lambda F, n, x: getattr(F, f"avg_pool{n}d")(x, 1),
    "lp_pool": lambda F, n, x: getattr(F, f"lp_pool{n}d")(x, 2, 1),
    "adaptive_max_pool": lambda F, n, x: getattr(F, f"adaptive_max_pool{n}d")(x, 2),
    "adaptive_avg_pool_1": lambda F, n, x: getattr(F, f"adaptive_avg_pool{n}d")(x, 1),
    "adaptive_avg_pool_2": lambda F, n, x: getattr(F, f"adaptive_avg_pool{n}d")(x, 2),
    "fractional_max_pool": lambda F, n, x: getattr(F, f"fractional_max_pool{n}d")(
        x, 1, output_size=1),
}


def _outcome(lib, op, n, shape, requires_grad=False):
    x = lib.ones(shape, requires_grad=requires_grad)
    try:
        r = _OPS[op](lib.nn.functional, n, x)
    except Exception as e:  # noqa: BLE001 - the outcome is compared with torch's
        return type(e).__name__, str(e)
    r = r[0] if isinstance(r, tuple) else r
    return "ok", tuple(r.shape)


def _empty_shapes(ndim):
    return [s for s in itertools.product((0, 2), repeat=ndim) if 0 in s]


@pytest.mark.parametrize("op", sorted(_OPS))
@pytest.mark.parametrize("n", (1, 2, 3))
def test_empty_dimensions_like_torch(op, n):
    if op == "fractional_max_pool" and n == 1:
        return  # torch has no fractional_max_pool1d
    for ndim in (n + 1, n + 2):
        for shape in _empty_shapes(ndim):
            assert _outcome(ember, op, n, shape) == _outcome(torch, op, n, shape), shape


def test_max_pool1d_zero_channels_raises_like_torch():
    for shape in ((2, 0, 5), (0, 5), (0, 0, 5)):
        for grad in (False, True):
            t = _outcome(torch, "max_pool", 1, shape, grad)
            assert t[0] == "RuntimeError"
            assert _outcome(ember, "max_pool", 1, shape, grad) == t


@pytest.mark.parametrize("n", (1, 2, 3))
def test_max_unpool_empty_dimension_raises_like_torch(n):
    for shape in _empty_shapes(n + 2):
        if 0 not in shape[1:]:
            continue
        outs = []
        for lib in (torch, ember):
            x = lib.ones(shape)
            with pytest.raises(RuntimeError) as e:
                getattr(lib.nn.functional, f"max_unpool{n}d")(x, lib.zeros(shape,
                                                                           dtype=lib.long), 1)
            outs.append(str(e.value))
        assert outs[0] == outs[1]


@pytest.mark.parametrize("dtype", ("uint8", "int8", "int16", "int32", "int64", "bool",
                                   "complex64", "float16", "float64"))
def test_max_pool1d_dtypes_like_torch(dtype):
    # torch's max_pool1d kernel is float-only, but with indices it is max_pool2d's
    data = [[3, 1, 4, 1, 5, 9, 2, 6], [2, 7, 1, 8, 2, 8, 1, 8]]
    for call in (lambda F, x: F.max_pool1d(x, 2), lambda F, x: F.max_pool1d(x, 3, 2, 1,
                                                                          return_indices=True),
                 lambda F, x: F.max_pool1d_with_indices(x.unsqueeze(0), 2)):
        res = []
        for lib in (torch, ember):
            x = lib.tensor(data).to(getattr(lib, dtype))
            try:
                r = call(lib.nn.functional, x)
                res.append([t.tolist() for t in (r if isinstance(r, tuple) else (r,))])
            except NotImplementedError as e:
                res.append(str(e))
        assert res[0] == res[1]


@pytest.mark.parametrize("n", (1, 2, 3))
def test_max_unpool_empty_batch_returns_empty_like_torch(n):
    # only the batch is empty: torch returns an empty result (NumPy cannot infer a -1 there)
    shape = (0, 2) + (2,) * n
    outs = []
    for lib in (torch, ember):
        x = lib.ones(shape)
        r = getattr(lib.nn.functional, f"max_unpool{n}d")(x, lib.zeros(shape, dtype=lib.long), 2)
        outs.append(tuple(r.shape))
    assert outs[0] == outs[1] == (0, 2) + (4,) * n
