"""In-place writes and version tracking: ``op_`` variants, ``out=`` and ``copy_``.

A write bumps the target's version counter (shared by views), checks torch's
rules for tensors autograd tracks (leaves, views of leaves, multi-output views,
inference tensors), and, when the write is differentiable, rebases the target's
history (and its base's, for a view) onto the new value.

Writes that autograd does not record compute straight into the target where the op has a
direct form (`_INTO`: add/sub/mul/div, lerp/addcmul/addcdiv, copy, clamp): NumPy's ufunc with
``out=`` or the C loops of `ckernels.binary`/`ternary` with the target as their output.
Each direct form writes only what the op's kernel would have computed (same operand
dtypes, torch's in-place dtype rules), and declines anything else; so does `_write_direct`
for a target that is read-only or whose elements overlap each other (an expanded view) and
for operands that do not broadcast to the target's shape.  Everything declined takes the
general path: a fresh result, then `copy_into` with torch's checks and errors.

Before any of it, `check_overlap` applies torch's memory-overlap rules to the target (and to
an ``out=``): a target whose elements share memory (an expanded view) and an operand that
partially overlaps it are refused, as torch's TensorIterator refuses them; arrays that own
their memory cost an attribute load each, so the common case pays nearly nothing.
"""
import os
import sys

import numpy as np

from . import dtype as _dt
from .device import backend_for_type, namespace_of
from .meta_device import META_XP, meta_kernel
from .errors import NUMPY_ERRORS, translate
from .node import record
from .state import STATE
from .tensor import Tensor, _version_of, real_array, storage_changing, wrap

__all__ = ["apply_inplace", "check_castable", "check_overlap", "copy_into", "write_out",
           "mark_multi_output_views", "regenerate_view_grad_fn"]

_ndarray = np.ndarray
_np = np


def mark_multi_output_views(outs, name):
    """Mark the views ``outs`` returned together by ``name`` (split, unbind, ...): with grad
    mode on, torch forbids writing into them in place while autograd tracks the write."""
    if STATE.grad_enabled:
        for i, o in enumerate(outs):
            o._multi_view = (name, i)
    return outs


_MULTI_VIEW_MSG = ("This view is the output of a function that returns multiple views. Such "
                   "functions do not allow the output views to be modified inplace. You should "
                   "replace the inplace operation by an out-of-place one.")


def _check_multi_output_view(target, args):
    base = target._base
    if base is None or not STATE.grad_enabled or not (
            base._requires_grad or any(isinstance(a, Tensor) and a._requires_grad for a in args)):
        return
    name, nr = target._multi_view
    fn = target.grad_fn
    if fn is None:
        raise RuntimeError("A view was created in no_grad mode and is being modified inplace "
                           "with grad mode enabled. " + _MULTI_VIEW_MSG)
    if name is None:
        name, nr = type(fn).__name__.rstrip("0123456789").removesuffix("Backward"), \
            target._output_nr
    raise RuntimeError(f"Output {nr} of {name} is a view and is being modified inplace. "
                       + _MULTI_VIEW_MSG)


def _check_inplace_allowed(target, args=()):
    if getattr(target, "_multi_view", None) is not None:
        _check_multi_output_view(target, args)
    if target._requires_grad and target.grad_fn is None and STATE.grad_enabled:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")
    base = target._base
    if base is not None and base._requires_grad and base.grad_fn is None and STATE.grad_enabled:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                           "in-place operation.")
    if STATE.inference is False and getattr(target, "_inference", False) and STATE.grad_enabled:
        raise RuntimeError("Inplace update to inference tensor outside InferenceMode is not "
                           "allowed.")


def check_castable(src, dst):
    """torch's refusal to write a result of dtype ``src`` into an ``out`` of dtype ``dst`` of
    a lower category (float into int, complex into float, ...)."""
    if src.category > dst.category:
        raise RuntimeError(f"result type {_cat_name(src)} can't be cast to the desired output "
                           f"type {_cat_name(dst)}")


