"""A compiled training step is one graph that replays (issue 18).

``loss.backward()`` on a loss of the pending graph is recorded into that graph (the ops'
vjps, ``.grad`` accumulated as the engine does), the optimizer update joins it, and the
replay fast path then runs later steps without their Python.  Each test compares with the
same steps run eagerly: losses, parameters, buffers, optimizer state and ``.grad``.  How
often the Python ran is counted from outside the step (the calls that took the capturing
path, ``CompiledFunction._run``): a probe inside it would itself be a side effect.
"""
import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember._dynamo import config
from ember._dynamo.eval_frame import CompiledFunction
from ember._dynamo.testing import CompileCounter, CompileCounterWithBackend

from test_models import MODELS, _build, _optimizer

BACKENDS = ["eager", "aot_eager", "inductor"]
RTOL, ATOL = 1e-4, 1e-5


@pytest.fixture(autouse=True)
def _fresh_caches():
    ember._dynamo.reset()
    yield


@pytest.fixture
def python_runs(monkeypatch):
    """How many calls of a compiled function ran its Python (did not replay)."""
    count = [0]
    orig = CompiledFunction._run

    def counted(self, args, kwargs, explain=None):
        count[0] += 1
        return orig(self, args, kwargs, explain)
    monkeypatch.setattr(CompiledFunction, "_run", counted)
    return count


def _state(model, opt):
    """Parameters, buffers, optimizer state and .grad, as NumPy copies."""
    out = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    for i, st in enumerate(opt.state.values()):
        for k, v in st.items():
            out[f"opt.{i}.{k}"] = np.array(v.numpy() if isinstance(v, ember.Tensor) else v)
    for n, p in model.named_parameters():
        out[f"grad.{n}"] = None if p.grad is None else p.grad.numpy().copy()
    return out


def _assert_same(a, b):
    assert a.keys() == b.keys()
    for k in a:
        if a[k] is None or b[k] is None:
            assert a[k] is None and b[k] is None, k
        else:
            np.testing.assert_allclose(b[k], a[k], rtol=RTOL, atol=ATOL, err_msg=k)


def _run(name, opt_kind, step_fn, compile_with=None, steps=20, between=None):
    """Train ``steps`` steps of ``step_fn(model, opt, loss_fn)``'s step, compiled with
    ``compile_with`` (a backend) or eagerly; ``between(i, model, opt)`` runs before step
    i.  Returns (losses, state, the compiled step or None)."""
    model = _build(name)
    _, batches, loss_fn, _ = MODELS[name]
    opt = _optimizer(opt_kind, model.parameters())
    step = step_fn(model, opt, loss_fn)
    if compile_with is not None:
        step = ember.compile(step, backend=compile_with)
    losses = []
    for i, (x, y) in enumerate(batches()[:steps]):
        if between is not None:
            between(i, model, opt)
        losses.append(float(step(x, y)))
    return np.array(losses), _state(model, opt), step if compile_with is not None else None


def _zero_first(model, opt, loss_fn):
    def step(x, y):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss
    return step


def _zero_last(model, opt, loss_fn):
    def step(x, y):
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss
    return step


# ---- the step replays and trains as eager does ------------------------------------------
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name,opt_kind", [
    ("mlp", "adamw"), ("mlp", "sgd_momentum"), ("cnn_bn_train", "sgd_momentum"),
    ("cnn_bn_train", "adamw"), ("gpt_sdpa", "adamw"), ("gpt_manual_softmax", "sgd_momentum")])
