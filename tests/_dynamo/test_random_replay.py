"""Random ops are graph nodes that draw when the graph runs, in eager's order (issue 18).

A draw from ember's default generator is recorded as a node whose kernel reads the
generator when the graph runs; anything else that uses the generator while the graph is
pending (``manual_seed``, a state read, a draw with its own Generator made at the call)
runs the graph first.  So a compiled program consumes the stream exactly as eager does,
and a step with dropout no longer runs its Python on every call: it replays.  Values are
compared bit for bit with eager for the "eager" and "aot_eager" backends (the same
kernels, in the same order) and to float32 rounding for "inductor" (its C kernels sum in
another order).
"""
import numpy as np
import pytest

import ember
import ember.nn.functional as F

from test_models import GPT, _gpt_batches, _lm_loss, _optimizer
from test_training_step_replay import python_runs  # noqa: F401  (the fixture)

BACKENDS = ["eager", "aot_eager", "inductor"]


@pytest.fixture(autouse=True)
def _fresh_caches():
    ember._dynamo.reset()
    yield


def _same(got, want, backend):
    if backend == "inductor":
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6)
    else:
        np.testing.assert_array_equal(got, want)


def _gpt_run(backend, steps=20):
    """20 AdamW steps of a GPT with dropout 0.1 (embedding, attention, MLP), reseeded at
    step 10 from outside the step; (losses, parameters, the step)."""
    ember.manual_seed(0)
    model = GPT(sdpa=False, dropout=0.1)
    opt = _optimizer("adamw", model.parameters())

    def step(x, y):
        opt.zero_grad()
        loss = _lm_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss
    if backend is not None:
        step = ember.compile(step, backend=backend)
    data = _gpt_batches()
    ember.manual_seed(1)
    losses = []
    for i in range(steps):
        if i == 10:
            ember.manual_seed(7)  # honoured by the replayed calls that follow
        x, y = data[i % len(data)]
        losses.append(float(step(x, y)))
    return np.array(losses), [p.detach().numpy().copy() for p in model.parameters()], step


@pytest.mark.parametrize("backend", BACKENDS)
def test_gpt_step_with_dropout_replays_as_eager(backend, python_runs):
    ref_losses, ref_params, _ = _gpt_run(None)
    assert python_runs[0] == 0
    losses, params, step = _gpt_run(backend)
    _same(losses, ref_losses, backend)
    for a, b in zip(params, ref_params):
        _same(a, b, backend)
    # the first step creates AdamW's state, the second makes the plan, 18 replay
    assert python_runs[0] == 2, step.cache.replay_reason
    assert step.cache.replay_plan.hits == 18
    assert step.cache.compiles == 2
    # the draws are graph nodes, not graph inputs drawn by the Python
    gm = step.cache.replay_plan.entry.gm
    assert any(getattr(n.target, "name", None) == "native_dropout" for n in gm.graph.nodes)


def _mixed(x):
    a = F.dropout(x, 0.5)
    b = ember.rand_like(x)
    c = ember.randn(3)
    return a * 2 + b, c.sum()


@pytest.mark.parametrize("backend", BACKENDS)
def test_draws_follow_the_stream_across_calls(backend, python_runs):
    x = ember.arange(1.0, 7.0).view(2, 3)
    cf = ember.compile(_mixed, backend=backend)
    for seed in (0, 0, 3, None, None, 5):
        if seed is not None:
            ember.manual_seed(seed)
        state = ember.get_rng_state()
        got = cf(x)
        after = ember.get_rng_state()
        ember.set_rng_state(state)
        want = _mixed(x)
        assert ember.equal(ember.get_rng_state(), after)  # the stream moved as eager's
        for g, w in zip(got, want):
            _same(g.numpy(), w.numpy(), backend)
    assert python_runs[0] == 1  # the plan comes from the first call


def test_a_draw_nothing_reads_still_moves_the_stream():
    def f(x):
        ember.rand(4)  # dead: eager draws it anyway
        return x * 2

    cf = ember.compile(f, backend="eager")
    for _ in range(3):
        ember.manual_seed(2)
        cf(ember.ones(2))
        got = ember.rand(3)
        ember.manual_seed(2)
        f(ember.ones(2))
        assert ember.equal(got, ember.rand(3))


def test_generator_use_inside_the_region_runs_the_pending_draws_first(python_runs):
    def f(x):
        a = F.dropout(x, 0.5)
        ember.manual_seed(11)  # after the mask was drawn, before anything else
        b = ember.rand_like(x)
        g = ember.Generator().manual_seed(4)
        c = ember.rand(2, generator=g)  # its own stream: drawn at the call
        return a + b, c

    x = ember.ones(4)
    cf = ember.compile(f, backend="eager")
    for seed in (0, 1, 2):
        ember.manual_seed(seed)
        got = cf(x)
        ember.manual_seed(seed)
        want = f(x)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g.numpy(), w.numpy())
    assert python_runs[0] == 3  # manual_seed inside: a graph break, never replayed
    report = ember._dynamo.explain(f)(x)
    assert any("random number generator" in r.reason for r in report.break_reasons)


def test_compiled_module_with_dropout_replays(python_runs):
    ember.manual_seed(0)
    model = GPT(sdpa=False, dropout=0.2)
    cf = ember.compile(model, backend="eager")
    x = _gpt_batches()[0][0]
    for seed in (3, 3, 4):
        ember.manual_seed(seed)
        got = cf(x)
        ember.manual_seed(seed)
        np.testing.assert_array_equal(got.detach().numpy(), model(x).detach().numpy())
    assert python_runs[0] == 1


def _same_tensor_twice(x):
    a = F.dropout(x, 0.5)
    b = F.dropout(x, 0.5)  # the same op on the same tensor: another draw, not a common value
    F.dropout(x, 0.5)      # unused: eager draws it all the same
    return a + b, ember.rand(2)


@pytest.mark.parametrize("backend", BACKENDS)
def test_equal_draws_are_neither_merged_nor_dropped(backend):
    x = ember.ones(6)
    cf = ember.compile(_same_tensor_twice, backend=backend)
    for seed in (1, 2):
        ember.manual_seed(seed)
        got = cf(x)
        ember.manual_seed(seed)
        want = _same_tensor_twice(x)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g.numpy(), w.numpy())
