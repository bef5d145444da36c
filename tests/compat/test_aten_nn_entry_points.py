"""torch's ATen-level nn entry points (torch.lstm, torch.gru_cell, torch.native_batch_norm,
torch.grid_sampler, F.grouped_mm, ...) against torch: values, gradients and errors."""
import numpy as np
import pytest

import ember

import torch


def E(t):
    return ember.tensor(t.detach().numpy())


def close(e, t, tol=1e-5):
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=tol, atol=tol)


def raises_like(fn_t, fn_e):
    with pytest.raises(Exception) as te:
        fn_t()
    with pytest.raises(type(te.value)) as ee:
        fn_e()
    return str(te.value), str(ee.value)


@pytest.mark.parametrize("name,gates,n_states", [("lstm_cell", 4, 2), ("gru_cell", 3, 1),
                                                 ("rnn_tanh_cell", 1, 1),
                                                 ("rnn_relu_cell", 1, 1)])
@pytest.mark.parametrize("bias", [True, False])
def test_cells(name, gates, n_states, bias):
    g = torch.Generator().manual_seed(1)
    H, I, B = 3, 4, 5
    x = torch.randn(B, I, generator=g, requires_grad=True)
    w = [torch.randn(gates * H, I, generator=g), torch.randn(gates * H, H, generator=g)]
    if bias:
        w += [torch.randn(gates * H, generator=g), torch.randn(gates * H, generator=g)]
    w = [p.requires_grad_() for p in w]
    hs = [torch.randn(B, H, generator=g) for _ in range(n_states)]
    hx = tuple(hs) if n_states == 2 else hs[0]
    out_t = getattr(torch, name)(x, hx, *w)
    xe, we = E(x).requires_grad_(), [E(p).requires_grad_() for p in w]
    hxe = tuple(E(h) for h in hs) if n_states == 2 else E(hs[0])
    out_e = getattr(ember, name)(xe, hxe, *we)
    outs_t = out_t if n_states == 2 else (out_t,)
    outs_e = out_e if n_states == 2 else (out_e,)
    assert isinstance(out_e, tuple) == (n_states == 2)
    for a, b in zip(outs_e, outs_t):
        close(a, b)
    sum(o.sum() for o in outs_t).backward()
    sum(o.sum() for o in outs_e).backward()
    close(xe.grad, x.grad, 1e-4)
    for a, b in zip(we, w):
        close(a.grad, b.grad, 1e-4)


def test_cell_errors():
    x, h = torch.randn(4, 3), torch.randn(4, 2)
    wi, wh = torch.randn(8, 3), torch.randn(8, 2)
    raises_like(lambda: torch.lstm_cell(x, (h,), wi, wh),
                lambda: ember.lstm_cell(E(x), (E(h),), E(wi), E(wh)))
    t, e = raises_like(lambda: torch.lstm_cell(torch.randn(4, 5), (h, h), wi, wh),
                       lambda: ember.lstm_cell(E(torch.randn(4, 5)), (E(h), E(h)), E(wi), E(wh)))
    assert t == e
    raises_like(lambda: torch.lstm_cell(x[0], (h[0], h[0]), wi, wh),
                lambda: ember.lstm_cell(E(x[0]), (E(h[0]), E(h[0])), E(wi), E(wh)))


def _flat(gates, I, H, layers, D, bias, proj, g):
    ps = []
    for layer in range(layers):
        for _ in range(D):
            isz = I if layer == 0 else (proj or H) * D
            ps += [torch.randn(gates * H, isz, generator=g), torch.randn(gates * H, proj or H,
                                                                          generator=g)]
            if bias:
                ps += [torch.randn(gates * H, generator=g), torch.randn(gates * H, generator=g)]
            if proj:
                ps.append(torch.randn(proj, H, generator=g))
    return [p.requires_grad_() for p in ps]


@pytest.mark.parametrize("name,gates", [("lstm", 4), ("gru", 3), ("rnn_tanh", 1),
                                        ("rnn_relu", 1)])
@pytest.mark.parametrize("layers,bidir,batch_first,bias", [(1, False, False, True),
                                                          (2, True, True, False),
                                                          (2, False, True, True)])