def test_training_step_replays_like_eager(name, opt_kind, backend, python_runs):
    ref_losses, ref_state, _ = _run(name, opt_kind, _zero_first)
    assert python_runs[0] == 0
    losses, state, step = _run(name, opt_kind, _zero_first, backend)
    np.testing.assert_allclose(losses, ref_losses, rtol=RTOL, atol=ATOL)
    _assert_same(ref_state, state)
    # the first call creates the optimizer state, the second is the steady step: from the
    # third on the Python does not run (SGD's first step makes its momentum buffers)
    assert python_runs[0] == 2, step.cache.replay_reason
    assert step.cache.replay_plan.hits == 18
    assert step.cache.compiles == 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_zero_grad_after_the_step(backend, python_runs):
    ref_losses, ref_state, _ = _run("mlp", "adamw", _zero_last)
    losses, state, step = _run("mlp", "adamw", _zero_last, backend)
    np.testing.assert_allclose(losses, ref_losses, rtol=RTOL, atol=ATOL)
    _assert_same(ref_state, state)
    assert all(k.startswith("grad.") is False or v is None for k, v in state.items())
    assert python_runs[0] == 2


def _accumulating(model, opt, loss_fn):
    def step(x, y):
        loss = loss_fn(model(x), y)
        loss.backward()  # into the .grad of the previous step: zero_grad runs every 3rd
        return loss
    return step


@pytest.mark.parametrize("backend", BACKENDS)
def test_gradient_accumulation_across_calls(backend, python_runs):
    def between(i, model, opt):
        if i % 3 == 0:
            if i:
                opt.step()
            opt.zero_grad()

    ref_losses, ref_state, _ = _run("mlp", "sgd_momentum", _accumulating, between=between)
    losses, state, step = _run("mlp", "sgd_momentum", _accumulating, backend,
                               between=between)
    np.testing.assert_allclose(losses, ref_losses, rtol=RTOL, atol=ATOL)
    _assert_same(ref_state, state)
    # calls after zero_grad (no .grad yet) and calls adding into .grad are two programs:
    # each replays once it has been seen with the state it leaves
    assert step.cache.replay_plan is not None
    assert python_runs[0] < 20


# ---- graphs and guards ------------------------------------------------------------------
def test_one_graph_per_step():
    counter = CompileCounter()
    model = _build("mlp")
    _, batches, loss_fn, _ = MODELS["mlp"]
    opt = _optimizer("adamw", model.parameters())
    step = ember.compile(_zero_first(model, opt, loss_fn), backend=counter)
    for x, y in batches()[:10]:
        step(x, y)
    # the first step (which creates the optimizer state) and the steady step
    assert counter.frame_count == 2
    report = ember._dynamo.explain(_zero_first(model, opt, loss_fn))(*batches()[0])
    assert report.graph_count == 1 and report.graph_break_count == 0, report.break_reasons


@pytest.mark.parametrize("backend", ["eager", "inductor"])
def test_changed_lr_recompiles_and_trains_like_eager(backend, python_runs):
    def between(i, model, opt):
        if i in (8, 14):
            for g in opt.param_groups:
                g["lr"] = g["lr"] * 0.5

    ref_losses, ref_state, _ = _run("mlp", "adamw", _zero_first, between=between)
    counter = CompileCounterWithBackend(backend)
    losses, state, step = _run("mlp", "adamw", _zero_first, counter, between=between)
    np.testing.assert_allclose(losses, ref_losses, rtol=RTOL, atol=ATOL)
    _assert_same(ref_state, state)
    # the first new lr runs the Python and compiles the lr as a graph input (a number
    # that varies); the replay then reads it from the param group: the second change
    # needs neither the Python nor a compile
    assert python_runs[0] == 3
    assert counter.frame_count == 3
    assert step.cache.replay_plan.hits == 11  # the plan made at step 9 ran steps 10-20


def test_replaced_optimizer_state_runs_the_python(python_runs):
    def between(i, model, opt):
        if i == 10:
            opt.load_state_dict(opt.state_dict())  # new state tensors, equal values

    ref_losses, ref_state, _ = _run("mlp", "adamw", _zero_first, between=between)
    losses, state, step = _run("mlp", "adamw", _zero_first, "eager", between=between)
    np.testing.assert_allclose(losses, ref_losses, rtol=RTOL, atol=ATOL)
    _assert_same(ref_state, state)
    assert python_runs[0] == 3


