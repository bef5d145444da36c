"""ember's generator reproduces torch's CPU streams: after the same manual_seed every
sampler returns torch's values bit for bit and leaves the generator in torch's state
(compared through the 5056-byte state both expose)."""
import numpy as np
import pytest
import torch

import ember

SEEDS = (0, 1, 123456789, 2 ** 40 + 7)
SIZES = (1, 7, 15, 16, 17, 31, 33, 100, 1003)


def _np(x):
    return x.detach().numpy() if hasattr(x, "detach") else np.asarray(x)


def _same(fe, ft, seed):
    ember.manual_seed(seed)
    torch.manual_seed(seed)
    a, b = fe(ember), ft(torch)
    a = a if isinstance(a, (list, tuple)) else [a]
    b = b if isinstance(b, (list, tuple)) else [b]
    assert len(a) == len(b)
    for x, y in zip(a, b):
        x, y = _np(x), _np(y)
        assert x.dtype == y.dtype and x.shape == y.shape
        np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(ember.get_rng_state().numpy(), torch.get_rng_state().numpy())


def both(fn):
    return fn, fn


SAMPLERS = {
    "rand": lambda t, n: t.rand(n),
    "rand_f64": lambda t, n: t.rand(2, n, dtype=t.float64),
    "rand_f16": lambda t, n: t.rand(n, dtype=t.float16),
    "randn": lambda t, n: t.randn(n),
    "randn_2d": lambda t, n: t.randn(3, n),
    "randn_f64": lambda t, n: t.randn(n, dtype=t.float64),
    "randn_f16": lambda t, n: t.randn(n, dtype=t.float16),
    "randn_then_small": lambda t, n: [t.randn(n), t.randn(1), t.randn(3, dtype=t.float64),
                                      t.randn(1, dtype=t.float64)],
    "randint": lambda t, n: t.randint(0, 10, (n,)),
    "randint_neg": lambda t, n: t.randint(-50, 7, (n, 2), dtype=t.int32),
    "randint_wide": lambda t, n: t.randint(-2 ** 40, 2 ** 40, (n,)),
    # ranges from 2**28 take 64-bit draws whatever the dtype; just below, 32-bit words
    "randint_2p28": lambda t, n: t.randint(0, 2 ** 28, (n,)),
    "randint_below_2p28": lambda t, n: t.randint(0, 2 ** 28 - 1, (n,)),
    "randint_2p30_int32": lambda t, n: t.randint(-2 ** 29, 2 ** 30 + 5, (n,), dtype=t.int32),
    "random_2p31_float64": lambda t, n: t.empty(n, dtype=t.float64).random_(0, 2 ** 31 - 1),
    "randperm": lambda t, n: t.randperm(n),
    "normal_": lambda t, n: t.empty(n).normal_(2.0, 3.0),
    "normal_f64": lambda t, n: t.empty(n, dtype=t.float64).normal_(-1.5, 0.25),
    "normal_tensors": lambda t, n: t.normal(t.arange(float(n)), t.full((n,), 2.0)),
    "uniform_": lambda t, n: t.empty(n).uniform_(-2.0, 3.0),
    "uniform_f64": lambda t, n: t.empty(n, dtype=t.float64).uniform_(-2.0, 3.0),
    "bernoulli_scalar": lambda t, n: t.empty(n).bernoulli_(0.3),
    "bernoulli_tensor": lambda t, n: t.bernoulli(t.linspace(0, 1, n)),
    "bernoulli_tensor_f64": lambda t, n: t.bernoulli(t.full((n,), 0.4, dtype=t.float64)),
    "exponential_": lambda t, n: t.empty(n).exponential_(2.0),
    "random_": lambda t, n: t.empty(n, dtype=t.int64).random_(),
    "random_int32": lambda t, n: t.empty(n, dtype=t.int32).random_(),
    "random_float": lambda t, n: t.empty(n).random_(5, 100),
    "geometric_": lambda t, n: t.empty(n).geometric_(0.3),
    "geometric_int": lambda t, n: t.empty(n, dtype=t.int64).geometric_(0.7),
    "log_normal_": lambda t, n: t.empty(n).log_normal_(0.5, 0.7),
    "log_normal_f64": lambda t, n: t.empty(n, dtype=t.float64).log_normal_(),
    "cauchy_": lambda t, n: t.empty(n).cauchy_(1.0, 2.0),
    "cauchy_f64": lambda t, n: t.empty(n, dtype=t.float64).cauchy_(),
    "dropout": lambda t, n: t.nn.functional.dropout(t.ones(n, 3), 0.3),
    "dropout_module": lambda t, n: t.nn.Dropout(0.5)(t.arange(float(3 * n)).reshape(n, 3)),
}


