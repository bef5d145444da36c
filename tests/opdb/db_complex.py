"""Complex tensors: construction (complex, polar), parts and phase (real, imag, angle,
abs, sgn, conj...), views (view_as_real/view_as_complex), complex pow/exp/log/sqrt and
matmul, with Wirtinger gradients compared against torch (and gradcheck in complex128)."""
from .core import COMPLEX, FLOATS, OpInfo, SampleInput, make
from .db_pointwise import unary

C_ONLY = COMPLEX


def _pair(dtype, rng):
    yield SampleInput((make((4,), dtype, rng), make((4,), dtype, rng)), name="same")
    yield SampleInput((make((3, 1), dtype, rng), make((1, 4), dtype, rng)), name="broadcast")
    yield SampleInput((make((2, 3), dtype, rng, noncontig=True), make((), dtype, rng)),
                      name="0d-noncontig")


def _polar(dtype, rng):
    yield SampleInput((make((4,), dtype, rng, low=0.5, high=2), make((4,), dtype, rng)),
                      name="same")
    yield SampleInput((make((3, 1), dtype, rng, low=0.5, high=2), make((1, 4), dtype, rng)),
                      name="broadcast")


def _complex_errors(rng):
    yield SampleInput((make((3,), "float32", rng), make((3,), "float64", rng))), RuntimeError
    yield SampleInput((make((3,), "int64", rng), make((3,), "int64", rng))), RuntimeError


def _vac(dtype, rng):
    yield SampleInput((make((3, 2), dtype, rng),), name="2d")
    yield SampleInput((make((2, 4, 2), dtype, rng),), name="3d")


def _mm(dtype, rng):
    yield SampleInput((make((3, 4), dtype, rng), make((4, 2), dtype, rng)), name="mm")
    yield SampleInput((make((2, 3, 4), dtype, rng), make((4,), dtype, rng)), name="mv-batched")


def _pow(dtype, rng):
    yield SampleInput((make((3, 4), dtype, rng, low=0.5, high=2), make((3, 4), dtype, rng,
                                                                      low=-1, high=1)),
                      name="tensor-exp")
    yield SampleInput((make((5,), dtype, rng, low=0.5, high=2), 2), name="int-exp")
    yield SampleInput((make((5,), dtype, rng, low=0.5, high=2), 0.5 + 0.25j), name="complex-exp")


def _c(name, fn=None, samples=None, dtypes=C_ONLY, **kw):
    return OpInfo(f"complex.{name}", fn=fn or name, samples=samples or unary(low=0.3, high=2),
                  dtypes=dtypes, **kw)


OPS = [
    OpInfo("complex", samples=_pair, dtypes=FLOATS + ("int64",), errors=_complex_errors),
    OpInfo("polar", samples=_polar, dtypes=FLOATS),
    _c("angle", dtypes=C_ONLY + FLOATS + ("int64",)),
    _c("abs"), _c("sgn"), _c("exp"), _c("log"), _c("sqrt"),
    _c("real"), _c("imag"), _c("conj", fn=lambda lib, x: (x * 1).conj()), _c("conj_physical"),
    _c("resolve_conj"),
    _c("real_method", fn=lambda lib, x: x.real * 1),
    _c("imag_method", fn=lambda lib, x: x.imag * 1),
    _c("view_as_real", fn=lambda lib, x: lib.view_as_real(x * 1)),
    _c("view_as_complex", fn=lambda lib, x: lib.view_as_complex(x * 1), samples=_vac,
       dtypes=FLOATS),
    _c("pow", samples=_pow, atol=1e-5, rtol=1e-5),
    _c("matmul", samples=_mm, atol=1e-5, rtol=1e-5),
    _c("div", fn=lambda lib, x: (x * x.conj() + 1) / (x + 2j)),
    _c("abs_of_sum", fn=lambda lib, x: (x + x.conj() * 0.5j).abs().log()),
]