def copy_into(target, r, aliased=False):
    """Write array ``r`` into ``target``'s storage with torch's shape and casting checks.

    ``aliased``: ``target``'s elements share memory (an expanded view some ops may write):
    only the elements ``r`` changes are written, so that a write reaches every alias of its
    element, as torch's writes through memory do, instead of being undone by an alias's old
    value written after it."""
    td = target._data
    if r.shape != td.shape:
        try:
            b = _np.broadcast_shapes(r.shape, td.shape)
        except ValueError:
            b = None
        if b != td.shape:
            raise RuntimeError(f"output with shape {list(td.shape)} doesn't match the broadcast "
                               f"shape {list(_np.broadcast_shapes(r.shape, td.shape)) if b else list(r.shape)}")
    if r.dtype != td.dtype:
        check_castable(_dt.FROM_NP[r.dtype], _dt.FROM_NP[td.dtype])
    if type(r) is not _ndarray:
        r = real_array(r)  # a result not computed yet (ember.compile): computed now
    if aliased:
        r = r.astype(td.dtype, copy=False)
        changed = r != td
        if r.dtype.kind in "fc":
            changed &= ~(_np.isnan(r) & _np.isnan(td))
        _np.copyto(td, r, where=changed)
    elif type(td) is _ndarray and type(r) is _ndarray:
        _np.copyto(td, r, casting="unsafe")
    else:
        if backend_for_type(type(td)) is not backend_for_type(type(r)):
            raise RuntimeError(f"Expected out tensor to have device "
                               f"{backend_for_type(type(r)).name}, but got "
                               f"{backend_for_type(type(td)).name} instead")
        td[...] = r
    v = _version_of(target)
    v[0] += 1


def _check_result_shape(op, target, args):
    """torch fixes a binary op's result shape before it looks at dtypes: one that failed is
    reported as a shape mismatch when its operands do not broadcast to ``target``'s shape
    (other ops' operands need not broadcast: their own error stands)."""
    if op.category != "binary":  # Category.BINARY (a str enum; op imports this module)
        return
    shapes = [tuple(a.shape) for a in args if isinstance(a, Tensor)]
    td = tuple(target.shape)
    try:
        b = _np.broadcast_shapes(td, *shapes)
    except ValueError:
        return
    if b != td:
        raise RuntimeError(f"output with shape {list(td)} doesn't match the broadcast shape "
                           f"{list(b)}")


def _cat_name(d):
    return {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long",
            "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool",
            "complex64": "ComplexFloat", "complex128": "ComplexDouble",
            "bfloat16": "BFloat16"}.get(d.name, d.name)


def apply_inplace(op, target, args, params, *, overlap=True):
    """``target.op_(*args)``: compute ``op(target, *args)`` and write it into ``target``.

    ``overlap``: False for a write torch lets into a target whose elements share memory
    (``fill_`` with a number); "target" to check only the target's own elements (``fill_``
    with a 0-dim tensor, whose value torch reads before writing)."""
    if STATE.intercept:
        return _apply_mode(op.inplace, (target,) + tuple(args), params)
    if not isinstance(target, Tensor):
        raise TypeError(f"{op.name}_ expects a Tensor, got {type(target).__name__}")
    full = (target,) + tuple(args)
    _check_inplace_allowed(target, args)
    y = target._data
    aliased = False
    if overlap and type(y) is _ndarray:
        if y.base is not None:
            aliased = check_overlap(y, args if overlap is True else (), op.name)
            if aliased and op.name in _WARN_ALIASED:
                import warnings
                warnings.warn(f"Use of {op.name}_ on expanded tensors is deprecated. Please "
                              f"clone() the tensor before performing this operation. This also "
                              f"applies to advanced indexing e.g. tensor[mask] = scalar",
                              UserWarning, stacklevel=_user_stacklevel())
        else:
            for a in args if overlap is True else ():  # a fresh target (the common case)
                # overlaps only a view of itself
                if isinstance(a, Tensor) and getattr(a._data, "base", None) is not None:
                    check_overlap(y, args, op.name)
                    break
    track = STATE.grad_enabled and op.differentiable and (
        target._requires_grad or any(isinstance(a, Tensor) and a._requires_grad for a in args))
    if not track:
        arrays, _, xp = _unwrap(full)
        if _write_direct(op, arrays, params):
            _version_of(target)[0] += 1
            return target
        try:
            r = op.kernel(xp, *arrays, **params) if xp is not META_XP else \
                meta_kernel(op, arrays, params)
        except NUMPY_ERRORS as e:
            _check_result_shape(op, target, args)
            t = translate(op.name, arrays, e)
            if t is None:
                raise
            raise t from None
        except (NotImplementedError, TypeError):
            _check_result_shape(op, target, args)
            raise
        if type(r) is not _ndarray:
            r = _as_array(r, xp)
        copy_into(target, r, aliased)
        return target
    src = target
    si = op.save_inputs
    if (si is True or (si and 0 in si)) and _saves_target(op, full):
        # the op's backward reads the old value of target, which is about to be overwritten
        src = _clone_op()(target)
    try:
        out = apply(op, (src,) + tuple(args), params)
    except (NotImplementedError, TypeError, RuntimeError):
        _check_result_shape(op, target, args)
        raise
    copy_into(target, out._data, aliased)
    _rebase_history(target, out)
    return target


