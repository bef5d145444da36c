"""Real models compiled end to end (issue 18): an MLP, a CNN with BatchNorm (trained in
train mode and in eval mode), a small GPT (causal attention through
``scaled_dot_product_attention`` and through a hand-written masked softmax).

Each is trained 20 steps compiled and 20 steps eagerly from the same initialisation and
the same batches; the per-step losses, the final parameters, buffers (BatchNorm running
statistics) and optimizer state must agree to float32 tolerance.  Two ways of compiling:
``ember.compile(model)`` (loss, backward and ``opt.step()`` stay eager) and
``ember.compile(step)`` of the whole training step (zero_grad, forward, loss, backward,
``opt.step()``), with SGD-momentum and AdamW, through the backends "eager", "aot_eager"
and the default ("inductor").  Also: eval-mode inference, ``ember.compile(opt.step)``
alone, dropout's random stream, and that a training loop stops recompiling.
"""
import contextlib
import functools
import gc

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember._dynamo.backends.pycode import python_runner

STEPS = 20
BACKENDS = ["eager", "aot_eager", "inductor"]
OPTIMIZERS = ["sgd_momentum", "adamw"]
# float32 tolerance: eager-backend graphs run the very same kernels as eager; the default
# backend's generated kernels may sum in another order, which 20 steps of training amplify
# only slightly at these sizes.
RTOL, ATOL = 1e-4, 1e-5

# ---- models ---------------------------------------------------------------------------------
class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 32), nn.Tanh(),
                                 nn.Linear(32, 5))

    def forward(self, x):
        return self.net(x)


