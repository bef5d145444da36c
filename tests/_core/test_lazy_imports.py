"""ml_dtypes (bfloat16, float8), scipy.special and scipy.fft are imported on first use, not
by ``import ember``: the lazy dtypes resolve when their NumPy type is first read, or when
anyone imports ml_dtypes (its arrays may then reach ember), and behave as before."""
import subprocess
import sys
import textwrap

import ml_dtypes
import numpy as np
import pytest
import torch

import ember
from ember._core import dtype as _dt


def test_a_late_dtype_resolves_on_its_first_np_read(monkeypatch):
    bf16 = np.dtype(ml_dtypes.bfloat16)
    monkeypatch.setattr(_dt, "_LATE", [])
    monkeypatch.setitem(_dt.FROM_NP, bf16, _dt.bfloat16)  # restored after the test
    late = _dt._LateDtype("bfloat16", _dt._FLOAT, 1, 2)
    assert type(late) is _dt._LateDtype and late.itemsize == 2 and late.is_floating_point
    assert repr(late) == "ember.bfloat16" and late.name == "bfloat16"
    assert late.np == bf16  # resolves: a plain dtype from here on, in the NumPy lookup table
    assert type(late) is _dt.dtype and late.np == bf16 and _dt.FROM_NP[bf16] is late
    assert _dt._LATE == [] and bf16 in _dt.NP_HALVES and bf16 in _dt.NP_NARROW_FLOATS
    assert _dt._MlDtypesHook not in sys.meta_path


def test_resolved_dtypes_and_tables():
    for d, itemsize in ((ember.bfloat16, 2), (ember.float8_e4m3fn, 1), (ember.float8_e5m2, 1)):
        assert type(d) is _dt.dtype and d.np == np.dtype(getattr(ml_dtypes, d.name))
        assert d.itemsize == itemsize and _dt.FROM_NP[d.np] is d
        assert d.np in _dt.NP_NARROW_FLOATS and (d.np in _dt.NP_HALVES) == (itemsize == 2)
    assert _dt.NP_HALVES == {np.dtype(np.float16), ember.bfloat16.np}


@pytest.mark.parametrize("name", ["float8_e4m3fn", "float8_e5m2"])  # the rest: test_dtype.py
def test_finfo_of_float8_matches_torch(name):
    e, t = ember.finfo(getattr(ember, name)), torch.finfo(getattr(torch, name))
    assert (e.bits, e.eps, e.max, e.min, e.tiny, e.resolution) == \
        (t.bits, t.eps, t.max, t.min, t.tiny, t.resolution)


_CHILD = textwrap.dedent("""
    import sys
    first = sys.argv[1]
    if first == "ml_dtypes":
        import ml_dtypes
    import numpy as np
    import ember
    import ml_dtypes  # after ember: through its hook, if ember has not imported it yet
    a = np.array([1.5, -2.25, 100.0], dtype=ml_dtypes.bfloat16)
    t = ember.from_numpy(a)
    assert t.dtype is ember.bfloat16, t.dtype
    assert (t * 2).dtype is ember.bfloat16
    assert (t * 2).float().tolist() == [3.0, -4.5, 200.0]
    f8 = ember.from_numpy(np.zeros(2, ml_dtypes.float8_e5m2))
    assert f8.dtype is ember.float8_e5m2
    assert ember.tensor([1, 2], dtype=ember.bfloat16).numpy().dtype == ml_dtypes.bfloat16
    assert ember.finfo(ember.bfloat16).eps == 2.0 ** -7
    print("ok")
""")


@pytest.mark.parametrize("first", ["ember", "ml_dtypes"])
def test_arrays_of_ml_dtypes_made_by_the_user_reach_ember(first):
    p = subprocess.run([sys.executable, "-c", _CHILD, first], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stderr[-3000:]


def test_import_ember_leaves_ml_dtypes_and_scipy_special_for_first_use():
    # ~0.6 of the ~0.9 CPU s ``import ember`` took with bytecode cached: a module that
    # imports one of these at its top undoes it (ember.dtype.NP_HALVES, ops._helpers.special)
    code = ("import sys, ember; print(sorted({'ml_dtypes', 'scipy.special', 'scipy.fft'}"
            " & set(sys.modules)))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout.strip() == "[]"
