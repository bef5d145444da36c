"""Linear algebra basics: matmul and its family (mm, bmm, mv, dot, addmm, ...), einsum,
tensordot, kron, cross and cdist.

Products call BLAS through ``xp.matmul`` on the caller's arrays (no staging copies).
Derivatives follow PyTorch's conjugate-Wirtinger convention: for ``C = A @ B`` the
input gradients are ``G @ B^H`` and ``A^H @ G``.
"""
import functools
import math
import string
import warnings

import numpy as np
import opt_einsum as _oe

from .._core.blas_threads import matmul as _gemm

from .._core import dtype as _dt
from .._core import meta as _meta
from .._core.dispatch import overridable
from ._helpers import _own_override
from .._core.tensor import _wrap_dim
from ._helpers import (NeedsOverride, Op, Tensor, _E, apply, apply_inplace, cj,
                       handle_override, promote_np, type_name, write_out, write_out_exact,
                       jvp_sum)
from ._batching import _leading_padded_rule
from ._batching_blas import _addmm_rule, _cross_rule, _einsum_rule, _matmul_rule
from .creation import eye
from .pointwise import where
from .views import _expand_shape

__all__ = ["matmul", "mm", "bmm", "mv", "dot", "vdot", "inner", "outer", "ger", "addmm",
           "addmv", "addr", "baddbmm", "addbmm", "einsum", "tensordot", "kron", "cross", "cdist",
           "chain_matmul"]

_F32 = np.dtype(np.float32)
_HALF = _dt.NP_HALVES
# torch's C++ and short scalar-type names, used in its error messages
_CPP = {"float32": "float", "float64": "double", "float16": "c10::Half",
        "bfloat16": "c10::BFloat16", "complex64": "c10::complex<float>",
        "complex128": "c10::complex<double>", "int64": "long int", "int32": "int",
        "int16": "short int", "int8": "signed char", "uint8": "unsigned char", "bool": "bool"}
_SHORT = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
          "complex64": "ComplexFloat", "complex128": "ComplexDouble", "int64": "Long",
          "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}


def _name(dtype):
    return dtype.name if isinstance(dtype, _dt.dtype) else _dt.FROM_NP[dtype].name


def cpp_name(np_dtype):
    n = _name(np_dtype)
    return _CPP.get(n, n)


def short_name(np_dtype):
    n = _name(np_dtype)
    return _SHORT.get(n, n)


def _dims(x):
    return "x".join(str(s) for s in x)


def _same_dtype(a, b, msg):
    if a.dtype != b.dtype:
        raise RuntimeError(msg(a.dtype, b.dtype))


def _scalar_type_msg(a, b):
    return f"expected scalar type {short_name(a)} but found {short_name(b)}"


_WARNED = set()


def _warn_once(key, msg):
    """torch's TORCH_WARN_ONCE: a deprecation warning the first time only."""
    if key not in _WARNED:
        _WARNED.add(key)
        warnings.warn(msg, UserWarning, stacklevel=3)


def _mH(t):
    return cj(t.transpose(-2, -1))


# ---- matmul -----------------------------------------------------------------------------
def _matmul_check(a, b):
    """torch's errors for matmul operands (dtype, rank, contracted size, batch sizes)."""
    na, nb = a.ndim, b.ndim
    if na == 0 or nb == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are "
                           f"{na}D and {nb}D")
    if a.dtype != b.dtype:
        if na == 1 and nb == 1:
            raise RuntimeError(f"dot : expected both vectors to have same dtype, but found "
                               f"{short_name(a.dtype)} and {short_name(b.dtype)}")
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{cpp_name(a.dtype)} != {cpp_name(b.dtype)}")
    if a.dtype.kind == "b":
        raise NotImplementedError(f"\"{'dot' if na == nb == 1 else 'addmm_impl_cpu_'}\" not "
                                  f"implemented for 'Bool'")
    if na > 2 and nb > 2:
        _broadcast_batch(a.shape[:-2], b.shape[:-2])
    k, k2 = a.shape[-1], b.shape[-2 if nb > 1 else 0]
    if k != k2:
        if na == nb == 1:
            raise RuntimeError(f"inconsistent tensor size, expected tensor [{k}] and src [{k2}] "
                               f"to have the same number of elements, but got {k} and {k2} "
                               f"elements respectively")
        rows = int(np.prod(a.shape[:-1])) if na > 1 else 1
        if nb == 1:
            raise RuntimeError(f"size mismatch, got input ({rows}), mat ({rows}x{k}), vec ({k2})")
        if nb == 2:
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x{k} and "
                               f"{_dims(b.shape)})")
        batch = int(np.prod(np.broadcast_shapes(a.shape[:-2], b.shape[:-2])))
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{batch}, {k}] but got: [{batch}, {k2}].")


def _broadcast_batch(sa, sb):
    try:
        return np.broadcast_shapes(sa, sb)
    except ValueError:
        pass
    n = max(len(sa), len(sb))
    sa, sb = (1,) * (n - len(sa)) + tuple(sa), (1,) * (n - len(sb)) + tuple(sb)
    for i, (x, y) in enumerate(zip(sa, sb)):
        if x != y and x != 1 and y != 1:
            raise RuntimeError(f"The size of tensor a ({x}) must match the size of tensor b ({y}) "
                               f"at non-singleton dimension {i}")