class CNN(nn.Module):
    """Conv -> BatchNorm -> ReLU -> pool, twice, then a linear classifier.  The convs have
    no bias, as usual before BatchNorm: in train mode its gradient is exactly zero, and
    AdamW would blow the rounding noise of that zero up to steps of size lr."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1))
        self.head = nn.Linear(16, 4)

    def forward(self, x):
        return self.head(self.features(x).flatten(1))


class CausalSelfAttention(nn.Module):
    def __init__(self, d, heads, seq, sdpa, dropout=0.0):
        super().__init__()
        self.heads, self.sdpa, self.dropout = heads, sdpa, dropout
        # no bias: the key bias's gradient is exactly zero (softmax ignores a shift per
        # query), and AdamW would turn its rounding noise into steps of size lr
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.proj = nn.Linear(d, d)
        self.register_buffer("mask", ember.tril(ember.ones(seq, seq, dtype=ember.bool)))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        if self.sdpa:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / (d // self.heads) ** 0.5)
            att = att.masked_fill(~self.mask[:t, :t], float("-inf"))
            att = F.dropout(F.softmax(att, dim=-1), self.dropout, self.training)
            y = att @ v
        return self.proj(y.transpose(1, 2).contiguous().view(b, t, d))


class Block(nn.Module):
    def __init__(self, d, heads, seq, sdpa, dropout):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = CausalSelfAttention(d, heads, seq, sdpa, dropout)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d),
                                 nn.Dropout(dropout))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, vocab=29, d=32, heads=4, layers=2, seq=8, sdpa=True, dropout=0.0):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(seq, d)
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(Block(d, heads, seq, sdpa, dropout) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, idx):
        t = idx.shape[1]
        x = self.drop(self.tok(idx) + self.pos(ember.arange(t)))
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln_f(x))


def _rng(seed):
    return np.random.default_rng(seed)


def _floats(rng, shape):
    return ember.from_numpy(rng.standard_normal(shape).astype(np.float32))


def _ints(rng, high, shape):
    return ember.from_numpy(rng.integers(0, high, shape).astype(np.int64))


def _classify_loss(out, y):
    return F.cross_entropy(out, y)


def _lm_loss(logits, y):
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))


def _teacher_labels(x, classes, seed):
    """Labels a fixed random linear teacher gives ``x``: learnable, so losses fall."""
    a = x.numpy().reshape(x.shape[0], -1)
    w = _rng(seed).standard_normal((a.shape[1], classes))
    return ember.from_numpy((a @ w).argmax(1).astype(np.int64))


def _mlp_batches():
    r = _rng(1)
    xs = [_floats(r, (16, 12)) for _ in range(STEPS)]
    return [(x, _teacher_labels(x, 5, 10)) for x in xs]


def _cnn_batches():
    r = _rng(2)
    xs = [_floats(r, (6, 3, 8, 8)) for _ in range(STEPS)]
    return [(x, _teacher_labels(x.mean((2, 3)), 4, 11)) for x in xs]


def _gpt_batches():
    """Sequences t[i+1] = (3 t[i] + 1) mod 29 from random starts: next tokens are learnable."""
    r = _rng(3)
    out = []
    for _ in range(STEPS):
        seq = np.empty((4, 9), np.int64)
        seq[:, 0] = r.integers(0, 29, 4)
        for i in range(8):
            seq[:, i + 1] = (3 * seq[:, i] + 1) % 29
        seq = ember.from_numpy(seq)
        out.append((seq[:, :-1].contiguous(), seq[:, 1:].contiguous()))
    return out


# name -> (builder, batches, loss, train mode while training)
MODELS = {
    "mlp": (MLP, _mlp_batches, _classify_loss, True),
    "cnn_bn_train": (CNN, _cnn_batches, _classify_loss, True),
    "cnn_bn_eval": (CNN, _cnn_batches, _classify_loss, False),
    "gpt_sdpa": (functools.partial(GPT, sdpa=True), _gpt_batches, _lm_loss, True),
    "gpt_manual_softmax": (functools.partial(GPT, sdpa=False), _gpt_batches, _lm_loss, True),
}


def _build(name):
    ember.manual_seed(0)
    model = MODELS[name][0]()
    model.train(MODELS[name][3])
    return model


def _optimizer(kind, params):
    if kind == "sgd_momentum":
        return ember.optim.SGD(params, lr=0.05, momentum=0.9)
    # eps 1e-5, not 1e-8: Adam divides by sqrt(v) + eps, so an entry whose gradient is
    # rounding noise (1e-9) would step by about lr either way, and eager vs compiled
    # summation order would decide its sign
    return ember.optim.AdamW(params, lr=3e-3, weight_decay=0.01, eps=1e-5)


# ---- training loops -------------------------------------------------------------------------
def _snapshot(model, opt):
    """Everything training changes, as NumPy copies: parameters, buffers, optimizer state."""
    state = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    for i, st in enumerate(opt.state.values()):
        for k, v in st.items():
            state[f"opt.{i}.{k}"] = np.array(v.detach().numpy() if isinstance(v, ember.Tensor)
                                             else v)
    return state


def _make_step(model, opt, loss_fn):
    def step(x, y):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss
    return step


def _train(name, opt_kind, how="eager", backend=None):
    """20 steps; ``how``: "eager", "module" (ember.compile(model)), "step"
    (ember.compile(step)) or "opt_step" (ember.compile(opt.step)).  Returns (losses,
    final state, the compiled object)."""
    model = _build(name)
    _, batches, loss_fn, _ = MODELS[name]
    opt = _optimizer(opt_kind, model.parameters())
    compiled = None
    if how == "module":
        compiled = ember.compile(model, backend=backend)
        step = _make_step(compiled, opt, loss_fn)
    elif how == "step":
        step = compiled = ember.compile(_make_step(model, opt, loss_fn), backend=backend)
    elif how == "opt_step":
        compiled = ember.compile(opt.step, backend=backend)
        opt.step = compiled
        step = _make_step(model, opt, loss_fn)
    else:
        step = _make_step(model, opt, loss_fn)
    losses = [step(x, y).item() for x, y in batches()]
    return np.array(losses), _snapshot(model, opt), compiled


@functools.lru_cache(maxsize=None)
def _eager_reference(name, opt_kind):
    losses, state, _ = _train(name, opt_kind)
    return losses, state


def _assert_compiled(compiled):
    """Something really ran compiled: at least one graph was compiled."""
    cache = compiled._compiled_call.cache if isinstance(compiled, nn.Module) else \
        compiled.cache
    assert cache.compiles >= 1


def _assert_same_training(name, opt_kind, losses, state):
    ref_losses, ref_state = _eager_reference(name, opt_kind)
    assert np.isfinite(ref_losses).all()
    np.testing.assert_allclose(losses, ref_losses, rtol=RTOL, atol=ATOL, err_msg="losses")
    assert state.keys() == ref_state.keys()
    for k in ref_state:
        np.testing.assert_allclose(state[k], ref_state[k], rtol=RTOL, atol=ATOL, err_msg=k)
    # training did something: the losses fall
    assert ref_losses[-5:].mean() < ref_losses[:5].mean()


def _cases(how, models=tuple(MODELS)):
    """(model, optimizer, backend) triples."""
    return [pytest.param(m, o, b, id=f"{m}-{o}-{b}")
            for m in models for o in OPTIMIZERS for b in BACKENDS]


@pytest.fixture(autouse=True)
def _fresh_caches():
    ember._dynamo.reset()
    yield


# ---- 20 training steps, compiled vs eager ---------------------------------------------------
@pytest.mark.parametrize("name,opt_kind,backend", _cases("module"))
def test_compiled_module_trains_like_eager(name, opt_kind, backend):
    losses, state, compiled = _train(name, opt_kind, "module", backend)
    _assert_compiled(compiled)
    _assert_same_training(name, opt_kind, losses, state)


@pytest.mark.parametrize("name,opt_kind,backend", _cases("step"))
def test_compiled_training_step_trains_like_eager(name, opt_kind, backend):
    losses, state, compiled = _train(name, opt_kind, "step", backend)
    _assert_compiled(compiled)
    _assert_same_training(name, opt_kind, losses, state)


@pytest.mark.parametrize("name,opt_kind,backend",
                         _cases("opt_step", models=("mlp", "cnn_bn_train")))
def test_compiled_optimizer_step_alone(name, opt_kind, backend):
    losses, state, compiled = _train(name, opt_kind, "opt_step", backend)
    _assert_compiled(compiled)
    _assert_same_training(name, opt_kind, losses, state)


# ---- the compiled loops stop compiling --------------------------------------------------------
def _counting_backend(gms):
    def backend(gm, example_inputs):
        gms.append(gm)
        return python_runner(gm)
    return backend


@pytest.mark.parametrize("how,opt_kind", [
    pytest.param(h, o, id=f"{h}-{o}")
    for h in ("module", "step") for o in OPTIMIZERS])
def test_training_loop_stops_recompiling(how, opt_kind):
    """After a few steps every graph is found in the cache: AdamW's step count and the
    lazily created optimizer state recompile at most once more, not once per step."""
    model = _build("gpt_sdpa")
    _, batches, loss_fn, _ = MODELS["gpt_sdpa"]
    opt = _optimizer(opt_kind, model.parameters())
    gms = []
    backend = _counting_backend(gms)
    if how == "module":
        compiled = ember.compile(model, backend=backend)
        step = _make_step(compiled, opt, loss_fn)
        cache = compiled._compiled_call.cache
    else:
        step = ember.compile(_make_step(model, opt, loss_fn), backend=backend)
        cache = step.cache
    data = batches()
    counts = []
    for x, y in data:
        step(x, y)
        counts.append(cache.compiles)
    assert counts[0] >= 1
    assert counts[-1] == counts[4], f"compiles after each step: {counts}"
    assert len(gms) == cache.compiles


# ---- eval-mode inference ----------------------------------------------------------------------
@pytest.mark.parametrize("name,backend,no_grad", [
    pytest.param(m, b, ng, id=f"{m}-{b}-{'no_grad' if ng else 'grad'}")
    for m in ("mlp", "cnn_bn_train", "gpt_sdpa", "gpt_manual_softmax") for b in BACKENDS
    for ng in (True, False)])
def test_eval_inference_matches_eager(name, backend, no_grad):
    model = _build(name)
    _, batches, _, _ = MODELS[name]
    # a few eager training steps first, so BatchNorm's running statistics are not trivial
    opt = _optimizer("sgd_momentum", model.parameters())
    step = _make_step(model, opt, MODELS[name][2])
    data = batches()
    for x, y in data[:3]:
        step(x, y)
    model.eval()
    compiled = ember.compile(model, backend=backend)
    for x, _ in data[3:8]:
        with ember.no_grad() if no_grad else contextlib.nullcontext():
            got = compiled(x)
            want = model(x)
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(),
                                   rtol=RTOL, atol=ATOL)
        assert got.requires_grad == want.requires_grad == (not no_grad)
    if not no_grad:  # the compiled eval forward is differentiable too
        model.zero_grad()
        got.sum().backward()
        g_compiled = [p.grad.numpy().copy() for p in model.parameters()]
        model.zero_grad()
        want.sum().backward()
        for a, b in zip(g_compiled, (p.grad.numpy() for p in model.parameters())):
            np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("backend", BACKENDS)
def test_batchnorm_train_eval_switch_on_one_compiled_module(backend):
    """The training flag is guarded: train, eval, train again on the same compiled CNN
    equals the same sequence eagerly, running statistics included."""
    eager_m, comp_m = _build("cnn_bn_train"), _build("cnn_bn_train")
    compiled = ember.compile(comp_m, backend=backend)
    data = _cnn_batches()
    for i, (x, _) in enumerate(data[:6]):
        train = i % 3 != 1
        eager_m.train(train)
        comp_m.train(train)
        with ember.no_grad():
            want, got = eager_m(x), compiled(x)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=RTOL, atol=ATOL)
    for k, v in eager_m.state_dict().items():
        np.testing.assert_allclose(comp_m.state_dict()[k].numpy(), v.numpy(), rtol=RTOL,
                                   atol=ATOL, err_msg=k)


# ---- dropout: the compiled program draws eager's random stream -------------------------------
@pytest.mark.parametrize("backend", BACKENDS)
def test_gpt_with_dropout_trains_like_eager(backend):
    """Random ops are graph nodes drawing in program order when the graph runs, so a seeded
    compiled training run with dropout draws exactly eager's numbers."""
    def run(compile_model):
        ember.manual_seed(0)
        model = GPT(sdpa=False, dropout=0.1)
        opt = _optimizer("sgd_momentum", model.parameters())
        fwd = ember.compile(model, backend=backend) if compile_model else model
        step = _make_step(fwd, opt, _lm_loss)
        ember.manual_seed(1)
        losses = [float(step(x, y)) for x, y in _gpt_batches()[:8]]
        return np.array(losses), [p.detach().numpy().copy() for p in model.parameters()]
    (l_ref, p_ref), (l_got, p_got) = run(False), run(True)
    np.testing.assert_allclose(l_got, l_ref, rtol=RTOL, atol=ATOL)
    for a, b in zip(p_got, p_ref):
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL)