def _copy_write(y, src, non_blocking=False):
    """``y.copy_(src)`` in place: COPY's kernel (a complex source into a real target keeps
    the real part; NumPy's unsafe cast) with the target as its output."""
    if type(src) is not _ndarray:
        if type(src) not in _PY_SCALARS:
            return False
        src = _np.asarray(src)
        if src.dtype.kind == "O":
            return False
    if src.dtype.kind == "c" and y.dtype.kind != "c":
        src = src.real
    _np.copyto(y, src, casting="unsafe")  # NumPy copies an overlapping source first
    return True


def _clamp_write(y, lo, hi):
    """``y.clamp_(lo, hi)`` in place for a float32/float64 ``y`` and Python-number bounds
    (None: unbounded): CLAMP's kernel's np.clip with bounds rounded to ``y``'s dtype, which
    is torch's clamp bit for bit, NaNs and signed zeros included."""
    if y.dtype not in _CLIP_DTYPES or type(lo) not in _CLIP_BOUNDS or \
            type(hi) not in _CLIP_BOUNDS:
        return False
    dt = y.dtype
    _np.clip(y, _np.asarray(-_np.inf if lo is None else lo).astype(dt),
             _np.asarray(_np.inf if hi is None else hi).astype(dt), out=y)
    return True


_CLIP_DTYPES = frozenset(map(_np.dtype, ("float32", "float64")))
_CLIP_BOUNDS = (float, int, type(None))
_PY_SCALARS = (float, int, bool, complex)
_INTO = {}


def _into_table():
    # built on first use: the kernel modules import the scalar-function table, which needs
    # the dispatcher, which imports this module
    from .ckernels import binary, ternary
    _INTO.update({n: binary.into(n) for n in ("add", "sub", "mul", "div")})
    _INTO.update({n: ternary.into(n) for n in ("lerp", "addcmul", "addcdiv")})
    _INTO["copy"] = _copy_write
    _INTO["clamp"] = _clamp_write
    return _INTO


def _write_direct(op, arrays, params):
    """Compute ``op(*arrays)`` straight into ``arrays[0]`` (the target's array) when the op
    has a direct form and it accepts the operands; True when written."""
    write = (_INTO or _into_table()).get(op.name)
    if write is None:
        return False
    y = arrays[0]
    if type(y) is not _ndarray or not y.flags.writeable or not (
            y.flags.c_contiguous or y.flags.f_contiguous or _no_self_overlap(y)):
        return False
    shape = y.shape
    for x in arrays[1:]:
        if type(x) is _ndarray and x.shape != shape and not _broadcasts_to(x.shape, shape):
            return False
    return write(y, *arrays[1:], **params)


def _broadcasts_to(s, shape):
    n = len(shape) - len(s)
    return n >= 0 and all(a == 1 or a == b for a, b in zip(s, shape[n:]))


def _no_self_overlap(a):
    """Whether no two elements of strided array ``a`` share memory (sufficient test: each
    dimension's stride, in increasing order, steps over the whole extent of the ones below)."""
    if a.size <= 1:
        return True
    span = 0
    for st, n in sorted((abs(st), n) for st, n in zip(a.strides, a.shape) if n > 1):
        if st <= span:
            return False
        span = st * (n - 1) + span
    return True


