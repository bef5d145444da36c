"""Random sampling: distributions (statistically), dtypes, reproducibility, generator state,
and errors (same exception types as torch)."""
import pickle

import numpy as np
import pytest
import torch

import ember

N = 200_000


def _np(t):
    return t.numpy().astype(np.float64)


def _moments(t, mean, var, tol=0.02):
    x = _np(t)
    assert abs(x.mean() - mean) < tol * max(1.0, abs(mean)), (x.mean(), mean)
    assert abs(x.var() - var) < 3 * tol * max(1.0, var), (x.var(), var)


@pytest.fixture(autouse=True)
def _seeded():
    state = ember.get_rng_state()
    ember.manual_seed(1234)
    yield
    ember.set_rng_state(state)


# ---- creation ------------------------------------------------------------------------
def test_rand_randn_dtypes_shapes_and_moments():
    r = ember.rand(N)
    assert r.dtype == ember.float32 and r.shape == (N,)
    x = _np(r)
    assert x.min() >= 0 and x.max() < 1
    _moments(r, 0.5, 1 / 12)
    _moments(ember.randn(N, dtype=ember.float64), 0.0, 1.0)
    assert ember.randn(2, 3).dtype == ember.float32
    assert ember.rand((2, 3)).shape == (2, 3)
    assert ember.rand([]).shape == ()
    assert ember.rand(2, dtype=ember.float16).dtype == ember.float16
    assert ember.randn(2, dtype=ember.bfloat16).dtype == ember.bfloat16


def test_complex_randn_parts_have_half_variance():
    z = ember.randn(N, dtype=ember.complex64).numpy()
    assert z.dtype == np.complex64
    assert abs(z.real.var() - 0.5) < 0.02 and abs(z.imag.var() - 0.5) < 0.02
    assert abs(np.corrcoef(z.real, z.imag)[0, 1]) < 0.02
    u = ember.rand(N, dtype=ember.complex128).numpy()
    assert 0 <= u.real.min() and u.real.max() < 1 and abs(u.imag.mean() - 0.5) < 0.01


def test_randint_and_randperm():
    r = ember.randint(3, 10, (N,))
    assert r.dtype == ember.int64
    x = r.numpy()
    assert x.min() == 3 and x.max() == 9
    np.testing.assert_allclose(np.bincount(x)[3:] / N, 1 / 7, atol=0.01)
    assert ember.randint(5, (2, 3)).shape == (2, 3)
    assert ember.randint(0, 5, size=(4,)).numpy().max() < 5
    assert ember.randint(3, 10, (2,), dtype=ember.float32).dtype == ember.float32
    p = ember.randperm(50)
    assert p.dtype == ember.int64
    np.testing.assert_array_equal(np.sort(p.numpy()), np.arange(50))
    assert ember.randperm(5, dtype=ember.float32).dtype == ember.float32


def test_like_functions():
    x = ember.zeros(3, 4, dtype=ember.float64)
    assert ember.rand_like(x).dtype == ember.float64 and ember.rand_like(x).shape == (3, 4)
    assert ember.randn_like(x, dtype=ember.float32).dtype == ember.float32
    r = ember.randint_like(x, 5)
    assert r.dtype == ember.float64 and r.numpy().max() < 5
    r = ember.randint_like(x, 2, 5).numpy()
    assert r.min() >= 2 and r.max() < 5


def test_normal_overloads():
    mean = ember.full((N,), 3.0)
    std = ember.full((N,), 2.0)
    _moments(ember.normal(mean, std), 3.0, 4.0)
    _moments(ember.normal(mean, 0.5), 3.0, 0.25)
    _moments(ember.normal(-1.0, std), -1.0, 4.0)
    r = ember.normal(2.0, 3.0, (N,))
    assert r.dtype == ember.float32
    _moments(r, 2.0, 9.0)
    assert ember.normal(ember.zeros(2, 3), ember.ones(3)).shape == (2, 3)
    assert ember.normal(0.0, 1.0, size=(2,), dtype=ember.float64).dtype == ember.float64


def test_normal_grad_is_zero_like_torch():
    for lib in (ember, torch):
        m = lib.zeros(4, dtype=lib.float64).requires_grad_(True)
        lib.normal(m, 1.0).sum().backward()
        np.testing.assert_array_equal(m.grad.numpy(), np.zeros(4))


