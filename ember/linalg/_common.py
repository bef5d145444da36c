"""Shared pieces of ember.linalg: the error type, argument checks and errors in torch's
words, and ``out=`` tuples (the kernels' LAPACK helpers are in ember.ops.linalg._lapack)."""
import numpy as np

from .._core import dtype as _dt
from .._core.device import backend_for_type
from .._core.tensor import Tensor
from ..ops._helpers import cpp_name, type_name

_HALF = (_dt.float16, _dt.bfloat16)


class LinAlgError(RuntimeError):
    """Raised for singular or non-positive-definite input (like ``torch.linalg.LinAlgError``)."""


def check_float(name, A, arg="A"):
    dt = A.dtype
    if dt in _HALF:
        raise RuntimeError(f"{name}: Low precision dtypes not supported. Got {type_name(dt)}")
    if dt.np.kind not in "fc":  # float8 ('V') is no LAPACK type either
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. "
                           f"Got {type_name(dt)}")


def check_matrix(name, A, arg="A"):
    if A.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor {arg} must have at least 2 dimensions.")


def check_square(name, A, arg="A"):
    check_matrix(name, A, arg)
    m, n = A.shape[-2:]
    if m != n:
        raise RuntimeError(f"{name}: {arg} must be batches of square matrices, but they are "
                           f"{m} by {n} matrices")


def check_same_dtype(name, A, B, an="A", bn="B"):
    if A.dtype is not B.dtype:
        raise RuntimeError(f"{name}: Expected {an} and {bn} to have the same dtype, but found "
                           f"{an} of type {type_name(A.dtype)} and {bn} of type "
                           f"{type_name(B.dtype)} instead")


def batch_prefix(batch_shape, i):
    """torch's '(Batch element i): ' prefix, empty for a single matrix."""
    return f"(Batch element {i}): " if len(batch_shape) else ""


def raise_info(name, batch_shape, info, fmt):
    """Raise LinAlgError for the first non-zero entry of ``info`` (shape ``batch_shape``)."""
    b = backend_for_type(type(info))
    if b is None or b.name == "meta":
        return  # vmap's logical tensors and meta tensors carry no values to check (torch's
        # meta kernels skip the check too)
    # a data-dependent error check needs the values on the host (torch synchronises too)
    flat = np.asarray(b.to_host(info)).reshape(-1)
    bad = np.flatnonzero(flat)
    if bad.size:
        i = int(bad[0])
        raise LinAlgError(f"{name}: {batch_prefix(batch_shape, i)}{fmt.format(int(flat[i]))}")


def write_outs(name, argpos, out, results, cls, check="same", labels=None, op=None,
               differentiable=True):
    """``out=(t0, t1, ...)`` of a linalg function returning ``cls(*results)``: torch's
    argument and autograd errors, then each element written by `write_out` (resized with
    torch's warning when its shape differs).  ``check`` says which dtypes an element accepts:
    'same' (most linalg functions), 'castable' (eig: no lower category, named by ``labels``)
    or 'cast' (lstsq: `write_out`'s casting rule).  ``op`` names the operator in the
    autograd error where torch's differs from ``name``; ``differentiable=False``: torch has no
    derivative for the function (its outputs only refuse backward), and its out= variant takes
    inputs that require grad."""
    if out is None:
        return cls(*results)
    from .._core.dispatch import write_out
    from .._core.state import STATE
    if not isinstance(out, (tuple, list)):
        raise TypeError(f"{name}(): argument 'out' must be tuple of Tensors, not "
                        f"{type(out).__name__}")
    if len(out) != len(results):
        raise TypeError(f"expected tuple of {len(results)} elements but got {len(out)}")
    for i, o in enumerate(out):
        if not isinstance(o, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument {argpos}, but got "
                            f"{type(o).__name__}")
    if differentiable and STATE.grad_enabled and \
            any(t._requires_grad for t in tuple(out) + tuple(results)):
        raise RuntimeError(f"{op or name}(): functions with out=... arguments don't support automatic "
                           f"differentiation, but one of the arguments requires grad.")
    for i, (o, r) in enumerate(zip(out, results)):
        have, want = o.dtype, r.dtype
        if check == "same" and have is not want:
            raise RuntimeError(f"Expected out tensor to have dtype {cpp_name(want)}, but got "
                               f"{cpp_name(have)} instead")
        if check == "castable" and want.category > have.category:
            raise RuntimeError(f"torch.{name.replace('_', '.', 1)}: Expected {labels[i]} to be "
                               f"safely castable from {type_name(want)} dtype, but got "
                               f"{labels[i]} with dtype {type_name(have)}")
    if not differentiable:  # nothing for autograd to record into out
        results = tuple(r.detach() for r in results)
    return cls(*(write_out(o, r) for o, r in zip(out, results)))
