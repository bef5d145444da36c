"""Every decomposition equals its operator's kernel, in value and gradient, using only
primitives (ember.ops.primitives, ember.ops.decompositions).

The operator calls come from the op database: each record's samples (and, in float64,
their backward passes) run under a capture mode that keeps the first few calls of every
operator, inputs and params as the kernel sees them.  Operators no record reaches yet are
driven by short lists below: nn.functional calls (no nn records yet), the fused layer and
attention kernels with their fused backward ops (reached only without a mode), optimizer
steps, and the random functions.  For each captured call of a non-primitive op the
decomposition runs under a mode that records every operator it calls, all of which must be
primitives, and its outputs must equal the kernel's (dtype-appropriate tolerance); in
float64, backward through the decomposition must equal backward through the op.  The
in-place optimizer updates are compared in functional form (new values of the inputs they
write).  Random operators cannot equal a Generator draw: their decompositions are checked
for shape, dtype and reproducibility of the (seed, offset) counter RNG instead.
"""
import collections
import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import DispatchMode
from ember._core.op import REGISTRY
from ember._core.tensor import wrap
from ember.ops import decompositions as D
from ember.ops.primitives import EXTERN, PRIMITIVES, is_primitive, rng_key
from opdb.all import OPS
from opdb.core import to_lib

D.install()
PER_DTYPE = 3
# operators whose values are unspecified (random draws, uninitialised memory): their
# decompositions are checked for shape, dtype and reproducibility only
RANDOM = {"empty", "empty_strided", "bernoulli", "bernoulli_scalar", "cauchy", "exponential",
          "geometric", "log_normal", "multinomial", "normal", "normal_tensor", "random",
          "randperm", "uniform", "_dropout_mask", "native_dropout", "rrelu_with_noise",
          "poisson", "standard_gamma", "distributions_binomial"}


def _copy(a):
    if isinstance(a, ember.Tensor):
        return wrap(np.copy(a._data, order="K"))
    if isinstance(a, (list, tuple)):
        return type(a)(_copy(x) for x in a)
    return a


class Capture(DispatchMode):
    """Keeps up to PER_DTYPE calls per (operator, first input dtype)."""

    def __init__(self, calls):
        self.calls = calls

    def __ember_dispatch__(self, op, args, kwargs):
        base = getattr(op, "base", op)  # in-place variants: their out-of-place op
        first = next((a.dtype for a in args if isinstance(a, ember.Tensor)), None)
        bucket = self.calls[base.name]
        keep = sum(1 for c in bucket if c[0] == first) < PER_DTYPE
        saved = _copy(tuple(args)) if keep else None
        out = op(*args, **kwargs)
        if keep:  # only calls the kernel accepts: the rejected ones are test_opdb's
            bucket.append((first, saved, dict(kwargs)))
        return out