def test_bernoulli_multinomial_poisson():
    p = ember.full((N,), 0.3)
    b = ember.bernoulli(p)
    assert b.dtype == ember.float32 and set(np.unique(b.numpy())) <= {0.0, 1.0}
    assert abs(b.numpy().mean() - 0.3) < 0.01
    assert abs(ember.bernoulli(ember.zeros(N), 0.7).numpy().mean() - 0.7) < 0.01
    probs = ember.tensor([1.0, 2.0, 0.0, 7.0])
    s = ember.multinomial(probs, N, replacement=True)
    assert s.dtype == ember.int64 and s.shape == (N,)
    np.testing.assert_allclose(np.bincount(s.numpy(), minlength=4) / N, [0.1, 0.2, 0, 0.7],
                               atol=0.01)
    rows = ember.multinomial(ember.tensor([[1.0, 1, 1, 1], [0, 0, 1, 1]]), 2)
    assert rows.shape == (2, 2)
    assert len(set(rows.numpy()[0])) == 2 and set(rows.numpy()[1]) == {2, 3}
    # torch does not raise when zero-probability categories must fill the sample
    np.testing.assert_array_equal(ember.multinomial(ember.tensor([0.0, 1.0, 0.0]), 2).numpy(),
                                  torch.multinomial(torch.tensor([0.0, 1.0, 0.0]), 2).numpy())
    # without replacement the first draw follows the probabilities
    first = ember.multinomial(probs.expand(20000, 4), 1).numpy().ravel()
    np.testing.assert_allclose(np.bincount(first, minlength=4) / 20000, [0.1, 0.2, 0, 0.7],
                               atol=0.015)
    po = ember.poisson(ember.full((N,), 4.0))
    assert po.dtype == ember.float32
    _moments(po, 4.0, 4.0)


# ---- in-place samplers -------------------------------------------------------------------
def test_inplace_samplers_moments():
    x = ember.empty(N, dtype=ember.float64)
    assert x.uniform_(2, 5) is x
    assert x.numpy().min() >= 2 and x.numpy().max() < 5
    _moments(x, 3.5, 0.75)
    _moments(x.normal_(1.0, 2.0), 1.0, 4.0)
    _moments(x.exponential_(2.0), 0.5, 0.25)
    _moments(x.geometric_(0.25), 4.0, 12.0, tol=0.03)
    assert x.numpy().min() >= 1
    x.log_normal_(0.5, 0.3)
    assert abs(np.median(x.numpy()) - np.exp(0.5)) < 0.02
    x.cauchy_(2.0, 0.5)
    assert abs(np.median(x.numpy()) - 2.0) < 0.02
    assert abs(x.bernoulli_(0.2).numpy().mean() - 0.2) < 0.01
    assert abs(x.bernoulli_(ember.full((N,), 0.6, dtype=ember.float64)).numpy().mean()
               - 0.6) < 0.01


def test_random_ranges():
    x = ember.empty(N)
    v = x.random_(5).numpy()
    assert v.min() == 0 and v.max() == 4
    v = x.random_(2, 5).numpy()
    assert v.min() == 2 and v.max() == 4
    v = x.random_().numpy()
    assert v.min() >= 0 and v.max() <= 2 ** 24 and v.max() > 2 ** 23
    u8 = ember.empty(N, dtype=ember.uint8).random_().numpy()
    assert u8.min() == 0 and u8.max() == 255
    b = ember.empty(1000, dtype=ember.bool).random_().numpy()
    assert b.any() and not b.all()
    i = ember.empty(10, dtype=ember.int64).geometric_(0.5)
    assert i.dtype == ember.int64 and i.numpy().min() >= 1


def test_inplace_on_leaf_requiring_grad_raises():
    w = ember.empty(3).requires_grad_(True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        w.normal_()
    with ember.no_grad():
        w.uniform_(-1, 1)
    assert (np.abs(w.detach().numpy()) <= 1).all()


def test_inplace_sampler_in_graph_gives_zero_grad():
    for lib in (ember, torch):
        x = lib.ones(3, dtype=lib.float64).requires_grad_(True)
        y = x * 2
        y.uniform_()
        (y * x).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), y.detach().numpy())


# ---- options --------------------------------------------------------------------------------
def test_requires_grad_out_and_generator_kwargs():
    assert ember.randn(2, 3, requires_grad=True).requires_grad
    with pytest.raises(RuntimeError):
        ember.randint(10, (2,), requires_grad=True)
    out = ember.empty(1, dtype=ember.float64)
    with pytest.warns(UserWarning):
        r = ember.rand(2, 3, out=out)
    assert r is out and out.shape == (2, 3) and out.dtype == ember.float64
    with pytest.raises(TypeError):
        ember.rand(2, generator=3)


# ---- reproducibility and state -----------------------------------------------------------
def test_manual_seed_reproduces():
    ember.manual_seed(7)
    a = [ember.rand(5).numpy(), ember.randn(5).numpy(), ember.randint(100, (5,)).numpy(),
         ember.randperm(10).numpy()]
    ember.manual_seed(7)
    b = [ember.rand(5).numpy(), ember.randn(5).numpy(), ember.randint(100, (5,)).numpy(),
         ember.randperm(10).numpy()]
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    assert ember.initial_seed() == 7


