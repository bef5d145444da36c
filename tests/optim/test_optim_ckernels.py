"""The C loops of SGD and Adam(W) (`ember._core.ckernels.optim`) give the NumPy kernels'
values bit for bit, and torch's within rounding; arrays they cannot take fall back."""
import itertools

import numpy as np
import pytest
import torch

import ember
from ember._core import ckernels
from ember._core.ckernels import optim as c_optim

# without a C compiler the loops decline every call and the NumPy kernels run
C_AVAILABLE = ckernels.status()["available"]

_SHAPES = (5000, 3, (40, 30), 0, 1)


def _run(lib, cls, options, dtype, steps=3, c_path=True, monkeypatch=None):
    rng = np.random.default_rng(0)
    ps = [lib.from_numpy(rng.standard_normal(s).astype(dtype)).requires_grad_()
          for s in _SHAPES]
    opt = getattr(lib.optim, cls)(ps, **options)
    if not c_path:
        monkeypatch.setattr(c_optim, "sgd_step", lambda *a, **k: False)
        monkeypatch.setattr(c_optim, "adam_step", lambda *a, **k: False)
    for _ in range(steps):
        for p in ps:
            p.grad = lib.from_numpy(rng.standard_normal(tuple(p.shape)).astype(dtype))
        opt.step()
    monkeypatch.undo()
    state = [v.detach().numpy().copy() for st in opt.state.values() for v in st.values()
             if isinstance(v, lib.Tensor)]
    return [p.detach().numpy().copy() for p in ps] + state


def _configs():
    sgd = dict(momentum=[0, 0.9], dampening=[0, 0.3], weight_decay=[0, 0.01],
               nesterov=[False, True], maximize=[False, True])
    for vals in itertools.product(*sgd.values()):
        o = dict(zip(sgd, vals))
        if not (o["nesterov"] and (o["momentum"] == 0 or o["dampening"] != 0)):
            yield "SGD", dict(o, lr=0.1)
    adam = dict(betas=[(0.9, 0.999), (0.3, 0.5)], weight_decay=[0, 0.1], amsgrad=[False, True],
                maximize=[False, True])
    for cls in ("Adam", "AdamW"):
        for vals in itertools.product(*adam.values()):
            yield cls, dict(zip(adam, vals), lr=1e-2)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("cls,options", list(_configs()))
def test_c_loops_equal_numpy_kernels_and_torch(cls, options, dtype, monkeypatch):
    calls = []
    for name in ("sgd_step", "adam_step"):
        real = getattr(c_optim, name)
        monkeypatch.setattr(c_optim, name, lambda *a, _f=real, **k: calls.append(_f(*a, **k))
                            or calls[-1])
    c = _run(ember, cls, options, dtype, monkeypatch=monkeypatch)
    assert calls and all(c is C_AVAILABLE for c in calls), "the C loop did not run as expected"
    numpy = _run(ember, cls, options, dtype, c_path=False, monkeypatch=monkeypatch)
    for a, b in zip(c, numpy):
        np.testing.assert_array_equal(a, b)
    ref = _run(torch, cls, options, dtype, monkeypatch=monkeypatch)
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    for a, b in zip(c, ref):
        np.testing.assert_allclose(a, b, **tol)


def test_arrays_the_loops_cannot_take_fall_back():
    x = np.ones(8, np.float32)
    g = np.ones(16, np.float32)[::2]  # not contiguous
    assert c_optim.sgd_step([x], [g], None, (), 0.1, 0, 0, 0, False, False) is False
    assert np.array_equal(x, np.ones(8, np.float32))
    xc = np.ones(8, np.complex64)
    assert c_optim.sgd_step([xc], [xc.copy()], None, (), 0.1, 0, 0, 0, False, False) is False
    step64 = np.zeros((), np.float64)  # a float64 step counter: the NumPy kernel's
    assert c_optim.adam_step([x], [x.copy()], [step64], [x.copy()], [x.copy()], None, 1e-3,
                             0.9, 0.999, 1e-8, 0, False, False) is False