def _matmul_kernel(xp, a, b):
    dt = a.dtype
    if dt is not b.dtype or dt.kind == "b" or a.ndim == 0 or b.ndim == 0 or \
            a.shape[-1] != b.shape[-2 if b.ndim > 1 else 0]:
        _matmul_check(a, b)
    if dt in _HALF:
        return _gemm(xp, a.astype(_F32), b.astype(_F32)).astype(dt)
    try:
        return _gemm(xp, a, b)
    except ValueError:
        _matmul_check(a, b)
        raise


def _matmul_shape(a, b):
    sa, sb = tuple(a.shape), tuple(b.shape)
    if not sa or not sb:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are "
                           f"{len(sa)}D and {len(sb)}D")
    k = sb[0] if len(sb) == 1 else sb[-2]
    if not _meta.sizes_equal(sa[-1], k):
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied "
                           f"({'x'.join(map(str, sa))} and {'x'.join(map(str, sb))})")
    if len(sa) == 1 and len(sb) == 1:
        return (), a.dtype
    if len(sb) == 1:
        return sa[:-1], a.dtype
    if len(sa) == 1:
        return sb[:-2] + sb[-1:], a.dtype
    return _meta.broadcast_shapes(sa[:-2], sb[:-2]) + (sa[-2], sb[-1]), a.dtype


def matmul_grads(g, a, b, need_a, need_b):
    """Gradients of ``a @ b`` (torch broadcasting rules) for output gradient ``g``."""
    na, nb = a.dim(), b.dim()
    ga = gb = None
    if na == 1 and nb == 1:
        return (g * cj(b) if need_a else None), (cj(a) * g if need_b else None)
    if na == 1:
        if need_a:
            # vector @ matrix: conj(b) @ g is one product (no unsqueeze/transpose/squeeze
            # nodes in the graph a hessian backpropagates through again)
            ga = matmul(cj(b), g) if nb == 2 else matmul(g.unsqueeze(-2), _mH(b)).squeeze(-2)
        if need_b:
            gb = matmul(cj(a).unsqueeze(-1), g.unsqueeze(-2))
        return ga, gb
    if nb == 1:
        if need_a:
            ga = g.unsqueeze(-1) * cj(b)
        if need_b:
            if na == 2:  # matrix @ vector: g @ conj(a), one product
                gb = matmul(g, cj(a))
            else:
                k = a.shape[-1]
                gb = matmul(g.reshape(-1), cj(a.reshape(-1, k)))
        return ga, gb
    if need_a:
        ga = matmul(g, _mH(b))
    if need_b:
        if nb == 2 and na > 2:
            # fold the batch into the rows: one GEMM instead of a batched one and a sum
            k, n = a.shape[-1], g.shape[-1]
            gb = matmul(_mH(a.reshape(-1, k)), g.reshape(-1, n))
        else:
            gb = matmul(_mH(a), g)
    return ga, gb


def _matmul_vjp(ctx, g, a, b):
    na, nb = ctx.needs_input_grad
    return matmul_grads(g, a, b, na, nb)


def same_dtype(t, x):
    """A tangent in its primal's dtype (GEMMs do not promote)."""
    return t if t is None or t.dtype == x.dtype else t.to(x.dtype)


def _matmul_jvp(out, ts, a, b):
    ta, tb = same_dtype(ts[0], a), same_dtype(ts[1], b)
    return jvp_sum(None if ta is None else matmul(ta, b), None if tb is None else matmul(a, tb))


MATMUL = Op("matmul", _matmul_kernel, _matmul_vjp, shape=_matmul_shape, category="blas",
            jvp=_matmul_jvp, batch=_matmul_rule)


@overridable
def matmul(input, other, *, out=None):
    """Matrix product of two tensors, with NumPy/torch broadcasting of batch dimensions."""
    try:
        r = apply(MATMUL, (input, other), _E)
    except NeedsOverride:
        return handle_override(matmul, (input, other), {"out": out} if out is not None else {})
    # torch checks only that out's elements do not share memory
    return r if out is None else write_out_exact(out, r, ())


def _matmul_magic(self, other):
    try:
        return apply(MATMUL, (self, other), _E)
    except NeedsOverride:
        return _own_override(self, _matmul_magic, (self, other))
    except TypeError:
        if isinstance(other, Tensor):
            raise
        return NotImplemented


def _rmatmul_magic(self, other):
    try:
        return apply(MATMUL, (other, self), _E)
    except NeedsOverride:
        return _own_override(self, _rmatmul_magic, (self, other))
    except TypeError:
        return NotImplemented


Tensor.matmul = lambda self, other: matmul(self, other)
Tensor.__matmul__ = _matmul_magic
Tensor.__rmatmul__ = _rmatmul_magic
# torch defines no in-place matmul: ``a @= b`` rebinds ``a`` to a new tensor
Tensor.__imatmul__ = _matmul_magic


def _need_dims(t, n, msg):
    if t.dim() != n:
        raise RuntimeError(msg)


def _write_dot(out, r):
    if isinstance(out, Tensor) and out.dtype is not r.dtype:
        raise RuntimeError(f"result dtype {type_name(out.dtype)} does not match input dtype "
                           f"{type_name(r.dtype)}")
    return write_out(out, r)


