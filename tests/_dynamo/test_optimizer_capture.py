"""config.capture_optimizer_updates: optimizer.step() inside a compiled region is recorded
through the fused updates' functional decompositions (no graph break at the update), and
training gives eager's parameters and optimizer state."""
import numpy as np
import pytest

import ember
import ember.nn as nn
from ember._dynamo import config


def _model():
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3))


@pytest.mark.parametrize("make_opt", [
    lambda p: ember.optim.SGD(p, lr=0.1, momentum=0.9),
    lambda p: ember.optim.Adam(p, lr=0.01),
    lambda p: ember.optim.AdamW(p, lr=0.01, weight_decay=0.1),
], ids=["sgd_momentum", "adam", "adamw"])
@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_captured_optimizer_step_equals_eager(make_opt, backend, monkeypatch):
    monkeypatch.setattr(config, "capture_optimizer_updates", True)
    m1, m2 = _model(), _model()
    o1, o2 = make_opt(m1.parameters()), make_opt(m2.parameters())
    ember.manual_seed(1)
    x, y = ember.randn(16, 6), ember.randint(0, 3, (16,))

    def step(m, opt):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(m(x), y)
        loss.backward()
        opt.step()
        return loss

    compiled = ember.compile(step, backend=backend)
    breaks = []
    for _ in range(5):
        l1 = step(m1, o1)
        l2 = compiled(m2, o2)
        np.testing.assert_allclose(l2.item(), l1.item(), rtol=1e-5)
    for a, b in zip(m1.parameters(), m2.parameters()):
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-4, atol=1e-5)
    for s1, s2 in zip(o1.state.values(), o2.state.values()):
        for k in s1:
            np.testing.assert_allclose(np.asarray(s2[k]), np.asarray(s1[k]), rtol=1e-4,
                                       atol=1e-6)
    report = ember._dynamo.explain(step)(m2, o2)
    assert not any("_step" in str(r) for r in report.break_reasons), report.break_reasons
    _ = breaks
