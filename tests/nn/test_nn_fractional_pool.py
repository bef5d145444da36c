"""Fractional max pooling (2d/3d): values, indices and gradients vs torch, with given random
samples and with torch's own draw after the same seed; modules; vmap; errors."""
import numpy as np
import pytest
import torch

import ember
from nnutil import check_fn, np_of, same_error

rng = np.random.default_rng(7)

_CASES = [  # (n, input shape, kernel_size, output_size)
    (2, (2, 3, 7, 9), 2, (3, 4)),
    (2, (3, 10, 10), (3, 2), (5, 6)),        # unbatched: samples[0]
    (2, (2, 3, 7, 9), 3, 1),                 # one window per dim: the last start only
    (2, (2, 1, 6, 6), 2, (5, 5)),            # windows that touch the input's end (2d allows)
    (3, (2, 2, 6, 7, 8), 2, (3, 4, 5)),
    (3, (2, 6, 7, 8), (1, 2, 3), (4, 4, 3)),
]


def _fn(n, lib):
    return getattr(lib.nn.functional, f"fractional_max_pool{n}d")


@pytest.mark.parametrize("n,shape,ks,osz", _CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_given_samples(n, shape, ks, osz, dtype):
    x = rng.standard_normal(shape).astype(dtype)
    samples = rng.random((shape[0] if len(shape) == n + 2 else 1, shape[-n - 1], n))
    samples = samples.astype(dtype)
    check_fn(lambda lib, x, s: _fn(n, lib)(x, ks, output_size=osz, return_indices=True,
                                           _random_samples=s), [x, samples], grad=(0,))
    check_fn(lambda lib, x, s: getattr(lib.nn.functional,
                                       f"fractional_max_pool{n}d_with_indices")(
        x, ks, osz, _random_samples=s), [x, samples], grad=(0,))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("n", [2, 3])
def test_half_precision_windows(n, dtype):
    # the window starts are computed in the samples' dtype: its roundings move windows
    shape = (2, 3) + (23,) * n
    x = rng.standard_normal(shape)
    s = rng.random((2, 3, n))
    outs = []
    for lib in (torch, ember):
        dt = getattr(lib, dtype)
        xt = lib.tensor(x).to(dt).requires_grad_()
        o, i = _fn(n, lib)(xt, 3, output_size=9, return_indices=True,
                           _random_samples=lib.tensor(s).to(dt))
        o.float().sum().backward()
        outs.append((np_of(o.float()), np_of(i), np_of(xt.grad.float())))
    for a, b in zip(*outs):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("n", [2, 3])
def test_drawn_samples_match_torch_after_same_seed(n):
    x = rng.standard_normal((2, 3) + (11,) * n).astype(np.float32)
    res = []
    for lib in (torch, ember):
        lib.manual_seed(1234)
        res.append(np_of(_fn(n, lib)(lib.from_numpy(x.copy()), 2, output_ratio=(0.5,) * n,
                                     return_indices=True)))
    for a, b in zip(*res):
        np.testing.assert_array_equal(a, b)


def test_ties_nan_and_inf():
    x = np.zeros((1, 2, 6, 6), np.float32)
    x[0, 1, 1:3, 1:3] = np.nan
    x[0, 1, 4, 4] = -np.inf
    x[0, 0, :3, :3] = -np.inf
    s = np.full((1, 2, 2), 0.3, np.float32)
    check_fn(lambda lib, x, s: _fn(2, lib)(x, 2, output_size=4, return_indices=True,
                                           _random_samples=s), [x, s], grad=False)
    x[0, 0] = -np.inf
    check_fn(lambda lib, x, s: _fn(2, lib)(x, 3, output_size=2, return_indices=True,
                                           _random_samples=s), [x, s], grad=False)
    # an empty window (torch accepts kernel_size 0): -inf at the window's start
    check_fn(lambda lib, x, s: _fn(2, lib)(x, 0, output_size=3, return_indices=True,
                                           _random_samples=s), [x, s], grad=False)


def test_double_backward_and_empty_batch():
    x = rng.standard_normal((2, 2, 8, 8))
    s = rng.random((2, 2, 2))
    check_fn(lambda lib, x, s: lib.autograd.grad(
        (_fn(2, lib)(x, 2, output_size=5, _random_samples=s) ** 2).sum(), x,
        create_graph=True)[0], [x, s], grad=(0,))
    check_fn(lambda lib, x: _fn(3, lib)(x, 2, output_size=2, return_indices=True),
             [np.zeros((0, 3, 5, 5, 5), np.float32)], grad=False)


def test_vmap_matches_a_loop():
    x = ember.randn(4, 3, 9, 9)
    s = ember.rand(4, 1, 3, 2)
    f = lambda x, s: ember.nn.functional.fractional_max_pool2d(x, 2, output_size=4,  # noqa: E731
                                                                _random_samples=s)
    got = ember.func.vmap(f)(x, s)
    want = ember.stack([f(x[i], s[i]) for i in range(4)])
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("n", [2, 3])
def test_modules(n):
    shape = (2, 3) + (9,) * n
    s = rng.random((2, 3, n))
    x = rng.standard_normal(shape)
    outs = []
    for lib in (torch, ember):
        m = getattr(lib.nn, f"FractionalMaxPool{n}d")(2, output_ratio=0.5, return_indices=True,
                                                      _random_samples=lib.tensor(s))
        assert m.kernel_size == (2,) * n and m.output_ratio == (0.5,) * n
        assert m.output_size is None and "_random_samples" in dict(m.named_buffers())
        xt = lib.tensor(x, requires_grad=True)
        o, i = m(xt)
        o.sum().backward()
        outs.append((np_of(o), np_of(i), np_of(xt.grad)))
    for a, b in zip(*outs):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=2, output_size=3,
                                                           output_ratio=0.5),
                                dict(kernel_size=2, output_ratio=1.5),
                                dict(kernel_size=2, output_ratio=(0.5, 0))])
