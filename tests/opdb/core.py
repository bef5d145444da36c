"""The operator database: one `OpInfo` per operator drives the generic tests.

How to add an operator: append an ``OpInfo`` to ``OPS`` in the ``db_*.py`` module
of its area.  ``samples(dtype, rng)`` yields `SampleInput`s whose tensor
arguments are NumPy arrays (made with `make` so broadcasting, non-contiguous,
zero-size and 0-dim cases are easy to cover); the tests convert them to ember
and torch tensors and compare:

* values and result dtypes against torch 2.13 for every dtype in ``dtypes``;
* gradients against torch in float64 (if ``grad``), and gradcheck by finite
  differences on the first sample (if ``gradcheck``);
* ``errors(rng)`` yields (SampleInput, exception type): ember must raise the same
  type torch raises.

``fn`` names the operator: ``"exp"`` means ``lib.exp(*args, **kwargs)``;
``"Tensor.exp"`` means ``args[0].exp(*args[1:], **kwargs)``; a callable gets the
library module as first argument.  Known differences are ``xfail={test: reason}``,
never silent skips.

Which registered operators a record exercises is collected by running it
(`opdb.coverage`); ``ops=`` names those a recording dispatch mode cannot see.
tests/ops/test_opdb_coverage.py fails when a registered operator is reached by no
record, tests/ops/test_opdb_generic.py adds double backward and fx trace-and-replay,
tests/func/test_vmap_opdb.py vmap.
"""
import dataclasses
from typing import Any, Callable

import numpy as np

FLOATS = ("float32", "float64")
HALVES = ("float16", "bfloat16")
INTS = ("uint8", "int8", "int16", "int32", "int64")
COMPLEX = ("complex64", "complex128")
ALL_NUMERIC = ("bool",) + INTS + HALVES + FLOATS


@dataclasses.dataclass
class SampleInput:
    args: tuple
    kwargs: dict = dataclasses.field(default_factory=dict)
    name: str = ""
    # indices of args that take part in gradient tests (default: every floating array)
    grad_args: tuple = None


@dataclasses.dataclass
class OpInfo:
    name: str
    fn: Any = None
    samples: Callable = None
    dtypes: tuple = FLOATS
    grad: bool = True
    gradcheck: bool = True
    errors: Callable = None
    atol: float = 1e-5
    rtol: float = 1.3e-6
    # tolerances for float16/bfloat16 value tests
    half_atol: float = 1e-2
    half_rtol: float = 1.6e-2
    grad_atol: float = 1e-7
    grad_rtol: float = 1e-7
    xfail: dict = dataclasses.field(default_factory=dict)
    # compare outputs by value only (e.g. ops returning indices that may differ on ties)
    compare: Callable = None
    # ops whose result dtype is data-independent but values random, etc.
    check_dtype: bool = True
    # registered operators this record exercises beyond those its samples are seen to reach
    # (tests/opdb/coverage.py records those by running them)
    ops: tuple = ()

    def __post_init__(self):
        if self.fn is None:
            self.fn = self.name

    def call(self, lib, args, kwargs):
        fn = self.fn
        if callable(fn):
            return fn(lib, *args, **kwargs)
        if fn.startswith("Tensor."):
            return getattr(args[0], fn[7:])(*args[1:], **kwargs)
        mod = lib
        for part in fn.split("."):
            mod = getattr(mod, part)
        return mod(*args, **kwargs)


def np_dtype(name):
    import ml_dtypes
    if name == "bfloat16":
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def make(shape, dtype, rng, *, low=None, high=None, noncontig=False, exclude_zero=False):
    """A random array of ``shape`` and ``dtype`` (name); ``noncontig`` makes a strided view."""
    dt = np_dtype(dtype)
    shape = tuple(shape)
    if dtype == "bool":
        a = rng.random(shape) > 0.5
    elif dt.kind in "iu":
        lo = -9 if low is None else low
        hi = 10 if high is None else high
        if dt.kind == "u":
            lo = max(lo, 0)
        a = rng.integers(lo, hi, size=shape).astype(dt)
        if exclude_zero:
            a[a == 0] = 1
    elif dt.kind == "c":
        lo = -3 if low is None else low
        hi = 3 if high is None else high
        a = (rng.uniform(lo, hi, shape) + 1j * rng.uniform(lo, hi, shape)).astype(dt)
    else:
        lo = -3 if low is None else low
        hi = 3 if high is None else high
        a = rng.uniform(lo, hi, shape)
        if exclude_zero:
            a[np.abs(a) < 1e-1] = 0.5
        a = a.astype(dt)
    a = np.asarray(a)
    if noncontig and a.ndim:
        big = np.empty(shape[:-1] + (shape[-1] * 2,), dtype=dt)
        big[..., ::2] = a
        a = big[..., ::2]
        assert not a.flags.c_contiguous or a.size <= 1
    return a


