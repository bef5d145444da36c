"""Memory formats as torch's: is_contiguous(memory_format), contiguous/clone/to with
channels_last(_3d) and preserve_format, the *_like factories and empty(memory_format=...),
Module.to(memory_format=...), and torch's rank errors; values unchanged, strides as torch's."""
import numpy as np
import pytest
import torch

import ember


def _cl(lib, shape=(2, 3, 4, 5)):
    x = lib.from_numpy(np.random.default_rng(0).standard_normal(shape).astype(np.float32))
    fmt = lib.channels_last if len(shape) == 4 else lib.channels_last_3d
    return x, x.contiguous(memory_format=fmt)


_CASES = {
    "contiguous_cl": lambda lib: _cl(lib)[1],
    "contiguous_cl3d": lambda lib: _cl(lib, (2, 3, 4, 5, 6))[1],
    "clone_preserves_cl": lambda lib: _cl(lib)[1].clone(),
    "clone_to_contiguous": lambda lib: _cl(lib)[1].clone(memory_format=lib.contiguous_format),
    "clone_transposed": lambda lib: _cl(lib)[0].transpose(0, 1).clone(),
    "clone_sliced": lambda lib: _cl(lib)[0][:, ::2].clone(),
    "clone_sliced_cl": lambda lib: _cl(lib)[1][:, ::2].clone(),
    "clone_explicit_cl": lambda lib: _cl(lib)[0].clone(memory_format=lib.channels_last),
    "to_cl": lambda lib: _cl(lib)[0].to(memory_format=lib.channels_last),
    "to_dtype_cl": lambda lib: _cl(lib)[0].to(lib.float64, memory_format=lib.channels_last),
    "to_contiguous": lambda lib: _cl(lib)[1].to(memory_format=lib.contiguous_format),
    "cast_keeps_cl": lambda lib: _cl(lib)[1].double(),
    "elementwise_keeps_cl": lambda lib: _cl(lib)[1] * 2 + 1,
    "size1_dims": lambda lib: lib.ones(1, 3, 1, 1).contiguous(memory_format=lib.channels_last),
    "empty_like_cl": lambda lib: lib.empty_like(_cl(lib)[1]).fill_(1),
    "zeros_like_cl": lambda lib: lib.zeros_like(_cl(lib)[1]),
    "zeros_like_sliced_cl": lambda lib: lib.zeros_like(_cl(lib)[1][:, ::2]),
    "ones_like_transposed": lambda lib: lib.ones_like(_cl(lib)[0].transpose(1, 3)),
    "full_like_to_contiguous": lambda lib: lib.full_like(_cl(lib)[1], 2.0,
                                                         memory_format=lib.contiguous_format),
    "empty_cl": lambda lib: lib.empty(2, 3, 4, 5, memory_format=lib.channels_last).fill_(3),
}


@pytest.mark.parametrize("name", sorted(_CASES))
def test_strides_and_values_as_torch(name):
    got, want = _CASES[name](ember), _CASES[name](torch)
    assert got.stride() == want.stride()
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    for fmt in ("contiguous_format", "channels_last", "channels_last_3d"):
        assert got.is_contiguous(memory_format=getattr(ember, fmt)) == \
            want.is_contiguous(memory_format=getattr(torch, fmt)), fmt


@pytest.mark.parametrize("call", [
    lambda lib: lib.zeros(2, 3, 4).contiguous(memory_format=lib.channels_last),
    lambda lib: lib.zeros(2, 3, 4).to(memory_format=lib.channels_last),
    lambda lib: lib.zeros(2, 3, 4).clone(memory_format=lib.channels_last),
    lambda lib: lib.empty(2, 3, 4, memory_format=lib.channels_last),
    lambda lib: lib.zeros(2, 3, 4, 5).contiguous(memory_format=lib.channels_last_3d),
    lambda lib: lib.nn.Conv3d(3, 4, 3).to(memory_format=lib.channels_last)])
def test_rank_errors_as_torch(call):
    with pytest.raises(RuntimeError) as want:
        call(torch)
    with pytest.raises(RuntimeError) as got:
        call(ember)
    assert str(got.value) == str(want.value)


def test_module_to_channels_last_and_gradients():
    results = []
    for lib in (ember, torch):
        lib.manual_seed(0)
        m = lib.nn.Conv2d(3, 4, 3).to(memory_format=lib.channels_last)
        w = lib.ones(2, 3, 4, 5, requires_grad=True)
        y = w.contiguous(memory_format=lib.channels_last)
        (y * 2).sum().backward()
        results.append((m.weight.stride(), m.bias.stride(),
                        m.weight.is_contiguous(memory_format=lib.channels_last),
                        w.grad.stride(), w.grad.numpy().tolist()))
    assert results[0] == results[1]
