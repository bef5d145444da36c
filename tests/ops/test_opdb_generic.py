"""Generic tests over the op database (tests/opdb) beyond values and first derivatives:

* double backward: ``gradgradcheck`` on each differentiable record's first sample (float64,
  or complex128 for complex-only records);
* fx trace-and-replay: ``ember.fx.symbolic_trace`` of a function calling the record with
  its first sample's tensors as inputs, replayed on them, equals eager.

vmap over every record is tests/func/test_vmap_opdb.py.  Known gaps are listed below with
their reasons (xfail strict: a fix makes the test fail until the entry goes).
"""
import inspect
import re
import warnings

import numpy as np
import pytest

import ember
from opdb.all import OPS
from opdb.core import to_lib

SEED = 1234

# records whose double backward fails, with the reason
GRADGRAD_XFAIL = {}
# records whose second derivative torch does not implement: ember raises torch's error too
GRADGRAD_RAISES = {
    "nn.functional.ctc_loss": "derivative for aten::_ctc_loss_backward is not implemented",
}

# records fx cannot trace, as torch.fx cannot: Python control flow or unpacking on traced
# values, objects that need real tensors, or checks that run at call time
_NDIM_BRANCH = "the record's fn branches on A.ndim (`_sym`): control flow on a Proxy"
_MODULE = "the record builds an nn module inside the traced function: fx (like torch.fx) " \
          "only calls modules installed as submodules of the root"
_OPTIM = "an optimizer needs real parameters, not Proxies (torch.optim too)"
_DISTRIBUTION = "distributions validate and broadcast their parameters in Python " \
                "(broadcast_all iterates them): not traceable (torch.distributions neither)"
FX_XFAIL = {
    "autograd.Function": "Function.apply saves real tensors for backward (save_for_backward "
                         "rejects a Proxy; torch.fx cannot trace Function.apply either)",
    "masked_fill_": "the record expands to a shape read from a Proxy (iterated in Python)",
    "lu_unpack": "the record star-unpacks lu_factor's Proxy result: its arity is unknown "
                 "while tracing",
    "linalg.cholesky": _NDIM_BRANCH, "linalg.cholesky_ex": _NDIM_BRANCH,
    "cholesky": _NDIM_BRANCH, "Tensor.cholesky": _NDIM_BRANCH, "linalg.eigh": _NDIM_BRANCH,
    "linalg.eigvalsh": _NDIM_BRANCH,
    **{n: _MODULE for n in ("nn.LSTM", "nn.LSTM-2layer-bidirectional-batch_first", "nn.GRU",
                            "nn.GRU-2layer-bidirectional", "nn.LSTMCell", "nn.GRUCell")},
    "distributions.Gamma.rsample": _DISTRIBUTION,
    "distributions.Binomial.sample": _DISTRIBUTION,
    "_standard_gamma_grad": "calls the private registry operator directly: only public "
                            "functions and methods speak the fx protocol",
    "meshgrid_default": "the record asserts a warning when meshgrid is called: tracing records "
                        "the call without running it",
}
# records whose fn asserts that an in-place or out= call returned the very object it was
# given (``assert r is out``): a traced in-place call yields a new Proxy node (as in torch.fx)
_IDENTITY_CHECK = re.compile(r"assert r(\[0\])? is ")
_IDENTITY = "the record asserts `result is argument` for an in-place/out= call: a traced " \
            "call returns a new Proxy"


def _fx_reason(op):
    if op.name in FX_XFAIL:
        return FX_XFAIL[op.name]
    if callable(op.fn) and _IDENTITY_CHECK.search(inspect.getsource(op.fn)):
        return _IDENTITY
    if op.name.startswith("optim."):
        return _OPTIM
    return None


def _flatten(out):
    if isinstance(out, (tuple, list)):
        return [y for x in out for y in _flatten(x)]
    return [out]


def _leaves(x, acc):
    if isinstance(x, np.ndarray):
        acc.append(x)
    elif isinstance(x, (list, tuple)):
        for y in x:
            _leaves(y, acc)
    elif isinstance(x, dict):
        for y in x.values():
            _leaves(y, acc)
    return acc


def _rebuild(x, it):
    if isinstance(x, np.ndarray):
        return next(it)
    if isinstance(x, list):
        return [_rebuild(y, it) for y in x]
    if isinstance(x, tuple):
        return tuple(_rebuild(y, it) for y in x)
    if isinstance(x, dict):
        return {k: _rebuild(v, it) for k, v in x.items()}
    return x


def _dtype(op):
    if "float64" in op.dtypes or "float32" in op.dtypes:
        return "float64"
    return "complex128" if "complex128" in op.dtypes else op.dtypes[0]


def _marks(table, name):
    reason = table.get(name)
    return [pytest.mark.xfail(reason=reason, strict=True)] if reason else []


# ---- double backward ------------------------------------------------------------------------

# inputs beyond this many elements stay constant: the numerical Hessian costs two backward
# passes per input element, and the first derivative's checks already cover every input
MAX_CHECKED = 48


