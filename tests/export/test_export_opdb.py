"""The op database through ember.export: each record's first sample per dtype, exported as
a function of its tensor arguments, run by ``ep.module()``, equals ember eager; exported
again with the first tensor's leading dim ``Dim.AUTO``, it runs at the example and, where
that dim stayed dynamic, at a size one larger (against eager at that size).

Records export cannot take are listed with the error they must give (asserted, not
skipped): ops whose output shape depends on the values (a data-dependent shape has no
symbol in ember yet).  A Python ``autograd.Function`` is traced through (its forward's ops),
as torch.export does."""
import warnings

import numpy as np
import pytest

import ember
from ember.export import Dim, export
from opdb.all import OPS
from opdb.core import to_lib
from opdb.sample_tensors import flat_tensors, rebuild, tensor_leaves

_LEFT_OUT = ("_out", "-out", "inplace", "setitem", "-train")
_DATA_SHAPE = (ember.export.UserError, "depends on the data|values of a tensor")
# export cannot take these (asserted): an output whose shape depends on the values has no
# symbol in ember yet (torch gives it an unbacked size)
CANNOT = {name: _DATA_SHAPE for name in (
    "masked_select", "nonzero", "nonzero_tuple", "argwhere", "where_cond_only", "unique",
    "Tensor.unique", "unique_consecutive", "bincount", "repeat_interleave_counts",
    "nn.functional.one_hot", "distributions.Binomial.sample",
    "distributions.Gamma.rsample", "linalg.lstsq-gelsd", "linalg.lstsq-gelss")}
# renorm_'s sample reads the autograd history of the tensor it writes in place
CANNOT["Tensor.renorm_"] = (ember.export.UserError, "autograd history was needed")




def _close(op, dtype, got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        a, b = np.asarray(g._data), np.asarray(w._data)
        assert a.shape == b.shape and a.dtype == b.dtype, (op.name, a.shape, b.shape)
        if b.dtype.kind in "fcV":
            half = dtype in ("float16", "bfloat16")
            rtol = op.half_rtol * 2 if half else max(op.rtol, 1e-5) * 10
            atol = op.half_atol * 2 if half else max(op.atol, 1e-5) * 10
            ct = np.complex128 if b.dtype.kind == "c" else np.float64
            np.testing.assert_allclose(a.astype(ct), b.astype(ct), rtol=rtol, atol=atol,
                                       equal_nan=True, err_msg=f"{op.name} {dtype}")
        else:
            np.testing.assert_array_equal(a, b, err_msg=f"{op.name} {dtype}")


def _grown(t):
    """``t`` one larger along dim 0 (its last slice repeated)."""
    a = np.asarray(t._data)
    idx = np.minimum(np.arange(a.shape[0] + 1), a.shape[0] - 1)
    return ember.tensor(np.take(a, idx, axis=0))


def _run(op, dtype):
    s = next(iter(op.samples(dtype, np.random.default_rng(0))), None)
    if s is None:
        return
    args = tuple(to_lib(ember, a) for a in s.args)
    kwargs = {k: to_lib(ember, v) for k, v in s.kwargs.items()}
    ts = []
    tensor_leaves((args, kwargs), ts)
    ts = [t.detach() for t in ts]

    def fn(*xs):
        a, k = rebuild((args, kwargs), iter(xs))
        return tuple(flat_tensors(op.call(ember, a, k)) or ())

    def seeded(f, *xs):
        ember.manual_seed(0)   # random ops draw in the program as eagerly: same numbers
        return f(*xs)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            want = seeded(fn, *ts)
        except Exception:  # noqa: BLE001 - a sample eager rejects is test_opdb's business
            return
        if not want or any(t.dtype.is_complex for t in ts):
            return
        ep = export(fn, tuple(ts))
        _close(op, dtype, seeded(ep.module(), *ts), want)
        if not ts or ts[0].ndim == 0 or ts[0].shape[0] < 2:
            return
        ep = export(fn, tuple(ts), dynamic_shapes=({0: Dim.AUTO},) + (None,) * (len(ts) - 1))
        _close(op, dtype, seeded(ep.module(), *ts), want)
        grown = ts[0].shape[0] + 1
        if any(r.lower <= grown <= r.upper for r in ep.range_constraints.values()):
            bigger = [_grown(ts[0])] + ts[1:]
            try:
                again = seeded(fn, *bigger)
            except Exception:  # noqa: BLE001 - the op's other arguments fix the size
                return
            _close(op, dtype, seeded(ep.module(), *bigger), again)


def _records():
    return [op for op in OPS if not any(k in op.name for k in _LEFT_OUT)
            and not op.name.startswith("optim.")]


@pytest.mark.parametrize("op", _records(), ids=lambda o: o.name)
def test_opdb_through_export(op):
    if op.name in CANNOT:
        exc, pattern = CANNOT[op.name]
        with pytest.raises(exc, match=pattern):
            for dtype in op.dtypes:
                _run(op, dtype)
        return
    for dtype in op.dtypes:
        _run(op, dtype)
