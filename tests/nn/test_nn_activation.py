"""Activations (functional and Modules) against torch: values, input and parameter grads,
in-place variants, reprs and errors."""
import numpy as np
import pytest
import torch

import ember
from nnutil import check_fn, check_module, check_pair, make_pair, np_of, same_error, to_lib

RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 4, 5)) * 3
DTYPES = [np.float32, np.float64]

FUNCS = [("relu", {}), ("relu6", {}), ("leaky_relu", {"negative_slope": 0.2}),
         ("elu", {"alpha": 0.7}), ("selu", {}), ("celu", {"alpha": 1.3}), ("gelu", {}),
         ("gelu", {"approximate": "tanh"}), ("silu", {}), ("mish", {}),
         ("hardtanh", {"min_val": -2.0, "max_val": 1.5}), ("hardsigmoid", {}),
         ("hardswish", {}), ("softplus", {}), ("softplus", {"beta": 2.0, "threshold": 5.0}),
         ("softsign", {}), ("tanhshrink", {}), ("softshrink", {"lambd": 0.7}),
         ("hardshrink", {"lambd": 0.7}), ("logsigmoid", {}), ("sigmoid", {}), ("tanh", {}),
         ("threshold", {"threshold": 0.3, "value": -2.0}), ("glu", {"dim": 1}), ("glu", {"dim": -2}),
         ("softmin", {"dim": 1}), ("softmax", {"dim": -1}), ("log_softmax", {"dim": 0}),
         ("rrelu", {})]


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("name,kw", FUNCS, ids=[f"{n}-{k}" for n, k in FUNCS])
def test_functional(name, kw, dt):
    x = X.astype(dt)
    x.flat[:4] = [0.0, 6.0, -3.0, 3.0]  # boundaries where torch's masks are defined exactly
    check_fn(lambda lib, a: getattr(lib.nn.functional, name)(a, **kw), [x])


@pytest.mark.parametrize("shape", [(), (0, 3), (7,)])
def test_functional_edge_shapes(shape):
    x = RNG.standard_normal(shape)
    for name in ("relu", "gelu", "silu", "elu", "softplus", "hardswish", "logsigmoid"):
        check_fn(lambda lib, a: getattr(lib.nn.functional, name)(a), [x])


def test_double_backward_gelu_silu():
    x = RNG.standard_normal(6)
    for name in ("gelu", "silu", "elu", "softplus", "mish"):
        def f(lib, a):
            y = getattr(lib.nn.functional, name)(a)
            g, = lib.autograd.grad(y.sum(), a, create_graph=True)
            return g
        check_fn(f, [x])


@pytest.mark.parametrize("name", ["relu", "relu6", "elu", "selu", "celu", "leaky_relu",
                                  "hardtanh", "silu", "mish", "hardsigmoid", "hardswish",
                                  "threshold"])
def test_inplace(name):
    args = (0.5, 1.0) if name == "threshold" else ()
    for dt in DTYPES:
        x = X.astype(dt)

        def f(lib, a):
            b = a * 1
            r = getattr(lib.nn.functional, name)(b, *args, inplace=True)
            assert r is b
            return b
        check_fn(f, [x])
    for fn in ("relu_", "elu_", "leaky_relu_", "hardtanh_", "selu_", "celu_", "rrelu_"):
        if hasattr(torch.nn.functional, fn):
            res = []
            for lib in (torch, ember):
                b = to_lib(lib, X.copy())
                getattr(lib.nn.functional, fn)(b)
                res.append(np_of(b))
            if fn != "rrelu_":
                np.testing.assert_allclose(res[1], res[0], rtol=1e-5, atol=1e-7)


def test_tensor_relu_methods():
    check_fn(lambda lib, a: a.relu() + (a * 1).relu_(), [X])
    check_fn(lambda lib, a: a.hardshrink(0.3), [X])


def test_relu_int():
    x = RNG.integers(-5, 5, (4,))
    check_fn(lambda lib, a: lib.nn.functional.relu(a), [x], grad=False)


MODULES = [("ReLU", ()), ("ReLU6", ()), ("LeakyReLU", (0.1,)), ("PReLU", ()), ("PReLU", (4,)),
           ("ELU", (0.5,)), ("SELU", ()), ("CELU", (0.8,)), ("GELU", ()), ("GELU", ("tanh",)),
           ("SiLU", ()), ("Mish", ()), ("Sigmoid", ()), ("Tanh", ()), ("Hardtanh", (-0.5, 2.0)),
           ("Hardsigmoid", ()), ("Hardswish", ()), ("Softplus", (2.0, 3.0)), ("Softsign", ()),
           ("Softmax", (1,)), ("LogSoftmax", (2,)), ("Softmin", (0,)), ("Softmax2d", ()),
           ("GLU", (1,)), ("Threshold", (0.1, 20.0)), ("Tanhshrink", ()), ("Softshrink", (0.3,)),
           ("Hardshrink", ()), ("LogSigmoid", ()), ("RReLU", ())]


