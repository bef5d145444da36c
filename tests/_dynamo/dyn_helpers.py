"""Shared by the ember.compile behaviour tests: counting a compiled function's graphs in
ember and, as the oracle, in torch (``torch.compile`` with a counting backend)."""
import numpy as np

import ember
from ember._dynamo.testing import CompileCounter


def compiled(fn, **kw):
    """``(ember.compile(fn, backend=counter), counter)``."""
    cnt = CompileCounter()
    return ember.compile(fn, backend=cnt, **kw), cnt


def torch_compiled(fn, **kw):
    """The same for torch (a fresh Dynamo cache: torch keys its cache on code objects)."""
    import torch
    import torch._dynamo.testing
    torch._dynamo.reset()
    cnt = torch._dynamo.testing.CompileCounter()
    return torch.compile(fn, backend=cnt, **kw), cnt


def same(a, b, **tol):
    """``a`` (ember) equals ``b`` (ember or torch) in value, shape and dtype name."""
    a_np = a.detach().numpy() if hasattr(a, "detach") else np.asarray(a)
    b_np = b.detach().numpy() if hasattr(b, "detach") else np.asarray(b)
    assert a_np.shape == b_np.shape, (a_np.shape, b_np.shape)
    assert a_np.dtype == b_np.dtype, (a_np.dtype, b_np.dtype)
    np.testing.assert_allclose(a_np, b_np, **(tol or dict(rtol=1e-6, atol=1e-6)))