def test_layers_padded(name, gates, layers, bidir, batch_first, bias):
    g = torch.Generator().manual_seed(2)
    T, B, I, H = 5, 3, 4, 3
    D = 2 if bidir else 1
    ps = _flat(gates, I, H, layers, D, bias, 0, g)
    x = torch.randn(*((B, T, I) if batch_first else (T, B, I)), generator=g)
    hs = [torch.randn(layers * D, B, H, generator=g) for _ in range(2 if name == "lstm" else 1)]
    hx = tuple(hs) if name == "lstm" else hs[0]
    args = (bias, layers, 0.0, True, bidir, batch_first)
    out_t = getattr(torch, name)(x, hx, ps, *args)
    pe = [E(p).requires_grad_() for p in ps]
    hxe = tuple(E(h) for h in hs) if name == "lstm" else E(hs[0])
    out_e = getattr(ember, name)(E(x), hxe, pe, *args)
    assert len(out_e) == len(out_t)
    for a, b in zip(out_e, out_t):
        close(a, b, 1e-4)
    sum(o.sum() for o in out_t).backward()
    sum(o.sum() for o in out_e).backward()
    for a, b in zip(pe, ps):
        close(a.grad, b.grad, 1e-3)


@pytest.mark.parametrize("name,gates", [("lstm", 4), ("gru", 3), ("rnn_tanh", 1)])
def test_layers_packed(name, gates):
    g = torch.Generator().manual_seed(3)
    bs = torch.tensor([3, 3, 2, 1])
    I, H = 2, 3
    data = torch.randn(int(bs.sum()), I, generator=g)
    ps = _flat(gates, I, H, 2, 2, True, 0, g)
    hs = [torch.randn(4, 3, H, generator=g) for _ in range(2 if name == "lstm" else 1)]
    hx = tuple(hs) if name == "lstm" else hs[0]
    args = (True, 2, 0.0, False, True)
    out_t = getattr(torch, name)(data, bs, hx, ps, *args)
    hxe = tuple(E(h) for h in hs) if name == "lstm" else E(hs[0])
    out_e = getattr(ember, name)(E(data), E(bs), hxe, [E(p) for p in ps], *args)
    for a, b in zip(out_e, out_t):
        close(a, b, 1e-4)


def test_lstm_projections_and_dropout():
    g = torch.Generator().manual_seed(4)
    ps = _flat(4, 3, 4, 2, 1, True, 2, g)
    x = torch.randn(6, 2, 3, generator=g)
    h0, c0 = torch.randn(2, 2, 2, generator=g), torch.randn(2, 2, 4, generator=g)
    with pytest.warns(UserWarning):  # torch: projections are not supported with oneDNN
        out_t = torch.lstm(x, (h0, c0), ps, True, 2, 0.0, False, False, False)
    out_e = ember.lstm(E(x), (E(h0), E(c0)), [E(p) for p in ps], True, 2, 0.0, False, False,
                       False)
    for a, b in zip(out_e, out_t):
        close(a, b, 1e-4)
    # dropout only between layers, only when training: train=False ignores it
    ev = ember.lstm(E(x), (E(h0), E(c0)), [E(p) for p in ps], True, 2, 0.9, False, False, False)
    close(ev[0], out_t[0], 1e-4)
    tr = ember.lstm(E(x), (E(h0), E(c0)), [E(p) for p in ps], True, 2, 0.9, True, False, False)
    assert not np.allclose(tr[0].detach().numpy(), out_t[0].detach().numpy())


def test_layer_weight_count_error():
    x, h = torch.randn(5, 4, 3), torch.randn(1, 4, 2)
    with pytest.raises(RuntimeError):
        torch.lstm(x, (h, h), [torch.randn(8, 3), torch.randn(8, 2)], False, 2, 0., False,
                   False, False)
    with pytest.raises(RuntimeError, match="expected 4 weight tensors"):
        ember.lstm(E(x), (E(h), E(h)), [E(torch.randn(8, 3)), E(torch.randn(8, 2))], False, 2,
                   0., False, False, False)


def test_native_dropout():
    x = ember.randn(200, 50)
    out, mask = ember.native_dropout(x, 0.3, True)
    assert mask.dtype == ember.bool and out.shape == x.shape
    m = mask.numpy()
    np.testing.assert_allclose(out.numpy(), np.where(m, x.numpy() / 0.7, 0), rtol=1e-6)
    assert 0.65 < m.mean() < 0.75
    t_out, t_mask = torch.native_dropout(torch.tensor(x.numpy()), 0.3, False)
    e_out, e_mask = ember.native_dropout(x, 0.3, False)
    close(e_out, t_out)
    assert e_mask.dtype == ember.bool and e_mask.numpy().all() and t_mask.all()
    out, mask = ember.native_dropout(x, 1.0, True)
    assert not mask.numpy().any() and not out.numpy().any()


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("affine", [True, False])
def test_native_batch_norm(training, affine):
    g = torch.Generator().manual_seed(5)
    x = torch.randn(4, 3, 5, generator=g)
    w, b = (torch.randn(3, generator=g), torch.randn(3, generator=g)) if affine else (None, None)
    rm, rv = torch.randn(3, generator=g), torch.rand(3, generator=g) + 0.5
    erm, erv = E(rm), E(rv)
    out_t = torch.native_batch_norm(x, w, b, rm, rv, training, 0.1, 1e-5)
    out_e = ember.native_batch_norm(E(x), None if w is None else E(w),
                                    None if b is None else E(b), erm, erv, training, 0.1, 1e-5)
    for a, t in zip(out_e, out_t):
        assert tuple(a.shape) == tuple(t.shape)
        close(a, t, 1e-5)
    close(erm, rm)
    close(erv, rv)