# ---- automatic dynamic shapes on a real model --------------------------------------------------
def _length_cases():
    out = []
    for m in ("gpt_sdpa", "gpt_manual_softmax"):
        for grad in (False, True):
            out.append(pytest.param(m, grad, id=f"{m}-{'grad' if grad else 'no_grad'}"))
    return out


@pytest.mark.parametrize("name,grad", _length_cases())
def test_gpt_varying_sequence_length(name, grad):
    """Sequences of other lengths: the first compile is static, the first change compiles
    the length as symbolic, every later length reuses that graph (2 compiles, as torch).
    ``gc.collect()`` before each call: which dead tensors the cyclic collector has freed
    must not decide the graph (see test_graph_outputs_do_not_depend_on_garbage_collection).
    The collections are cheap: conftest.py froze what collection built (the test process's
    bulk), so each scans only what the run created since."""
    model = _build(name).eval()
    gms = []
    compiled = ember.compile(model, backend=_counting_backend(gms))
    data = _gpt_batches()
    for i, t in enumerate([8, 5, 7, 3, 6, 8, 2]):
        x = data[i][0][:, :t].contiguous()
        gc.collect()
        with ember.set_grad_enabled(grad):
            got, want = compiled(x), model(x)
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(),
                                   rtol=RTOL, atol=ATOL, err_msg=f"length {t}")
    assert compiled._compiled_call.cache.compiles == 2