_INTERNAL_OVERLAP_MSG = ("unsupported operation: more than one element of the written-to "
                         "tensor refers to a single memory location. Please clone() the tensor "
                         "before performing the operation.")
_PARTIAL_OVERLAP_MSG = ("unsupported operation: some elements of the input tensor and the "
                        "written-to tensor refer to a single memory location. Please clone() "
                        "the tensor before performing the operation.")
# ops torch lets write into a target whose elements share memory (an expanded view): its
# index_put_/index_fill_/masked_fill_ (the last two warn) and triu_/tril_ are no TensorIterator
# writes
_SELF_OVERLAP_OK = frozenset(("index_put", "index_fill", "masked_fill", "triu", "tril"))
_WARN_ALIASED = frozenset(("index_fill", "masked_fill"))
# ops whose operands torch does not check against the target: the BLAS updates (addmm_, ...),
# masked_scatter_, and masked_fill_/index_fill_ (their value is read first, as a number)
_PARTIAL_OK = frozenset(("addmm", "addbmm", "baddbmm", "addmv", "addr", "masked_scatter",
                         "masked_fill", "index_fill"))


def check_overlap(y, args, name=None, full=False):
    """torch's memory-overlap checks of a write into array ``y`` (an in-place op's target or an
    ``out=``) computed from the tensors among ``args``: RuntimeError when two elements of ``y``
    share memory (a zero stride over a dimension of size > 1, as torch's has_internal_overlap)
    or when an operand partially overlaps ``y`` (same storage, intersecting memory ranges,
    not the same elements; operands and targets that are not dense are not checked, as
    torch's).  ``full``: an operand that is ``y`` itself is refused too (torch's cat).
    True when ``y``'s elements share memory and op ``name`` may write them anyway.

    Only views can overlap: arrays that own their memory cost an attribute load each."""
    if type(y) is not _ndarray:
        return
    yb = y.base
    aliased = False
    if yb is not None and 0 in y.strides and y.size > 1 and \
            any(st == 0 and n > 1 for st, n in zip(y.strides, y.shape)):
        if name not in _SELF_OVERLAP_OK:
            raise RuntimeError(_INTERNAL_OVERLAP_MSG)
        aliased = True
    yroot = None
    for a in args:
        if isinstance(a, Tensor):
            x = a._data
            if x is y:
                if full:
                    raise RuntimeError(_PARTIAL_OVERLAP_MSG)
                continue
            if type(x) is not _ndarray or yb is None and x.base is None or \
                    not _may_share(y, x) or name in _PARTIAL_OK:
                continue  # _may_share: whether the memory bounds meet (C, ~0.1 us)
            if yroot is None:
                yroot = _root(y)
            if _root(x) is yroot and _overlaps(y, x, full):
                raise RuntimeError(_PARTIAL_OVERLAP_MSG)
    return aliased


_may_share = getattr(_np.may_share_memory, "_implementation", _np.may_share_memory)


def _root(a):
    """The array owning the memory ``a`` views (a storage's identity here)."""
    b = a.base
    while isinstance(b, _ndarray):
        a = b
        b = a.base
    return a


def _overlaps(y, x, full):
    """Whether ``x`` partially (``full``: or wholly) overlaps ``y``, two distinct views of one
    storage: torch's get_overlap_status."""
    if y.size == 0 or x.size == 0 or not _dense(y) or not _dense(x):
        return False
    yb = y.__array_interface__["data"][0]
    xb = x.__array_interface__["data"][0]
    ye = yb + y.nbytes
    xe = xb + x.nbytes
    if yb == xb and ye == xe:
        return full or _elem_strides(x) != _elem_strides(y)
    return yb < xe and xb < ye


def _dense(a):
    """torch's is_non_overlapping_and_dense: the elements fill one block of memory without
    gaps, in some order of the dimensions (NumPy's negative strides never are)."""
    f = a.flags
    if f.c_contiguous or f.f_contiguous:
        return True
    want = a.itemsize
    for st, n in sorted((st, n) for st, n in zip(a.strides, a.shape) if n != 1):
        if st != want:
            return False
        want *= n
    return True