def _public2(fn, checks):
    """``fn(input, other, *, out=None)`` that validates ranks/dtypes then applies MATMUL."""
    def public(input, other, *, out=None):
        try:
            checks(input, other)
        except NeedsOverride:
            return handle_override(public, (input, other), {"out": out} if out else {})
        try:
            r = apply(MATMUL, (input, other), _E)
        except NeedsOverride:
            return handle_override(public, (input, other), {"out": out} if out else {})
        if out is None:
            return r
        return _write_dot(out, r) if fn == "dot" else write_out_exact(out, r, ())
    public.__name__ = public.__qualname__ = fn
    public.__doc__ = _DOCS[fn]
    setattr(Tensor, fn, lambda self, other: public(self, other))
    return public


def _tensor_or_override(*ts):
    for t in ts:
        if not isinstance(t, Tensor):
            if getattr(type(t), "__ember_function__", None) is not None:
                raise NeedsOverride(t)
            raise TypeError(f"expected Tensor as argument, but got {type(t).__name__}")


def _mm_checks(a, b):
    _tensor_or_override(a, b)
    _need_dims(a, 2, "self must be a matrix")
    _need_dims(b, 2, "mat2 must be a matrix")


def _bmm_checks(a, b):
    _tensor_or_override(a, b)
    _need_dims(a, 3, "batch1 must be a 3D tensor")
    _need_dims(b, 3, "batch2 must be a 3D tensor")
    _same_dtype(a, b, _scalar_type_msg)
    if a.shape[0] != b.shape[0] or a.shape[2] != b.shape[1]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{a.shape[0]}, {a.shape[2]}] but got: [{b.shape[0]}, {b.shape[1]}].")


def _mv_checks(a, b):
    _tensor_or_override(a, b)
    if a.dim() != 2 or b.dim() != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {a.dim()}, {b.dim()}")
    if a.dtype != b.dtype:
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got "
                           f"{short_name(b.dtype.np)}, {short_name(a.dtype.np)}, and "
                           f"{short_name(b.dtype.np)}")


def _dot_checks(a, b):
    _tensor_or_override(a, b)
    if a.dim() != 1 or b.dim() != 1:
        raise RuntimeError(f"1D tensors expected, but got {a.dim()}D and {b.dim()}D tensors")


_DOCS = {"mm": "Matrix product of two 2-D tensors (no broadcasting).",
         "bmm": "Batched matrix product of two 3-D tensors with the same batch size.",
         "mv": "Product of a matrix and a vector.",
         "dot": "Dot product of two 1-D tensors (no conjugation)."}
mm = _public2("mm", _mm_checks)
bmm = _public2("bmm", _bmm_checks)
mv = _public2("mv", _mv_checks)
dot = _public2("dot", _dot_checks)


@overridable
def vdot(input, other, *, out=None):
    """Dot product of two 1-D tensors, conjugating the first."""
    try:
        _dot_checks(input, other)
    except NeedsOverride:
        return handle_override(vdot, (input, other), {})
    r = apply(MATMUL, (cj(input), other), _E)
    return r if out is None else _write_dot(out, r)


Tensor.vdot = lambda self, other: vdot(self, other)


@overridable
def inner(input, other, *, out=None):
    """Inner product over the last dimension (a 0-dim operand multiplies instead)."""
    if input.dim() == 0 or other.dim() == 0:
        r = input * other
    else:
        if input.shape[-1] != other.shape[-1]:
            raise RuntimeError(f"inner() the last dimension must match on both input tensors "
                               f"but got shapes {list(input.shape)} and {list(other.shape)}")
        _same_dtype(input, other, lambda a, b: "both inputs should have same dtype")
        k = input.shape[-1]
        r = matmul(input.reshape(-1, k), other.reshape(-1, k).transpose(0, 1))
        r = r.reshape(tuple(input.shape[:-1]) + tuple(other.shape[:-1]))
    return r if out is None else write_out(out, r)


@overridable
def outer(input, vec2, *, out=None):
    """Outer product of two 1-D tensors (torch type promotion applies)."""
    for name, t in (("self", input), ("vec2", vec2)):
        if t.dim() != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {t.dim()}-D")
    r = input.unsqueeze(1) * vec2
    return r if out is None else write_out(out, r)


ger = outer
Tensor.inner = inner
Tensor.outer = Tensor.ger = outer


# ---- addmm family: beta * input + alpha * product -----------------------------------------
def _prod(xp, kind, m1, m2):
    if kind == "r":
        return xp.multiply.outer(m1, m2)
    p = _gemm(xp, m1, m2)
    return p.sum(0) if kind == "addbmm" else p


_ADD_DIMS = {"mm": (2, 2, "mat1", "mat2", "matrix"), "mv": (2, 1, "mat", "vec", None),
             "bmm": (3, 3, "batch1", "batch2", "3D tensor"),
             "addbmm": (3, 3, "batch1", "batch2", "3D tensor"), "r": (1, 1, "vec1", "vec2", None)}