# ---- Module.compile() ----------------------------------------------------------------------------
@pytest.mark.parametrize("name,backend", [
    pytest.param(m, b, id=f"{m}-{b}")
    for m in ("mlp", "cnn_bn_train") for b in BACKENDS])
def test_module_compile_in_place_trains_like_eager(name, backend):
    """``model.compile()`` compiles the module in place: the same 20 steps as eager."""
    model = _build(name)
    _, batches, loss_fn, _ = MODELS[name]
    opt = _optimizer("sgd_momentum", model.parameters())
    model.compile(backend=backend)
    step = _make_step(model, opt, loss_fn)
    losses = np.array([float(step(x, y)) for x, y in batches()])
    assert model._compiled_call_impl.cache.compiles >= 1
    _assert_same_training(name, "sgd_momentum", losses, _snapshot(model, opt))


def test_graph_outputs_do_not_depend_on_garbage_collection():
    """The same call twice, once after a collection and once with the collector off, is
    the same graph: dead intermediates are never graph outputs, whenever gc runs."""
    ember.manual_seed(0)
    model = GPT(layers=3).eval()
    compiled = ember.compile(model, backend="eager")
    x = _gpt_batches()[0][0]
    with ember.no_grad():
        gc.collect()
        want = compiled(x).numpy().copy()
        gc.disable()
        try:
            got = compiled(x).numpy()
        finally:
            gc.enable()
    np.testing.assert_array_equal(got, want)
    assert compiled._compiled_call.cache.compiles == 1