def _elem_strides(a):
    return tuple(st // a.itemsize for st in a.strides)


def _user_stacklevel():
    """The ``stacklevel`` of a warning issued in the caller that points at the first frame
    outside ember (the user's call, whatever the wrappers in between)."""
    f, level = sys._getframe(1), 1
    while f is not None and f.f_code.co_filename.startswith(_EMBER_DIR):
        f, level = f.f_back, level + 1
    return level


_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _saves_target(op, full):
    """Whether recording ``op`` on ``full`` saves input 0: only what the wanted gradients
    read is saved (``y.mul_(2.0)`` needs no copy of ``y``'s old value)."""
    by_need = op.saved_by_need
    if by_need is None:
        return True
    mask = 0
    for i, a in enumerate(full):
        if isinstance(a, Tensor) and a._requires_grad:
            mask |= 1 << i
    return by_need[mask][0]


def _clone_op():
    from .op import REGISTRY
    return REGISTRY["clone"]


def _rebase_history(target, out):
    """Make ``target`` (just overwritten with ``out``'s value) carry ``out``'s history."""
    if out.grad_fn is None:
        return
    base = target._base
    if base is None:
        target.grad_fn = out.grad_fn
        target._output_nr = out._output_nr
        target._requires_grad = True
        return
    from .op import REGISTRY
    scatter = REGISTRY["_view_scatter"]
    chain = target._view_chain
    # base_new = base with the view region replaced by out: a node only, the data is written.
    base_edge_holder = base
    node_out = wrap(base._data)
    record(scatter, (base_edge_holder, out), {"chain": chain}, (node_out,))
    base.grad_fn = node_out.grad_fn
    base._output_nr = 0
    base._requires_grad = True
    regenerate_view_grad_fn(target)


def regenerate_view_grad_fn(view):
    """Give ``view`` a grad_fn that replays its view chain on its base's current history."""
    base = view._base
    t = base
    with _GradOn():
        for op, params in view._view_chain:
            t = apply(op, (t,), params)
    view.grad_fn = t.grad_fn
    view._output_nr = t._output_nr
    view._requires_grad = t._requires_grad
    view._view_base_fn = base.grad_fn


class _GradOn:
    def __enter__(self):
        self.prev = STATE.grad_enabled
        STATE.grad_enabled = True

    def __exit__(self, *exc):
        STATE.grad_enabled = self.prev


def write_out(out, result, inputs=None, *, full=False):
    """Implement ``out=``: resize ``out`` if it is empty, then copy ``result`` into it.

    ``inputs``: the op's operands, for torch's memory-overlap checks (`check_overlap`), which
    its elementwise ops, cat, index_select, sort, scans... make and its reductions do not:
    None checks nothing, ``()`` only that ``out``'s elements do not share memory (mm)."""
    if not isinstance(out, Tensor):
        raise TypeError(f"argument 'out' must be Tensor, not {type(out).__name__}")
    if inputs is not None:
        check_overlap(out._data, inputs, full=full)
    if getattr(result, "_level", None) is not None and getattr(out, "_level", None) is None:
        raise RuntimeError("vmap: out= is not possible with a batched result and an unbatched "
                           "out tensor: the result has one value per example. Please use the "
                           "out-of-place version of the operator inside vmap.")
    if STATE.grad_enabled and (result._requires_grad or out._requires_grad):
        raise RuntimeError("functions with out=... arguments don't support automatic "
                           "differentiation, but one of the arguments requires grad.")
    if out._data.shape != result._data.shape:
        if out._data.size != 0:
            import warnings
            warnings.warn(f"An output with one or more elements was resized since it had shape "
                          f"{list(out._data.shape)}, which does not match the required output "
                          f"shape {list(result._data.shape)}. This behavior is deprecated.",
                          UserWarning, stacklevel=3)
        storage_changing(out)
        out._data = namespace_of(out._data).empty(result._data.shape, dtype=out._data.dtype)
        out._base = None
    copy_into(out, result._data)
    return out



# dispatch re-exports this module's names: import it last, so either module may load first
from .dispatch import _apply_mode, _as_array, _unwrap, apply  # noqa: E402
