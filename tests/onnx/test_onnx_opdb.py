"""Every op-database record through ember.onnx (its first sample, in float32 or its first
real dtype): the exported model, run by ONNX Runtime, equals ember eager -- or the export
fails clearly: ember.export cannot capture the program (data-dependent shapes, graph breaks:
its own errors), or `UnsupportedOperatorError` names an op with the reason it has no ONNX
form.  No record may export to a model that computes something else."""
import warnings

import numpy as np
import pytest
from onnx_helpers import run, session

import ember
import ember.onnx
from ember._dynamo.exc import Unsupported, UserError
from ember.onnx.errors import OnnxExporterError, UnsupportedOperatorError

from opdb.all import OPS
from opdb.core import to_lib

_REAL = ("float32", "float64", "int64", "bool")


def _dtype(op):
    return next((d for d in _REAL if d in op.dtypes), None)


def leaves(x, acc=None):
    """The NumPy arrays of a sample template (nested in tuples, lists, dicts), in order."""
    acc = [] if acc is None else acc
    if isinstance(x, np.ndarray):
        acc.append(x)
    elif isinstance(x, (list, tuple)):
        for y in x:
            leaves(y, acc)
    elif isinstance(x, dict):
        for y in x.values():
            leaves(y, acc)
    return acc


def rebuild(x, it):
    """The template ``x`` with its arrays replaced, in order, by the items of ``it``."""
    if isinstance(x, np.ndarray):
        return next(it)
    if isinstance(x, (list, tuple)):
        return type(x)(rebuild(y, it) for y in x) if type(x) in (list, tuple) else \
            type(x)(*[rebuild(y, it) for y in x])
    if isinstance(x, dict):
        return {k: rebuild(v, it) for k, v in x.items()}
    return x


def _first_sample(op):
    samples = list(op.samples(_dtype(op), np.random.default_rng(1234)))
    return samples[0] if samples else None


RECORDS = [pytest.param(op, id=op.name) for op in OPS if _dtype(op) and _first_sample(op)]


def _flat(out, acc):
    if isinstance(out, ember.Tensor):
        acc.append(out)
    elif isinstance(out, (list, tuple)):
        for o in out:
            _flat(o, acc)
    elif isinstance(out, dict):
        for o in out.values():
            _flat(o, acc)
    return acc


@pytest.mark.parametrize("op", RECORDS)
def test_record_exports_to_an_equal_model_or_fails_clearly(op):
    sample = _first_sample(op)
    template = (tuple(sample.args), dict(sample.kwargs))
    arrays = leaves(template)

    def fn(*tensors):
        args, kwargs = rebuild(template, iter(tensors))
        return op.call(ember, list(args), kwargs)

    def fresh():
        return [to_lib(ember, a) for a in arrays]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            expected = fn(*fresh())
        except Exception:  # noqa: BLE001 - an error sample: the export must fail too
            with pytest.raises(Exception):  # noqa: B017
                ember.onnx.export(fn, tuple(fresh()))
            return
        try:
            program = ember.onnx.export(fn, tuple(fresh()))
        except UnsupportedOperatorError as e:
            assert "to ONNX opset version" in str(e) and ": " in str(e).split("supported")[1]
            return
        except (UserError, Unsupported):
            return  # ember.export's own limits (named there)
        except OnnxExporterError as e:
            assert "not a tensor" in str(e) or "Python value" in str(e), str(e)
            return
    want = _flat(expected, [])
    got = run(session(program), *fresh())
    assert len(got) == len(want)
    for g, w in zip(got, want):
        w = w.detach().numpy()
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, w.shape, g.dtype, w.dtype)
        if w.dtype.kind in "fc":
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4, equal_nan=True)
        else:
            np.testing.assert_array_equal(g, w)