@pytest.mark.parametrize("name", sorted(SAMPLERS))
@pytest.mark.parametrize("n", SIZES)
def test_sampler_matches_torch(name, n):
    fn = SAMPLERS[name]
    for seed in SEEDS[:2] if n > 100 else SEEDS:
        _same(lambda t: fn(t, n), lambda t: fn(t, n), seed)


def test_randperm_large_matches_torch():
    _same(lambda t: t.randperm(100_000), lambda t: t.randperm(100_000), 5)


def _module_params(t):
    mods = (t.nn.Linear(20, 30), t.nn.Conv2d(3, 8, 3), t.nn.Embedding(10, 7),
            t.nn.LSTM(5, 6, 2), t.nn.GRU(4, 3), t.nn.MultiheadAttention(8, 2))
    return [p for m in mods for p in m.parameters()]


@pytest.mark.parametrize("seed", SEEDS)
def test_module_init_matches_torch(seed):
    _same(_module_params, _module_params, seed)


@pytest.mark.parametrize("fn", ["uniform_", "normal_", "xavier_uniform_", "xavier_normal_",
                                "kaiming_uniform_", "kaiming_normal_"])
def test_init_matches_torch(fn):
    for shape in ((12, 9), (4, 3, 3, 3)):
        _same(lambda t: getattr(t.nn.init, fn)(t.empty(*shape)),
              lambda t: getattr(t.nn.init, fn)(t.empty(*shape)), 3)


def test_state_exchange_both_ways():
    torch.manual_seed(11)
    torch.randn(5)  # leaves a cached double normal in torch's state
    torch.rand(3)
    ember.set_rng_state(ember.tensor(torch.get_rng_state().numpy()))
    np.testing.assert_array_equal(ember.randn(40).numpy(), torch.randn(40).numpy())
    np.testing.assert_array_equal(ember.randn(3).numpy(), torch.randn(3).numpy())
    ember.manual_seed(99)
    ember.rand(1000)
    ember.randn(1)
    torch.set_rng_state(torch.from_numpy(ember.get_rng_state().numpy().copy()))
    np.testing.assert_array_equal(ember.randint(0, 1000, (50,)).numpy(),
                                  torch.randint(0, 1000, (50,)).numpy())
    np.testing.assert_array_equal(ember.randn(1).numpy(), torch.randn(1).numpy())


def test_fresh_seed_state_matches_torch():
    for s in (0, -5, 2 ** 63 + 3):
        ember.manual_seed(s)
        torch.manual_seed(s)
        np.testing.assert_array_equal(ember.get_rng_state().numpy(),
                                      torch.get_rng_state().numpy())
        assert ember.initial_seed() == torch.initial_seed()


def test_generator_object_matches_torch():
    ge, gt = ember.Generator().manual_seed(7), torch.Generator().manual_seed(7)
    np.testing.assert_array_equal(ember.randn(20, generator=ge).numpy(),
                                  torch.randn(20, generator=gt).numpy())
    np.testing.assert_array_equal(ge.get_state().numpy(), gt.get_state().numpy())


def test_bad_state_rejected():
    bad = ember.get_rng_state().clone()
    bad[8:12] = 0  # left = 0 is not a valid mt19937 state
    with pytest.raises(RuntimeError, match="Invalid mt19937 state"):
        ember.set_rng_state(bad)


def test_compiled_box_muller_matches_numpy_emulation():
    from ember.ops import _random_c, random_streams as rs
    u = rs.unit_f32(ember.Generator().manual_seed(4), 16 * 4000).reshape(-1, 16)
    u[0, :8] = 0.0  # log(1 - 0) and the smallest radius
    u[1, 8:] = np.float32(1 - 2 ** -24)  # the largest angle
    for mean, std in ((0.0, 1.0), (0.5, 2.5)):
        c = _random_c.fill16(u, np.float32(mean), np.float32(std))
        assert c is not None, "the C kernel did not build"
        saved, _random_c._lib, _random_c._tried = _random_c._lib, None, True
        try:
            ref = rs._fill16_f32(u, np.float32(mean), np.float32(std))
        finally:
            _random_c._lib = saved
        np.testing.assert_array_equal(c, ref)