def _nn_drivers(rng):
    """nn.functional calls that reach the nn operators (no op database records yet)."""
    def t(*shape, dtype="float64", low=-2, high=2):
        return ember.from_numpy(rng.uniform(low, high, shape).astype(dtype)).requires_grad_(
            dtype == "float64")
    x = t(2, 3, 5)
    x4 = t(2, 3, 6, 6)
    tgt = ember.from_numpy(np.array([1, 0, 4]))
    yield lambda: (F.relu(x), F.gelu(x), F.gelu(x, approximate="tanh"), F.silu(x), F.mish(x))
    yield lambda: (F.elu(x), F.elu(x, alpha=0.5), F.celu(x), F.selu(x), F.leaky_relu(x, 0.1),
                   F.hardtanh(x, -1.0, 0.5), F.hardsigmoid(x), F.hardswish(x),
                   F.softplus(x), F.softplus(x, beta=2, threshold=1), F.softshrink(x, 0.5),
                   F.hardshrink(x, 0.5), F.threshold(x, 0.2, -3.0), F.logsigmoid(x), F.relu6(x))
    yield lambda: (F.linear(t(4, 3), t(5, 3), t(5)), F.linear(t(2, 4, 3), t(5, 3)))
    yield lambda: (F.layer_norm(x, (5,)), F.layer_norm(x, (3, 5), t(3, 5), t(3, 5)),
                   F.group_norm(x4, 3, t(3), t(3)), F.instance_norm(x4),
                   # running statistics are not differentiable (torch refuses them)
                   F.batch_norm(x4, t(3).detach(), t(3, low=0.5).detach(), t(3), t(3),
                                training=True),
                   F.batch_norm(x4, t(3).detach(), t(3, low=0.5).detach(), training=False),
                   F.normalize(x, dim=1), F.rms_norm(x, (5,), t(5)) if hasattr(F, "rms_norm")
                   else None)
    yield lambda: (F.cross_entropy(t(3, 5), tgt), F.cross_entropy(t(3, 5), tgt, reduction="sum",
                                                                   label_smoothing=0.1),
                   F.cross_entropy(t(3, 5), tgt, weight=t(5, low=0.5).detach(), ignore_index=0),
                   F.cross_entropy(t(3, 5), t(3, 5, low=0, high=1)),
                   F.nll_loss(t(3, 5), tgt), F.nll_loss(t(3, 5), tgt, weight=t(5, low=0.5).detach(),
                                                        reduction="none"),
                   F.mse_loss(t(3, 4), t(3, 4)), F.l1_loss(t(3, 4), t(3, 4)),
                   F.smooth_l1_loss(t(3, 4), t(3, 4)), F.huber_loss(t(3, 4), t(3, 4)),
                   F.binary_cross_entropy(t(4, low=0.1, high=0.9), t(4, low=0, high=1)),
                   F.binary_cross_entropy_with_logits(t(4), t(4, low=0, high=1)),
                   F.kl_div(t(3, 4), t(3, 4, low=0.1, high=1), reduction="batchmean"))
    yield lambda: (F.embedding(ember.from_numpy(np.array([[0, 2], [3, 2]])), t(4, 3)),
                   F.embedding(ember.from_numpy(np.array([0, 2, 1])), t(4, 3), padding_idx=2),
                   F.one_hot(ember.from_numpy(np.array([0, 2, 1])), 4))
    yield lambda: (F.conv2d(x4, t(4, 3, 3, 3), t(4)), F.conv2d(x4, t(2, 3, 2, 2), stride=2,
                                                                 padding=1, dilation=2),
                   F.conv1d(x, t(4, 3, 2)), F.conv_transpose2d(x4, t(3, 2, 3, 3), stride=2),
                   F.conv2d(x4, t(3, 1, 3, 3), groups=3))
    yield lambda: (F.max_pool2d(x4, 2), F.max_pool2d(x4, 3, stride=2, padding=1),
                   F.avg_pool2d(x4, 2), F.avg_pool2d(x4, 3, stride=2, padding=1,
                                                     count_include_pad=False),
                   F.adaptive_avg_pool2d(x4, (2, 3)), F.adaptive_max_pool2d(x4, (2, 3)),
                   F.max_pool1d(x, 2), F.avg_pool1d(x, 2))
    yield lambda: (F.pad(x, (1, 2)), F.pad(x4, (1, 1, 2, 0), mode="reflect"),
                   F.pad(x4, (1, 1, 2, 0), mode="replicate"),
                   F.pad(x4, (1, 1, 2, 0), mode="circular"), F.pad(x, (1, 2), value=3.0))
    yield lambda: (F.scaled_dot_product_attention(t(2, 3, 4, 5), t(2, 3, 6, 5), t(2, 3, 6, 5)),
                   F.scaled_dot_product_attention(t(2, 3, 4, 5), t(2, 3, 4, 5), t(2, 3, 4, 5),
                                                  is_causal=True),
                   F.scaled_dot_product_attention(
                       t(2, 3, 4, 5), t(2, 3, 6, 5), t(2, 3, 6, 5),
                       attn_mask=ember.from_numpy(rng.random((4, 6)) > 0.3)))
    yield lambda: (F.unfold(x4, 2), F.fold(t(2, 12, 9), (4, 4), 2))
    lp = F.log_softmax(t(6, 3, 5), 2).detach().requires_grad_(True)
    yield lambda: (F.ctc_loss(lp, ember.from_numpy(np.array([[1, 2, 2], [3, 1, 0], [4, 4, 1]])),
                              (6, 5, 6), (3, 2, 0), reduction="none"),
                   F.ctc_loss(lp, ember.from_numpy(np.array([1, 2, 3, 3, 1])), (6, 6, 4),
                              (2, 1, 2), reduction="sum", zero_infinity=True),
                   F.ctc_loss(lp, ember.from_numpy(np.array([[1, 2, 1, 2, 1, 2]] * 3)),
                              (6, 6, 6), (6, 3, 1), reduction="none", zero_infinity=False))
    yield lambda: (F.softmax(x, 1), F.log_softmax(x, -1), F.dropout(x, 0.0),
                   F.interpolate(x4, scale_factor=2))
    yield lambda: (F.max_unpool2d(*F.max_pool2d(x4, 2, return_indices=True), 2),
                   F.max_unpool1d(*F.max_pool1d(x, 2, return_indices=True), 2))
    yield lambda: (F.lstm_cell(t(2, 3), (t(2, 4), t(2, 4)), t(16, 3), t(16, 4))
                   if hasattr(F, "lstm_cell") else None,
                   ember.nn.LSTM(3, 4)(t(5, 2, 3, dtype="float32")),
                   ember.nn.GRU(3, 4, bidirectional=True)(t(5, 2, 3, dtype="float32")),
                   ember.nn.GRUCell(3, 4)(t(2, 3, dtype="float32")),
                   ember.nn.LSTMCell(3, 4)(t(2, 3, dtype="float32")))