def _add_check(kind, inp, m1, m2):
    d1, d2, n1, n2, what = _ADD_DIMS[kind]
    if kind == "mv" and (m1.ndim != 2 or m2.ndim != 1):
        raise RuntimeError(f"vector + matrix @ vector expected, got {inp.ndim}, {m1.ndim}, "
                           f"{m2.ndim}")
    if kind == "r" and (m1.ndim != 1 or m2.ndim != 1):
        raise RuntimeError(f"addr: Expected 1-D argument {n1 if m1.ndim != 1 else n2}, but got "
                           f"{m1.ndim if m1.ndim != 1 else m2.ndim}-D")
    for m, d, n in ((m1, d1, n1), (m2, d2, n2)):
        if m.ndim != d:
            raise RuntimeError(f"{n} must be a {what}")
    if kind == "r":
        return
    if kind != "mv" and (m1.dtype != inp.dtype or m2.dtype != inp.dtype):
        bad = m2 if m2.dtype != inp.dtype else m1
        raise RuntimeError(f"self and {n2 if bad is m2 else n1} must have the same dtype, but "
                           f"got {short_name(inp.dtype)} and {short_name(bad.dtype)}")
    if m1.dtype != inp.dtype or m2.dtype != inp.dtype:
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got "
                           f"{short_name(inp.dtype)}, {short_name(m1.dtype)}, and "
                           f"{short_name(m2.dtype)}")
    if inp.dtype.kind == "b":
        raise NotImplementedError("\"addmm_impl_cpu_\" not implemented for 'Bool'")
    if kind in ("bmm", "addbmm"):
        if m1.shape[0] != m2.shape[0]:
            if kind == "addbmm":
                raise RuntimeError(f"batch1 and batch2 must have same number of batches, got "
                                   f"{m1.shape[0]} and {m2.shape[0]}")
        if m1.shape[0] != m2.shape[0] or m1.shape[2] != m2.shape[1]:
            raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                               f"[{m1.shape[0]}, {m1.shape[2]}] but got: [{m2.shape[0]}, "
                               f"{m2.shape[1]}].")
    elif m1.shape[-1] != m2.shape[0]:
        if kind == "mv":
            raise RuntimeError(f"size mismatch, got input ({inp.shape[0] if inp.ndim else 1}), "
                               f"mat ({_dims(m1.shape)}), vec ({m2.shape[0]})")
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({_dims(m1.shape)} and "
                           f"{_dims(m2.shape)})")


def _add_out_shape(kind, s1, s2):
    if kind == "mm":
        return (s1[0], s2[-1])
    if kind == "mv":
        return (s1[0],)
    if kind == "r":
        return (s1[0], s2[0])
    return (s1[0], s1[1], s2[2]) if kind == "bmm" else (s1[1], s2[2])


def _addmm_kernel(xp, inp, m1, m2, kind, beta=1, alpha=1):
    _add_check(kind, inp, m1, m2)
    dt = promote_np(inp, m1, m2) if kind == "r" else inp.dtype
    shape = _add_out_shape(kind, m1.shape, m2.shape)
    if kind == "mv" and inp.shape != shape and inp.size > 1 and inp.shape != (1,):
        raise RuntimeError(f"size mismatch, got input ({_dims(inp.shape)}), mat "
                           f"({_dims(m1.shape)}), vec ({m2.shape[0]})")
    _expand_shape(inp.shape, shape)
    cdt = _F32 if dt in _HALF else dt
    m1 = m1.astype(cdt, copy=False)
    if kind == "r" and alpha != 1:
        m1 = m1 * alpha  # torch's order, (alpha * vec1[i]) * vec2[j]: n products, not n * m
    p = _prod(xp, kind, m1, m2.astype(cdt, copy=False))
    if alpha != 1 and kind != "r":
        p = p * alpha
    if beta != 0:
        i = inp.astype(cdt, copy=False)
        p = p + (i if beta == 1 else i * beta)
    elif p.shape != shape:
        p = xp.broadcast_to(p, shape)
    return xp.asarray(p).astype(dt, copy=False)


def _addmm_vjp(ctx, g, inp, m1, m2, kind, beta=1, alpha=1):
    ni, n1, n2 = ctx.needs_input_grad
    gi = g * cj(beta) if ni else None
    gp = g * cj(alpha) if alpha != 1 else g
    g1 = g2 = None
    if kind == "r":
        g1 = matmul(gp, cj(m2)) if n1 else None
        g2 = matmul(cj(m1), gp) if n2 else None
    elif kind == "mv":
        g1, g2 = matmul_grads(gp, m1, m2, n1, n2)
    else:
        # addbmm: gp (n, p) broadcasts against the batch in both products
        g1 = matmul(gp, _mH(m2)) if n1 else None
        g2 = matmul(_mH(m1), gp) if n2 else None
    return gi, g1, g2


def _addmm_shape(inp, m1, m2, kind, beta=1, alpha=1):
    dt = _meta.promote(inp, m1, m2) if kind == "r" else inp.dtype
    return _add_out_shape(kind, m1.shape, m2.shape), dt


ADDMM = Op("addmm", _addmm_kernel, _addmm_vjp, save_inputs=(1, 2), category="blas",
           shape=_addmm_shape, batch=_addmm_rule)
_ADD_NAMES = {"addmm": "mm", "addmv": "mv", "addr": "r", "baddbmm": "bmm", "addbmm": "addbmm"}


def _add_params(kind, beta, alpha):
    p = {"kind": kind}
    if beta != 1:
        p["beta"] = beta
    if alpha != 1:
        p["alpha"] = alpha
    return p