@pytest.mark.parametrize("name,args", MODULES, ids=[f"{n}{a}" for n, a in MODULES])
def test_modules(name, args):
    x = X if name != "PReLU" else RNG.standard_normal((2, 4, 3))
    modes = ("eval",) if name == "RReLU" else ("train", "eval")
    check_pair(name, *args, inputs=[x], modes=modes)
    tm, em = make_pair(name, *args)
    assert repr(em) == repr(tm)


@pytest.mark.parametrize("name", ["ReLU", "ReLU6", "SELU", "SiLU", "Mish", "Hardswish",
                                  "Hardsigmoid", "ELU", "CELU", "LeakyReLU", "Hardtanh",
                                  "RReLU"])
def test_inplace_module_repr(name):
    assert repr(getattr(ember.nn, name)(inplace=True)) == repr(getattr(torch.nn, name)(inplace=True))


def test_prelu_params():
    tm, em = make_pair("PReLU", 3, 0.1)
    assert [n for n, _ in em.named_parameters()] == ["weight"]
    np.testing.assert_allclose(np_of(ember.nn.PReLU(3, 0.1).weight), np.full(3, 0.1, np.float32))
    check_module(tm, em, [RNG.standard_normal((2, 3, 5)).astype(np.float32)])
    check_module(tm, em, [RNG.standard_normal((2, 3)).astype(np.float32)])


def test_rrelu_training_statistics():
    ember.manual_seed(0)
    x = ember.full((20000,), -1.0, requires_grad=True)
    y = ember.nn.functional.rrelu(x, 0.1, 0.3, training=True)
    slopes = -y.detach().numpy()
    assert slopes.min() >= 0.1 and slopes.max() <= 0.3
    assert abs(slopes.mean() - 0.2) < 5e-3
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), slopes, rtol=1e-6)
    pos = ember.nn.functional.rrelu(ember.ones(5), training=True)
    np.testing.assert_array_equal(pos.numpy(), np.ones(5, np.float32))


ERRORS = [
    (lambda lib, x: lib.nn.functional.gelu(x, approximate="foo"), [X]),
    (lambda lib, x: lib.nn.functional.glu(x, 2), [X]),
    (lambda lib, x: lib.nn.functional.glu(x, 0), [X]),
    (lambda lib, x, w: lib.nn.functional.prelu(x, w), [X, np.ones(3)]),
    (lambda lib, x: lib.nn.functional.gelu(x), [np.arange(3)]),
    (lambda lib, x: lib.nn.functional.relu(x, inplace=True), ["leaf"]),
    (lambda lib, x: lib.nn.functional.softshrink(x, -1.0), [X]),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors(i):
    fn, args = ERRORS[i]
    if isinstance(args[0], str):
        def fn2(lib):
            x = lib.ones(3, requires_grad=True)
            return lib.nn.functional.relu(x, inplace=True)
        same_error(fn2)
        return
    same_error(fn, *args)


def test_hardtanh_module_bad_range():
    with pytest.raises(AssertionError):
        ember.nn.Hardtanh(1.0, 0.0)


@pytest.mark.parametrize("lo,hi", [(-0.5, 1.5), (-0.9, 0.9), (-1.0, 1.5), (0.0, -1.0)])
def test_hardtanh_uint8_limits_checked_as_integers_like_torch(lo, hi):
    x = np.array([0, 1, 2, 200], dtype=np.uint8)
    try:
        want = torch.nn.functional.hardtanh(torch.from_numpy(x), lo, hi).numpy()
    except (RuntimeError, ValueError) as e:
        with pytest.raises(type(e), match=str(e)):
            ember.nn.functional.hardtanh(ember.from_numpy(x), lo, hi)
        return
    got = ember.nn.functional.hardtanh(ember.from_numpy(x), lo, hi)
    assert got.dtype == ember.uint8
    np.testing.assert_array_equal(got.numpy(), want)


def test_complex_rrelu_training_and_bernoulli_raise_torchs_error():
    for lib in (torch, ember):
        x = lib.zeros(3, dtype=lib.complex64)
        with pytest.raises(NotImplementedError, match="bernoulli_scalar_cpu_.*'ComplexFloat'"):
            x.bernoulli_()
        with pytest.raises(NotImplementedError,
                           match="rrelu_with_noise_out_cpu.*'ComplexDouble'"):
            lib.nn.functional.rrelu(x.to(lib.complex128), training=True)
