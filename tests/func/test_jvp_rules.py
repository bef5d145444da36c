"""Explicit forward-mode (jvp) rules against the derived double-vjp tangents and torch.

Every operator call that the op database samples make (float64 and complex128 samples)
is recorded; for each call of an Op with an explicit ``jvp`` rule the rule's tangent
(`forward_ad.explicit_jvp`) must equal the tangent derived from the vjp
(`forward_ad.derived_jvp`), with all tangents given and with some of them None.  The
whole samples' forward-mode tangents must equal ``torch.func.jvp``'s.
"""
import functools
import warnings

import numpy as np
import pytest

import ember
from ember._core.dispatch import DispatchMode
from ember._core.op import REGISTRY
from ember._core.tensor import Tensor
from ember.autograd import forward_ad as fwad
from opdb.all import OPS as DB_OPS
from opdb.core import OpInfo, SampleInput, make, to_lib

SEED = 2024
MAX_SAMPLES = 4
MAX_CALLS = 40  # recorded calls per Op
DTYPES = ("float64", "complex128")


def _kw_samples(*kwargs_list, shapes=((3, 4), (), (2, 0, 3)), low=None, high=None):
    def gen(dtype, rng):
        for kw in kwargs_list:
            for sh in shapes:
                yield SampleInput((make(sh, dtype, rng, low=low, high=high),), dict(kw),
                                  name=f"{sh} {kw}")
        yield SampleInput((make((4, 5), dtype, rng, noncontig=True),), dict(kwargs_list[0]),
                          name="noncontig")
    return gen


def _linear_samples(dtype, rng):
    for xs, ws, bias in (((3, 4), (5, 4), True), ((2, 3, 4), (5, 4), False), ((4,), (2, 4), True),
                         ((3, 4), (4,), False)):
        b = (make(ws[:1], dtype, rng),) if bias else ()
        yield SampleInput((make(xs, dtype, rng), make(ws, dtype, rng)) + b, name=f"{xs} {ws}")


def _cast_samples(dtype, rng):
    x = make((3, 4), dtype, rng)
    for target in ("float32", "float64", "complex128"):
        yield SampleInput((x, target), name=target)


def _conv_backward_samples(dtype, rng):
    """(grad_output, input, weight) of a plain grouped and a transposed 2-d convolution."""
    for gs, xs, ws, geo in (((2, 4, 3, 2), (2, 4, 5, 4), (4, 2, 3, 3),
                             ((2, 2), (1, 1), (1, 1), False, (0, 0), 2)),
                            ((1, 6, 5, 4), (1, 2, 3, 2), (2, 3, 2, 2),
                             ((2, 2), (1, 0), (1, 1), True, (1, 1), 1))):
        yield SampleInput((make(gs, dtype, rng), make(xs, dtype, rng), make(ws, dtype, rng),
                           (gs[1],)) + geo + ((True, True, True),), name=f"{xs} {ws}")


def _conv_backward(lib, *args):
    if lib is ember:
        from ember.ops.nn.conv_ops import convolution_backward
        return convolution_backward(*args)
    return lib.ops.aten.convolution_backward(*args)


def _avg_pool_backward_samples(dtype, rng):
    """The gradient of a padded 2-d average pooling (count_include_pad) and of a ceil-mode
    1-d one with a divisor override, as avg_pool's vjp calls it."""
    yield SampleInput((make((2, 3, 3, 3), dtype, rng),),
                      {"in_spatial": (5, 5), "ks": (3, 3), "stride": (2, 2), "pad": (1, 1),
                       "ceil": False, "include_pad": True, "override": None}, name="2d")
    yield SampleInput((make((2, 3), dtype, rng),),
                      {"in_spatial": (5,), "ks": (2,), "stride": (2,), "pad": (0,),
                       "ceil": True, "include_pad": False, "override": 3}, name="1d ceil")


def _avg_pool_backward(lib, g, **params):
    return REGISTRY["avg_pool_backward"](g, **params)


def _pieces_op_samples(params):
    """split/split_with_sizes/unbind called as ops: public functions reach them only without
    a mode (under this file's recording mode they are slice/select views)."""
    def gen(dtype, rng):
        for shape in ((3, 6), (2, 6, 2)):
            yield SampleInput((make(shape, dtype, rng),), dict(params), name=f"{shape}")
        yield SampleInput((make((4, 6), dtype, rng, noncontig=True),), dict(params),
                          name="noncontig")
    return gen


def _pieces_op(name):
    return lambda lib, x, **params: REGISTRY[name](x, **params)