def _def_add(name, a1, a2):
    kind = _ADD_NAMES[name]

    def public(input, m1, m2, *, beta=1, alpha=1, out=None):
        try:
            r = apply(ADDMM, (input, m1, m2), _add_params(kind, beta, alpha))
        except NeedsOverride:
            return handle_override(public, (input, m1, m2), {"beta": beta, "alpha": alpha})
        return r if out is None else write_out_exact(out, r)
    public.__name__ = public.__qualname__ = name
    public.__doc__ = f"beta * input + alpha * ({a1} {'x' if kind == 'r' else '@'} {a2})."
    setattr(Tensor, name, lambda self, m1, m2, *, beta=1, alpha=1: public(
        self, m1, m2, beta=beta, alpha=alpha))
    setattr(Tensor, name + "_", lambda self, m1, m2, *, beta=1, alpha=1: apply_inplace(
        ADDMM, self, (m1, m2), _add_params(kind, beta, alpha)))
    return public


addmm = _def_add("addmm", "mat1", "mat2")
addmv = _def_add("addmv", "mat", "vec")
addr = _def_add("addr", "vec1", "vec2")
baddbmm = _def_add("baddbmm", "batch1", "batch2")
addbmm = _def_add("addbmm", "batch1", "batch2")


@overridable
def chain_matmul(*matrices, out=None):
    """Product of a chain of 2-D tensors (deprecated in torch for linalg.multi_dot)."""
    _warn_once("chain_matmul", "torch.chain_matmul is deprecated and will be removed in a future "
               "PyTorch release. Use torch.linalg.multi_dot instead, which accepts a list of two "
               "or more tensors rather than multiple parameters.")
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for m in matrices:
        if m.dim() != 2:
            raise RuntimeError(f"Tensor dimension is {m.dim()}, expected 2 instead.")
    r = functools.reduce(mm, matrices) if len(matrices) > 1 else matrices[0].clone()
    return r if out is None else write_out(out, r)


# ---- einsum -------------------------------------------------------------------------------
_LETTERS = string.ascii_uppercase + string.ascii_lowercase  # sublist index i -> _LETTERS[i]


def _einsum_error(msg):
    return RuntimeError("einsum(): " + msg)


def _split_term(t, ndim, i):
    """(before, n_ellipsis_dims or None, after) of one operand's subscripts."""
    if "..." in t:
        pre, post = t.split("...", 1)
        if "." in pre or "." in post:
            raise _einsum_error("found '.' for operand %d that is not part of any ellipsis" % i)
        k = ndim - len(pre) - len(post)
        if k < 0:
            raise _einsum_error(f"the number of subscripts in the equation ({len(pre + post)}) "
                                f"is more than the number of dimensions ({ndim}) for operand {i}")
        return pre, k, post
    if "." in t:
        raise _einsum_error("found '.' for operand %d that is not part of any ellipsis" % i)
    if len(t) != ndim:
        raise _einsum_error(f"the number of subscripts in the equation ({len(t)}) does not match "
                            f"the number of dimensions ({ndim}) for operand {i} and no ellipsis "
                            f"was given")
    return t, None, ""


@functools.lru_cache(maxsize=2048)
def _einsum_normalize(eq, shapes):
    """An explicit equation (ellipses spelled out in spare letters) and each letter's size."""
    eq = eq.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) > len(shapes):
        raise _einsum_error("fewer operands were provided than specified in the equation")
    if len(terms) < len(shapes):
        raise _einsum_error("more operands were provided than specified in the equation")
    for j, c in enumerate(eq):
        if c not in _LETTERS and c not in ",.->":
            raise _einsum_error(f"invalid subscript given at index {j} in the equation string, "
                                f"subscripts must be in [a-zA-Z]")
    parts = [_split_term(t, len(s), i) for i, (t, s) in enumerate(zip(terms, shapes))]
    n_ell = max([k for _, k, _ in parts if k is not None] or [0])
    ell = "".join(c for c in _LETTERS if c not in eq)[:n_ell]
    full = [pre + (ell[n_ell - k:] if k else "") + post for pre, k, post in parts]
    sizes = {}
    for i, (t, shp) in enumerate(zip(full, shapes)):
        mine = {}
        for c, s in zip(t, shp):
            if c in mine and mine[c] != s:
                raise _einsum_error(f"subscript {c} is repeated for operand {i} but the sizes "
                                    f"don't match, {mine[c]} != {s}")
            mine[c] = s
            prev = sizes.get(c)
            if prev is None or prev == 1:
                sizes[c] = s
            elif s != prev and s != 1:
                raise _einsum_error(f"subscript {c} has size {s} for operand {i} which does not "
                                    f"broadcast with previously seen size {prev}")
    if not arrow:
        named = "".join(pre + post for pre, _, post in parts)
        out = ell + "".join(sorted(c for c in set(named) if named.count(c) == 1))
    else:
        if "..." in rhs:
            pre, post = rhs.split("...", 1)
            rhs = pre + ell + post
        if "." in rhs:
            raise _einsum_error("found '.' for output but an ellipsis (...) was already found")
        for c in rhs:
            if c not in sizes:
                raise _einsum_error(f"output subscript {c} does not appear in the equation for "
                                    f"any input operand")
            if rhs.count(c) > 1:
                raise _einsum_error(f"output subscript {c} appears more than once in the output")
        out = rhs
    return ",".join(full) + "->" + out


