"""OpInfos of the random operators: samplers, random fills, dropout and rrelu.

ember's generator is not torch's, so values cannot match element by element: each record
seeds its library, draws a few thousand values and ``compare`` checks the distribution
against torch's draw from the same parameters (moments within ~5 standard errors, or an
exact property such as a permutation or the dropout scaling).  The seed makes a run
reproducible, so a passing comparison cannot flip at random.
"""
import numpy as np

from .core import OpInfo, SampleInput, make

N = 4000


def _seeded(draw):
    def fn(lib, *args, **kwargs):
        lib.manual_seed(0)
        return draw(lib, *args, **kwargs)
    return fn


def _moments(tol=0.1, robust=False):
    """Same mean and spread as torch's draw (``tol`` in units of torch's spread)."""
    def compare(e, t):
        e = np.asarray(e, np.float64).ravel()
        t = np.asarray(t, np.float64).ravel()
        if robust:  # heavy tails (Cauchy): median and interquartile range
            loc = lambda a: np.median(a)  # noqa: E731
            spread = lambda a: np.subtract(*np.percentile(a, [75, 25]))  # noqa: E731
        else:
            loc, spread = np.mean, np.std
        s = max(spread(t), 1e-3)
        assert abs(loc(e) - loc(t)) <= tol * s, f"location {loc(e)} vs torch {loc(t)}"
        assert abs(spread(e) - spread(t)) <= tol * s, f"spread {spread(e)} vs torch {spread(t)}"
    return compare


def _integral(tol=0.1, low=None, high=None):
    """Integer-valued draws (stored in any dtype): in [low, high) and same moments."""
    mom = _moments(tol)

    def compare(e, t):
        assert np.all(e == np.round(e)), "non-integer draw"
        if low is not None:
            assert e.min() >= low and e.max() < high, f"draw outside [{low}, {high})"
        mom(e, t)
    return compare


def _empty(dtype, rng):
    yield SampleInput((np.zeros((N,), dtype),), name="fill")


def _fill(method, *params, **compare):
    return OpInfo(f"Tensor.{method}", fn=_seeded(
        lambda lib, x: getattr(x, method)(*params)), samples=_empty, grad=False, **compare)


def _probs(dtype, rng):
    yield SampleInput((make((N,), dtype, rng, low=0.1, high=0.9),), name="p")


def _normal_tensor(dtype, rng):
    yield SampleInput((make((N,), dtype, rng), make((N,), dtype, rng, low=0.5, high=2)),
                      name="mean-std")


def _standardized_normal(lib, mean, std):
    return (lib.normal(mean, std) - mean) / std


def _multinomial(dtype, rng):
    yield SampleInput((np.array([1.0, 2.0, 3.0, 4.0], dtype),), name="weights")


def _counts(e, t):
    """Category frequencies of 2 x N draws within 0.03 of torch's."""
    fe = np.bincount(e.astype(np.int64).ravel(), minlength=4) / e.size
    ft = np.bincount(t.astype(np.int64).ravel(), minlength=4) / t.size
    np.testing.assert_allclose(fe, ft, atol=0.03)


def _permutation(e, t):
    np.testing.assert_array_equal(np.sort(e), np.sort(t))


def _rates(dtype, rng):
    yield SampleInput((make((N,), dtype, rng, low=0.5, high=6),), name="rates")


def _poisson(lib, rates):
    return lib.poisson(rates) - rates  # centred: the rates vary per element


def _gamma(dtype, rng):
    yield SampleInput((np.full((N,), 2.5, dtype),), name="alpha")


def _gamma_fn(lib, alpha):
    return lib.distributions.Gamma(alpha, lib.ones_like(alpha)).rsample()


def _gamma_grad(dtype, rng):
    # the reparameterized gradient d sample / d alpha at fixed draws is deterministic
    yield SampleInput((make((5,), dtype, rng, low=0.5, high=4),
                       make((5,), dtype, rng, low=0.2, high=5)), name="alpha-x")


def _gamma_grad_fn(lib, alpha, x):
    if lib.__name__ == "torch":
        return lib._standard_gamma_grad(alpha, x)
    from ember._core.op import REGISTRY  # private: reached only from Gamma.rsample's backward
    return REGISTRY["standard_gamma_grad"](alpha, x)


