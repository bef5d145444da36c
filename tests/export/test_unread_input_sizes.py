"""A program that uses an input only for its size (no operation reads the tensor):
torch.export keeps it a user input and reads its size with ``sym_size``; so does ember's
program, at every size, after save/load and in the lite runtime."""
import numpy as np
import pytest
import torch

import ember
import ember_lite
from ember.export import Dim, InputKind, export
from ember.export.sizes import sym_size


def _program(lib):
    class M(lib.nn.Module):
        def forward(self, x, y):
            return lib.zeros(x.shape[0] + y.shape[0]) + x.sum()
    return M()


def _export_both():
    x, y = np.arange(3, dtype=np.float32), np.ones(4, np.float32)
    t = torch.export.export(_program(torch), (torch.from_numpy(x), torch.from_numpy(y)),
                            dynamic_shapes=({0: torch.export.Dim("a")},
                                            {0: torch.export.Dim("b")}))
    e = export(_program(ember), (ember.from_numpy(x), ember.from_numpy(y)),
               dynamic_shapes=({0: Dim("a")}, {0: Dim("b")}))
    return t, e


def test_size_only_input_is_a_user_input_read_by_sym_size_as_torch():
    t, e = _export_both()
    kinds = [(s.kind.name, s.arg.name) for s in e.graph_signature.input_specs]
    assert kinds == [(s.kind.name, s.arg.name) for s in t.graph_signature.input_specs]
    assert [k for k, _ in kinds] == [InputKind.USER_INPUT.name] * 2
    # torch reads both sizes with aten.sym_size.int; so does ember, from the same inputs
    t_sizes = [n.args for n in t.graph.nodes
               if n.op == "call_function" and n.target is torch.ops.aten.sym_size.int]
    e_sizes = [n.args for n in e.graph.nodes
               if n.op == "call_function" and n.target is sym_size]
    assert sorted((a.name, d) for a, d in e_sizes) == sorted((a.name, d) for a, d in t_sizes)
    assert not [n for n in e.graph.nodes
                if n.op == "placeholder" and n.name not in ("x", "y")]


@pytest.mark.parametrize("n, m", [(5, 7), (9, 2), (3, 4)])
def test_size_only_input_runs_at_other_sizes(n, m, tmp_path):
    t, e = _export_both()
    rng = np.random.default_rng(n * 10 + m)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(m).astype(np.float32)
    want = t.module()(torch.from_numpy(x), torch.from_numpy(y)).numpy()
    assert want.shape == (n + m,)
    got = e.module()(ember.from_numpy(x), ember.from_numpy(y)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    path = tmp_path / "p.ember"
    ember.export.save(e, path)
    loaded = ember.export.load(path).module()(ember.from_numpy(x), ember.from_numpy(y))
    np.testing.assert_allclose(loaded.numpy(), want, rtol=1e-6, atol=1e-6)
    for c_kernels in (True, False):   # the generated C (where a compiler is) and NumPy
        lite, = ember_lite.load(path, c_kernels=c_kernels)(x, y)
        np.testing.assert_allclose(lite, want, rtol=1e-5, atol=1e-5)


def test_size_only_input_keeps_its_range_check():
    e = export(_program(ember), (ember.randn(3), ember.randn(4)),
               dynamic_shapes=({0: Dim("a")}, {0: Dim("b", max=6)}))
    with pytest.raises(RuntimeError, match="b|s1"):
        e.module()(ember.randn(3), ember.randn(9))
