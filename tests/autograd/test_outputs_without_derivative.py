"""Ops whose outputs require grad in torch although torch has no derivative for them:
ember's outputs require grad too, and backward raises torch's error (type and message)."""
import warnings

import pytest
import torch

import ember
from ember._core.op import REGISTRY


def _gamma_grad(lib, a, x):
    if lib is torch:
        return torch._standard_gamma_grad(a, x)
    return REGISTRY["standard_gamma_grad"](a, x)


def _spd(lib):
    a = lib.tensor([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]], dtype=lib.float64)
    return a.requires_grad_()


def _x(lib):
    return lib.tensor([1.0, 2.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)


CASES = {
    "unique": lambda lib: lib.unique(_x(lib)),
    "unique_inverse_counts": lambda lib: lib.unique(_x(lib), return_inverse=True,
                                                    return_counts=True),
    "unique_dim": lambda lib: lib.unique(_x(lib), dim=0),
    "Tensor.unique": lambda lib: _x(lib).unique(sorted=False),
    "unique_consecutive": lambda lib: lib.unique_consecutive(_x(lib), return_counts=True),
    "unique_consecutive_dim": lambda lib: lib.unique_consecutive(_x(lib), dim=0),
    "bincount_weights": lambda lib: lib.bincount(lib.tensor([0, 1, 1, 3]), weights=_x(lib)),
    "histogram": lambda lib: lib.histogram(_x(lib), 3),
    "histogram_edges_tensor": lambda lib: lib.histogram(
        _x(lib), lib.tensor([0.0, 1.5, 4.0], dtype=lib.float64)),
    "histogram_weight": lambda lib: lib.histogram(_x(lib).detach(), 3, weight=_x(lib)),
    "ldl_factor": lambda lib: lib.linalg.ldl_factor_ex(_spd(lib)),
    "ldl_solve": lambda lib: lib.linalg.ldl_solve(
        *lib.linalg.ldl_factor(_spd(lib)), lib.ones(3, 1, dtype=lib.float64)),
    "standard_gamma_grad": lambda lib: _gamma_grad(lib, _x(lib), _x(lib).detach()),
    "histc": lambda lib: lib.histc(_x(lib), 3),
    "histogramdd": lambda lib: lib.histogramdd(_x(lib).reshape(2, 2), 3)[0],
    "histogramdd_edges": lambda lib: lib.histogramdd(_x(lib).reshape(2, 2), [2, 3])[1],
    "histogramdd_bins_tensors": lambda lib: lib.histogramdd(
        _x(lib).reshape(2, 2), [lib.tensor([0.0, 1.5, 4.0], dtype=lib.float64)] * 2)[0],
}


def _outcome(lib, name):
    out = CASES[name](lib)
    outs = tuple(out) if isinstance(out, tuple) else (out,)
    flags = tuple(t.requires_grad for t in outs)
    try:
        outs[0].sum().backward()
        err = None
    except (RuntimeError, NotImplementedError) as e:
        err = (type(e).__name__, str(e))
    return flags, err


@pytest.mark.parametrize("name", sorted(CASES))
def test_requires_grad_and_backward_error_like_torch(name):
    assert _outcome(ember, name) == _outcome(torch, name)


def test_no_grad_mode_leaves_them_without_grad():
    for lib in (torch, ember):
        with lib.no_grad():
            assert not lib.unique(_x(lib)).requires_grad
            assert not lib.histogram(_x(lib), 3)[0].requires_grad


def test_nextafter_gradient_like_torch():
    grads = []
    for lib in (torch, ember):
        x = lib.tensor([1.0, 2.0, 3.0, -1.0], requires_grad=True)
        y = lib.tensor([0.0, 5.0, 3.0, -1.0], requires_grad=True)
        lib.nextafter(x, y).backward(lib.tensor([1.0, 2.0, 3.0, 4.0]))
        grads.append((x.grad.tolist(), y.grad.tolist()))
    assert grads[0] == grads[1] == ([1.0, 2.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0])


def test_nextafter_forward_mode():
    # torch's formula (torch.func.jvp cannot run here: its jvp decompositions need TorchScript)
    x = ember.tensor([1.0, 2.0, 3.0])
    y = ember.tensor([0.0, 2.0, 4.0])
    _, t = ember.func.jvp(lambda a: ember.nextafter(a, y), (x,), (ember.tensor([1.0, 2.0, 3.0]),))
    assert t.tolist() == [1.0, 0.0, 3.0]


def _dual_x(lib):
    return lib.tensor([1.0, 2.0, 2.0, 3.0], dtype=lib.float64)


FORWARD_CASES = {
    "heaviside": lambda lib, d: lib.heaviside(d, lib.tensor(0.5, dtype=lib.float64)),
    "unique": lambda lib, d: lib.unique(d),
    "unique_dim": lambda lib, d: lib.unique(d, dim=0),
    "unique_consecutive": lambda lib, d: lib.unique_consecutive(d, return_counts=True),
    "bincount_weights": lambda lib, d: lib.bincount(lib.tensor([0, 1, 1, 3]), weights=d),
    "histogram": lambda lib, d: lib.histogram(d, 3),
    "histogramdd": lambda lib, d: lib.histogramdd(d.reshape(2, 2), 3),
    "ldl_factor": lambda lib, d: lib.linalg.ldl_factor_ex(lib.diag(d)),
    "ldl_solve": lambda lib, d: lib.linalg.ldl_solve(
        *lib.linalg.ldl_factor(lib.diag(d).detach()), d[:, None]),
    "standard_gamma_grad": lambda lib, d: _gamma_grad(lib, d, _dual_x(lib)),
}


def _forward_error(lib, name):
    fwad = lib.autograd.forward_ad
    with warnings.catch_warnings(), fwad.dual_level():
        warnings.simplefilter("ignore", DeprecationWarning)  # torch's forward AD scripts a helper
        d = fwad.make_dual(_dual_x(lib), lib.ones(4, dtype=lib.float64))
        try:
            FORWARD_CASES[name](lib, d)
        except (RuntimeError, NotImplementedError) as e:
            return type(e).__name__, str(e)
    return None


@pytest.mark.parametrize("name", sorted(FORWARD_CASES))
def test_forward_ad_error_like_torch(name):
    err = _forward_error(torch, name)
    assert err is not None
    assert _forward_error(ember, name) == err