def _binomial(dtype, rng):
    yield SampleInput((np.full((N,), 12.0, dtype), np.full((N,), 0.3, dtype)), name="n-p")


def _ones(dtype, rng):
    yield SampleInput((np.ones((N,), dtype),), name="ones")


def _ones4d(dtype, rng):
    yield SampleInput((np.ones((40, 10, 2, 5), dtype),), name="ones")


def _dropout(p):
    """Kept values are 1/(1-p), and the kept fraction matches torch's."""
    def compare(e, t):
        kept = e[e != 0]
        np.testing.assert_allclose(kept, 1 / (1 - p), rtol=1e-6)
        assert abs(kept.size / e.size - (t != 0).mean()) < 0.04, "kept fraction"
    return compare


def _negatives(dtype, rng):
    yield SampleInput((-np.ones((N,), dtype),), name="minus-one")


def _fn(name):
    return f"nn.functional.{name}"


OPS = [
    OpInfo("normal", fn=_seeded(lambda lib: lib.normal(1.5, 2.0, size=(N,))),
           samples=lambda dtype, rng: iter([SampleInput(())]), grad=False, compare=_moments()),
    OpInfo("normal_tensor", fn=_seeded(_standardized_normal), samples=_normal_tensor,
           grad=False, compare=_moments()),
    _fill("uniform_", -1.0, 2.0, compare=_moments()),
    _fill("normal_", 1.0, 3.0, compare=_moments()),
    _fill("exponential_", 2.0, compare=_moments()),
    _fill("geometric_", 0.3, compare=_integral(low=1, high=10 ** 6)),
    _fill("log_normal_", 0.1, 0.5, compare=_moments()),
    _fill("cauchy_", 0.5, 2.0, compare=_moments(robust=True)),
    _fill("random_", 0, 7, compare=_integral(low=0, high=7)),
    _fill("bernoulli_", 0.3, compare=_integral(low=0, high=2)),
    OpInfo("bernoulli", fn=_seeded(lambda lib, p: lib.bernoulli(p)), samples=_probs,
           grad=False, compare=_integral(low=0, high=2)),
    OpInfo("multinomial", fn=_seeded(lambda lib, w: lib.multinomial(w, 2 * N, replacement=True)),
           samples=_multinomial, grad=False, compare=_counts),
    OpInfo("randperm", fn=_seeded(lambda lib: lib.randperm(50)),
           samples=lambda dtype, rng: iter([SampleInput(())]), grad=False, compare=_permutation),
    OpInfo("poisson", fn=_seeded(_poisson), samples=_rates, grad=False, compare=_moments()),
    OpInfo("distributions.Gamma.rsample", fn=_seeded(_gamma_fn), samples=_gamma, grad=False,
           compare=_moments()),
    # torch evaluates this derivative by series and asymptotic approximations (about 1e-4
    # relative), ember more exactly: compared at the approximations' accuracy
    OpInfo("_standard_gamma_grad", fn=_gamma_grad_fn, samples=_gamma_grad, grad=False,
           atol=1e-6, rtol=5e-4),
    OpInfo("distributions.Binomial.sample", fn=_seeded(
        lambda lib, n, p: lib.distributions.Binomial(n, p).sample()), samples=_binomial,
        grad=False, compare=_integral(low=0, high=13)),
    OpInfo("nn.functional.dropout-train", fn=_seeded(
        lambda lib, x: lib.nn.functional.dropout(x, 0.3, training=True)), samples=_ones,
        grad=False, compare=_dropout(0.3)),
    OpInfo("nn.functional.dropout2d-train", fn=_seeded(
        lambda lib, x: lib.nn.functional.dropout2d(x, 0.4, training=True)), samples=_ones4d,
        grad=False, compare=_dropout(0.4)),
    OpInfo("nn.functional.rrelu-train", fn=_seeded(
        lambda lib, x: lib.nn.functional.rrelu(x, 0.1, 0.3, training=True)), samples=_negatives,
        grad=False, compare=_moments()),
]
