"""Transformer encoder/decoder layers and stacks vs torch (same weights): outputs and grads."""
import warnings

import numpy as np
import pytest
import torch

import ember
from nnutil import assert_close, check_module, make_pair, run, same_error

rng = np.random.default_rng(0)
LAYER_CONFIGS = [dict(), dict(norm_first=True, activation="gelu"), dict(batch_first=True),
                 dict(bias=False, activation=torch.nn.functional.gelu)]


def _kw(kw, lib):
    kw = dict(kw)
    if callable(kw.get("activation")):
        kw["activation"] = lib.nn.functional.gelu
    return kw


@pytest.mark.parametrize("kw", LAYER_CONFIGS, ids=str)
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_encoder_decoder_layers(kw, dt):
    x = rng.standard_normal((5, 3, 8)).astype(dt)
    mem = rng.standard_normal((5, 4, 8) if kw.get("batch_first") else (4, 3, 8)).astype(dt)
    tm, em = make_pair(lambda lib: lib.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0,
                                                                  **_kw(kw, lib)), dtype=dt)
    check_module(tm, em, [x])
    tm, em = make_pair(lambda lib: lib.nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0,
                                                                  **_kw(kw, lib)), dtype=dt)
    check_module(tm, em, [x, mem])


def _factory(lib):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return lib.nn.Transformer(8, 2, 2, 2, 16, dropout=0.1)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_transformer_eval_with_masks(dt):
    tm, em = make_pair(_factory, dtype=dt)
    src = rng.standard_normal((5, 3, 8)).astype(dt)
    tgt = rng.standard_normal((4, 3, 8)).astype(dt)
    check_module(tm, em, [src, tgt], modes=("eval",))
    mask = torch.nn.Transformer.generate_square_subsequent_mask(4).numpy().astype(dt)
    kpm = np.zeros((3, 5), bool)
    kpm[1, 3:] = True
    res = []
    for lib, m in ((ember, em), (torch, tm)):
        m.eval()
        res.append(run(lib, lambda s, t, mk, kp: m(s, t, tgt_mask=mk, src_key_padding_mask=kp,
                                                   memory_key_padding_mask=kp),
                       [src, tgt, mask, kpm]))
    for a, b in zip(res[0][0] + res[0][1], res[1][0] + res[1][1]):
        assert_close(a, b)


def test_encoder_stack_causal_and_norm():
    def factory(lib):
        layer = lib.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return lib.nn.TransformerEncoder(layer, 2, norm=lib.nn.LayerNorm(8),
                                             enable_nested_tensor=False)
    tm, em = make_pair(factory, dtype=np.float64)
    x = rng.standard_normal((3, 6, 8))
    mask = np.triu(np.full((6, 6), -np.inf), 1)
    res = []
    for lib, m in ((ember, em), (torch, tm)):
        res.append(run(lib, lambda x, mk: m(x, mask=mk, is_causal=True), [x, mask]))
        res.append(run(lib, lambda x, mk: m(x, mask=mk), [x, mask]))
    for a, b in zip(res[0][0] + res[0][1], res[2][0] + res[2][1]):
        assert_close(a, b)
    for a, b in zip(res[1][0], res[0][0]):
        assert_close(a, b)  # the causal mask is detected when is_causal is not given


def test_decoder_stack():
    def factory(lib):
        return lib.nn.TransformerDecoder(lib.nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0),
                                         2, norm=lib.nn.LayerNorm(8))
    tm, em = make_pair(factory, dtype=np.float64)
    check_module(tm, em, [rng.standard_normal((4, 2, 8)), rng.standard_normal((6, 2, 8))])


def test_generate_square_subsequent_mask_and_repr():
    m = ember.nn.Transformer.generate_square_subsequent_mask(4)
    assert_close(m.numpy(), torch.nn.Transformer.generate_square_subsequent_mask(4).numpy())
    tm, em = _factory(torch), _factory(ember)
    assert list(em.state_dict()) == list(tm.state_dict())
    el = ember.nn.TransformerEncoderLayer(8, 2)
    assert repr(el) == repr(torch.nn.TransformerEncoderLayer(8, 2))


def test_errors():
    same_error(lambda lib: _factory(lib)(lib.randn(5, 3, 8), lib.randn(4, 2, 8)))
    same_error(lambda lib: _factory(lib)(lib.randn(5, 3, 8), lib.randn(4, 3, 6)))
    same_error(lambda lib: lib.nn.TransformerEncoderLayer(8, 2, activation="tanh"))
