"""export traces through a custom autograd.Function's forward, as torch.export does: the
program holds the forward's ops (its Python backward is not part of an inference program)."""
import numpy as np
import torch

import ember


def _model(lib):
    class SignST(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sign()

        @staticmethod
        def backward(ctx, g):
            return g

    class M(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lib.nn.Linear(3, 3)

        def forward(self, x):
            return SignST.apply(self.lin(x)) + 1
    lib.manual_seed(0)
    return M()


def _targets(ep):
    return [getattr(n.target, "_opname", None) or n.target.name
            for n in ep.graph.nodes if n.op == "call_function"]


def test_export_inlines_the_forward_like_torch():
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    ep_t = torch.export.export(_model(torch), (torch.from_numpy(x),))
    ep_e = ember.export.export(_model(ember), (ember.from_numpy(x),))
    assert _targets(ep_e) == _targets(ep_t) == ["linear", "sign", "add"]
    np.testing.assert_allclose(ep_e.module()(ember.from_numpy(x)).detach().numpy(),
                               ep_t.module()(torch.from_numpy(x)).detach().numpy(), rtol=1e-6)