def unary_samples(low=None, high=None, exclude_zero=False):
    """Samples for an elementwise unary op: scalar, vector, matrix, non-contiguous, empty."""
    def gen(dtype, rng):
        kw = dict(low=low, high=high, exclude_zero=exclude_zero)
        yield SampleInput((make((), dtype, rng, **kw),), name="0d")
        yield SampleInput((make((5,), dtype, rng, **kw),), name="1d")
        yield SampleInput((make((3, 4), dtype, rng, **kw),), name="2d")
        yield SampleInput((make((2, 3, 4), dtype, rng, noncontig=True, **kw),), name="noncontig")
        yield SampleInput((make((0, 3), dtype, rng, **kw),), name="empty")
    return gen


def binary_samples(low=None, high=None, rhs_exclude_zero=False, scalars=(2.5, 3)):
    """Samples for an elementwise binary op: broadcasting, 0-dim, scalars, non-contiguous."""
    def gen(dtype, rng):
        kw = dict(low=low, high=high)
        rk = dict(low=low, high=high, exclude_zero=rhs_exclude_zero)
        yield SampleInput((make((4,), dtype, rng, **kw), make((4,), dtype, rng, **rk)), name="same")
        yield SampleInput((make((3, 1), dtype, rng, **kw), make((1, 4), dtype, rng, **rk)),
                          name="broadcast")
        yield SampleInput((make((2, 3), dtype, rng, **kw), make((), dtype, rng, **rk)),
                          name="0d-rhs")
        yield SampleInput((make((2, 3), dtype, rng, noncontig=True, **kw),
                           make((2, 3), dtype, rng, noncontig=True, **rk)), name="noncontig")
        yield SampleInput((make((0, 3), dtype, rng, **kw), make((3,), dtype, rng, **rk)),
                          name="empty")
        for s in scalars:
            if isinstance(s, float) and np_dtype(dtype).kind in "biu":
                continue
            yield SampleInput((make((2, 3), dtype, rng, **kw), s), name=f"scalar-{s}")
    return gen


def to_lib(lib, x, requires_grad=False):
    """Convert a NumPy sample argument to a ``lib`` tensor (nested lists/tuples too)."""
    if isinstance(x, np.ndarray):
        if lib.__name__ == "torch" and x.dtype.name == "bfloat16":
            t = lib.from_numpy(np.array(x.astype(np.float32), order="C")).to(lib.bfloat16)
        elif lib.__name__ == "torch" and not x.flags.writeable:
            t = lib.from_numpy(x.copy())
        else:
            t = lib.from_numpy(x.copy() if x.flags.c_contiguous else x)
            if lib.__name__ == "ember" and not x.flags.c_contiguous:
                t = lib.from_numpy(_strided_copy(x))
            elif lib.__name__ == "torch" and not x.flags.c_contiguous:
                t = lib.from_numpy(_strided_copy(x))
        if requires_grad:
            t.requires_grad_(True)
        return t
    if isinstance(x, list):
        return [to_lib(lib, y, requires_grad) for y in x]
    if isinstance(x, tuple):
        return tuple(to_lib(lib, y, requires_grad) for y in x)
    return x


def _strided_copy(x):
    big = np.empty(x.shape[:-1] + (x.shape[-1] * 2,), dtype=x.dtype) if x.ndim else x.copy()
    if not x.ndim:
        return big
    big[..., ::2] = x
    return big[..., ::2]


def to_numpy(x):
    """ember/torch outputs to NumPy (float32 for half types) for comparison."""
    mod = type(x).__module__
    if mod.startswith("torch"):
        x = x.detach()
        if x.dtype in (_torch().bfloat16, _torch().float16):
            return x.float().numpy(), str(x.dtype).split(".")[-1]
        if x.is_conj():
            x = x.resolve_conj()
        if x.is_neg():
            x = x.resolve_neg()
        return x.numpy(), str(x.dtype).split(".")[-1]
    d = x.dtype.name
    a = x._data
    if d in ("bfloat16", "float16"):
        a = a.astype(np.float32)
    return np.asarray(a), d


def _torch():
    import torch
    return torch


def flatten(out):
    """The outputs of an op call as one flat list (nested tuples/lists opened)."""
    if isinstance(out, (tuple, list)):
        r = []
        for o in out:
            r.extend(flatten(o))
        return r
    return [out]


def grad_leaves(args, lib):
    """Float/complex ``lib`` tensor arguments (in lists too) become leaves that require grad."""
    leaves = []

    def mark(a):
        if isinstance(a, lib.Tensor) and (a.dtype.is_floating_point or a.dtype.is_complex):
            a.requires_grad_(True)
            leaves.append(a)
        elif isinstance(a, list):
            for x in a:
                mark(x)
    for a in args:
        mark(a)
    return leaves
