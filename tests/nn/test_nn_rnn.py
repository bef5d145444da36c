"""RNN/LSTM/GRU, their cells and nn.utils.rnn against torch: outputs, input/state/parameter
grads, packed sequences, errors, reprs."""
import warnings

import numpy as np
import pytest
import torch

import ember
from nnutil import assert_close, check_pair, make_pair, np_of, run, same_error

rng = np.random.default_rng(0)
X = rng.standard_normal((5, 3, 4))

CONFIGS = [dict(), dict(num_layers=2, bidirectional=True), dict(batch_first=True, bias=False),
           dict(num_layers=3)]


def _compare(tm, em, inputs, call):
    """Run ``call(lib, module, *tensors)`` on both; compare outputs, input and param grads."""
    res = []
    for lib, m in ((ember, em), (torch, tm)):
        m.zero_grad()
        res.append(run(lib, lambda *a: call(lib, m, *a), inputs) + (dict(m.named_parameters()),))
    (eo, eg, _, ep), (to, tg, _, tp) = res
    assert len(eo) == len(to)
    for i, (a, b) in enumerate(zip(eo + eg, to + tg)):
        assert_close(a, b, f"output/grad {i}")
    assert list(ep) == list(tp)
    for k in tp:
        assert_close(np_of(ep[k].grad), np_of(tp[k].grad), f"grad of {k}")


@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("kw", CONFIGS, ids=str)
def test_rnn_matches_torch(name, kw):
    check_pair(name, 4, 6, inputs=[X], kwargs=kw)


def test_rnn_relu_and_initial_state():
    check_pair("RNN", 4, 6, inputs=[X, rng.standard_normal((2, 3, 6))],
               kwargs=dict(nonlinearity="relu", num_layers=2))
    check_pair("GRU", 4, 6, inputs=[X, rng.standard_normal((4, 3, 6))],
               kwargs=dict(num_layers=2, bidirectional=True))


def test_unbatched_input():
    check_pair("GRU", 4, 6, inputs=[X[:, 0], rng.standard_normal((2, 6))],
               kwargs=dict(num_layers=2))
    check_pair("RNN", 4, 6, inputs=[X[:, 0]], kwargs=dict(bidirectional=True))


@pytest.mark.parametrize("kw", [dict(num_layers=2), dict(proj_size=2, num_layers=2,
                                                          bidirectional=True)], ids=str)
@pytest.mark.parametrize("batched", [True, False])
def test_lstm_state_tuple(kw, batched):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch: projections not supported with oneDNN
        tm, em = make_pair("LSTM", 4, 6, dtype=np.float64, **kw)
    D = 2 if kw.get("bidirectional") else 1
    lead = (kw["num_layers"] * D,) + ((3,) if batched else ())
    x = X if batched else X[:, 0]
    h = rng.standard_normal(lead + (kw.get("proj_size") or 6,))
    c = rng.standard_normal(lead + (6,))
    _compare(tm, em, [x, h, c], lambda lib, m, x, h, c: m(x, (h, c)))


def test_dropout_between_layers():
    # p=1 zeroes the input of every layer after the first: deterministic, so torch must agree
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_pair("LSTM", 4, 6, inputs=[X], kwargs=dict(num_layers=2, dropout=1.0),
                   modes=("train", "eval"))
    em = ember.nn.GRU(4, 6, num_layers=2, dropout=0.5)
    x = ember.from_numpy(X.astype(np.float32))
    a, b = em(x)[0], em(x)[0]
    assert not np.allclose(a.detach().numpy(), b.detach().numpy())  # fresh masks each call
    em.eval()
    assert np.allclose(em(x)[0].detach().numpy(), em(x)[0].detach().numpy())


@pytest.mark.parametrize("name,kw", [("LSTM", dict(num_layers=2, bidirectional=True)),
                                     ("GRU", dict(bidirectional=True)),
                                     ("RNN", dict(num_layers=2)),
                                     ("LSTM", dict(proj_size=2, bidirectional=True))], ids=str)