@functools.lru_cache(maxsize=2048)
def _einsum_plan(eq, shapes):
    """The contraction (an opt_einsum expression) and per-operand broadcast targets."""
    terms = eq.split("->")[0].split(",")
    sizes = {}
    for t, shp in zip(terms, shapes):
        for c, s in zip(t, shp):
            sizes[c] = s if sizes.get(c, 1) == 1 else sizes[c]
    targets = [tuple(sizes[c] for c in t) for t in terms]
    targets = tuple(None if tuple(s) == tg else tg for s, tg in zip(shapes, targets))
    full = [tg or s for tg, s in zip(targets, shapes)]
    out = eq.split("->")[1]
    private = any(c not in out and all(c not in u for u in terms[:i] + terms[i + 1:])
                  for i, t in enumerate(terms) for c in t)
    return _oe.contract_expression(eq, *full), targets, private


def _einsum_kernel(xp, *ops, equation):
    dt = ops[0].dtype
    for o in ops[1:]:
        if o.dtype != dt:
            raise RuntimeError(_scalar_type_msg(dt, o.dtype))
    expr, targets, private = _einsum_plan(equation, tuple(o.shape for o in ops))
    ins = [o if t is None else xp.broadcast_to(o, t) for o, t in zip(ops, targets)]
    if dt in _HALF:
        ins = [o.astype(_F32) for o in ins]
    elif private and dt.kind in "biu":
        # torch sums an operand's private dimensions first, and integer sums give int64
        dt = np.dtype(np.int64)
        ins = [o.astype(dt) for o in ins]
    r = _einsum_pair(equation, ins) if xp is np and len(ins) == 2 and dt.kind in "fc" \
        else None
    if r is None:
        # opt_einsum's contraction order runs on NumPy; another backend contracts with its own
        r = xp.asarray(expr(*ins)) if xp is np else xp.einsum(expr.contraction, *ins)
    if any(xp.may_share_memory(r, o) for o in ops):
        r = r.copy()  # a pure permutation/diagonal: give the result storage of its own
    return r if r.dtype == dt else r.astype(dt)


def _einsum_pair(equation, ins):
    """A two-operand contraction as one batched matrix product, as torch computes it: the
    operands permuted to (batch, kept, summed) and (batch, summed, kept), one BLAS matmul,
    the result permuted to the output's order.  opt_einsum hands a contraction with batch
    letters (``bij,bjk->bik``) to np.einsum's loops, ~4x slower.  None when a letter repeats
    within an operand or is summed within one operand only."""
    lhs, out = equation.split("->")
    ta, tb = lhs.split(",")
    if len(set(ta)) != len(ta) or len(set(tb)) != len(tb):
        return None
    if any(c not in tb and c not in out for c in ta) or \
            any(c not in ta and c not in out for c in tb):
        return None
    a, b = ins
    size = dict(zip(ta, a.shape))
    size.update(zip(tb, b.shape))
    batch = [c for c in ta if c in tb and c in out]
    summed = [c for c in ta if c in tb and c not in out]
    left = [c for c in ta if c not in tb]
    right = [c for c in tb if c not in ta]

    def n(cs):
        return math.prod(size[c] for c in cs)

    a2 = a.transpose([ta.index(c) for c in batch + left + summed]).reshape(
        n(batch), n(left), n(summed))
    b2 = b.transpose([tb.index(c) for c in batch + summed + right]).reshape(
        n(batch), n(summed), n(right))
    have = batch + left + right
    r = np.matmul(a2, b2).reshape([size[c] for c in have])
    return r.transpose([have.index(c) for c in out])


def _einsum_vjp(ctx, g, *ops, equation):
    lhs, out = equation.split("->")
    terms = lhs.split(",")
    spare = iter(c for c in _LETTERS if c not in equation)
    grads = []
    for i, t in enumerate(terms):
        if not ctx.needs_input_grad[i]:
            grads.append(None)
            continue
        shape = tuple(ops[i].shape)
        # a repeated subscript (a diagonal) becomes fresh letters tied by identity matrices
        new, subs, operands = [], [out], [g]
        for j, o in enumerate(ops):
            if j != i:
                subs.append(terms[j])
                operands.append(cj(o))
        for c, n in zip(t, shape):
            if c in new:
                f = next(spare)
                new.append(f)
                subs.append(c + f)
                operands.append(_eye(n, g))
            else:
                new.append(c)
        have = set("".join(subs))
        target = "".join(c for c in new if c in have)
        r = einsum(",".join(subs) + "->" + target, *operands)
        if len(target) < len(new):  # letters summed only within this operand: broadcast back
            r = r.reshape(tuple(s if c in have else 1 for c, s in zip(new, shape)))
        if tuple(r.shape) != shape:
            r = r.expand(tuple(max(a, b) for a, b in zip(r.shape, shape)))
        grads.append(r)
    return tuple(grads)


def _eye(n, like):
    return eye(n, dtype=like.dtype, device=like.device)


def _einsum_shape(*ops, equation):
    lhs, out = equation.split("->")
    terms = lhs.split(",")
    sizes = {}
    for t, o in zip(terms, ops):
        for c, s in zip(t, o.shape):
            if c not in sizes or _meta.is_one(sizes[c]):
                sizes[c] = s
    dt = ops[0].dtype
    private = any(c not in out and all(c not in u for u in terms[:i] + terms[i + 1:])
                  for i, t in enumerate(terms) for c in t)
    return tuple(sizes[c] for c in out), _dt.int64 if private and dt.category < 2 else dt


