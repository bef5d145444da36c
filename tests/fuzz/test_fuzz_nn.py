"""Differential fuzzing of factories and nn.functional against torch.

Factories get odd sizes (none, empty, negative, huge), dtypes and fill values that
overflow; nn.functional ops (convolutions, pooling, softmax, losses, activations) get
empty batches, special values, integer dtypes and bad geometry (zero or negative
stride, padding, dilation).  Activations and pooling are also differentiated (float64),
so gradients at NaN/inf are compared too."""
import numpy as np
from hypothesis import given, strategies as st

from fuzz_settings import fuzz_settings
from fuzz_core import DTYPES, Stats, run_both, with_layout
from fuzz_strategies import arrays, layouts, shapes

FACTORY_BUDGET = 1000
NN_BUDGET = 3000

FACTORY_STATS = Stats("factories")
NN_STATS = Stats("nn")

_SIZES = st.one_of(st.integers(-2, 4), st.sampled_from((2 ** 62, 2 ** 40, 2 ** 70)))


def _dt(lib, name):
    return None if name is None else getattr(lib, name)


@st.composite
def _factory_case(draw):
    name = draw(st.sampled_from(("zeros", "ones", "empty", "full", "arange", "linspace",
                                 "eye", "full_like", "zeros_like", "tensor", "randn")))
    dtype = draw(st.sampled_from((None,) * 3 + DTYPES))
    size = tuple(draw(st.lists(_SIZES, min_size=0, max_size=3)))
    fill = draw(st.one_of(st.integers(-300, 300), st.floats(allow_nan=True, allow_infinity=True,
                                                             width=64),
                          st.sampled_from((2 ** 31, 2 ** 40, 2 ** 64, True, 1j, 1e300))))
    a, b = draw(st.integers(-5, 5)), draw(st.integers(-5, 5))
    step = draw(st.sampled_from((1, 2, -1, 0, 0.5)))
    data = draw(st.sampled_from(([], [[]], [1, 2.5], [[1, 2], [3]], [True, 2], [1, 2 ** 63],
                                 [[1], [2]], 3, [1j, 2])))
    return name, dtype, size, fill, a, b, step, data


@fuzz_settings(FACTORY_BUDGET)
@given(_factory_case())
def _fuzz_factory(case):
    name, dtype, size, fill, a, b, step, data = case
    def call(lib):
        dt = _dt(lib, dtype)
        if name in ("zeros", "ones", "empty", "randn"):
            r = getattr(lib, name)(*size, dtype=dt)
            return r.shape if name in ("empty", "randn") else r
        if name == "full":
            return lib.full(size, fill, dtype=dt)
        if name == "arange":
            return lib.arange(a, b, step, dtype=dt)
        if name == "linspace":
            return lib.linspace(a, b, abs(int(step * 4)), dtype=dt)
        if name == "eye":
            return lib.eye(a, b if b >= 0 else None, dtype=dt)
        if name == "full_like":
            return lib.full_like(lib.zeros(2, 3), fill, dtype=dt)
        if name == "zeros_like":
            return lib.zeros_like(lib.zeros(2, 3), dtype=dt)
        return lib.tensor(data, dtype=dt)
    if any(s >= 2 ** 31 for s in size) and name in ("zeros", "ones", "empty", "randn",
                                                      "full") and 0 in size:
        return  # a huge dim times an empty one is a 0-element tensor: fine, but slow in torch
    cls, detail = run_both(call, 0.0, 1e-12)
    FACTORY_STATS.record(name, cls, detail, f"{case!r}"[:400])


# ---- nn.functional ----------------------------------------------------------------------

_ACTIVATIONS = ("relu", "relu6", "elu", "selu", "celu", "leaky_relu", "hardtanh", "gelu",
                "silu", "mish", "softplus", "softsign", "hardsigmoid", "hardswish",
                "logsigmoid", "tanhshrink", "softshrink", "hardshrink", "sigmoid", "tanh")