# ---- what falls back to the engine --------------------------------------------------------
@pytest.mark.parametrize("backend", ["eager", "inductor"])
def test_tensor_hook_runs_the_backward_eagerly(backend, python_runs):
    calls = []

    def between(i, model, opt):
        if i == 0:
            model.net[0].weight.register_hook(lambda g: calls.append(1) or g * 0.5)

    ref_losses, ref_state, _ = _run("mlp", "adamw", _zero_first, between=between)
    n_ref = len(calls)
    losses, state, step = _run("mlp", "adamw", _zero_first, backend, between=between)
    np.testing.assert_allclose(losses, ref_losses, rtol=RTOL, atol=ATOL)
    _assert_same(ref_state, state)
    assert n_ref == 20 and len(calls) == 40  # the hook ran on every compiled step too
    assert python_runs[0] == 20


def test_post_accumulate_grad_hook_runs_the_backward_eagerly(python_runs):
    seen = []

    def between(i, model, opt):
        if i == 0:
            model.net[4].bias.register_post_accumulate_grad_hook(
                lambda p: seen.append(float(p.grad.sum())))

    ref_losses, ref_state, _ = _run("mlp", "sgd_momentum", _zero_first, steps=6,
                                    between=between)
    ref_seen = list(seen)
    losses, state, _ = _run("mlp", "sgd_momentum", _zero_first, "eager", steps=6,
                            between=between)
    np.testing.assert_allclose(losses, ref_losses, rtol=RTOL, atol=ATOL)
    _assert_same(ref_state, state)
    np.testing.assert_allclose(seen[6:], ref_seen, rtol=RTOL, atol=ATOL)
    assert python_runs[0] == 6


def _retaining(model, opt, loss_fn):
    def step(x, y):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward(retain_graph=True)
        opt.step()
        return loss
    return step


def test_retain_graph_runs_the_backward_eagerly(python_runs):
    ref_losses, ref_state, _ = _run("mlp", "adamw", _retaining, steps=5)
    losses, state, _ = _run("mlp", "adamw", _retaining, "eager", steps=5)
    np.testing.assert_allclose(losses, ref_losses, rtol=RTOL, atol=ATOL)
    _assert_same(ref_state, state)
    assert python_runs[0] == 5


def test_capture_backward_off_keeps_the_graph_break(python_runs, monkeypatch):
    monkeypatch.setattr(config, "capture_backward", False)
    ref_losses, ref_state, _ = _run("mlp", "adamw", _zero_first, steps=5)
    losses, state, _ = _run("mlp", "adamw", _zero_first, "eager", steps=5)
    np.testing.assert_allclose(losses, ref_losses, rtol=RTOL, atol=ATOL)
    _assert_same(ref_state, state)
    assert python_runs[0] == 5


# ---- autograd semantics of the returned loss ---------------------------------------------
@pytest.mark.parametrize("backend", BACKENDS)
def test_second_backward_through_the_loss_raises(backend):
    model = _build("mlp")
    _, batches, loss_fn, _ = MODELS["mlp"]
    opt = _optimizer("adamw", model.parameters())
    step = ember.compile(_zero_first(model, opt, loss_fn), backend=backend)
    for x, y in batches()[:4]:  # captured calls and replayed ones
        loss = step(x, y)
        assert loss.requires_grad and loss.grad_fn is not None
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            loss.backward()


def test_non_scalar_loss_raises_as_eager():
    w = nn.Parameter(ember.ones(3))

    def f(x):
        (w * x).backward()

    with pytest.raises(RuntimeError, match="implicitly created only for scalar outputs"):
        f(ember.ones(3))
    with pytest.raises(RuntimeError, match="implicitly created only for scalar outputs"):
        ember.compile(f, backend="eager")(ember.ones(3))


def test_leaf_made_in_the_region_gets_its_grad():
    def f(x):
        w = ember.ones(3, requires_grad=True)
        (w * x).sum().backward()
        return w

    x = ember.arange(3.0)
    w1, w2 = f(x), ember.compile(f, backend="eager")(x)
    np.testing.assert_allclose(w2.grad.numpy(), w1.grad.numpy())