# ---- torch as the oracle ------------------------------------------------------------------------
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("opt_kind", OPTIMIZERS)
def test_compiled_mlp_step_matches_torch(opt_kind, backend):
    """The compiled training step's trajectory is torch's: the same MLP (weights copied),
    the same batches, torch's SGD/AdamW with the same settings, run eagerly in torch."""
    import torch
    losses, state, _ = _train("mlp", opt_kind, "step", backend)
    model = _build("mlp")  # the same initial weights as _train's
    tm = torch.nn.Sequential(torch.nn.Linear(12, 32), torch.nn.ReLU(), torch.nn.Linear(32, 32),
                             torch.nn.Tanh(), torch.nn.Linear(32, 5))
    tm.load_state_dict({k: torch.from_numpy(v.detach().numpy().copy())
                        for k, v in model.net.state_dict().items()})
    if opt_kind == "sgd_momentum":
        opt = torch.optim.SGD(tm.parameters(), lr=0.05, momentum=0.9)
    else:
        opt = torch.optim.AdamW(tm.parameters(), lr=3e-3, weight_decay=0.01, eps=1e-5)
    want = []
    for x, y in _mlp_batches():
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(tm(torch.from_numpy(x.numpy())),
                                                 torch.from_numpy(y.numpy()))
        loss.backward()
        opt.step()
        want.append(loss.item())
    np.testing.assert_allclose(losses, want, rtol=RTOL, atol=ATOL)
    for k, v in tm.state_dict().items():
        np.testing.assert_allclose(state["net." + k], v.numpy(), rtol=RTOL, atol=ATOL,
                                   err_msg=k)