def _direct_drivers(rng):
    """Operators called directly: the fused layer ops and their backward (the modules reach
    them too) on both directions, flash attention's backward and split/unbind (which public
    functions reach only without a mode) and the in-place-through-a-view node (never
    dispatched)."""
    def t(*shape):
        return ember.from_numpy(rng.uniform(-1, 1, shape))
    R = REGISTRY
    T, B, n = 4, 2, 3
    def lstm(reverse):
        args = (t(T, B, 4 * n), t(B, n), t(B, n), t(n, 4 * n))
        hs, cs, acts = R["_lstm_layer"](*args, reverse=reverse)
        return R["_lstm_layer_backward"](t(T, B, n), t(T, B, n), acts, hs, cs, *args,
                                         reverse=reverse)

    def gru(reverse, bias):
        args = (t(T, B, 3 * n), t(B, n), t(n, 3 * n), t(3 * n) if bias else None)
        hs, acts = R["_gru_layer"](*args, reverse=reverse)
        return R["_gru_layer_backward"](t(T, B, n), acts, hs, *args, reverse=reverse)

    for reverse in (False, True):
        yield lambda: lstm(reverse)
        yield lambda: (gru(reverse, True), gru(reverse, False))
    for causal, mask in ((False, None), (True, None), (False, t(4, 6)),
                         (False, ember.from_numpy(rng.random((4, 6)) > 0.2))):
        q, k, v = t(2, 4, 5), t(2, 6, 5), t(2, 6, 3)
        if causal:
            k, v = t(2, 4, 5), t(2, 4, 3)
        out, lse = R["_flash_attention"](q, k, v, mask, scale=0.4, causal=causal)
        yield lambda: R["_flash_attention_backward"](q, k, v, mask, t(*out.shape), out, lse,
                                                     t(*lse.shape), scale=0.4, causal=causal)
    base = t(4, 5)
    rows = ((R["slice"], {"key": ((1, 3, 1),)}),)
    yield lambda: (R["_view_scatter"](base, t(2, 5), chain=rows),
                   R["_view_scatter"](base, t(5, 2), chain=((R["permute"], {"dims": (1, 0)}),
                                                            (R["slice"], {"key": ((0, 5, 1),
                                                                                  (1, 5, 2))}))),
                   R["_nuc_basis"](t(3, 4), dims=(0, 1)))
    # split/unbind as one op: what public functions reach only without a mode
    yield lambda: (R["split"](t(4, 6), sizes=(4, 2), dim=1),
                   R["split_with_sizes"](t(5, 3), sizes=(1, 0, 4), dim=0),
                   R["split_with_sizes"](t(6), sizes=(0, 6), dim=0),
                   R["unbind"](t(3, 2, 2), dim=1), R["unbind"](t(3), dim=0))
    # layer_norm with weight and bias as one op: what F.layer_norm calls without a mode
    yield lambda: (R["native_layer_norm"](t(3, 4, 5), t(5), t(5), normalized_shape=(5,), eps=1e-5),
                   R["native_layer_norm"](t(2, 3, 4), t(3, 4), t(3, 4), normalized_shape=(3, 4),
                                          eps=0.1))
    yield lambda: (ember.eye(3), ember.eye(2, 4, dtype=ember.int64), ember.linspace(0, 1, 5),
                   ember.linspace(-2, 3, 7, dtype=ember.int32), ember.logspace(0, 2, 4),
                   ember.linspace(0, 1, 1), ember.logspace(1, 2, 3, base=2.0),
                   ember.arange(0.0, 1.0, 0.25), ember.range(0, 5, 0.5) if hasattr(ember, "range")
                   else None, ember.empty_strided((2, 3), (1, 2)), ember.empty(2, 3))