def test_input_requiring_grad_gets_its_grad_on_replay(python_runs):
    def f(x, w):
        loss = (x * w).tanh().sum()
        loss.backward()
        return loss

    w_ref, w = ember.ones(4, requires_grad=True), ember.ones(4, requires_grad=True)
    cf = ember.compile(f, backend="eager")
    for i in range(5):
        x = ember.arange(4.0) + i
        f(x, w_ref)
        cf(x, w)
        np.testing.assert_allclose(w.grad.numpy(), w_ref.grad.numpy(), rtol=1e-6)
    assert python_runs[0] < 5 and cf.cache.replay_plan is not None


def test_backward_under_a_hooked_module_matches_eager():
    def run(compiled):
        model = _build("mlp")
        grads = []
        model.net[2].register_full_backward_hook(lambda m, gi, go: grads.append(
            go[0].numpy().copy()))
        x, y = MODELS["mlp"][1]()[0]

        def step():
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            return loss
        fn = ember.compile(step, backend="eager") if compiled else step
        return float(fn()), grads, [p.grad.numpy() for p in model.parameters()]

    l1, h1, g1 = run(False)
    l2, h2, g2 = run(True)
    assert l1 == pytest.approx(l2, rel=1e-6) and len(h1) == len(h2) == 1
    np.testing.assert_allclose(h2[0], h1[0], rtol=1e-5, atol=1e-7)
    for a, b in zip(g1, g2):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("backend", ["eager", "inductor"])
def test_lr_scheduler_step_replays(backend, python_runs):
    """A scheduler sets a new lr every step: once the lr is a graph input, the replay
    reads it from the param group, so the Python stops running."""
    def between(i, model, opt):
        if i == 0:
            opt.scheduler = ember.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.9)
        else:
            opt.scheduler.step()

    ref_losses, ref_state, _ = _run("mlp", "adamw", _zero_first, between=between)
    losses, state, step = _run("mlp", "adamw", _zero_first, backend, between=between)
    np.testing.assert_allclose(losses, ref_losses, rtol=RTOL, atol=ATOL)
    _assert_same(ref_state, state)
    # the first step, the steady step, the first new lr (which makes it a graph input)
    assert python_runs[0] == 3
    assert step.cache.compiles == 3


def test_second_backward_through_spent_values_raises_as_eager():
    def f(w, x):
        out = (w * x).tanh()
        first, second = out.sum(), (out * 2).sum()
        first.backward()
        second.backward()

    for fn in (f, ember.compile(f, backend="eager")):
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            fn(ember.ones(3, requires_grad=True), ember.arange(3.0))


def test_retain_graph_then_second_backward_matches_eager():
    def f(w, x):
        out = (w * x).tanh()
        first, second = out.sum(), (out * 2).sum()
        first.backward(retain_graph=True)
        second.backward()
        return w.grad

    x = ember.arange(3.0)
    w1, w2 = ember.ones(3, requires_grad=True), ember.ones(3, requires_grad=True)
    np.testing.assert_allclose(ember.compile(f, backend="eager")(w2, x).numpy(),
                               f(w1, x).numpy(), rtol=1e-6)


def test_step_returning_logits_and_loss():
    model = _build("mlp")
    ref = _build("mlp")
    _, batches, loss_fn, _ = MODELS["mlp"]

    def make(m):
        opt = _optimizer("sgd_momentum", m.parameters())

        def step(x, y):
            opt.zero_grad()
            logits = m(x)
            loss = loss_fn(logits, y)
            loss.backward()
            opt.step()
            return logits, loss
        return step

    eager, compiled = make(ref), ember.compile(make(model), backend="eager")
    for x, y in batches()[:5]:
        (l1, s1), (l2, s2) = eager(x, y), compiled(x, y)
        np.testing.assert_allclose(l2.detach().numpy(), l1.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)
        assert float(s2) == pytest.approx(float(s1), rel=1e-5)
        assert l2.requires_grad and l2.grad_fn is not None
    assert compiled.cache.replay_plan is not None and compiled.cache.replay_plan.hits == 3


