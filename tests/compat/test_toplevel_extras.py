"""Top-level runtime switches and ATen-style aliases (ember._toplevel_extras), against torch."""
import numpy as np
import pytest
import torch

import ember

LIBS = pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])


@LIBS
def test_warn_always_and_interop_threads(lib):
    assert lib.is_warn_always_enabled() is False
    lib.set_warn_always(True)
    try:
        assert lib.is_warn_always_enabled() is True
    finally:
        lib.set_warn_always(False)
    assert isinstance(lib.get_num_interop_threads(), int) and lib.get_num_interop_threads() >= 1
    with pytest.raises(RuntimeError, match="positive"):
        lib.set_num_interop_threads(0)
    assert lib.init_num_threads() is None
    assert isinstance(lib.set_flush_denormal(False), bool)
    assert lib.has_lapack and lib.has_spectral and lib.is_vulkan_available() is False


@LIBS
def test_deterministic_debug_mode(lib):
    assert lib.get_deterministic_debug_mode() == 0
    try:
        lib.set_deterministic_debug_mode("warn")
        assert lib.get_deterministic_debug_mode() == 1
        assert lib.are_deterministic_algorithms_enabled()
        assert lib.is_deterministic_algorithms_warn_only_enabled()
        lib.set_deterministic_debug_mode(2)
        assert lib.get_deterministic_debug_mode() == 2
        assert not lib.is_deterministic_algorithms_warn_only_enabled()
        with pytest.raises(RuntimeError, match="expected one of `default`, `warn`, `error`, "
                                               "but got bad"):
            lib.set_deterministic_debug_mode("bad")
        with pytest.raises(RuntimeError, match="expected 0, 1, or 2, but got 3"):
            lib.set_deterministic_debug_mode(3)
    finally:
        lib.set_deterministic_debug_mode("default")
    assert not lib.are_deterministic_algorithms_enabled()


def test_unsafe_splits_and_slice_copy_match_torch():
    a = np.arange(24.0).reshape(4, 6)
    e, t = ember.tensor(a), torch.tensor(a)
    for ef, tf in [(ember.unsafe_chunk(e, 4, 1), torch.unsafe_chunk(t, 4, 1)),
                   (ember.unsafe_split(e, 4, 1), torch.unsafe_split(t, 4, 1)),
                   (ember.unsafe_split_with_sizes(e, [2, 4], 1),
                    torch.unsafe_split_with_sizes(t, [2, 4], 1))]:
        assert len(ef) == len(tf)
        for x, y in zip(ef, tf):
            np.testing.assert_array_equal(x.numpy(), y.numpy())
    for lib, x in ((torch, t), (ember, e)):
        with pytest.raises(TypeError, match="must be int, not list"):
            lib.unsafe_split(x, [1, 3], 0)
    for args in [(0, 1, 3), (1, 1, 6, 2), (-1, -3), (1, None, None, 4)]:
        x, y = ember.slice_copy(e, *args), torch.slice_copy(t, *args)
        np.testing.assert_array_equal(x.numpy(), y.numpy())
    c = ember.slice_copy(e, 0, 0, 2)
    c[0, 0] = 99.0
    assert e[0, 0].item() == 0.0  # a copy, not a view
    with pytest.raises(RuntimeError, match="slice step must be positive"):
        ember.slice_copy(e, 0, 0, 3, 0)


@pytest.mark.parametrize("name", ["feature_dropout", "feature_alpha_dropout"])
def test_feature_dropouts_match_torch_for_the_same_seed(name):
    x = np.random.default_rng(0).standard_normal((4, 6, 5)).astype(np.float32)
    torch.manual_seed(3)
    ember.manual_seed(3)
    t = getattr(torch, name)(torch.tensor(x), 0.4, True)
    e = getattr(ember, name)(ember.tensor(x), 0.4, True)
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6, atol=1e-6)
    xe = ember.tensor(x)
    torch.manual_seed(3)
    ember.manual_seed(3)
    assert getattr(ember, name + "_")(xe, 0.4, True) is xe
    np.testing.assert_allclose(xe.numpy(), getattr(torch, name + "_")(torch.tensor(x), 0.4,
                                                                      True).numpy(), rtol=1e-6,
                               atol=1e-6)
    # eval mode is the identity; fewer than 2 dims is torch's error
    np.testing.assert_array_equal(getattr(ember, name)(ember.tensor(x), 0.4, False).numpy(), x)
    for lib in (torch, ember):
        with pytest.raises(RuntimeError, match="at least 2 dimensions"):
            getattr(lib, name)(lib.ones(3), 0.5, True)


@pytest.mark.parametrize("name", ["dropout_", "alpha_dropout_"])
def test_inplace_dropouts_match_torch_for_the_same_seed(name):
    x = np.random.default_rng(1).standard_normal((5, 7)).astype(np.float32)
    torch.manual_seed(5)
    ember.manual_seed(5)
    xt, xe = torch.tensor(x), ember.tensor(x)
    assert getattr(ember, name)(xe, 0.3, True) is xe
    getattr(torch, name)(xt, 0.3, True)
    np.testing.assert_allclose(xe.numpy(), xt.numpy(), rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match="between 0 and 1"):
        getattr(ember, name)(xe, 1.5, True)