def _differentiable_sample(op):
    """The first sample that runs with a non-empty floating input; the positions (into the flattened
    arrays of args and kwargs) of the inputs to check."""
    rng = np.random.default_rng(SEED)
    for s in op.samples(_dtype(op), rng):
        template = (tuple(s.args), dict(s.kwargs))
        arrays = _leaves(template, [])
        wanted = set()
        for i, a in enumerate(s.args):
            if s.grad_args is None or i in s.grad_args:
                wanted |= {id(x) for x in _leaves(a, [])}
        idx, total = [], 0
        for k, a in enumerate(arrays):
            if id(a) in wanted and a.dtype.kind in "fc" and a.size:
                if idx and total + a.size > MAX_CHECKED:
                    break
                idx.append(k)
                total += a.size
        if idx and _runs(op, template, arrays):
            return template, arrays, idx
    return None


def _runs(op, template, arrays):
    """False for an error sample (test_opdb checks that torch rejects it too)."""
    args, kwargs = _rebuild(template, iter(_tensors(arrays)))
    try:
        op.call(ember, list(args), kwargs)
    except Exception:  # noqa: BLE001
        return False
    return True


def _gradgrad_params():
    for o in OPS:
        if o.grad and o.gradcheck and "grad" not in o.xfail and "gradcheck" not in o.xfail:
            yield pytest.param(o, id=o.name, marks=_marks(GRADGRAD_XFAIL, o.name))


@pytest.mark.parametrize("op", list(_gradgrad_params()))
def test_gradgradcheck(op):
    found = _differentiable_sample(op)
    assert found is not None, f"{op.name}: no differentiable sample"
    template, arrays, idx = found
    tensors = _tensors(arrays)

    def f(*xs):
        full = list(tensors)
        for k, x in zip(idx, xs):
            full[k] = x
        args, kwargs = _rebuild(template, iter(full))
        out = op.call(ember, list(args), kwargs)
        # gradgradcheck wants differentiable outputs only (indices, counts are dropped)
        return tuple(o for o in _flatten(out) if isinstance(o, ember.Tensor) and
                     (o.dtype.is_floating_point or o.dtype.is_complex))
    inputs = tuple(tensors[k].detach().requires_grad_(True) for k in idx)
    if op.name in GRADGRAD_RAISES:
        with pytest.raises(RuntimeError, match=re.escape(GRADGRAD_RAISES[op.name])):
            ember.autograd.gradgradcheck(f, inputs, eps=1e-6, atol=1e-5, rtol=1e-3)
        return
    assert ember.autograd.gradgradcheck(f, inputs, eps=1e-6, atol=1e-5, rtol=1e-3)


# ---- fx trace and replay ----------------------------------------------------------------------

def _traceable(op, template, n):
    """A function of ``n`` named tensor parameters calling the record (fx names placeholders
    after parameters, so a *args function would not do)."""
    names = ", ".join(f"t{i}" for i in range(n))
    src = f"def traced({names}):\n    return _run([{names}])\n"

    def _run(tensors):
        args, kwargs = _rebuild(template, iter(tensors))
        return op.call(ember, list(args), kwargs)
    scope = {"_run": _run}
    exec(src, scope)  # noqa: S102 - a fixed template: only the arity varies
    return scope["traced"]


def _fx_params():
    for o in OPS:
        reason = _fx_reason(o)
        marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
        yield pytest.param(o, id=o.name, marks=marks)


def _tensors(arrays):
    return [ember.from_numpy(np.array(a)) for a in arrays]


@pytest.mark.parametrize("op", list(_fx_params()))
def test_fx_trace_replay_matches_eager(op):
    rng = np.random.default_rng(SEED)
    s = next(iter(op.samples(_dtype(op), rng)))
    template = (tuple(s.args), dict(s.kwargs))
    arrays = _leaves(template, [])
    fn = _traceable(op, template, len(arrays))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ember.manual_seed(0)  # random records: eager and replay draw the same stream
        try:
            want = fn(*_tensors(arrays))
        except Exception as exc:  # noqa: BLE001 - an error sample: trace or replay raises too
            with pytest.raises(type(exc)):
                ember.fx.symbolic_trace(fn)(*_tensors(arrays))
            return
        gm = ember.fx.symbolic_trace(fn)
        ember.manual_seed(0)
        got = gm(*_tensors(arrays))
    got, want = _flatten(got), _flatten(want)
    assert len(got) == len(want), f"{len(got)} outputs replayed vs {len(want)} eager"
    for j, (g, w) in enumerate(zip(got, want)):
        if isinstance(w, ember.Tensor):
            assert isinstance(g, ember.Tensor), f"output {j}: {type(g).__name__}"
            assert g.dtype == w.dtype and g.shape == w.shape, \
                f"output {j}: {g.dtype}{tuple(g.shape)} vs eager {w.dtype}{tuple(w.shape)}"
            np.testing.assert_allclose(np.asarray(g._data), np.asarray(w._data), rtol=1e-6,
                                       atol=1e-7, equal_nan=True, err_msg=f"output {j}")
        else:
            assert g == w or (g != g and w != w), f"output {j}: {g!r} vs eager {w!r}"