@pytest.mark.parametrize("backend", ["eager", "inductor"])
def test_micro_batches_accumulate_in_one_graph(backend, python_runs):
    """Two forward/backward passes and one update per step: the second backward adds into
    the gradients the first made, all in one graph, which replays."""
    def micro_batched(model, opt, loss_fn):
        def step(xs, ys):
            opt.zero_grad()
            total = 0.0
            for x, y in zip(xs, ys):
                loss = loss_fn(model(x), y) / len(xs)
                loss.backward()
                total = total + loss.detach()
            opt.step()
            return total
        return step

    def run(compile_with):
        model = _build("mlp")
        _, batches, loss_fn, _ = MODELS["mlp"]
        opt = _optimizer("adamw", model.parameters())
        step = micro_batched(model, opt, loss_fn)
        if compile_with:
            step = ember.compile(step, backend=compile_with)
        losses = [float(step((x[:8], x[8:]), (y[:8], y[8:]))) for x, y in batches()[:10]]
        return np.array(losses), _state(model, opt), step

    ref_losses, ref_state, _ = run(None)
    losses, state, step = run(backend)
    np.testing.assert_allclose(losses, ref_losses, rtol=RTOL, atol=ATOL)
    _assert_same(ref_state, state)
    assert python_runs[0] == 2 and step.cache.compiles == 2


def test_arguments_viewing_different_arrays_replay():
    """Arguments that are views of two different arrays (slices of two batches): the
    aliasing guard compares their bases by identity."""
    def f(a, b):
        return a * 2 + b

    x, y = ember.arange(8.0).reshape(2, 4), ember.arange(8.0).reshape(2, 4) + 1
    cf = ember.compile(f, backend="eager")
    for _ in range(3):
        np.testing.assert_allclose(cf(x[0], y[1]).numpy(), f(x[0], y[1]).numpy())
    assert cf.cache.replay_plan.hits >= 1


def _clipped_keep_grads(model, opt, loss_fn):
    def step(x, y):
        opt.zero_grad(set_to_none=False)  # .grad kept, zeroed in place
        loss = loss_fn(model(x), y)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        opt.step()
        return loss
    return step


@pytest.mark.parametrize("backend", ["eager", "inductor"])
def test_zeroed_in_place_and_clipped_grads(backend, python_runs):
    ref_losses, ref_state, _ = _run("mlp", "sgd_momentum", _clipped_keep_grads, steps=10)
    losses, state, step = _run("mlp", "sgd_momentum", _clipped_keep_grads, backend, steps=10)
    np.testing.assert_allclose(losses, ref_losses, rtol=RTOL, atol=ATOL)
    _assert_same(ref_state, state)
    # the first call makes .grad and the momentum buffers; the second the steady graph,
    # which reads each .grad and writes it in place
    assert python_runs[0] == 2


def test_parameter_data_replaced_runs_the_python(python_runs):
    """``p.data = ...`` gives a parameter another array (here another shape): the replay
    notices and the Python runs."""
    lin = nn.Linear(4, 3)

    def f(x):
        return lin(x).sum()

    cf = ember.compile(f, backend="eager")
    x = ember.ones(2, 4)
    for _ in range(3):
        assert float(cf(x)) == pytest.approx(float(f(x)), rel=1e-6)
    runs = python_runs[0]
    with ember.no_grad():
        lin.weight.data = ember.ones(5, 4)
        lin.bias.data = ember.zeros(5)
    assert float(cf(x)) == pytest.approx(float(f(x)), rel=1e-6) == 40.0
    assert python_runs[0] == runs + 1


def test_exec_defined_hook_keeps_running(python_runs):
    """A hook whose code has no file (exec) is user code to the purity scan: its side
    effect happens on every call, so the function is not replayed."""
    calls = []
    namespace = {"calls": calls}
    exec("def hook(m, i, o):\n    calls.append(1)\n", namespace)
    lin = nn.Linear(3, 2)
    lin.register_forward_hook(namespace["hook"])
    f = ember.compile(lambda x: lin(x).sum(), backend="eager")
    for _ in range(4):
        f(ember.ones(2, 3))
    assert len(calls) == 4 and python_runs[0] == 4