def test_compiled_double_paths_match_python_fallbacks():
    from ember.ops import _random_c, random_streams as rs
    g = ember.Generator().manual_seed(8)
    u = rs.unit_f64(g, 16 * 500).reshape(-1, 16)
    words = g._u32(999)
    compiled = (_random_c.fill16(u, 0.25, 3.0), _random_c.scaled_log1m(u, -0.5),
                _random_c.randperm(words, 1000))
    assert all(c is not None for c in compiled), "the C kernels did not build"
    saved, _random_c._lib, _random_c._tried = _random_c._lib, None, True
    try:
        ref_fill = rs._fill16_f64(u, 0.25, 3.0)
        perm = list(range(1000))
        for i, w in enumerate(words.tolist()):
            z = i + w % (1000 - i)
            perm[i], perm[z] = perm[z], perm[i]
    finally:
        _random_c._lib = saved
    np.testing.assert_array_equal(compiled[0], ref_fill)
    np.testing.assert_array_equal(compiled[1], -0.5 * rs._liblog(1.0 - u))
    np.testing.assert_array_equal(compiled[2], perm)


_PROBS = [[0.1, 0.2, 0.3, 0.4], [1.0, 1.0, 1.0, 1.0], [0.0, 5.0, 2.0, 1.0]]


# halves tie often in p / q, and torch's topk orders ties its own way: no n > 1 draws
# without replacement for them
@pytest.mark.parametrize("dtype,n,replacement", [
    (dt, n, r) for dt in ("float32", "float64", "float16", "bfloat16")
    for n, r in ((1, False), (1, True), (3, False), (7, True))
    if not (dt in ("float16", "bfloat16") and n == 3)])
def test_multinomial_matches_torch(dtype, n, replacement):
    def f(t):
        return t.multinomial(t.tensor(_PROBS, dtype=getattr(t, dtype)), n, replacement)
    for seed in SEEDS:
        _same(f, f, seed)
    _same(lambda t: t.multinomial(t.softmax(t.arange(27.0) / 5, 0), 20, replacement),
          lambda t: t.multinomial(t.softmax(t.arange(27.0) / 5, 0), 20, replacement), 9)


@pytest.mark.parametrize("args", [(0.0, 1.0, -2.0, 2.0), (0.0, 0.02, -0.04, 0.04),
                                  (0.0, 1.0, -0.1, 0.1), (0.0, 1.0, 1.5, 3.0)])
def test_trunc_normal_matches_torch(args):
    # both of torch's branches: redrawn normals (large mass) and accepted uniforms (small)
    for shape in ((12, 9), (100, 37)):
        _same(lambda t: t.nn.init.trunc_normal_(t.empty(*shape), *args),
              lambda t: t.nn.init.trunc_normal_(t.empty(*shape), *args), 1)


@pytest.mark.parametrize("seed", [0, 5, 2 ** 31, 2 ** 32 - 1, 2 ** 32 + 5, -1, 2 ** 64 - 1])
def test_seeded_state_is_torch_s_also_after_a_full_twist(seed):
    # manual_seed seeds through NumPy's C init_genrand; the state read right after it, a
    # re-seed mid-stream, and the state after exactly 624 words (position 624 again, twisted
    # key) are torch's, and the C recurrence equals the Python one it replaced
    from ember._core import random as r
    np.testing.assert_array_equal(r._seed_key(seed % 2 ** 64), r._seed_key_loop(seed % 2 ** 64))
    ember.manual_seed(3)
    ember.rand(10)
    torch.manual_seed(3)
    torch.rand(10)
    _same(lambda t: t.randint(0, 1000, (624,)), lambda t: t.randint(0, 1000, (624,)), seed)
    _same(lambda t: t.get_rng_state(), lambda t: t.get_rng_state(), seed)
    _same(lambda t: t.randn(3, dtype=t.float64), lambda t: t.randn(3, dtype=t.float64), seed)