EINSUM = Op("einsum", _einsum_kernel, _einsum_vjp, category="blas", shape=_einsum_shape,
            batch=_einsum_rule)


def _sublist(sub):
    out = []
    for s in sub:
        if s is Ellipsis:
            out.append("...")
            continue
        s = int(s)
        if not 0 <= s < 52:
            raise _einsum_error(f"expected subscript to be within the range [0, 52) but got {s}")
        out.append(_LETTERS[s])
    return "".join(out)


@overridable
def einsum(*args):
    """Sums products of operands' elements over dimensions named in Einstein notation,
    e.g. ``einsum('bij,bjk->bik', a, b)``, or in sublist form ``einsum(a, [0, 1], b, [1, 2])``.
    """
    if not args:
        raise RuntimeError("einsum(): must specify the equation string and at least one operand, "
                           "or at least one operand and its subscripts list")
    if isinstance(args[0], str):
        eq, ops = args[0], args[1:]
        if len(ops) == 1 and isinstance(ops[0], (list, tuple)):
            ops = tuple(ops[0])
    else:
        n = len(args) // 2
        ops = args[0:2 * n:2]
        eq = ",".join(_sublist(s) for s in args[1:2 * n:2])
        if len(args) % 2:
            eq += "->" + _sublist(args[-1])
    try:
        norm = _einsum_normalize(eq, tuple(tuple(o.shape) for o in ops))
        return apply(EINSUM, tuple(ops), {"equation": norm})
    except (NeedsOverride, AttributeError):
        if all(isinstance(o, Tensor) for o in ops):
            raise
        return handle_override(einsum, args, {})


def _einsum_override_args(args):
    # torch.einsum(eq, [a, b]) reaches __torch_function__ as (eq, a, b): fx graphs record the
    # operands flat (opt_einsum_fx, used by e3nn, reads each operand's shape)
    if len(args) == 2 and isinstance(args[0], str) and isinstance(args[1], (list, tuple)):
        return (args[0], *args[1])
    return args


einsum.__override_args__ = _einsum_override_args


# ---- tensordot, kron ----------------------------------------------------------------------
@overridable
def tensordot(a, b, dims=2, out=None):
    """Contracts ``a``'s dims ``dims[0]`` with ``b``'s ``dims[1]`` (an int n: the last n of
    ``a`` with the first n of ``b``)."""
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, (int, np.integer)):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > a.dim() or dims > b.dim():
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        da, db = list(range(a.dim() - dims, a.dim())), list(range(dims))
    else:
        da, db = ([d] if isinstance(d, int) else list(d) for d in dims)
        if len(da) != len(db):
            raise RuntimeError("both dimensions lists should have same length")
    if a.dtype != b.dtype:
        raise RuntimeError("both inputs should have same dtype")
    sa, sb = tuple(a.shape), tuple(b.shape)
    for x, y in zip(da, db):
        if sa[_wrap_dim(x, len(sa))] != sb[_wrap_dim(y, len(sb))]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size "
                               f"{sa[_wrap_dim(x, len(sa))]} in dim {x} and second has size "
                               f"{sb[_wrap_dim(y, len(sb))]} in dim {y}")
    da = [_wrap_dim(d, len(sa)) for d in da]
    db = [_wrap_dim(d, len(sb)) for d in db]
    fa = [d for d in range(len(sa)) if d not in da]
    fb = [d for d in range(len(sb)) if d not in db]
    k = int(np.prod([sa[d] for d in da]))
    m, n = int(np.prod([sa[d] for d in fa])), int(np.prod([sb[d] for d in fb]))
    ma = a.permute(fa + da).reshape(m, k)
    mb = b.permute(db + fb).reshape(k, n)
    r = matmul(ma, mb).reshape(tuple(sa[d] for d in fa) + tuple(sb[d] for d in fb))
    return r if out is None else write_out(out, r)


@overridable
def kron(input, other, *, out=None):
    """Kronecker product: block (i, j, ...) of the result is ``input[i, j, ...] * other``."""
    n = max(input.dim(), other.dim())
    sa = (1,) * (n - input.dim()) + tuple(input.shape)
    sb = (1,) * (n - other.dim()) + tuple(other.shape)
    a = input.reshape(tuple(x for s in sa for x in (s, 1)))
    b = other.reshape(tuple(x for s in sb for x in (1, s)))
    r = (a * b).reshape(tuple(x * y for x, y in zip(sa, sb)))
    return r if out is None else write_out(out, r)


Tensor.kron = kron
Tensor.tensordot = tensordot


# ---- cross --------------------------------------------------------------------------------
def _cross_kernel(xp, a, b, dim):
    if a.dtype != b.dtype:
        raise RuntimeError(_scalar_type_msg(a.dtype, b.dtype))
    if a.dtype.kind == "b":
        raise NotImplementedError("\"cross\" not implemented for 'Bool'")
    if a.dtype in _HALF:
        return xp.cross(a.astype(_F32), b.astype(_F32), axis=dim).astype(a.dtype)
    return xp.cross(a, b, axis=dim)


CROSS = Op("cross", _cross_kernel,
           lambda ctx, g, a, b, dim: (cross(cj(b), g, dim=dim), cross(g, cj(a), dim=dim)),
           category="blas", shape=lambda a, b, dim: (_meta.broadcast_shapes(a.shape, b.shape),
                                                     a.dtype), batch=_cross_rule)


