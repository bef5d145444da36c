"""``grad_fn._saved_self`` / ``_saved_other`` / ``_saved_result`` as torch's: the saved
inputs themselves (None for one the wanted gradients do not read), a new tensor equal to
the output, AttributeError for what the node does not save, torch's error once backward
freed them, and the unpack hook run on every access (pytorch/tutorials'
autograd_saved_tensors_hooks_tutorial)."""
import numpy as np
import pytest
import torch

import ember


def _leaves(lib):
    a = lib.tensor([0.5, 1.5, 2.0], dtype=lib.float64, requires_grad=True)
    b = lib.tensor([1.0, -2.0, 3.0], dtype=lib.float64, requires_grad=True)
    c = lib.tensor([2.0, 2.0, 2.0], dtype=lib.float64)
    return a, b, c


def _facts(lib):
    a, b, c = _leaves(lib)
    y, e, s, z, w = a * b, a.exp(), a.sin(), a * c, a + b
    out = [y.grad_fn._saved_self is a, y.grad_fn._saved_other is b,
           e.grad_fn._saved_result is e, e.grad_fn._saved_result.tolist() == e.tolist(),
           s.grad_fn._saved_self is a, z.grad_fn._saved_other is c, z.grad_fn._saved_self]
    for node, name in ((w.grad_fn, "_saved_self"), (s.grad_fn, "_saved_foo"),
                       (e.grad_fn, "_saved_self"), (s.grad_fn, "_saved_result")):
        try:
            getattr(node, name)
            out.append("no error")
        except AttributeError as exc:
            out.append(str(exc))
    s.sum().backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        s.grad_fn._saved_self
    return out


def test_saved_attributes_match_torch():
    assert _facts(ember) == _facts(torch)


def test_each_access_runs_the_unpack_hook():
    got = {}
    for lib in (ember, torch):
        unpacked = []

        def unpack(x):
            unpacked.append(1)
            return x

        a, b, _ = _leaves(lib)
        with lib.autograd.graph.saved_tensors_hooks(lambda x: x * 1, unpack):
            y = (a * b).exp()
        mul = y.grad_fn.next_functions[0][0]
        vals = [mul._saved_self.tolist(), mul._saved_self.tolist(),
                y.grad_fn._saved_result.tolist()]
        got[lib.__name__] = (vals, len(unpacked))
    assert got["ember"] == got["torch"]
    np.testing.assert_allclose(got["ember"][0][2], np.exp([0.5, -3.0, 6.0]))
