"""ember.export.unflatten: an exported program with the module hierarchy restored, against
torch.export.unflatten (the test-only oracle): the module tree, state_dict keys, outputs of
the whole and of a submodule, buffer writes, and errors."""
import warnings

import numpy as np
import pytest
import torch

import ember


def _model(lib):
    class Sub(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lib.nn.Linear(3, 3)
            self.bn = lib.nn.BatchNorm1d(3)

        def forward(self, x):
            return lib.relu(self.bn(self.lin(x)))

    class M(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = Sub()
            self.b = Sub()
            self.out = lib.nn.Linear(3, 2)
            self.register_buffer("scale", lib.ones(2) * 2)

        def forward(self, x, y):
            return self.out(self.b(self.a(x)) + y) * self.scale
    return M()


def _pair(train=True):
    torch.manual_seed(0)
    tm, em = _model(torch), _model(ember)
    em.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    tm.train(train), em.train(train)
    return tm, em


def _torch_unflatten(tm, args):
    with warnings.catch_warnings():   # torch's own deprecation of LeafSpec checks
        warnings.simplefilter("ignore", FutureWarning)
        return torch.export.unflatten(torch.export.export(tm, args))


def _np(t):
    return t.detach().numpy()


def _inputs(seed):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((4, 3)).astype("f4") for _ in range(2)]


@pytest.mark.parametrize("train", [True, False])
def test_unflatten_tree_state_and_outputs_match_torch(train):
    tm, em = _pair(train)
    x, y = _inputs(1)
    tu = _torch_unflatten(tm, (torch.tensor(x), torch.tensor(y)))
    eu = ember.export.unflatten(ember.export.export(em, (ember.tensor(x), ember.tensor(y))))
    assert isinstance(eu, ember.export.UnflattenedModule)
    assert [n for n, _ in eu.named_modules()] == [n for n, _ in tu.named_modules()] == \
        [n for n, _ in em.named_modules()]
    assert list(eu.state_dict()) == list(tu.state_dict()) == list(em.state_dict())
    assert [n for n, _ in eu.named_parameters()] == [n for n, _ in tu.named_parameters()]
    for k, v in tu.state_dict().items():
        np.testing.assert_allclose(_np(eu.state_dict()[k]), _np(v))
    for seed in (2, 3):   # twice: the running statistics written by the first call are read
        x, y = _inputs(seed)
        to, eo = tu(torch.tensor(x), torch.tensor(y)), eu(ember.tensor(x), ember.tensor(y))
        np.testing.assert_allclose(_np(eo), _np(to), rtol=1e-5, atol=1e-5)
        for k, v in tu.state_dict().items():
            np.testing.assert_allclose(_np(eu.state_dict()[k]), _np(v), rtol=1e-5, atol=1e-6)
    # the eager module agrees too
    eo = em(ember.tensor(x), ember.tensor(y))
    np.testing.assert_allclose(_np(eo), _np(to), rtol=1e-5, atol=1e-5)


def test_unflattened_submodule_runs_its_own_forward():
    tm, em = _pair(True)
    x, y = _inputs(4)
    tu = _torch_unflatten(tm, (torch.tensor(x), torch.tensor(y)))
    eu = ember.export.unflatten(ember.export.export(em, (ember.tensor(x), ember.tensor(y))))
    from ember.export.unflatten import InterpreterModule
    assert isinstance(eu.a, InterpreterModule)
    assert eu.a.graph is not None and eu.a.lin.graph is not None
    # a submodule's graph reads its own parameters as attributes, its input as a placeholder
    assert [n.op for n in eu.a.lin.graph.nodes] == ["placeholder", "get_attr", "get_attr",
                                                   "call_function", "output"]
    to, eo = tu.a(torch.tensor(y)), eu.a(ember.tensor(y))
    np.testing.assert_allclose(_np(eo), _np(to), rtol=1e-5, atol=1e-5)
    # the submodule wrote its own BatchNorm statistics, as torch's does
    np.testing.assert_allclose(_np(eu.a.bn.running_mean), _np(tu.a.bn.running_mean),
                               rtol=1e-5, atol=1e-6)
    assert int(eu.a.bn.num_batches_tracked) == int(tu.a.bn.num_batches_tracked) == 1


def test_unflatten_errors_and_adapter():
    tm, em = _pair(False)
    x, y = _inputs(5)
    tu = _torch_unflatten(tm, (torch.tensor(x), torch.tensor(y)))
    eu = ember.export.unflatten(ember.export.export(em, (ember.tensor(x), ember.tensor(y))))
    with pytest.raises(TypeError):
        tu(torch.tensor(x))
    with pytest.raises(TypeError):
        eu(ember.tensor(x))
    with pytest.raises(TypeError, match="ExportedProgram"):
        ember.export.unflatten(em)
    with pytest.raises(TypeError):   # abstract, as torch's
        ember.export.FlatArgsAdapter()

    class DropExtra(ember.export.FlatArgsAdapter):
        def adapt(self, target_spec, input_spec, input_args, metadata=None, obj=None):
            return input_args[:target_spec.num_leaves]
    ea = ember.export.unflatten(ember.export.export(em, (ember.tensor(x), ember.tensor(y))),
                                DropExtra())
    out = ea(ember.tensor(x), ember.tensor(y), ember.tensor(y))
    assert ea.adapted
    np.testing.assert_allclose(_np(out), _np(tu(torch.tensor(x), torch.tensor(y))),
                               rtol=1e-5, atol=1e-5)


def test_shared_uncalled_and_sequential_submodules_as_torch():
    res = []
    for lib in (torch, ember):
        class S(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.l = lib.nn.Linear(2, 2)   # called twice
                self.act = lib.nn.ReLU()
                self.unused = lib.nn.Dropout()   # never called: still in the tree
                self.seq = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.Tanh())

            def forward(self, x, *, scale):
                return self.seq(self.act(self.l(self.l(x)))) * scale
        lib.manual_seed(0)
        m = S()
        if lib is ember:
            m.load_state_dict({k: ember.tensor(v.detach().numpy())
                               for k, v in res[0][3].items()})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ep = lib.export.export(m, (lib.ones(3, 2),), {"scale": lib.ones(2) * 3})
            u = lib.export.unflatten(ep)
        x = np.arange(6, dtype="f4").reshape(3, 2)
        out = u(lib.tensor(x), scale=lib.ones(2) * 3)
        res.append(([n for n, _ in u.named_modules()], list(u.state_dict()), _np(out),
                    m.state_dict()))
    assert res[1][0] == res[0][0] == ["", "l", "act", "unused", "seq", "seq.0", "seq.1"]
    assert res[1][1] == res[0][1]
    np.testing.assert_allclose(res[1][2], res[0][2], rtol=1e-5, atol=1e-6)