@LIBS
def test_cpu_generator_has_no_offset(lib):
    g = lib.Generator()
    with pytest.raises(RuntimeError, match="CPU Generator does not use offset"):
        g.get_offset()
    with pytest.raises(RuntimeError, match="CPU Generator does not use offset"):
        g.set_offset(4)


# ---- ATen-level entry points -------------------------------------------------------------
def _pair(shape, seed=0):
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return torch.tensor(x, requires_grad=True), ember.tensor(x, requires_grad=True)


def _close(e, t, tol=1e-5):
    assert tuple(e.shape) == tuple(t.shape)
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("affine", [False, True])
def test_native_layer_norm_matches_torch(affine):
    t, e = _pair((2, 3, 4, 5))
    w, b = (np.linspace(0.5, 2, 20).reshape(4, 5).astype(np.float32),
            np.linspace(-1, 1, 20).reshape(4, 5).astype(np.float32))
    tw, tb = (torch.tensor(w), torch.tensor(b)) if affine else (None, None)
    ew, eb = (ember.tensor(w), ember.tensor(b)) if affine else (None, None)
    to = torch.native_layer_norm(t, [4, 5], tw, tb, 1e-5)
    eo = ember.native_layer_norm(e, [4, 5], ew, eb, 1e-5)
    for x, y in zip(eo, to):
        _close(x, y)
    (to[0] * to[0]).sum().backward()
    (eo[0] * eo[0]).sum().backward()
    _close(e.grad, t.grad, 1e-4)
    for lib, x in ((torch, t), (ember, e)):
        with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[3\], expected input "
                                               r"with shape \[\*, 3\]"):
            lib.native_layer_norm(x, [3], None, None, 1e-5)


def test_native_group_norm_matches_torch():
    t, e = _pair((2, 6, 4, 3), 1)
    w = np.arange(1.0, 7.0, dtype=np.float32)
    to = torch.native_group_norm(t, torch.tensor(w), torch.ones(6), 2, 6, 12, 3, 1e-5)
    eo = ember.native_group_norm(e, ember.tensor(w), ember.ones(6), 2, 6, 12, 3, 1e-5)
    for x, y in zip(eo, to):
        _close(x, y)
    to[0].pow(3).sum().backward()
    eo[0].pow(3).sum().backward()
    _close(e.grad, t.grad, 1e-3)
    _close(ember.native_group_norm(e, None, None, 2, 6, 12, 2, 1e-5)[0],
           torch.native_group_norm(t, None, None, 2, 6, 12, 2, 1e-5)[0])


@pytest.mark.filterwarnings("ignore:at..(frobenius|nuclear)_norm is deprecated:UserWarning")
def test_frobenius_and_nuclear_norms_match_torch():
    t, e = _pair((3, 4, 5), 2)
    for dim, keep in (([1, 2], False), ([0], True), ([0, 2], True)):
        _close(ember.frobenius_norm(e, dim, keep), torch.frobenius_norm(t, dim, keep))
    _close(ember.nuclear_norm(e), torch.nuclear_norm(t), 1e-4)
    _close(ember.nuclear_norm(e, True), torch.nuclear_norm(t, True), 1e-4)
    _close(ember.nuclear_norm(e, [0, 2]), torch.nuclear_norm(t, [0, 2]), 1e-4)
    _close(ember.nuclear_norm(e, [0, 1], True), torch.nuclear_norm(t, [0, 1], True), 1e-4)
    ember.frobenius_norm(e, [1, 2]).sum().backward()
    torch.frobenius_norm(t, [1, 2]).sum().backward()
    _close(e.grad, t.grad)
    for lib in (torch, ember):
        with pytest.raises(RuntimeError, match="must have at least 2 dimensions"):
            lib.nuclear_norm(lib.ones(3))


def test_constant_pad_nd_matches_torch():
    t, e = _pair((2, 3, 4), 3)
    for pad, value in (([1, 1], 5.0), ([0, 2, 1, 0], -1.0), ([1, 2, 0, 1, 2, 0], 0), ([-1, 1], 0)):
        _close(ember.constant_pad_nd(e, pad, value), torch.constant_pad_nd(t, pad, value))
    assert ember.constant_pad_nd(ember.ones(2), [1, 0]).tolist() == [0.0, 1.0, 1.0]


@pytest.mark.parametrize("name,args,replacement", [
    ("frobenius_norm", ([0],), r"linalg.vector_norm\(A, 2., dim, keepdim\)"),
    ("nuclear_norm", (), r"linalg.matrix_norm\(A, 'nuc', dim, keepdim\)")])
def test_deprecated_norms_warn_like_torch(name, args, replacement):
    # torch warns once per process (so only ember's text is asserted; torch's is the same)
    with pytest.warns(UserWarning, match=f"at::{name} is deprecated and it is just left for "
                                         f"JIT compatibility.*Please use `{replacement}`"):
        getattr(ember, name)(ember.ones(2, 2), *args)