# nn activations and linear (not in the op database) and dtype casts with floating inputs
_F = "nn.functional."
EXTRA = [OpInfo(_F + n, samples=_kw_samples(*kw), dtypes=("float64",)) for n, kw in (
    ("relu", ({},)), ("hardtanh", ({}, {"min_val": -0.5, "max_val": 2.0})),
    ("leaky_relu", ({}, {"negative_slope": 0.2})), ("elu", ({}, {"alpha": 0.5})),
    ("gelu", ({}, {"approximate": "tanh"})), ("silu", ({},)),
    ("softplus", ({}, {"beta": 2.0, "threshold": 1.0})), ("mish", ({},)), ("logsigmoid", ({},)),
    ("hardsigmoid", ({},)), ("hardswish", ({},)), ("threshold", ({"threshold": 0.1, "value": 2.0},)),
    ("softshrink", ({}, {"lambd": 0.3})), ("hardshrink", ({}, {"lambd": 0.3})),
    ("softmax", ({"dim": 1}, {"dim": -1, "dtype": None}))
)] + [OpInfo(_F + "linear", samples=_linear_samples, dtypes=("float64", "complex128")),
      OpInfo("to_dtype", fn=lambda lib, x, d: x.to(getattr(lib, d)), samples=_cast_samples,
             dtypes=("float64", "complex128")),
      OpInfo("convolution_backward", fn=_conv_backward, samples=_conv_backward_samples,
             dtypes=("float64",)),
      OpInfo("avg_pool_backward", fn=_avg_pool_backward, samples=_avg_pool_backward_samples,
             dtypes=("float64",))] + [
    OpInfo(f"ops.{name}", fn=_pieces_op(name), samples=_pieces_op_samples(params),
           dtypes=("float64", "complex128"))
    for name, params in (("split", {"sizes": (2, 2, 2), "dim": 1}),
                         ("split_with_sizes", {"sizes": (1, 0, 5), "dim": 1}),
                         ("unbind", {"dim": 0}))]
OPS = DB_OPS + EXTRA
# operators reached by the samples that have no derivative at all in ember (no rule to compare)
# (a custom Function's ops have no vjp to derive from: their tangents come from the operators
# their Python runs, tested in tests/autograd/test_function_dispatch.py)
# (ops that torch gives no derivative, `no_derivative`, refuse forward AD as torch does, tested
# in tests/autograd/test_outputs_without_derivative.py)
RULE_OPS = sorted(name for name, op in REGISTRY.items() if op.jvp is not None and
                  not getattr(op.jvp, "from_body", False) and
                  not getattr(op.jvp, "no_derivative", False))


class _Record(DispatchMode):
    def __init__(self, calls, where):
        self.calls, self.where = calls, where

    def __ember_dispatch__(self, op, args, kwargs):
        out = op(*args, **kwargs)  # calls that raise are not recorded
        if getattr(op, "jvp", None) is not None and len(self.calls.get(op.name, ())) < MAX_CALLS:
            # snapshots: later in-place ops of the sample must not change the recorded inputs
            snap = tuple(ember.from_numpy(np.array(a._data)) if isinstance(a, Tensor) else a
                         for a in args)
            self.calls.setdefault(op.name, []).append((self.where, snap, dict(kwargs)))
        return out


def _samples(info):
    for dt in DTYPES:
        if dt not in info.dtypes:
            continue
        rng = np.random.default_rng(SEED)
        for n, s in enumerate(info.samples(dt, rng)):
            if n >= MAX_SAMPLES:
                break
            yield dt, s


@functools.lru_cache(maxsize=None)
def _recorded():
    """{op name: [(where, args, params)]} and {OpInfo name: rule ops its samples reach}."""
    calls, reach = {}, {}
    for info in OPS:
        for dt, s in _samples(info):
            where = f"{info.name}[{dt}] {s.name}"
            before = {k: len(v) for k, v in calls.items()}
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    with _Record(calls, where):
                        info.call(ember, list(to_lib(ember, tuple(s.args))), dict(s.kwargs))
            except Exception:  # noqa: BLE001 - samples that raise on purpose record nothing new
                pass
            new = {k for k, v in calls.items() if len(v) > before.get(k, 0)}
            if new:
                reach.setdefault(info.name, set()).update(new)
    return calls, reach


def _tangent(a, rng):
    t = rng.standard_normal(a.shape)
    if a._data.dtype.kind == "c":
        t = t + 1j * rng.standard_normal(a.shape)
    return ember.from_numpy(np.asarray(t).astype(a._data.dtype))


def _is_diff(a):
    return isinstance(a, Tensor) and a._data.dtype.kind in "fc"


