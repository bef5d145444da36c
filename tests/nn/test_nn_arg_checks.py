"""nn.functional argument checks the differential fuzzer (tests/fuzz) found ember missing:
dtypes torch refuses, target shapes and values, against torch's exception types (and its
values where both compute)."""
import numpy as np
import pytest
import torch

import ember
from nnutil import assert_close, np_of, same_error

_DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
           "float32", "float64", "complex64")


def _outcome(fn):
    """``fn(lib)`` in torch and ember: the same exception type, or close values."""
    try:
        t = fn(torch)
    except Exception:  # noqa: BLE001 - same_error compares the types
        same_error(lambda lib: fn(lib))
        return
    e = fn(ember)
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    tol = {}
    if t.dtype in (torch.bfloat16, torch.float16):
        t, e, tol = t.float(), e.float(), dict(atol=1e-2, rtol=1.6e-2)
    assert_close(np_of(e), np_of(t), **tol)


@pytest.mark.parametrize("dtype", _DTYPES)
def test_embedding_indices_are_int32_or_int64(dtype):
    w = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    for max_norm in (None, 1.0):
        _outcome(lambda lib: lib.nn.functional.embedding(
            lib.tensor([1, 0, 3]).to(getattr(lib, dtype)), lib.tensor(w), max_norm=max_norm))


@pytest.mark.parametrize("dtype", _DTYPES)
@pytest.mark.parametrize("n", [1, 2, 3])
def test_max_unpool_takes_floating_inputs(dtype, n):
    fn = f"max_unpool{n}d"
    shape = (1, 1) + (1,) * (n - 1) + (2,)
    idx = np.array([0, 3]).reshape(shape)
    _outcome(lambda lib: getattr(lib.nn.functional, fn)(
        lib.ones(shape).to(getattr(lib, dtype)), lib.tensor(idx), 2))


def _ctc(lib, targets, tgt_lens, in_lens=(6, 6), dtype="float32", C=5, **kw):
    lp = np.random.default_rng(1).standard_normal((6, len(in_lens), C))
    lp = lib.tensor(lp).to(getattr(lib, dtype)).log_softmax(-1) if dtype != "int64" else \
        lib.tensor(lp).long()
    return lib.nn.functional.ctc_loss(lp, lib.tensor(targets), lib.tensor(in_lens),
                                      lib.tensor(tgt_lens), **kw)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64", "int64"])
def test_ctc_loss_takes_float32_or_float64_log_probs(dtype):
    _outcome(lambda lib: _ctc(lib, [[1, 2], [3, 3]], [2, 1], dtype=dtype))


@pytest.mark.parametrize("targets, tgt_lens", [
    ([1, 2, 3, 4, 1], [2, 2]), ([1, 2, 3], [2, 2]), ([1, 2, 3, 4], [2, 2]),  # concatenated
    ([[1, 2, 3], [1, 2, 3], [1, 1, 1]], [2, 2]), ([[1, 2, 3], [4, 1, 2]], [-1, 2]),
    ([[1, 2, 3], [4, 1, 2]], [7, 2]), ([[1, 2, 3], [4, 1, 2]], [3, 0])])
def test_ctc_loss_target_shapes_and_lengths(targets, tgt_lens):
    _outcome(lambda lib: _ctc(lib, targets, tgt_lens, reduction="none"))


@pytest.mark.parametrize("targets, tgt_len", [([1, 2, 3], 2), ([1], 2), ([1, 2], 2),
                                              ([[1, 2, 3]], 2)])
def test_ctc_loss_unbatched_1d_targets_are_concatenated(targets, tgt_len):
    # torch reads 1-d targets of an unbatched call as one concatenated sequence: their size
    # must equal the target length (2-d ones are padded)
    def fn(lib):
        lp = lib.tensor(np.random.default_rng(2).standard_normal((6, 5))).log_softmax(-1)
        return lib.nn.functional.ctc_loss(lp, lib.tensor(targets), lib.tensor([6]),
                                          lib.tensor([tgt_len]), reduction="none")
    _outcome(fn)


@pytest.mark.parametrize("bad", [5, -1, 2 ** 63 - 1])
def test_ctc_loss_refuses_targets_outside_the_classes(bad):
    # torch's CPU kernel reads out of bounds there (garbage, NaN or inf): ember refuses
    with pytest.raises(IndexError, match=r"out of the class range \[0, 5\)"):
        _ctc(ember, [[1, 2, 3], [1, bad, 3]], [2, 2])
    # an entry past its sequence's length is never read
    assert np.isfinite(_ctc(ember, [[1, 2, bad], [1, 2, 3]], [2, 2]).item())


_NORM_PARAMS = [(None, None), ("float32", "float32"), ("float64", "float64"),
                ("float16", "float16"), ("bfloat16", "bfloat16"), ("bool", "bool"),
                ("float32", "float16"), ("float32", None), (None, "float32"), ("int32", "int32")]


def _norm_call(name, lib, x, w, b):
    F = lib.nn.functional

    def p(dt, fill=1.0):
        return None if dt is None else lib.full((4,), fill).to(getattr(lib, dt))
    xt = lib.tensor(np.random.default_rng(3).standard_normal((2, 4, 3))).to(getattr(lib, x))
    if name == "layer_norm":
        return F.layer_norm(xt, (3,), None if w is None else lib.ones(3).to(getattr(lib, w)),
                            None if b is None else lib.ones(3).to(getattr(lib, b)))
    if name == "group_norm":
        return F.group_norm(xt, 2, p(w), p(b))
    if name == "instance_norm":
        return F.instance_norm(xt, None, None, p(w), p(b))
    stats = w or "float32"
    return F.batch_norm(xt, p(stats, 0.0), p(stats), p(w), p(b), training=name == "train")


@pytest.mark.parametrize("name", ["layer_norm", "group_norm", "instance_norm", "batch_norm",
                                  "train"])
@pytest.mark.parametrize("x", ["bool", "int32", "float16", "bfloat16", "float32", "float64",
                               "complex64"])
def test_norm_parameter_dtypes_follow_torchs_mixed_dtype_rule(name, x):
    # parameters of the input's dtype, or float32 ones for a float16/bfloat16 input (the
    # result keeps the input's dtype); any other mix is refused
    for w, b in _NORM_PARAMS:
        _outcome(lambda lib: _norm_call(name, lib, x, w, b))


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_silu_computes_complex_inputs_without_a_derivative(dtype):
    x = [1 + 2j, -1 - 0.5j, 0j, complex(np.inf, 0), complex(-1e3, 1), complex(np.nan, 0)]
    _outcome(lambda lib: lib.nn.functional.silu(lib.tensor(x, dtype=getattr(lib, dtype))))
    _outcome(lambda lib: lib.nn.functional.silu(lib.tensor(x, dtype=getattr(lib, dtype)),
                                                inplace=True))
    same_error(lambda lib: lib.nn.functional.silu(
        lib.tensor(x, dtype=getattr(lib, dtype), requires_grad=True)))


@pytest.mark.parametrize("mod", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("dtype", ["float64", "complex64", "bfloat16"])
def test_rnn_input_of_another_dtype_than_the_weights_is_a_value_error(mod, dtype):
    te, ee = same_error(lambda lib: getattr(lib.nn, mod)(3, 4)(
        lib.ones(2, 1, 3, dtype=getattr(lib, dtype))))
    assert str(ee).replace("ember.", "torch.") == str(te)