def test_state_round_trip_mid_stream():
    g = ember.Generator().manual_seed(42)
    ember.rand(3, generator=g)
    g._gen.integers(0, 10, dtype=np.uint32)  # leaves a cached half-word in the PCG64 state
    state = g.get_state()
    assert state.dtype == ember.uint8 and state.dim() == 1
    a = ember.randn(10, generator=g).numpy()
    g.manual_seed(0)
    g.set_state(state)
    np.testing.assert_array_equal(ember.randn(10, generator=g).numpy(), a)
    assert g.initial_seed() == 42
    h = ember.Generator().set_state(state)
    np.testing.assert_array_equal(ember.randn(10, generator=h).numpy(), a)
    k = pickle.loads(pickle.dumps(g.clone_state()))
    np.testing.assert_array_equal(ember.rand(4, generator=k).numpy(),
                                  ember.rand(4, generator=g).numpy())


def test_global_rng_state_and_fork_rng():
    s = ember.get_rng_state()
    a = ember.rand(4).numpy()
    ember.set_rng_state(s)
    np.testing.assert_array_equal(ember.rand(4).numpy(), a)
    ember.manual_seed(3)
    with ember.random.fork_rng():
        ember.rand(100)
    after = ember.rand(4).numpy()
    ember.manual_seed(3)
    np.testing.assert_array_equal(ember.rand(4).numpy(), after)
    import ember.random as er
    assert er.get_rng_state is ember.get_rng_state and er.manual_seed is ember.manual_seed


def test_generators_are_independent():
    g1 = ember.Generator().manual_seed(5)
    g2 = ember.Generator().manual_seed(5)
    a = ember.rand(3, generator=g1).numpy()
    ember.rand(1000)  # the default generator does not disturb g2
    np.testing.assert_array_equal(ember.rand(3, generator=g2).numpy(), a)
    assert not np.array_equal(ember.rand(3, generator=g1).numpy(), a)


def test_seeds_match_torch_conventions():
    assert ember.Generator().initial_seed() == torch.Generator().initial_seed()
    assert ember.manual_seed(-1).initial_seed() == torch.Generator().manual_seed(
        -1).initial_seed()
    assert isinstance(ember.manual_seed(1), ember.Generator)
    s = ember.seed()
    assert isinstance(s, int) and ember.initial_seed() == s
    assert str(ember.Generator().device) == "cpu"
    with pytest.raises(ValueError):
        ember.manual_seed(2 ** 64)


def test_set_state_errors_match_torch():
    for lib in (ember, torch):
        g = lib.Generator()
        with pytest.raises(TypeError):
            g.set_state(lib.zeros(5))
        with pytest.raises(RuntimeError):
            g.set_state(lib.zeros(5, dtype=lib.uint8))


# ---- errors: same exception type as torch --------------------------------------------------
ERRORS = [
    lambda L: L.randint(5, 5, (2,)),
    lambda L: L.randint(0, 300, (3,), dtype=L.uint8),
    lambda L: L.rand(2, dtype=L.int64),
    lambda L: L.randn(2, dtype=L.int64),
    lambda L: L.rand(-1),
    lambda L: L.randperm(-1),
    lambda L: L.normal(1.0, -2.0, (2,)),
    lambda L: L.normal(L.ones(3), -L.ones(3)),
    lambda L: L.normal(L.ones(3, dtype=L.int64), L.ones(3)),
    lambda L: L.bernoulli(L.ones(3) * 2),
    lambda L: L.bernoulli(L.ones(3, dtype=L.int64)),
    lambda L: L.ones(3).bernoulli_(1.5),
    lambda L: L.multinomial(L.ones(3), 4),
    lambda L: L.multinomial(L.ones(2, 2, 3), 1),
    lambda L: L.multinomial(L.zeros(3), 1),
    lambda L: L.multinomial(-L.ones(3), 1),
    lambda L: L.multinomial(L.ones(3, dtype=L.int64), 1),
    lambda L: L.multinomial(L.ones(3), 0),
    lambda L: L.poisson(-L.ones(3)),
    lambda L: L.poisson(L.ones(3, dtype=L.int64)),
    lambda L: L.ones(3).uniform_(1, 0),
    lambda L: L.ones(3, dtype=L.int64).uniform_(),
    lambda L: L.ones(3).normal_(0, -1),
    lambda L: L.ones(3).exponential_(0),
    lambda L: L.ones(3, dtype=L.int64).exponential_(),
    lambda L: L.ones(3).geometric_(1),
    lambda L: L.ones(3).log_normal_(1, 0),
    lambda L: L.ones(3).cauchy_(0, -1),
    lambda L: L.ones(3, dtype=L.int64).cauchy_(),
    lambda L: L.ones(3).random_(5, 2),
    lambda L: L.ones(3, dtype=L.int8).random_(-5, 200),
    lambda L: L.ones(3, dtype=L.bool).random_(-1, 2),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors_match_torch(i):
    fn = ERRORS[i]
    with pytest.raises(Exception) as te:
        fn(torch)
    with pytest.raises(type(te.value)):
        fn(ember)