def _patterns(args, rng):
    diff = [i for i, a in enumerate(args) if _is_diff(a)]
    full = [_tangent(a, rng) if i in diff else None for i, a in enumerate(args)]
    yield "all", full
    if len(diff) > 1:
        for skip in (diff[0], diff[-1]):
            yield f"no tangent for input {skip}", [None if i == skip else t
                                                   for i, t in enumerate(full)]


def _compare(got, want, where):
    if want is None:
        assert got is None, where
        return
    assert got is not None, f"{where}: explicit rule gave no tangent"
    assert got.dtype == want.dtype, f"{where}: dtype {got.dtype} vs {want.dtype}"
    assert tuple(got.shape) == tuple(want.shape), f"{where}: shape {got.shape} vs {want.shape}"
    np.testing.assert_allclose(np.asarray(got._data), np.asarray(want._data), rtol=1e-7,
                               atol=1e-9, equal_nan=True, err_msg=where)


@pytest.mark.parametrize("name", RULE_OPS)
def test_rule_matches_derived(name):
    op = REGISTRY[name]
    calls = _recorded()[0].get(name, [])
    assert calls, f"no op database sample reaches {name}: add one"
    rng = np.random.default_rng(SEED)
    checked = 0
    for where, args, params in calls:
        if not any(_is_diff(a) for a in args):
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = op(*args, **params)
            for label, ts in _patterns(args, rng):
                got = fwad.explicit_jvp(op, args, params, out, ts)
                want = fwad.derived_jvp(op, args, params, out, ts)
                assert len(got) == len(want)
                for j, (g, w) in enumerate(zip(got, want)):
                    _compare(g, w, f"{name} from {where}, {label}, output {j}")
                checked += 1
    assert checked, f"no sample of {name} has a floating input"


def _torch_params():
    for info in OPS:
        if isinstance(info.fn, str) and not info.fn.endswith("_"):
            yield pytest.param(info, id=info.name)


def _torch_fn(torch, info):
    if info.fn.startswith("Tensor."):
        return lambda *a, **kw: getattr(a[0], info.fn[7:])(*a[1:], **kw)
    mod = torch
    for part in info.fn.split("."):
        mod = getattr(mod, part)
    return mod


def _flat(x):
    if isinstance(x, (tuple, list)):
        return [y for z in x for y in _flat(z)]
    return [x]


def test_whole_samples_match_torch_func_jvp():
    import torch
    reach = _recorded()[1]
    compared, failures = 0, []
    for info in _torch_params():
        info = info.values[0]
        if info.name not in reach:
            continue
        rng = np.random.default_rng(SEED)
        for dt, s in _samples(info):
            idx = [i for i, a in enumerate(s.args) if isinstance(a, np.ndarray)
                   and a.dtype.kind in "fc" and (s.grad_args is None or i in s.grad_args)]
            if not idx:
                continue
            tans = {i: np.asarray(_tangent(ember.from_numpy(np.array(s.args[i])), rng)._data)
                    for i in idx}
            tans_given = {i: t for k, (i, t) in enumerate(tans.items()) if k < 2 or k % 2 == 0}
            where = f"{info.name}[{dt}] {s.name}"
            tfn = _torch_fn(torch, info)
            targs = list(to_lib(torch, tuple(s.args)))

            def f(*prim, targs=targs):
                a = list(targs)
                for i, p in zip(tans_given, prim):
                    a[i] = p
                return tfn(*a, **s.kwargs)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    _, want = torch.func.jvp(f, tuple(targs[i] for i in tans_given),
                                             tuple(torch.from_numpy(t.copy())
                                                   for t in tans_given.values()))
            except Exception:  # noqa: BLE001 - torch has no forward AD here: nothing to compare
                continue
            eargs = list(to_lib(ember, tuple(s.args)))
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    with fwad.dual_level():
                        for i, t in tans_given.items():
                            eargs[i] = fwad.make_dual(eargs[i], ember.from_numpy(t.copy()))
                        out = info.call(ember, eargs, dict(s.kwargs))
                        got = [fwad.unpack_dual(o).tangent if isinstance(o, Tensor) else None
                               for o in _flat(out)]
            except Exception as e:  # noqa: BLE001
                failures.append(f"{where}: {type(e).__name__}: {e}")
                continue
            for j, (g, w) in enumerate(zip(got, _flat(want))):
                if not isinstance(w, torch.Tensor) or not (w.is_floating_point() or
                                                           w.is_complex()):
                    continue
                w = w.detach().resolve_conj().resolve_neg().numpy()
                g = np.zeros(w.shape, w.dtype) if g is None else np.asarray(g._data)
                try:
                    np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-8, equal_nan=True)
                except AssertionError as e:
                    failures.append(f"{where} output {j}: {str(e)[:300]}")
            compared += 1
    assert not failures, "\n".join(failures)
    assert compared > 100, compared
