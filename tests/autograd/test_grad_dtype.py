"""Tensor.grad_dtype (torch 2.9+): a leaf's gradient dtype, against torch."""
import pytest
import torch

import ember

LIBS = pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])


def _outcome(fn):
    try:
        r = fn()
    except Exception as e:  # noqa: BLE001 - compared with torch's
        return type(e).__name__, str(e)
    return "ok", r


def _cases(lib):
    out = []
    w = lib.ones(2, requires_grad=True)
    out.append(str(w.grad_dtype))                       # the tensor's dtype by default
    w.grad_dtype = lib.float64
    (w * 3).sum().backward()                            # incoming gradients are cast
    out.append((str(w.grad.dtype), w.grad.tolist()))
    w.grad_dtype = None
    out.append(w.grad_dtype)
    (w.double() * 3).sum().backward()                   # None: accumulated as it comes
    out.append(str(w.grad.dtype))
    u = lib.ones(2, requires_grad=True)
    u.grad_dtype = None
    u.grad = lib.ones(2, dtype=lib.float64)             # any dtype may be assigned
    out.append(str(u.grad.dtype))
    v = lib.ones(2, dtype=lib.float64, requires_grad=True)
    out.append(_outcome(lambda: setattr(v, "grad", lib.ones(2))))
    v.grad_dtype = lib.float16
    out.append(_outcome(lambda: setattr(v, "grad", lib.ones(2))))
    out.append(_outcome(lambda: setattr(v, "grad_dtype", 3)))
    y = lib.ones(2, requires_grad=True) * 2
    out.append(_outcome(lambda: y.grad_dtype))
    out.append(_outcome(lambda: setattr(y, "grad_dtype", lib.float64)))
    def plain(v):
        if isinstance(v, str):
            return v.replace("torch.", "").replace("ember.", "")
        if isinstance(v, tuple):
            return tuple(plain(x) for x in v)
        return v
    return [plain(v) for v in out]


def test_grad_dtype_like_torch():
    assert _cases(ember) == _cases(torch)