@overridable
def cross(input, other, dim=None, *, out=None):
    """Cross product of 3-vectors along ``dim`` (default: the first dimension of size 3)."""
    if input.dim() != other.dim():
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    shape = _broadcast_batch(tuple(input.shape), tuple(other.shape))
    if dim is None:
        _warn_once("cross", "Using torch.cross without specifying the dim arg is deprecated.\n"
                   "Please either pass the dim explicitly or simply use torch.linalg.cross.\nThe "
                   "default value of dim will change to agree with that of linalg.cross in a "
                   "future release.")
        sizes = [i for i, s in enumerate(shape) if s == 3]
        if not sizes:
            raise RuntimeError("no dimension of size 3 in input")
        d = shown = sizes[0]
    else:
        d, shown = _wrap_dim(dim, input.dim()), dim
    if input.shape[d] != 3 or other.shape[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {shown} must have length 3. Got "
                           f"{input.shape[d]} and {other.shape[d]}")
    r = apply(CROSS, (input, other), {"dim": d})
    return r if out is None else write_out(out, r)


Tensor.cross = lambda self, other, dim=None: cross(self, other, dim)


# ---- cdist --------------------------------------------------------------------------------
def _cdist_kernel(xp, x1, x2, p, mm):
    dt = x1.dtype
    if dt in _HALF:
        return _cdist_kernel(xp, x1.astype(_F32), x2.astype(_F32), p, mm).astype(dt)
    if mm:
        # |x|^2 + |y|^2 - 2 x.y: one GEMM instead of a (P, R, M) difference tensor
        n1 = (x1 * x1).sum(-1)[..., :, None]
        n2 = (x2 * x2).sum(-1)[..., None, :]
        d2 = n1 + n2 - 2 * xp.matmul(x1, xp.swapaxes(x2, -1, -2))
        return xp.sqrt(xp.maximum(d2, 0)).astype(dt, copy=False)
    diff = xp.abs(x1[..., :, None, :] - x2[..., None, :, :])
    if diff.shape[-1] == 0:
        return xp.zeros(diff.shape[:-1], dt)
    if p == 0:
        r = (diff != 0).sum(-1)
    elif p == 1:
        r = diff.sum(-1)
    elif p == 2:
        r = xp.sqrt((diff * diff).sum(-1))
    elif p == float("inf"):
        r = diff.max(-1)
    else:
        r = (diff ** p).sum(-1) ** (1.0 / p)
    return r.astype(dt, copy=False)


def _cdist_vjp(ctx, g, x1, x2, p, mm):
    d = ctx.out
    if p == 0:
        return x1 * 0, x2 * 0
    if p == 2:
        ratio = where(d == 0, 0, g / d)
        g1 = x1 * ratio.sum(-1, keepdim=True) - matmul(ratio, x2)
        g2 = x2 * ratio.sum(-2).unsqueeze(-1) - matmul(ratio.transpose(-1, -2), x1)
        return g1, g2
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    dd = d.unsqueeze(-1)
    if p == 1:
        w = diff.sign()
    elif p == float("inf"):
        w = diff.sign() * (diff.abs() == dd)
    else:
        w = diff.sign() * (diff.abs() / dd) ** (p - 1)
        w = where((diff == 0) | (dd == 0), 0, w)
    gw = g.unsqueeze(-1) * w
    return gw.sum(-2), -gw.sum(-3)


def _cdist_shape(x1, x2, p, mm):
    batch = _meta.broadcast_shapes(x1.shape[:-2], x2.shape[:-2])
    return batch + (x1.shape[-2], x2.shape[-2]), x1.dtype


CDIST = Op("cdist", _cdist_kernel, _cdist_vjp, save_output=True, category="blas",
           shape=_cdist_shape, batch=_leading_padded_rule)
_CDIST_MODES = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
                "donot_use_mm_for_euclid_dist")


@overridable
def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """p-norm distances between each pair of rows of ``x1`` and ``x2`` (batched)."""
    for t, n in ((x1, "X1"), (x2, "X2")):
        if t.dim() < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {n} got: {t.dim()}D")
        if not t.dtype.is_floating_point:
            raise RuntimeError(f"cdist only supports floating-point dtypes, {n} got: "
                               f"{short_name(t.dtype.np)}")
    if x1.dtype != x2.dtype:
        raise RuntimeError(_scalar_type_msg(x1.dtype.np, x2.dtype.np))
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} "
                           f"X2: {x2.shape[-1]}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    if compute_mode not in _CDIST_MODES and compute_mode is not None:
        raise RuntimeError(f"{compute_mode} is not a valid value for compute_mode")
    _broadcast_batch(tuple(x1.shape[:-2]), tuple(x2.shape[:-2]))
    mode = compute_mode or _CDIST_MODES[0]
    mm = p == 2 and (mode == _CDIST_MODES[1] or (
        mode == _CDIST_MODES[0] and (x1.shape[-2] > 25 or x2.shape[-2] > 25)))
    return apply(CDIST, (x1, x2), {"p": float(p), "mm": bool(mm)})


# no jvp rules written: forward AD derives these tangents from the vjps
from .._core.op import JVP_FROM_VJP, mark_unsupported  # noqa: E402

mark_unsupported("jvp", JVP_FROM_VJP, "addmm", "einsum", "cross", "cdist")
