"""How a code generator reaches each operator: the ``lowering`` field of every `Op`.

The C code generator of ``ember.compile`` and the lite runtime of ``ember.export`` lower
primitives only (`ember.ops.primitives`); this module records, per op, which of their
lowering paths applies, so the registry self-test can check that no op is left without
one and a backend can dispatch on ``op.lowering.kind``:

* ``scalar``: an elementwise primitive whose per-element C expression comes from the
  scalar-function table (``ember._core.scalar_functions.c_expr(detail, dtype, *operands)``);
  a fused loop of them is one generated kernel.
* ``loop``: a structural primitive the generator writes as a loop nest of its own kind
  (``detail``: reduction, scan, movement, gather, scatter, cast, creation, rng, identity).
* ``extern``: a library call the generated code links instead of generating (BLAS matmul,
  LAPACK, FFT, sort, the special functions that have no C form, ops whose output shape
  depends on the data); ``detail`` names the library or the reason.
* ``decomposition``: any other op: the generator lowers ``op.decomp``, never the op.

`install()` runs once every op of the import is registered (``ember/__init__.py`` calls
it) and then hooks into op declaration (``ON_REGISTER``), so ops declared on first use get
theirs; it only fills ``lowering`` where it is None, so an op may declare its own.
"""
import dataclasses

from .._core import dtype as _dt
from .._core import scalar_functions as _sf
from .._core.op import ON_REGISTER, REGISTRY

__all__ = ["Lowering", "install", "lowering_of"]

_LOOP_KINDS = {
    "reduction": ("sum", "prod", "amax", "amin", "argmax", "argmin", "any", "all"),
    "scan": ("cumsum", "cumprod", "cummax", "cummin"),
    "movement": ("view", "_reshape_copy", "permute", "expand", "slice", "select",
                 "as_strided", "cat", "pad", "flip"),
    "gather": ("gather", "index"),
    "scatter": ("scatter", "scatter_add", "scatter_reduce", "index_put"),
    "cast": ("_to_copy", "_to_device", "complex", "real", "imag", "conj", "view_as_complex",
             "view_as_real", "view_dtype"),
    "creation": ("full", "arange", "tensor"),
    "rng": ("_rng_uniform",),
    "identity": ("_stop_gradient",),
}
_LOOP = {name: kind for kind, names in _LOOP_KINDS.items() for name in names}
_BLAS = ("matmul",)
# the dtypes a generated loop computes in (halves are computed in float32)
_C_DTYPES = (_dt.float32, _dt.float64, _dt.int64, _dt.bool)


@dataclasses.dataclass(frozen=True)
class Lowering:
    kind: str          # "scalar", "loop", "extern" or "decomposition"
    detail: str = ""   # the table entry, loop kind, library or reason


def _scalar_with_c(name):
    return name in _sf.TABLE and any(_sf.has_c(name, d) for d in _C_DTYPES)


def lowering_of(op):
    """The lowering path of ``op`` (an `Op`) by the rules of the module docstring."""
    from .primitives import EXTERN, PRIMITIVES
    name = op.name
    if name in _BLAS:
        return Lowering("extern", "BLAS (the library NumPy links)")
    if name in EXTERN:
        return Lowering("extern", "library call: " + _extern_library(op))
    if name in _LOOP:
        return Lowering("loop", _LOOP[name])
    if name in PRIMITIVES:
        if _scalar_with_c(name):
            return Lowering("scalar", name)
        return Lowering("extern", "elementwise function with no C form in the scalar-function "
                                  "table (computed by NumPy/SciPy per element)")
    if op.decomp is not None:
        return Lowering("decomposition")
    if op.unsupported.get("decomp"):
        return Lowering("extern", "library call: " + op.unsupported["decomp"])
    return None


def _extern_library(op):
    module = str(getattr(op.kernel, "__module__", ""))
    for part, lib in (("linalg", "LAPACK"), ("fft", "FFT"), ("sort", "sort"),
                      ("special", "SciPy special functions")):
        if part in module or part in op.name:
            return lib
    return "NumPy (data-dependent output shape or no loop form)"


def install():
    """Fill ``op.lowering`` for every registered op that has none and has a path, and do
    the same for every op declared from now on."""
    for op in list(REGISTRY.values()):
        _install_one(op)
    if _install_one not in ON_REGISTER:
        ON_REGISTER.append(_install_one)


def _install_one(op):
    if op.lowering is None and "lowering" not in op.unsupported:
        op.lowering = lowering_of(op)