def test_batch_norm_update_stats():
    g = torch.Generator().manual_seed(6)
    x = torch.randn(4, 3, 5, 2, generator=g)
    rm, rv = torch.zeros(3), torch.ones(3)
    erm, erv = E(rm), E(rv)
    out_t = torch.batch_norm_update_stats(x, rm, rv, 0.2)
    out_e = ember.batch_norm_update_stats(E(x), erm, erv, 0.2)
    for a, t in zip(out_e, out_t):
        close(a, t)
    close(erm, rm)
    close(erv, rv)


def test_channel_shuffle_and_max_pool1d_with_indices():
    x = torch.randn(2, 6, 4)
    close(ember.native_channel_shuffle(E(x), 3), torch.native_channel_shuffle(x, 3))
    raises_like(lambda: torch.native_channel_shuffle(x, 4),
                lambda: ember.native_channel_shuffle(E(x), 4))
    x = torch.randn(2, 3, 9)
    for args in [(2,), (3, 2), (3, 2, 1), (2, [], 0, 2, True)]:
        v_t, i_t = torch.max_pool1d_with_indices(x, *args)
        v_e, i_e = ember.max_pool1d_with_indices(E(x), *args)
        close(v_e, v_t)
        np.testing.assert_array_equal(i_e.numpy(), i_t.numpy())


@pytest.mark.parametrize("interp", [0, 1])
@pytest.mark.parametrize("pad", [0, 1, 2])
@pytest.mark.parametrize("align", [True, False])
def test_grid_sampler(interp, pad, align):
    g = torch.Generator().manual_seed(7)
    x = torch.randn(2, 3, 5, 6, generator=g)
    grid = torch.rand(2, 4, 3, 2, generator=g) * 2.4 - 1.2
    for name in ("grid_sampler", "grid_sampler_2d"):
        close(getattr(ember, name)(E(x), E(grid), interp, pad, align),
              getattr(torch, name)(x, grid, interp, pad, align))
    x3 = torch.randn(2, 3, 3, 4, 5, generator=g)
    grid3 = torch.rand(2, 2, 3, 4, 3, generator=g) * 2.4 - 1.2
    for name in ("grid_sampler", "grid_sampler_3d"):
        close(getattr(ember, name)(E(x3), E(grid3), interp, pad, align),
              getattr(torch, name)(x3, grid3, interp, pad, align))
    with pytest.raises(RuntimeError, match="expected 5D input"):
        ember.grid_sampler_3d(E(x), E(grid), interp, pad, align)


def test_grid_sampler_bad_mode_and_affine_grid_generator():
    with pytest.raises(RuntimeError, match="interpolation_mode"):
        ember.grid_sampler_2d(ember.zeros(1, 1, 2, 2), ember.zeros(1, 1, 1, 2), 7, 0, False)
    theta = torch.randn(2, 2, 3)
    for align in (True, False):
        close(ember.affine_grid_generator(E(theta), [2, 3, 4, 5], align),
              torch.affine_grid_generator(theta, [2, 3, 4, 5], align))
    theta = torch.randn(1, 3, 4)
    close(ember.affine_grid_generator(E(theta), (1, 1, 2, 3, 4), False),
          torch.affine_grid_generator(theta, (1, 1, 2, 3, 4), False))


def test_norm_except_dim():
    x = torch.randn(4, 3, 5)
    for p, d in [(2, 0), (2, 1), (3, 2), (2, -1), (1, 0)]:
        r_t, r_e = torch.norm_except_dim(x, p, d), ember.norm_except_dim(E(x), p, d)
        assert tuple(r_e.shape) == tuple(r_t.shape)
        close(r_e, r_t)
    close(ember.norm_except_dim(E(x)), torch.norm_except_dim(x))


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0])
def test_embedding_renorm_(norm_type):
    w = torch.randn(6, 4) * 3
    idx = torch.tensor([0, 2, 2, 5])
    we = E(w)
    r_t = torch.embedding_renorm_(w, idx, 1.5, norm_type)
    r_e = ember.embedding_renorm_(we, E(idx), 1.5, norm_type)
    assert r_t is w and r_e is we
    close(we, w)


