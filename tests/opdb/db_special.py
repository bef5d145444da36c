"""ember.special: every function over integer, half, float and complex inputs (torch
rejecting a dtype means ember must reject it the same way), values and gradients
against torch.special, input domains kept away from poles and branch points."""
import numpy as np

from .core import COMPLEX, FLOATS, OpInfo, SampleInput, make
from .db_pointwise import binary, unary

ALL = ("bool", "uint8", "int64", "float16", "bfloat16") + FLOATS + COMPLEX


def _u(name, low=None, high=None, special=(), dtypes=ALL, **kw):
    return OpInfo(f"special.{name}", samples=unary(low, high, special=special), dtypes=dtypes,
                  atol=kw.pop("atol", 1e-5), rtol=kw.pop("rtol", 1e-5), **kw)


NO_GRAD = dict(grad=False)
OPS = [
    _u("erf"), _u("erfc"), _u("erfcx", special=(0.0, -1.0, 30.0, -30.0)),
    _u("erfinv", -0.9, 0.9), _u("expit"), _u("logit", 0.05, 0.95), _u("exp2"), _u("expm1"),
    _u("log1p", -0.9, 3), _u("gammaln", 0.1, 5), _u("digamma", 0.1, 5), _u("psi", 0.1, 5),
    _u("i0"), _u("i0e", special=(0.0, -2.0)), _u("i1", special=(0.0, 1.0)),
    _u("i1e", special=(0.0, -1.0)), _u("ndtr", special=(0.0, -40.0, 40.0)),
    _u("ndtri", 0.02, 0.98, special=(0.0, 1.0, 0.5)),
    _u("log_ndtr", special=(-30.0, 0.0, 10.0)), _u("sinc", special=(0.0, 1.0, -2.5)),
    _u("entr", 0.05, 3, special=(0.0, -1.0, 2.0)),
    _u("round", special=(0.5, 1.5, -2.5), grad=False),
    _u("bessel_j0", **NO_GRAD), _u("bessel_j1", **NO_GRAD), _u("bessel_y0", 0.1, 5, **NO_GRAD),
    _u("bessel_y1", 0.1, 5, **NO_GRAD), _u("modified_bessel_i0", **NO_GRAD),
    _u("modified_bessel_i1", **NO_GRAD), _u("modified_bessel_k0", 0.1, 5, **NO_GRAD),
    _u("modified_bessel_k1", 0.1, 5, **NO_GRAD),
    _u("scaled_modified_bessel_k0", 0.1, 5, **NO_GRAD),
    _u("scaled_modified_bessel_k1", 0.1, 5, **NO_GRAD),
    _u("spherical_bessel_j0", **NO_GRAD), _u("airy_ai", **NO_GRAD),
]


def _b(name, low, high, rlow, rhigh, scalars=(2.5, 3), **kw):
    return OpInfo(f"special.{name}", samples=binary(low, high, rlow, rhigh, scalars=scalars),
                  dtypes=ALL, atol=1e-5, rtol=1e-5, **kw)


OPS += [
    _b("xlogy", 0, 3, 0.1, 3), _b("xlog1py", 0, 3, -0.5, 3),
    _b("zeta", 1.5, 4, 0.5, 3),
    _b("gammainc", 0.5, 4, 0.1, 4, scalars=()), _b("gammaincc", 0.5, 4, 0.1, 4, scalars=()),
]
for _o in OPS[-3:]:
    _o.samples = (lambda gen: lambda dtype, rng: (
        SampleInput(s.args, s.kwargs, s.name, grad_args=(1,)) for s in gen(dtype, rng)))(_o.samples)


def _poly_samples(dtype, rng):
    for n in (0, 1, 2, 3):
        yield SampleInput((n, make((3, 4), dtype, rng, low=0.2, high=4)), name=f"n{n}")


def _mvl_samples(dtype, rng):
    for p in (1, 2, 4):
        yield SampleInput((make((3, 4), dtype, rng, low=2, high=5), p), name=f"p{p}")


def _softmax_samples(dtype, rng):
    yield SampleInput((make((3, 5), dtype, rng), 1), name="dim1")
    yield SampleInput((make((2, 3, 4), dtype, rng, noncontig=True), 0), name="dim0-noncontig")
    yield SampleInput((make((3, 5), dtype, rng), -1), {"dtype": "float64"}, name="dtype")


def _sm(name):
    def fn(lib, x, dim, **kw):
        if "dtype" in kw:
            kw = dict(kw, dtype=getattr(lib, kw["dtype"]))
        return getattr(lib.special, name)(x, dim, **kw)
    return fn


OPS += [
    OpInfo("special.polygamma", samples=_poly_samples, dtypes=("int64", "float16") + FLOATS,
           atol=1e-4, rtol=1e-5),
    OpInfo("special.multigammaln", samples=_mvl_samples, dtypes=FLOATS),
    OpInfo("special.softmax", fn=_sm("softmax"), samples=_softmax_samples, dtypes=FLOATS),
    OpInfo("special.log_softmax", fn=_sm("log_softmax"), samples=_softmax_samples,
           dtypes=FLOATS),
]
_ = np


def _orthopoly(dtype, rng):
    """x in the polynomials' natural interval, degrees 0..6 as a tensor and as an int."""
    x = make((3, 7), dtype, rng, low=-1, high=1)
    yield SampleInput((x, np.arange(7, dtype=np.int64)), name="tensor-n")
    yield SampleInput((x, 4), name="int-n")
    yield SampleInput((make((5,), dtype, rng, low=0, high=1), np.array(3.0, dtype)),
                      name="float-n")


# torch has no derivative for these (its backward raises "not implemented")
OPS += [
    OpInfo(f"special.{n}_polynomial_{k}", samples=_orthopoly, dtypes=FLOATS, grad=False,
           atol=1e-6, rtol=1e-6)
    for n, k in (("chebyshev", "t"), ("chebyshev", "u"), ("chebyshev", "v"), ("chebyshev", "w"),
                 ("shifted_chebyshev", "t"), ("shifted_chebyshev", "u"),
                 ("shifted_chebyshev", "v"), ("shifted_chebyshev", "w"), ("hermite", "h"),
                 ("hermite", "he"), ("laguerre", "l"), ("legendre", "p"))
]