def _optim_drivers(rng):
    """One step of each fused optimizer update, on real and complex parameters."""
    def params():
        return [ember.from_numpy(rng.uniform(-1, 1, s)).requires_grad_(True)
                for s in ((3, 2), (4,))] + [
            ember.from_numpy((rng.uniform(-1, 1, 3) + 1j * rng.uniform(-1, 1, 3)).astype(
                np.complex64)).requires_grad_(True)]

    def step(opt_cls, steps=2, **kw):
        ps = params()
        opt = opt_cls(ps, **kw)
        for _ in range(steps):  # the second step finds momentum buffers and steps in place
            opt.zero_grad()
            sum(((p * p).sum().real if p.is_complex() else (p * p).sum()) for p in ps).backward()
            opt.step()
    def adafactor(**kw):
        # real parameters only: matrices (factored second moment), a batch of matrices, a
        # vector and a scalar
        ps = [ember.from_numpy(rng.uniform(-1, 1, s)).requires_grad_(True)
              for s in ((3, 2), (2, 3, 4), (4,), ())]
        opt = ember.optim.Adafactor(ps, **kw)
        for _ in range(3):
            opt.zero_grad()
            sum((p * p * p).sum() for p in ps).backward()
            opt.step()

    O = ember.optim
    yield lambda: (step(O.SGD, lr=0.1), step(O.SGD, lr=0.1, momentum=0.9, nesterov=True,
                                                weight_decay=0.01),
                   step(O.SGD, lr=0.1, momentum=0.5, dampening=0.2, maximize=True))
    yield lambda: (step(O.Adam, lr=0.01), step(O.Adam, lr=0.01, amsgrad=True, weight_decay=0.1),
                   step(O.AdamW, lr=0.01, weight_decay=0.1, maximize=True))
    yield lambda: (step(O.RMSprop, lr=0.01), step(O.RMSprop, lr=0.01, momentum=0.9,
                                                    centered=True, weight_decay=0.1))
    yield lambda: (step(O.Adagrad, lr=0.1), step(O.Adagrad, lr=0.1, lr_decay=0.01,
                                                   weight_decay=0.1))
    yield lambda: (step(O.Adadelta, lr=1.0), step(O.Adadelta, rho=0.8, weight_decay=0.1,
                                                    maximize=True))
    yield lambda: (step(O.Adamax, lr=0.01), step(O.Adamax, lr=0.01, weight_decay=0.1,
                                                   maximize=True))
    yield lambda: (step(O.NAdam, lr=0.01), step(O.NAdam, lr=0.01, weight_decay=0.1,
                                                  decoupled_weight_decay=True))
    # RAdam's rectified branch starts once rho_t > 5: at the 7th step for beta2=0.9
    yield lambda: (step(O.RAdam, lr=0.01), step(O.RAdam, steps=8, lr=0.01, betas=(0.9, 0.9),
                                                  weight_decay=0.1, decoupled_weight_decay=True))
    # t0=1: the averaging of ASGD starts at the second step (mu leaves 1)
    yield lambda: (step(O.ASGD, lr=0.01), step(O.ASGD, lr=0.01, t0=1, weight_decay=0.1))
    yield lambda: (adafactor(), adafactor(lr=0.05, weight_decay=0.1, maximize=True, d=1.5),
                   adafactor(eps=(1e-4, 1e-3), beta2_decay=-0.5))
    def muon(**kw):
        ps = [ember.from_numpy(rng.uniform(-1, 1, s)).requires_grad_(True)
              for s in ((3, 5), (6, 2))]  # wide and tall
        opt = ember.optim.Muon(ps, **kw)
        for _ in range(2):
            opt.zero_grad()
            sum((p * p * p).sum() for p in ps).backward()
            opt.step()
    yield lambda: (muon(lr=0.02), muon(lr=0.02, nesterov=False, weight_decay=0.0,
                                         adjust_lr_fn="match_rms_adamw", ns_steps=3))
    def sparse_adam(**kw):
        # gradients with zeros (those entries must not move), one a sparse COO gradient
        ps = [ember.from_numpy(rng.uniform(-1, 1, s)).requires_grad_(True) for s in ((4, 3),
                                                                                    (5,))]
        opt = ember.optim.SparseAdam(ps, **kw)
        w = [ember.from_numpy(rng.uniform(-1, 1, s) * (rng.random(s) > 0.4)) for s in
             ((4, 3), (5,))]
        for _ in range(2):
            opt.zero_grad()
            sum((p * p * q).sum() for p, q in zip(ps, w)).backward()
            ps[0].grad = ps[0].grad.to_sparse()
            opt.step()
    yield lambda: (sparse_adam(lr=0.01), sparse_adam(lr=0.05, betas=(0.8, 0.9), maximize=True))
    yield lambda: (step(O.Rprop, lr=0.01), step(O.Rprop, lr=0.05, etas=(0.3, 1.5),
                                                  step_sizes=(1e-3, 0.06), maximize=True))