@pytest.mark.parametrize("pad", [0, 1, 2])
def test_conv_tbc(pad):
    g = torch.Generator().manual_seed(8)
    x = torch.randn(7, 2, 3, generator=g, requires_grad=True)
    w = torch.randn(3, 3, 4, generator=g, requires_grad=True)
    b = torch.randn(4, generator=g, requires_grad=True)
    xe, we, be = (E(t).requires_grad_() for t in (x, w, b))
    for fn_t, fn_e in ((torch.conv_tbc, ember.conv_tbc),
                       (torch.nn.functional.conv_tbc, ember.nn.functional.conv_tbc)):
        close(fn_e(xe, we, be, pad), fn_t(x, w, b, pad), 1e-5)
    torch.conv_tbc(x, w, b, pad).square().sum().backward()
    ember.conv_tbc(xe, we, be, pad).square().sum().backward()
    for a, t in ((xe, x), (we, w), (be, b)):
        close(a.grad, t.grad, 1e-4)
    raises_like(lambda: torch.conv_tbc(x, w[:, :2], b, pad),
                lambda: ember.conv_tbc(xe, we[:, :2], be, pad))
    raises_like(lambda: torch.conv_tbc(x, w, b[:3], pad),
                lambda: ember.conv_tbc(xe, we, be[:3], pad))


def test_grouped_mm():
    F, Fe = torch.nn.functional, ember.nn.functional
    g = torch.Generator().manual_seed(9)
    offs = torch.tensor([2, 6, 9], dtype=torch.int32)
    a, b = torch.randn(10, 8, generator=g), torch.randn(3, 8, 4, generator=g)
    r_t, r_e = F.grouped_mm(a, b, offs=offs), Fe.grouped_mm(E(a), E(b), offs=E(offs))
    close(r_e[:9], r_t[:9], 1e-5)  # rows past the last offset: torch leaves them unwritten
    assert not r_e[9:].numpy().any()
    offs = torch.tensor([4, 8, 12], dtype=torch.int32)
    a3, b2 = torch.randn(3, 4, 8, generator=g), torch.randn(8, 12, generator=g)
    close(Fe.grouped_mm(E(a3), E(b2), offs=E(offs)), F.grouped_mm(a3, b2, offs=offs), 1e-5)
    a2, b2 = torch.randn(4, 12, generator=g), torch.randn(12, 4, generator=g)
    close(Fe.grouped_mm(E(a2), E(b2), offs=E(offs)), F.grouped_mm(a2, b2, offs=offs), 1e-5)
    a3, b3 = torch.randn(2, 4, 8, generator=g), torch.randn(2, 8, 4, generator=g)
    close(Fe.grouped_mm(E(a3), E(b3)), F.grouped_mm(a3, b3), 1e-5)
    offs = torch.tensor([2, 6, 9], dtype=torch.int32)
    cases = [
        lambda m, o: m.grouped_mm(E(a), E(b), offs=E(o.long())),
        lambda m, o: m.grouped_mm(E(a).double(), E(b).double(), offs=E(o)),
        lambda m, o: m.grouped_mm(E(a), E(b), offs=E(o), bias=ember.zeros(3, 4)),
        lambda m, o: m.grouped_mm(E(a), E(b), offs=E(o), out_dtype=ember.bfloat16),
        lambda m, o: m.grouped_mm(ember.zeros(2, 4, 8), ember.zeros(3, 8, 4)),
        lambda m, o: m.grouped_mm(E(a), ember.zeros(3, 12, 4), offs=E(o)),
        lambda m, o: m.grouped_mm(ember.zeros(8), E(b)),
        lambda m, o: m.grouped_mm(ember.zeros(2, 4, 8), ember.zeros(2, 8, 4), offs=E(o)),
    ]
    tm = type("T", (), {"grouped_mm": staticmethod(
        lambda x, y, **k: F.grouped_mm(
            torch.tensor(x.numpy()) if x.dtype != ember.bfloat16 else x,
            torch.tensor(y.numpy()),
            **{n: (torch.tensor(v.numpy()) if isinstance(v, ember.Tensor) else
                   {ember.bfloat16: torch.bfloat16}.get(v, v)) for n, v in k.items()}))})
    for case in cases:
        t, e = raises_like(lambda: case(tm, offs), lambda: case(Fe, offs))
        assert t == e