@pytest.mark.parametrize("n", [2, 3])
def test_module_errors(n, kw):
    same_error(lambda lib: getattr(lib.nn, f"FractionalMaxPool{n}d")(**kw))


def test_module_3d_kernel_check():
    same_error(lambda lib: lib.nn.FractionalMaxPool3d(0, output_size=2))


_S = np.random.default_rng(0).random((2, 3, 2)).astype(np.float32)


@pytest.mark.parametrize("call", [
    lambda F, x: F.fractional_max_pool2d(x, 2),                               # neither size
    lambda F, x: F.fractional_max_pool2d(x, 2, output_size=(7, 7)),           # too large
    lambda F, x: F.fractional_max_pool2d(x, 2, output_ratio=(0.5, 0.5, 0.5)),
    lambda F, x: F.fractional_max_pool2d(x, 2, output_ratio=0.5),            # torch: len()
    lambda F, x: F.fractional_max_pool2d(x, (2, 3, 4), output_size=3),
    lambda F, x: F.fractional_max_pool2d(x, 2, output_size=(3, 3, 3)),
    lambda F, x: F.fractional_max_pool2d(x.long(), 2, output_size=3),
    lambda F, x: F.fractional_max_pool2d(x[0, 0], 2, output_size=3),
    lambda F, x: F.fractional_max_pool2d(x[:, :0], 2, output_size=3),
    lambda F, x: F.fractional_max_pool2d(x, 2, output_size=3, _random_samples=x.new_ones(2, 3, 3)),
    lambda F, x: F.fractional_max_pool2d(x, 2, output_size=3, _random_samples=x.new_ones(1, 3, 2)),
    lambda F, x: F.fractional_max_pool2d(x, 2, output_size=3, _random_samples=x.new_ones(2, 4, 2)),
    lambda F, x: F.fractional_max_pool2d(x, 2, output_size=3, _random_samples=x.new_ones(6, 2)),
    lambda F, x: F.fractional_max_pool2d(x, 2, output_size=3,
                                         _random_samples=x.new_ones(2, 3, 2).double()),
    lambda F, x: F.fractional_max_pool3d(x, 2, output_size=(2, 3, 6)),        # 3d: strict
    lambda F, x: F.fractional_max_pool3d(x, 2, output_size=(2, 2)),
    lambda F, x: F.fractional_max_pool3d(x.unsqueeze(0), 1, output_size=(3, 7, 7)),
])
def test_errors(call):
    x = rng.standard_normal((2, 3, 7, 7)).astype(np.float32)
    same_error(lambda lib, x: call(lib.nn.functional, x), x)