def _random_drivers(rng):
    """The random operators (their values are not compared: see the tests below)."""
    p = ember.from_numpy(rng.uniform(0.1, 0.9, (3, 4)))
    yield lambda: (ember.rand(3, 4), ember.randn(2, 3, dtype=ember.float64),
                   ember.randint(0, 10, (5,)), ember.randperm(7),
                   ember.bernoulli(p), ember.multinomial(p, 2),
                   ember.multinomial(p, 6, replacement=True),
                   ember.normal(p, p), ember.empty(3, 4).uniform_(-1, 2),
                   ember.empty(3).exponential_(2.0), ember.empty(3).geometric_(0.3),
                   ember.empty(3).log_normal_(), ember.empty(3).cauchy_(),
                   ember.empty(3).bernoulli_(0.3), ember.empty(3, dtype=ember.int32).random_(),
                   ember.empty(4).normal_(1.0, 2.0))
    yield lambda: (F.dropout(p, 0.3, training=True), F.dropout2d(p.reshape(1, 3, 4, 1), 0.5),
                   F.alpha_dropout(p, 0.2, training=True),
                   F.rrelu(p - 0.5, training=True))


def _flat(out):
    if isinstance(out, (tuple, list)):
        return [y for o in out for y in _flat(o)]
    return [out]


def _loss(out, seed=7):
    rng = np.random.default_rng(seed)
    total = None
    for o in _flat(out):
        if isinstance(o, ember.Tensor) and (o.dtype.is_floating_point or o.dtype.is_complex) \
                and o.requires_grad:
            w = wrap(rng.uniform(0.5, 1.5, tuple(o.shape)).astype(np.float64))
            term = (o * w).sum()
            if o.dtype.is_complex:
                term = term.real + term.imag
            total = term if total is None else total + term
    return total


def _collect():
    calls = collections.defaultdict(list)
    rng = np.random.default_rng(1234)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for op in OPS:
            for dt in op.dtypes:
                for s in op.samples(dt, rng):
                    try:
                        with Capture(calls):
                            op.call(ember, to_lib(ember, s.args), to_lib(ember, s.kwargs))
                    except Exception:
                        pass  # error samples: ember raises as torch does (test_opdb)
        for drivers in (_nn_drivers, _direct_drivers, _optim_drivers, _random_drivers):
            for drive in drivers(np.random.default_rng(4321)):
                with Capture(calls):
                    loss = _loss(drive())
                    if loss is not None:  # the backward operators too
                        loss.backward()
        for op in OPS:  # backward passes of the database's float64 samples
            if not op.grad or not any(d in op.dtypes for d in ("float32", "float64")):
                continue
            for s in op.samples("float64", rng):
                args = [to_lib(ember, a, requires_grad=isinstance(a, np.ndarray) and
                               a.dtype.kind == "f") for a in s.args]
                try:
                    with Capture(calls):
                        loss = _loss(op.call(ember, args, to_lib(ember, s.kwargs)))
                        if loss is not None:
                            loss.backward()
                except Exception:
                    pass  # error samples, and ops without a derivative (test_opdb's)
    return calls


CALLS = _collect()
DECOMPOSED = sorted(n for n in CALLS if n in REGISTRY and not is_primitive(n) and
                    n not in RANDOM and n not in D.FUNCTIONALIZED and n not in D.NO_DECOMP)


