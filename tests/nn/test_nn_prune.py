"""nn.utils.prune against torch: the same seeded program prunes the same entries, with
the same parameters, buffers, hooks, state_dict keys and errors (the pytorch/tutorials
pruning tutorial's calls)."""
import numpy as np
import pytest
import torch

import ember
import ember.nn.utils.prune  # noqa: F401  (as torch, not imported with nn.utils)
import torch.nn.utils.prune  # noqa: F401


class _LeNet:
    @staticmethod
    def make(lib):
        nn, F = lib.nn, lib.nn.functional

        class LeNet(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv1 = nn.Conv2d(1, 6, 3)
                self.conv2 = nn.Conv2d(6, 16, 3)
                self.fc1 = nn.Linear(16 * 5 * 5, 120)
                self.fc2 = nn.Linear(120, 84)
                self.fc3 = nn.Linear(84, 10)

            def forward(self, x):
                x = F.max_pool2d(F.relu(self.conv1(x)), 2)
                x = F.max_pool2d(F.relu(self.conv2(x)), 2)
                x = F.relu(self.fc1(x.flatten(1)))
                return self.fc3(F.relu(self.fc2(x)))
        lib.manual_seed(0)
        return LeNet()


def _tutorial(lib):
    """The pruning tutorial's calls; returns what it prints, as NumPy/strings."""
    prune = lib.nn.utils.prune
    out = []
    model = _LeNet.make(lib)
    m = model.conv1
    prune.random_unstructured(m, name="weight", amount=0.3)
    out.append([n for n, _ in m.named_parameters()])
    out.append([n for n, _ in m.named_buffers()])
    out.append(m.weight.detach().numpy().copy())
    prune.l1_unstructured(m, name="bias", amount=3)
    out.append(m.bias.detach().numpy().copy())
    out.append(len(m._forward_pre_hooks))
    prune.ln_structured(m, name="weight", amount=0.5, n=2, dim=0)
    out.append(m.weight.detach().numpy().copy())
    hook = [h for h in m._forward_pre_hooks.values() if h._tensor_name == "weight"][0]
    out.append([type(h).__name__ for h in hook])
    out.append(list(model.state_dict().keys()))
    prune.remove(m, "weight")
    out.append([n for n, _ in m.named_parameters()])
    out.append([n for n, _ in m.named_buffers()])
    out.append(m.weight.detach().numpy().copy())
    out.append(prune.is_pruned(model))
    # pruned values follow the original through the forward pre-hook
    with lib.no_grad():
        m.bias_orig.add_(1.0)
    y = model(lib.ones(2, 1, 28, 28) * 0.1)
    out.append(m.bias.detach().numpy().copy())
    y.sum().backward()
    out.append(("grad", m.bias_orig.grad.numpy().copy()))
    model = _LeNet.make(lib)
    params = [(model.conv1, "weight"), (model.conv2, "weight"), (model.fc1, "weight"),
              (model.fc2, "weight"), (model.fc3, "weight")]
    prune.global_unstructured(params, pruning_method=prune.L1Unstructured, amount=0.2)
    out.append([float((mod.weight == 0).sum()) for mod, _ in params])
    prune.random_structured(model.conv2, "weight", amount=2, dim=1)
    out.append(model.conv2.weight_mask.numpy().copy())
    prune.global_unstructured(params[:2], pruning_method=prune.RandomUnstructured, amount=0.1)
    out.append(model.conv2.weight_mask.numpy().copy())

    class FooBar(prune.BasePruningMethod):
        PRUNING_TYPE = "unstructured"

        def compute_mask(self, t, default_mask):
            mask = default_mask.clone()
            mask.view(-1)[::2] = 0
            return mask
    FooBar.apply(model.fc3, "bias")
    FooBar.apply(model.fc3, "bias")     # again: on what the first one kept
    out.append(model.fc3.bias_mask.numpy().copy())
    prune.identity(model.fc2, "bias")
    out.append(model.fc2.bias_mask.numpy().copy())
    out.append(FooBar().prune(lib.arange(6.0)).numpy().copy())
    imp = lib.arange(84.0).flip(0)
    prune.l1_unstructured(model.fc2, "bias", amount=0.25, importance_scores=imp)
    out.append(model.fc2.bias_mask.numpy().copy())
    return out


def test_pruning_tutorial_matches_torch():
    got, want = _tutorial(ember), _tutorial(torch)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        if isinstance(w, tuple):    # a gradient: sums in another order
            np.testing.assert_allclose(g[1], w[1], rtol=1e-5, atol=1e-7)
            assert ((g[1] == 0) == (w[1] == 0)).all()
        elif isinstance(w, np.ndarray):
            np.testing.assert_array_equal(g, w)
        else:
            assert g == w


@pytest.mark.parametrize("call, exc", [
    (lambda p, m: p.l1_unstructured(m, "weight", amount=1.5), ValueError),
    (lambda p, m: p.l1_unstructured(m, "weight", amount=-1), ValueError),
    (lambda p, m: p.l1_unstructured(m, "weight", amount="a"), TypeError),
    (lambda p, m: p.l1_unstructured(m, "weight", amount=100), ValueError),
    (lambda p, m: p.ln_structured(m, "bias", amount=1, n=2, dim=0), ValueError),
    (lambda p, m: p.ln_structured(m, "weight", amount=1, n=2, dim=2), IndexError),
    (lambda p, m: p.remove(m, "weight"), ValueError),
    (lambda p, m: p.l1_unstructured(m, "weight", 2, importance_scores=m.bias), AssertionError),
    (lambda p, m: p.L1Unstructured(2).prune(m.bias, importance_scores=m.weight), AssertionError),
    (lambda p, m: p.global_unstructured(3, p.L1Unstructured, amount=1), TypeError),
    (lambda p, m: p.global_unstructured([(m, "weight")], p.RandomStructured, amount=1),
     TypeError),
])
def test_pruning_errors_match_torch(call, exc):
    names = []
    for lib in (torch, ember):
        m = lib.nn.Linear(4, 3)
        with pytest.raises(exc):
            call(lib.nn.utils.prune, m)
        # a failed first pruning puts the parameter back (last, as torch re-registers it)
        names.append(([n for n, _ in m.named_parameters()], [n for n, _ in m.named_buffers()]))
    assert names[0] == names[1]


def test_pruned_weight_gradient_and_channels_last():
    for lib in (torch, ember):
        lib.manual_seed(3)
        conv = lib.nn.Conv2d(3, 4, 3)
        lib.nn.utils.prune.l1_unstructured(conv, "weight", amount=10)
        lib.nn.utils.prune.l1_unstructured(conv, "weight", amount=5)
        assert int((conv.weight_mask == 0).sum()) == 15
        conv(lib.ones(1, 3, 5, 5)).sum().backward()
        g = conv.weight_orig.grad
        assert bool(((g == 0) == (conv.weight_mask == 0)).all())
        # channels_last weights: the flat view of the scores fails, as torch's
        cl = lib.nn.Conv2d(3, 4, 3).to(memory_format=lib.channels_last)
        with pytest.raises(RuntimeError, match="view size is not compatible"):
            lib.nn.utils.prune.l1_unstructured(cl, "weight", amount=3)
        assert "weight" in dict(cl.named_parameters())