@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_packed_sequence_input(name, kw, enforce_sorted):
    lens = [6, 4, 3, 1] if enforce_sorted else [3, 6, 1, 4]
    x = rng.standard_normal((6, 4, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tm, em = make_pair(name, 3, 5, dtype=np.float64, **kw)
    D = 2 if kw.get("bidirectional") else 1
    L = kw.get("num_layers", 1) * D
    hs = [rng.standard_normal((L, 4, kw.get("proj_size") or 5))]
    if name == "LSTM":
        hs.append(rng.standard_normal((L, 4, 5)))

    def call(lib, m, x, *h):
        p = lib.nn.utils.rnn.pack_padded_sequence(x, lens, enforce_sorted=enforce_sorted)
        out, hn = m(p, tuple(h) if name == "LSTM" else h[0])
        assert isinstance(out, lib.nn.utils.rnn.PackedSequence)
        o, lengths = lib.nn.utils.rnn.pad_packed_sequence(out, padding_value=0.5)
        return o, lengths, hn
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _compare(tm, em, [x] + hs, call)


@pytest.mark.parametrize("name", ["RNNCell", "LSTMCell", "GRUCell"])
def test_cells(name):
    check_pair(name, 4, 6, inputs=[X[0]])
    check_pair(name, 4, 6, inputs=[X[0, 0]])
    check_pair(name, 4, 6, inputs=[X[0]], kwargs=dict(bias=False))
    if name == "LSTMCell":
        tm, em = make_pair(name, 4, 6, dtype=np.float64)
        _compare(tm, em, [X[0], rng.standard_normal((3, 6)), rng.standard_normal((3, 6))],
                 lambda lib, m, x, h, c: m(x, (h, c)))
    else:
        check_pair(name, 4, 6, inputs=[X[0], rng.standard_normal((3, 6))])
    check_pair("RNNCell", 4, 6, inputs=[X[0]], kwargs=dict(nonlinearity="relu"))


def test_fused_cells_double_backward():
    from ember.autograd import gradcheck, gradgradcheck
    from ember.nn.functional.rnn import GRU_CELL, LSTM_CELL
    g = ember.randn(2, 12, dtype=ember.float64, requires_grad=True)
    c = ember.randn(2, 3, dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda g, c: LSTM_CELL(g, c), (g, c))
    assert gradgradcheck(lambda g, c: LSTM_CELL(g, c), (g, c))
    gi = ember.randn(2, 9, dtype=ember.float64, requires_grad=True)
    gh = ember.randn(2, 9, dtype=ember.float64, requires_grad=True)
    h = ember.randn(2, 3, dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda a, b, h: GRU_CELL(a, b, h), (gi, gh, h))
    assert gradgradcheck(lambda a, b, h: GRU_CELL(a, b, h), (gi, gh, h))


def test_repr_and_state_dict_layout():
    cases = [("RNN", (3, 4, 2), dict(nonlinearity="relu", bias=False, batch_first=True,
                                      dropout=0.5, bidirectional=True)),
             ("LSTM", (3, 4), dict(proj_size=2, num_layers=2, bidirectional=True)),
             ("GRU", (3, 4), {}), ("RNNCell", (3, 4), dict(nonlinearity="relu", bias=False)),
             ("LSTMCell", (3, 4), {}), ("GRUCell", (3, 4), {})]
    for name, args, kw in cases:
        tm, em = getattr(torch.nn, name)(*args, **kw), getattr(ember.nn, name)(*args, **kw)
        assert repr(em) == repr(tm)
        ts, es = tm.state_dict(), em.state_dict()
        assert list(es) == list(ts)
        assert all(tuple(es[k].shape) == tuple(ts[k].shape) for k in ts)
    m = ember.nn.LSTM(3, 4, 2)
    bound = 1 / np.sqrt(4)
    assert all(np.abs(p.detach().numpy()).max() <= bound for p in m.parameters())
    assert len(m.all_weights) == 2 and len(m.all_weights[0]) == 4


def test_module_double_and_dtype():
    tm, em = make_pair("GRU", 4, 6, dtype=np.float64)
    out = em(ember.from_numpy(X))[0]
    assert out.dtype == ember.float64


ERRORS = [
    (lambda lib: lib.nn.LSTM(3, 4)(lib.randn(2, 2, 2, 3)), ValueError),
    (lambda lib: lib.nn.RNN(3, 4)(lib.randn(2, 2, 2, 3)), ValueError),
    (lambda lib: lib.nn.LSTM(3, 4, 2)(lib.randn(5, 2, 5)), RuntimeError),
    (lambda lib: lib.nn.LSTM(3, 4, 2)(lib.randn(5, 2, 3), (lib.zeros(1, 2, 4),
                                                           lib.zeros(2, 2, 4))), RuntimeError),
    (lambda lib: lib.nn.LSTM(3, 4, 2)(lib.randn(5, 3), (lib.zeros(2, 2, 4),
                                                        lib.zeros(2, 2, 4))), RuntimeError),
    (lambda lib: lib.nn.GRU(3, 4)(lib.randn(5, 2, 3), lib.zeros(1, 3, 4)), RuntimeError),
    (lambda lib: lib.nn.GRU(3, 4)(lib.randn(5, 2, 3), lib.zeros(3, 4)), RuntimeError),
    (lambda lib: lib.nn.LSTMCell(3, 4)(lib.randn(2, 2, 3)), ValueError),
    (lambda lib: lib.nn.LSTMCell(3, 4)(lib.randn(2, 5)), RuntimeError),
    (lambda lib: lib.nn.GRUCell(3, 4)(lib.randn(2, 3), lib.zeros(3, 4)), RuntimeError),
    (lambda lib: lib.nn.LSTM(3, 4, dropout=2), ValueError),
    (lambda lib: lib.nn.LSTM(3, 4.0), TypeError),
    (lambda lib: lib.nn.LSTM(3, 0), ValueError),
    (lambda lib: lib.nn.GRU(3, 4, proj_size=2), ValueError),
    (lambda lib: lib.nn.LSTM(3, 4, proj_size=4), ValueError),
    (lambda lib: lib.nn.RNN(3, 4, nonlinearity="x"), ValueError),
    (lambda lib: lib.nn.utils.rnn.pack_padded_sequence(lib.zeros(3, 2, 1), [1, 3]),
     RuntimeError),
    (lambda lib: lib.nn.utils.rnn.pack_padded_sequence(lib.zeros(3, 2, 1), [3, 0]),
     RuntimeError),
    (lambda lib: lib.nn.utils.rnn.pad_packed_sequence(
        lib.nn.utils.rnn.pack_padded_sequence(lib.zeros(3, 2, 1), [3, 2]), total_length=2),
     ValueError),
]


@pytest.mark.parametrize("fn,exc", ERRORS)
def test_errors(fn, exc):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        te, ee = same_error(fn)
    assert isinstance(te, exc)
    if isinstance(te, RuntimeError) and ("hidden" in str(te) or "input_size" in str(te)):
        assert str(ee) == str(te)


def test_dropout_warning_and_messages():
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        ember.nn.LSTM(3, 4, dropout=0.5)
    with pytest.raises(RuntimeError, match=r"Expected hidden\[0\] size \(2, 2, 4\), got "
                                           r"\[1, 2, 4\]"):
        ember.nn.LSTM(3, 4, 2)(ember.randn(5, 2, 3), (ember.zeros(1, 2, 4), ember.zeros(1, 2, 4)))


# ---- nn.utils.rnn ---------------------------------------------------------------------------

@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("enforce_sorted,lens", [(True, [5, 3, 2]), (False, [2, 5, 3])])
def test_pack_pad_roundtrip(batch_first, enforce_sorted, lens):
    x = rng.standard_normal((3, 5, 2) if batch_first else (5, 3, 2))

    def fn(lib, x):
        p = lib.nn.utils.rnn.pack_padded_sequence(x, lens, batch_first=batch_first,
                                                  enforce_sorted=enforce_sorted)
        o, l2 = lib.nn.utils.rnn.pad_packed_sequence(p, batch_first=batch_first,
                                                     padding_value=-1.0, total_length=6)
        extra = [p.sorted_indices, p.unsorted_indices] if not enforce_sorted else []
        return [p.data, p.batch_sizes, o, l2] + extra
    outs = []
    for lib in (ember, torch):
        outs.append(run(lib, lambda x: fn(lib, x), [x]))
    for a, b in zip(outs[0][0] + outs[0][1], outs[1][0] + outs[1][1]):
        assert_close(a, b)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("side", ["left", "right"])
def test_pad_sequence(batch_first, side):
    seqs = [rng.standard_normal((n, 2)) for n in (3, 5, 1)]
    outs = []
    for lib in (ember, torch):
        outs.append(run(lib, lambda *s: lib.nn.utils.rnn.pad_sequence(
            list(s), batch_first=batch_first, padding_value=2.0, padding_side=side), seqs))
    for a, b in zip(outs[0][0] + outs[0][1], outs[1][0] + outs[1][1]):
        assert_close(a, b)


def test_pack_sequence_and_unpack():
    seqs = [rng.standard_normal((n, 2)) for n in (3, 5, 1)]
    res = []
    for lib in (ember, torch):
        R = lib.nn.utils.rnn
        ts = [lib.from_numpy(s) for s in seqs]
        p = R.pack_sequence(ts, enforce_sorted=False)
        un = R.unpack_sequence(p)
        padded, lens = R.pad_packed_sequence(p, batch_first=True)
        unp = R.unpad_sequence(padded, lens, batch_first=True)
        res.append([p.data, p.batch_sizes, p.sorted_indices] + list(un) + list(unp))
    for a, b in zip(*res):
        assert_close(np_of(a), np_of(b))
    with pytest.raises(RuntimeError, match="must be sorted in decreasing order"):
        ember.nn.utils.rnn.pack_sequence([ember.from_numpy(s) for s in seqs])


def test_packed_sequence_methods():
    p = ember.nn.utils.rnn.pack_sequence([ember.ones(3, 2), ember.ones(2, 2)])
    assert isinstance(p, tuple) and p._fields == ("data", "batch_sizes", "sorted_indices",
                                                   "unsorted_indices")
    assert p.double().data.dtype == ember.float64
    assert p.to(ember.float64).data.dtype == ember.float64
    assert p.batch_sizes.tolist() == [2, 2, 1] and p.batch_sizes.dtype == ember.int64
    assert not p.is_cuda


@pytest.mark.parametrize("reverse", [False, True])
def test_fused_layers_gradcheck_and_double_backward(reverse):
    """The whole-layer ops: the BPTT kernel (gradcheck) and its own derivative, from its
    decomposition (gradgradcheck)."""
    from ember.autograd import gradcheck, gradgradcheck
    from ember.nn.functional.rnn import GRU_LAYER, LSTM_LAYER
    r = lambda *s: ember.randn(*s, dtype=ember.float64, requires_grad=True)  # noqa: E731
    xw, h, c, w = r(4, 2, 12), r(2, 3), r(2, 3), r(3, 12)
    f = lambda *a: LSTM_LAYER(*a, reverse=reverse)[:2]  # noqa: E731
    assert gradcheck(f, (xw, h, c, w))
    assert gradgradcheck(f, (xw, h, c, w))
    gi, w3, b = r(4, 2, 9), r(3, 9), r(9)
    g = lambda *a: GRU_LAYER(*a, reverse=reverse)[0]  # noqa: E731
    assert gradcheck(g, (gi, h, w3, b))
    assert gradgradcheck(g, (gi, h, w3, b))
    assert gradcheck(lambda a, h, w: GRU_LAYER(a, h, w, None, reverse=reverse)[0], (gi, h, w3))


@pytest.mark.parametrize("name", ["LSTM", "GRU"])
def test_fused_layer_used_and_matches_per_step(name):
    import ember.nn.functional.rnn as R
    em = getattr(ember.nn, name)(3, 4, num_layers=2, bidirectional=True).double()
    x = ember.from_numpy(rng.standard_normal((5, 2, 3))).requires_grad_()
    orig, used = R._run_fused, []
    R._run_fused = lambda *a: used.append(orig(*a)) or used[-1]
    try:
        out, _ = em(x)
    finally:
        R._run_fused = orig
    assert len(used) == 4 and all(u is not None for u in used)
    gx = ember.autograd.grad(out.sum(), x)[0]
    # the same module through the per-step operators
    R._run_fused = lambda *a: None
    try:
        out2, _ = em(x)
        gx2 = ember.autograd.grad(out2.sum(), x)[0]
    finally:
        R._run_fused = orig
    np.testing.assert_allclose(out.detach().numpy(), out2.detach().numpy(), atol=1e-12)
    np.testing.assert_allclose(gx.numpy(), gx2.numpy(), atol=1e-12)


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_fused_layers_half_grads(dt):
    """Half inputs run the layer kernels in float32; grads come back in the input dtype."""
    for name in ("LSTM", "GRU"):
        m = getattr(ember.nn, name)(3, 4)
        mh = getattr(ember.nn, name)(3, 4).to(getattr(ember, dt))
        mh.load_state_dict({k: v.to(getattr(ember, dt)) for k, v in m.state_dict().items()})
        x = rng.standard_normal((5, 2, 3)).astype(np.float32)
        xs = [ember.from_numpy(x).requires_grad_(), ember.from_numpy(x).to(getattr(ember, dt))]
        xs[1].requires_grad_()
        for mod, xx in zip((m, mh), xs):
            mod(xx)[0].float().pow(2).sum().backward()
        assert xs[1].grad.dtype == getattr(ember, dt)
        tol = 2e-2 if dt == "bfloat16" else 3e-3
        np.testing.assert_allclose(xs[1].grad.float().numpy(), xs[0].grad.numpy(), atol=tol)
        np.testing.assert_allclose(mh.weight_hh_l0.grad.float().numpy(),
                                   m.weight_hh_l0.grad.numpy(), atol=5 * tol)