class PrimitiveOnly(DispatchMode):
    """Records every operator a decomposition calls; a decomposition may call another
    decomposed operator (conv2d calls convolution, as in torch), which is expanded in turn,
    as the compiler's decompose pass does."""

    def __init__(self):
        self.names = []

    def __ember_dispatch__(self, op, args, kwargs):
        fn = None if hasattr(op, "base") or is_primitive(op) else D.decomposition_of(op.name)
        if fn is not None:
            return fn(*args, **kwargs)
        self.names.append(op.name)
        return op(*args, **kwargs)


def _run_decomp(name, args, params):
    fn = D.decomposition_of(name)
    assert fn is not None, f"{name}: no decomposition (reason: {D.NO_DECOMP.get(name)})"
    with PrimitiveOnly() as m:
        out = fn(*args, **params)
    bad = sorted({n for n in m.names if not is_primitive(n)})
    assert not bad, f"{name}: decomposition calls non-primitive ops {bad}"
    return out


def _tol(dtype):
    if dtype in (ember.float16, ember.bfloat16):
        return 2e-2, 2e-2
    if dtype in (ember.float32, ember.complex64):
        return 2e-5, 2e-5
    return 1e-9, 1e-9


def _compare(name, got, want, where):
    g, w = _flat(got), _flat(want)
    assert len(g) == len(w), f"{where}: {len(g)} outputs, the kernel gives {len(w)}"
    for i, (a, b) in enumerate(zip(g, w)):
        if not isinstance(b, ember.Tensor):
            assert a == b, f"{where}: output {i}: {a!r} vs {b!r}"
            continue
        assert isinstance(a, ember.Tensor), f"{where}: output {i} is {type(a).__name__}"
        assert tuple(a.shape) == tuple(b.shape), f"{where}: output {i} shape {tuple(a.shape)} " \
                                                 f"vs the kernel's {tuple(b.shape)}"
        assert a.dtype == b.dtype, f"{where}: output {i} dtype {a.dtype} vs {b.dtype}"
        an, bn = np.asarray(a._data), np.asarray(b._data)
        if b.dtype.is_floating_point or b.dtype.is_complex:
            atol, rtol = _tol(b.dtype)
            np.testing.assert_allclose(an.astype(np.complex128 if b.dtype.is_complex else
                                                 np.float64),
                                       bn.astype(np.complex128 if b.dtype.is_complex else
                                                 np.float64),
                                       atol=atol, rtol=rtol, equal_nan=True,
                                       err_msg=f"{where}: output {i}")
        else:
            np.testing.assert_array_equal(an, bn, err_msg=f"{where}: output {i}")


def _where(name, k, args, params):
    desc = ", ".join(f"{tuple(a.shape)}:{a.dtype.name}" if isinstance(a, ember.Tensor)
                     else repr(a) for a in args)
    return f"{name} call {k} ({desc}; {params})"