@st.composite
def _nn_case(draw):
    kind = draw(st.sampled_from(("conv", "conv", "conv_transpose", "pool", "pool", "adaptive",
                                 "adaptive", "softmax", "loss", "loss", "act", "act", "act")))
    dtype = draw(st.sampled_from(("float32",) * 4 + ("float64",) * 2 + DTYPES))
    layout = draw(layouts())
    grad = dtype == "float64" and draw(st.booleans())
    n = draw(st.integers(1, 3 if kind in ("conv", "pool", "adaptive") else 2))
    spec = {"kind": kind, "dtype": dtype, "layout": layout, "grad": grad, "n": n}
    if kind in ("conv", "conv_transpose"):
        B, C, O = draw(st.integers(0, 2)), draw(st.integers(1, 3)), draw(st.integers(1, 3))
        g = draw(st.sampled_from((1, 1, 2)))
        C, O = C * g, O * g
        L = tuple(draw(st.integers(1, 6)) for _ in range(n))
        k = tuple(draw(st.integers(1, 3)) for _ in range(n))
        spec["x"] = draw(arrays(dtype, (B, C) + L))
        wshape = (O, C // g) + k if kind == "conv" else (C, O // g) + k
        spec["w"] = draw(arrays(dtype, wshape, specials=0.0))
        spec["bias"] = draw(st.booleans())
        spec["kw"] = {"stride": draw(st.sampled_from((1, 1, 2, 0, -1))),
                      "padding": draw(st.sampled_from((0, 0, 1, -1))),
                      "dilation": draw(st.sampled_from((1, 1, 2, 0))), "groups": g}
    elif kind in ("pool", "adaptive"):
        B, C = draw(st.integers(0, 2)), draw(st.integers(1, 2))
        L = tuple(draw(st.integers(1, 7)) for _ in range(n))
        spec["x"] = draw(arrays(dtype, (B, C) + L))
        if kind == "pool":
            spec["op"] = draw(st.sampled_from(("max", "avg")))
            spec["kw"] = {"kernel_size": draw(st.integers(1, 3)),
                          "stride": draw(st.sampled_from((None, 1, 2, 0))),
                          "padding": draw(st.sampled_from((0, 0, 1))),
                          "ceil_mode": draw(st.booleans())}
            if n == 3 and spec["op"] == "max":
                spec["op"] = "avg"
        else:
            spec["op"] = draw(st.sampled_from(("avg", "max")))
            spec["out"] = tuple(draw(st.integers(1, 5)) for _ in range(n))
    elif kind == "softmax":
        shape = draw(shapes(0, 3, 0, 4))
        spec["x"] = draw(arrays(dtype, shape))
        spec["fn"] = draw(st.sampled_from(("softmax", "log_softmax")))
        spec["dim"] = draw(st.integers(-len(shape) - 1, max(len(shape), 0)))
        spec["sdtype"] = draw(st.sampled_from((None, None, "float64", "float32")))
    elif kind == "loss":
        fn = draw(st.sampled_from(("cross_entropy", "nll_loss", "binary_cross_entropy",
                                   "binary_cross_entropy_with_logits", "mse_loss")))
        N, C = draw(st.integers(0, 3)), draw(st.integers(1, 4))
        spec["fn"] = fn
        spec["x"] = draw(arrays(dtype, (N, C), low=0 if fn == "binary_cross_entropy" else -3,
                                high=1 if fn == "binary_cross_entropy" else 3))
        if fn in ("cross_entropy", "nll_loss"):
            tdt = draw(st.sampled_from(("int64",) * 4 + ("int32", "uint8", "float32")))
            t = np.random.default_rng(draw(st.integers(0, 99))).integers(0, C, size=(N,))
            if N and draw(st.booleans()):
                t[0] = -100  # ignore_index
            if N and draw(st.integers(0, 5)) == 0:
                t[-1] = C  # out of range
            spec["t"] = (t, tdt)
            spec["kw"] = {"reduction": draw(st.sampled_from(("mean", "sum", "none"))),
                          "label_smoothing": draw(st.sampled_from((0.0, 0.0, 0.1)))}
            if fn == "nll_loss":
                spec["kw"].pop("label_smoothing")
        else:
            spec["t"] = (draw(arrays("float32" if dtype not in ("float64",) else dtype,
                                     (N, C), low=0, high=1, specials=draw(
                                         st.sampled_from((0.0, 0.2))))), None)
            spec["kw"] = {"reduction": draw(st.sampled_from(("mean", "sum", "none")))}
    else:
        spec["fn"] = draw(st.sampled_from(_ACTIVATIONS))
        spec["x"] = draw(arrays(dtype, draw(shapes(0, 3, 0, 4))))
    return spec


def _nn_call(spec):
    def call(lib):
        F = lib.nn.functional
        x = with_layout(lib, spec["x"], spec["layout"])
        if spec["grad"] and x.dtype.is_floating_point:
            x = x.detach().requires_grad_(True)
        kind, n = spec["kind"], spec["n"]
        if kind in ("conv", "conv_transpose"):
            w = with_layout(lib, spec["w"], "contig")
            b = lib.ones(w.shape[0] if kind == "conv" else w.shape[1] * spec["kw"]["groups"],
                         dtype=w.dtype) if spec["bias"] else None
            kw = dict(spec["kw"])
            fn = getattr(F, f"{kind}{n}d")
            if kind == "conv_transpose":
                kw["output_padding"] = 0
            out = fn(x, w, b, **kw)
        elif kind == "pool":
            out = getattr(F, f"{spec['op']}_pool{n}d")(x, **spec["kw"])
        elif kind == "adaptive":
            out = getattr(F, f"adaptive_{spec['op']}_pool{n}d")(x, spec["out"])
        elif kind == "softmax":
            out = getattr(F, spec["fn"])(x, spec["dim"], dtype=_dt(lib, spec["sdtype"]))
        elif kind == "loss":
            ta, tdt = spec["t"]
            t = with_layout(lib, ta, "contig")
            if tdt is not None:
                t = t.to(getattr(lib, tdt))
            out = getattr(F, spec["fn"])(x, t, **spec["kw"])
        else:
            out = getattr(lib, spec["fn"])(x) if spec["fn"] in ("sigmoid", "tanh") else \
                getattr(F, spec["fn"])(x)
        if spec["grad"] and getattr(out, "requires_grad", False):
            w = lib.from_numpy(np.linspace(0.5, 1.5, out.numel()).reshape(tuple(out.shape)))
            (g,) = lib.autograd.grad((out * w).sum(), x)
            return out, g
        return out
    return call


def _has_huge(a):
    """Whether ``a`` holds finite values so large that adding two of them overflows."""
    if a.dtype.kind not in "fc" or not a.size:
        return False
    with np.errstate(all="ignore"):
        mag = np.abs(a.astype(np.complex128 if a.dtype.kind == "c" else np.float64))
        return bool((np.isfinite(mag) & (mag > np.finfo(a.dtype).max / 4)).any())


@fuzz_settings(NN_BUDGET)
@given(_nn_case())
def _fuzz_nn(spec):
    cls, detail = run_both(_nn_call(spec), 1e-6, 1e-5)
    kind = spec["kind"]
    op = {"conv": f"conv{spec['n']}d", "conv_transpose": f"conv_transpose{spec['n']}d",
          "pool": f"{spec.get('op')}_pool{spec['n']}d",
          "adaptive": f"adaptive_{spec.get('op')}_pool{spec['n']}d"}.get(kind) or spec["fn"]
    desc = {k: (f"<{v.dtype.name}{list(v.shape)}>" if isinstance(v, np.ndarray) else v)
            for k, v in spec.items()}
    if "t" in spec:
        desc["t"] = (spec["t"][0].tolist() if spec["t"][0].size < 8 else "...", spec["t"][1])
    desc["huge"] = _has_huge(spec["x"])
    NN_STATS.record(op, cls, detail, repr(desc)[:500])


def test_fuzz_factories_against_torch():
    _fuzz_factory()
    print(FACTORY_STATS.summary())
    assert not FACTORY_STATS.undocumented, FACTORY_STATS.failure_message()


def test_fuzz_nn_functional_against_torch():
    _fuzz_nn()
    print(NN_STATS.summary())
    assert not NN_STATS.undocumented, NN_STATS.failure_message()