@pytest.mark.parametrize("name", DECOMPOSED)
def test_decomposition_equals_kernel(name):
    op = REGISTRY[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NumPy's invalid-value warnings on edge samples
        for k, (_, args, params) in enumerate(CALLS[name]):
            want = op(*args, **params)
            got = _run_decomp(name, args, params)
            _compare(name, got, want, _where(name, k, args, params))


def _to64(a):
    if isinstance(a, ember.Tensor) and a.dtype in (ember.float32, ember.float16,
                                                   ember.bfloat16):
        return wrap(a._data.astype(np.float64))
    if isinstance(a, ember.Tensor) and a.dtype == ember.complex64:
        return wrap(a._data.astype(np.complex128))
    return a


def _grad_calls(name):
    seen, out = set(), []
    for first, args, params in CALLS[name]:
        if first is None or not (first.is_floating_point or first.is_complex):
            continue
        args = tuple(_to64(a) for a in args)
        key = repr([(tuple(a.shape), a.dtype) if isinstance(a, ember.Tensor) else a
                    for a in args]) + repr(sorted(params.items(), key=str))
        if key not in seen:
            seen.add(key)
            out.append((args, params))
    return out


GRAD_OPS = [n for n in DECOMPOSED if REGISTRY[n].differentiable and _grad_calls(n)]

# where the fused kernel's gradient is a documented special case that the primitives'
# derivatives do not reproduce, those calls are left out (with the reason)
NONFINITE_GRAD = {
    "max": "amax's derivative at a NaN maximum is NaN (as torch.amax's); max() gives the NaNs "
           "the gradient (torch's evenly_distribute_backward)",
    "min": "as for max",
    "nan_to_num": "the kernel zeroes a complex element's gradient when either part is not "
                  "finite; the decomposition keeps the finite part's",
}


def _skip_grad(name, args, params):
    if name == "max_pool" and not params.get("need_idx", True):
        return True  # without indices the kernel's derivative has nothing to scatter by
    if name in NONFINITE_GRAD:
        return any(isinstance(a, ember.Tensor) and not np.all(np.isfinite(a._data))
                   for a in args)
    return False


def _differentiable_outputs(op, out):
    """The outputs that carry gradients (not ``nondiff_outputs``, e.g. saved activations)."""
    if not isinstance(out, (tuple, list)) or not op.nondiff_outputs:
        return out
    return [o for i, o in enumerate(out) if i not in op.nondiff_outputs]


@pytest.mark.parametrize("name", GRAD_OPS)
def test_decomposition_gradient_equals_kernel(name):
    op = REGISTRY[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for k, (args, params) in enumerate(_grad_calls(name)):
            idx = [i for i, a in enumerate(args) if isinstance(a, ember.Tensor) and
                   (a.dtype.is_floating_point or a.dtype.is_complex) and a.numel() > 0]
            if not idx:
                continue
            where = _where(name, k, args, params)
            if _skip_grad(name, args, params):
                continue
            grads = []
            for run in (lambda a: op(*a, **params), lambda a: _run_decomp(name, a, params)):
                leaves = [wrap(args[i]._data.copy()).requires_grad_(True) for i in idx]
                full = list(args)
                for i, leaf in zip(idx, leaves):
                    full[i] = leaf
                loss = _loss(_differentiable_outputs(op, run(tuple(full))))
                if loss is None:
                    grads.append([None] * len(leaves))
                    continue
                try:
                    grads.append(ember.autograd.grad(loss, leaves, allow_unused=True))
                except RuntimeError as e:  # the kernel has no derivative (heaviside)
                    assert not grads, f"{where}: backward through the decomposition: {e}"
                    break
            if len(grads) < 2:
                continue
            for j, (gd, gk) in enumerate(zip(grads[1], grads[0])):
                # None and zeros are the same gradient
                kz = gk is None or not np.any(gk._data)
                if kz:
                    assert gd is None or not np.any(gd._data), f"{where}: grad {j} should be 0"
                    continue
                assert gd is not None, f"{where}: grad {j} missing"
                np.testing.assert_allclose(gd._data, gk._data, atol=1e-8, rtol=1e-6,
                                           equal_nan=True, err_msg=f"{where}: grad {j}")


# ---- in-place updates: functional decompositions -----------------------------------------------
@pytest.mark.parametrize("name", sorted(n for n in CALLS if n in D.FUNCTIONALIZED))
def test_functional_decomposition_equals_the_inplace_update(name):
    op = REGISTRY[name]
    for k, (_, args, params) in enumerate(CALLS[name]):
        where = _where(name, k, args, params)
        written = _copy(args)
        op(*written, **params)
        got = _run_decomp(name, args, params)
        assert len(got) == len(args), f"{where}: {len(got)} entries for {len(args)} inputs"
        n_new = 0
        for i, (new, old) in enumerate(zip(got, written)):
            if new is None:  # read only: the kernel must not have written it
                np.testing.assert_array_equal(old._data, args[i]._data, err_msg=where)
                continue
            n_new += 1
            _compare(name, new, old, f"{where}: input {i}")
        assert n_new > 0, where


# ---- random operators: the counter RNG -------------------------------------------------------
def _random_calls():
    return sorted(n for n in CALLS if n in RANDOM and D.decomposition_of(n) is not None)


def test_rng_uniform_is_a_counter_hash():
    prim = REGISTRY["_rng_uniform"]
    s, o = wrap(np.asarray(5, np.int64)), wrap(np.asarray(100, np.int64))
    a = prim(s, o, shape=(1000,), dtype=np.float64)
    b = prim(s, wrap(np.asarray(110, np.int64)), shape=(10,), dtype=np.float64)
    # element i depends on (seed, offset + i) alone: a shifted offset reads the same stream
    np.testing.assert_array_equal(a._data[10:20], b._data)
    assert 0 <= a._data.min() and a._data.max() < 1
    assert abs(a._data.mean() - 0.5) < 0.05 and abs(a._data.var() - 1 / 12) < 0.01
    c = prim(wrap(np.asarray(6, np.int64)), o, shape=(1000,), dtype=np.float64)
    assert np.abs(np.corrcoef(a._data, c._data)[0, 1]) < 0.1
    f = prim(s, o, shape=(4, 5), dtype=np.float32)
    assert f.dtype == ember.float32 and tuple(f.shape) == (4, 5)


def test_rng_key_follows_the_generator():
    g = ember.Generator().manual_seed(3)
    k1 = [int(x) for x in rng_key(g)]
    k2 = [int(x) for x in rng_key(g)]
    g.manual_seed(3)
    assert [int(x) for x in rng_key(g)] == k1 and k1[0] == 3 and k1[1] != k2[1]


@pytest.mark.parametrize("name", _random_calls())
def test_random_decomposition_shape_and_reproducibility(name):
    op = REGISTRY[name]
    for k, (_, args, params) in enumerate(CALLS[name]):
        where = _where(name, k, args, params)
        want = op(*args, **params)
        ember.manual_seed(11)
        got = _run_decomp(name, args, params)
        ember.manual_seed(11)
        again = _run_decomp(name, args, params)
        for a, b, w in zip(_flat(got), _flat(again), _flat(want)):
            assert tuple(a.shape) == tuple(w.shape) and a.dtype == w.dtype, where
            np.testing.assert_array_equal(a._data, b._data, err_msg=where)


def test_dropout_decomposition_keeps_or_scales():
    x = ember.from_numpy(np.random.default_rng(0).uniform(1, 2, (200, 50)))
    out, mask = _run_decomp("native_dropout", (x,), {"p": 0.25})
    kept = mask._data != 0
    assert 0.7 < kept.mean() < 0.8
    np.testing.assert_allclose(mask._data[kept], 1 / 0.75)
    np.testing.assert_allclose(out._data, np.where(kept, x._data / 0.75, 0.0))


def test_normal_decomposition_moments():
    ember.manual_seed(0)
    out = _run_decomp("normal", (), {"mean": 1.0, "std": 2.0, "shape": (20000,),
                                     "dtype": np.float64})
    assert abs(float(out._data.mean()) - 1.0) < 0.05 and abs(float(out._data.std()) - 2) < 0.05


# ---- coverage ---------------------------------------------------------------------------------
def test_every_op_is_primitive_or_decomposed_or_has_a_reason():
    D.install()  # ops registered by lazily imported modules since the first install
    # ops other tests register on the fly (throwaway probes) are not part of the library
    library = [n for n, op in REGISTRY.items()
               if str(getattr(op.kernel, "__module__", "")).startswith("ember")]
    missing = sorted(n for n in library if not is_primitive(n) and n not in D.DECOMPOSITIONS
                     and n not in D.NO_DECOMP)
    assert not missing, f"ops with neither a decomposition nor a reason: {missing}"
    assert EXTERN <= PRIMITIVES
    both = sorted(n for n in D.DECOMPOSITIONS if is_primitive(n))
    assert not both, f"primitives with a decomposition: {both}"
    for name, reason in D.NO_DECOMP.items():
        assert isinstance(reason, str) and len(reason) > 20, name
    n_prim = sum(1 for n in REGISTRY if is_primitive(n))
    n_dec = sum(1 for n in REGISTRY if n in D.DECOMPOSITIONS)
    n_no = sum(1 for n in REGISTRY if n in D.NO_DECOMP)
    tested = len(DECOMPOSED) + len(_random_calls()) + sum(1 for n in CALLS
                                                          if n in D.FUNCTIONALIZED)
    print(f"\n{len(REGISTRY)} registered ops: {n_prim} primitive "
          f"({sum(1 for n in REGISTRY if n in EXTERN)} extern), {n_dec} decomposed, "
          f"{n_no} without decomposition (reason given); {tested} decompositions checked "
          f"against captured calls, {len(GRAD_OPS)} in gradient")
    for n in REGISTRY.values():
        if n.name in D.DECOMPOSITIONS:
            assert n.decomp is D.DECOMPOSITIONS[n.name], n.name


def test_primitive_set_is_small_and_registered():
    ember.ones(2).view(ember.int32)  # view_dtype's op is declared on first use
    structural = PRIMITIVES - EXTERN - {n for n in PRIMITIVES if n in
                                        __import__("ember.ops.primitives",
                                                   fromlist=["ELEMENTWISE"]).ELEMENTWISE}
    assert 25 <= len(structural) <= 60, sorted(structural)
    unregistered = sorted(n for n in PRIMITIVES if n not in REGISTRY)
    assert set(unregistered) <= {"full", "arange"}, unregistered
