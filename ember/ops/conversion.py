"""Copies, casts and complex views: clone, to, copy_, contiguous, conj, real/imag.

Also ``_view_scatter``, the operator autograd records when an in-place write
goes through a view: the base's new value is the old base with the view's region
replaced (PyTorch's CopySlices).
"""
import numpy as np

from .._core.dispatch import overridable
from .._core import dtype as _dt
from .._core import layout as _layout
from .._core import meta as _meta
from .._core.device import CPU, backend_for_array, device as _device, get_backend
from ._batching import _batched_front, _elementwise_rule, _front_padded, _move_to_front, rule_for
from ._helpers import (Op, Tensor, _E, apply, apply_inplace, check_out_same, shape_same,
                       write_out)


def _identity_jvp(out, ts, x, *args, **params):
    return ts[0]  # forward_ad casts it to the output dtype (real part for complex -> real)

__all__ = ["clone", "conj", "conj_physical", "resolve_conj", "resolve_neg", "real", "imag",
           "is_conj", "is_neg"]


def _clone_kernel(xp, x, memory_format=None):
    """A copy of ``x``: row-major, or laid out as ``memory_format`` names ('channels_last',
    'channels_last_3d', or 'preserve': the strides of a dense ``x``)."""
    if memory_format is None or type(x) is not np.ndarray:
        return x.copy()
    if memory_format == "preserve":
        return x.copy(order="K")
    order = _layout.channels_last_permutation(_layout.memory_format._registry[memory_format])
    return x.transpose(order).copy().transpose(np.argsort(order))


CLONE = Op("clone", _clone_kernel, lambda ctx, g, x, **kw: g, shape=shape_same,
           save_inputs=False, jvp=_identity_jvp, batch=_elementwise_rule)


def _layout_param(t, memory_format):
    """The clone kernel's ``memory_format`` for a copy of ``t`` in torch's ``memory_format``
    (None: row-major, the kernel's default, so ordinary copies record no parameter)."""
    fmt = _layout.preserve_format if memory_format is None else memory_format
    if fmt is _layout.preserve_format:
        # torch keeps a dense tensor's strides, and a sparse one's order of strides (NumPy's
        # order "K")
        return None if t._data.flags.c_contiguous else "preserve"
    _layout.check_rank(fmt, t.dim())
    return fmt.name if fmt in _layout.CHANNELS_LAST_FORMATS else None


def _copy_as(t, memory_format):
    param = _layout_param(t, memory_format)
    return apply(CLONE, (t,), _E if param is None else {"memory_format": param})


@overridable
def clone(input, *, memory_format=None):
    """A copy of ``input`` that is recorded by autograd (gradients flow back to ``input``),
    laid out as ``memory_format`` says (default ``preserve_format``: a dense input's strides,
    else the layout ``suggest_memory_format`` reads from them)."""
    return _copy_as(input, memory_format)


Tensor.clone = lambda self, *, memory_format=None: _copy_as(self, memory_format)


def _contiguous(self, memory_format=None):
    if memory_format is None or memory_format is _layout.contiguous_format or \
            memory_format is _layout.preserve_format:
        if self._data.flags.c_contiguous:
            return self
        return apply(CLONE, (self,), _E)
    _layout.check_rank(memory_format, self.dim())
    if self.is_contiguous(memory_format=memory_format):
        return self
    return _copy_as(self, memory_format)


Tensor.contiguous = _contiguous


# ---- dtype casts ------------------------------------------------------------------------
def _cast_kernel(xp, x, dtype):
    if dtype.kind != "c" and x.dtype.kind == "c":
        import warnings
        warnings.warn("Casting complex values to real discards the imaginary part",
                      UserWarning, stacklevel=6)
        x = x.real
    return x.astype(dtype)


def _cast_vjp(ctx, g, x, dtype):
    src = ctx.in_meta[0][1]
    if g.dtype.is_complex and src.kind != "c":
        g = g.real
    return apply(CAST, (g,), {"dtype": src}) if g.dtype.np != src else g


CAST = Op("_to_copy", _cast_kernel, _cast_vjp, save_inputs=False, jvp=_identity_jvp,
          shape=lambda x, dtype: (x.shape, _meta.as_dtype(dtype)), batch=_elementwise_rule)


def _to_dtype(t, dtype, copy=False):
    if t.dtype == dtype:
        return apply(CLONE, (t,), _E) if copy else t
    return apply(CAST, (t,), {"dtype": dtype.np})


def _parse_to(args, kwargs):
    dtype = kwargs.get("dtype")
    dtype = _dt.FROM_PYTHON.get(dtype, dtype) if type(dtype) is type else dtype
    dev = kwargs.get("device")
    for a in args:
        if isinstance(a, _dt.dtype):
            dtype = a
        elif a in _dt.FROM_PYTHON:  # t.to(float): float64, as torch's
            dtype = _dt.FROM_PYTHON[a]
        elif isinstance(a, (str, _device)):
            dev = a
        elif isinstance(a, Tensor):
            dtype, dev = a.dtype, a.device
        elif a is not None:
            raise TypeError(f"to() received an invalid combination of arguments: {a!r}")
    return dtype, dev


def _to(self, *args, **kwargs):
    """Performs Tensor dtype and/or device conversion: ``to(dtype)``, ``to(device)``,
    ``to(other)``, ``to(device, dtype)``; ``copy=True`` forces a new tensor."""
    dtype, dev = _parse_to(args, kwargs)
    copy = kwargs.get("copy", False)
    fmt = kwargs.get("memory_format")
    t = self
    if dev is not None:
        d = _device(dev)
        if d != self.device:
            t = _to_device(t, d)
            copy = False
    if dtype is not None:
        t = _to_dtype(t, dtype, copy)
    elif copy:
        return _copy_as(t, fmt)
    if fmt is not None and fmt is not _layout.preserve_format and \
            not t.is_contiguous(memory_format=fmt):
        _layout.check_rank(fmt, t.dim())
        t = _copy_as(t, fmt)
    return t


def _to_device_kernel(xp, x, backend, source=None):
    host = backend_for_array(x).to_host(x)
    return get_backend(backend).from_host(np.asarray(host))  # host memory: NumPy's


# the gradient goes back to the device the input came from (``source``)
TO_DEVICE = Op("_to_device", _to_device_kernel,
               lambda ctx, g, x, backend, source=None: g if source is None else
               _to_device(g, _device(source)), save_inputs=False, shape=_meta.same,
               batch=_elementwise_rule)


def _to_device(t, d):
    src = t.device.type
    if d.type == src:
        return t
    return apply(TO_DEVICE, (t,), {"backend": d.type, "source": src})


Tensor.to = _to
Tensor.cpu = lambda self, memory_format=None: _to_device(self, CPU)
Tensor.cuda = lambda self, device=None, non_blocking=False: _to_device(
    self, _device("cuda" if device is None else device if isinstance(device, str) else
                  f"cuda:{device}"))

# torch's errors on a build without the device: a third-party backend registered under the
# name (ember._core.device.register_backend) takes the move instead
_NO_DEVICE = {
    "xpu": (AssertionError, "Torch not compiled with XPU enabled"),
    "ipu": (RuntimeError, "PyTorch is not linked with support for ipu devices"),
    "mtia": (AssertionError, "Torch not compiled with MTIA enabled. Ensure you have `import "
             "mtia.host_runtime.torch_mtia.dynamic_library` in your python src file and include "
             "`//mtia/host_runtime/torch_mtia:torch_mtia` as your target dependency!"),
}


def _vendor_move(kind):
    def move(self, device=None, non_blocking=False, memory_format=None):
        from .._core.device import _BACKENDS
        if isinstance(device, int):
            if kind not in _BACKENDS:
                raise RuntimeError("Cannot access accelerator device when none is available.")
            device = f"{kind}:{device}"
        elif device is not None:
            named = str(device).split(":")[0]
            if named != kind:
                raise RuntimeError(f"Invalid device, must be "
                                   f"{'MTIA' if kind == 'mtia' else kind} device")
        if kind not in _BACKENDS:
            exc, msg = _NO_DEVICE[kind]
            raise exc(msg)
        return _to_device(self, _device(kind if device is None else device))
    move.__name__ = move.__qualname__ = kind
    move.__doc__ = f"A copy of this tensor on the {kind.upper()} device (torch's error without one)."
    return move


for _kind in _NO_DEVICE:
    setattr(Tensor, _kind, _vendor_move(_kind))

for _name, _d in (("float", _dt.float32), ("double", _dt.float64), ("half", _dt.float16),
                  ("bfloat16", _dt.bfloat16), ("long", _dt.int64), ("int", _dt.int32),
                  ("short", _dt.int16), ("char", _dt.int8), ("byte", _dt.uint8),
                  ("bool", _dt.bool), ("cfloat", _dt.complex64), ("cdouble", _dt.complex128)):
    setattr(Tensor, _name, (lambda d: lambda self, memory_format=None: _to_dtype(self, d))(_d))

_TYPE_NAMES = {"torch.FloatTensor": _dt.float32, "torch.DoubleTensor": _dt.float64,
               "torch.HalfTensor": _dt.float16, "torch.BFloat16Tensor": _dt.bfloat16,
               "torch.LongTensor": _dt.int64, "torch.IntTensor": _dt.int32,
               "torch.ShortTensor": _dt.int16, "torch.CharTensor": _dt.int8,
               "torch.ByteTensor": _dt.uint8, "torch.BoolTensor": _dt.bool}


def _type(self, dtype=None, non_blocking=False, **kwargs):
    """With no argument, the type name (``'torch.FloatTensor'``); otherwise a cast."""
    if dtype is None:
        for k, v in _TYPE_NAMES.items():
            if v is self.dtype:
                return k
        return f"torch.{self.dtype.name}"
    if isinstance(dtype, str):
        dtype = _TYPE_NAMES[dtype.replace("ember.", "torch.")]
    elif isinstance(dtype, type):  # a legacy typed tensor class (ember.DoubleTensor)
        if not isinstance(getattr(dtype, "dtype", None), _dt.dtype):
            raise ValueError(f"invalid type: '{dtype.__name__}'")
        dtype = dtype.dtype
    return _to_dtype(self, dtype)


Tensor.type = _type
Tensor.type_as = lambda self, other: _to_dtype(self, other.dtype)


# ---- copy_ ------------------------------------------------------------------------------
def _copy_kernel(xp, dst, src, non_blocking=False):
    if type(src) is not np.ndarray:
        src = xp.asarray(src)
    if dst.dtype.kind != "c" and src.dtype.kind == "c":
        src = src.real
    return xp.broadcast_to(src, dst.shape).astype(dst.dtype, copy=False) \
        if src.shape != dst.shape else src.astype(dst.dtype, copy=False)


def _copy_vjp(ctx, g, dst, src, non_blocking=False):
    need = ctx.needs_input_grad
    return (g * 0 if need[0] else None, g if need[1] else None)


COPY = Op("copy", _copy_kernel, _copy_vjp, save_inputs=False, shape=lambda d, s, **k:
          (d.shape, d.dtype), batch=_elementwise_rule)


def _copy_(self, src, non_blocking=False):
    """Copies the elements from ``src`` into ``self`` (broadcasting, casting) and returns self."""
    if isinstance(src, Tensor) and src.device != self.device:
        src = _to_device(src, self.device)
    try:
        np.broadcast_shapes(src.shape if isinstance(src, Tensor) else (), self.shape)
    except ValueError:
        raise RuntimeError(f"The size of tensor a ({self.shape[-1] if self.dim() else 1}"
                           f") must match the size of tensor b ({src.shape[-1]}) at non-singleton "
                           f"dimension {self.dim() - 1}") from None
    return apply_inplace(COPY, self, (src,), _E)


Tensor.copy_ = _copy_


# ---- complex views ----------------------------------------------------------------------
def _conj_kernel(xp, x):
    return xp.conj(x) if x.dtype.kind == "c" else x


CONJ = Op("conj", _conj_kernel, lambda ctx, g, x: g.conj(), save_inputs=False, shape=shape_same,
          batch=_elementwise_rule)


@overridable
def conj(input):
    """The complex conjugate (for real tensors, ``input`` itself)."""
    if not input.dtype.is_complex:
        return input
    return apply(CONJ, (input,), _E)


@overridable
def conj_physical(input, *, out=None):
    """The complex conjugate, computed (ember has no lazy conjugate bit, so `conj` is this
    too); a non-complex ``input`` is returned itself.  ``out`` must have the input's dtype."""
    if out is None:
        return conj(input)
    if isinstance(input, Tensor):
        check_out_same(out, input.dtype)
    return write_out(out, apply(CONJ, (input,), _E))


Tensor.conj = conj
Tensor.conj_physical = conj
# torch's conj_physical_ of a real tensor writes nothing (not even into an expanded one)
Tensor.conj_physical_ = lambda self: apply_inplace(CONJ, self, (), _E) if self.is_complex() else self
Tensor.resolve_conj = Tensor.resolve_neg = lambda self: self
Tensor.is_conj = Tensor.is_neg = lambda self: False


@overridable
def resolve_conj(input):
    """``input`` itself: conjugation is never lazy in ember."""
    return input


@overridable
def resolve_neg(input):
    """``input`` itself: negation is never lazy in ember."""
    return input


@overridable
def is_conj(input):
    """False: ember has no lazily conjugated tensors."""
    return False


@overridable
def is_neg(input):
    """False: ember has no lazily negated tensors."""
    return False


def _real_kernel(xp, x):
    return x.real


def _imag_kernel(xp, x):
    if x.dtype.kind != "c":
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return x.imag


def _real_vjp(ctx, g, x):
    return g


def _imag_vjp(ctx, g, x):
    return g * 1j


REAL = Op("real", _real_kernel, _real_vjp, save_inputs=False, view=True, shape=_meta.unary_real,
          batch=_elementwise_rule)
IMAG = Op("imag", _imag_kernel, _imag_vjp, save_inputs=False, view=True, shape=_meta.unary_real,
          batch=_elementwise_rule)


@overridable
def real(input):
    """The real part, a view for complex tensors (the tensor itself for real ones)."""
    if not input.dtype.is_complex:
        return input
    return apply(REAL, (input,), _E)


@overridable
def imag(input):
    """The imaginary part of a complex tensor, as a view."""
    return apply(IMAG, (input,), _E)


Tensor.real = property(real, lambda self, v: real(self).copy_(v))
Tensor.imag = property(imag, lambda self, v: imag(self).copy_(v))


# ---- in-place through views: the recorded region-replace ---------------------------------
def _replay(xp, arr, chain):
    for op, params in chain:
        arr = op.kernel(xp, arr, **params)
    return arr


def _view_scatter_kernel(xp, base, src, chain):
    out = base.copy()
    region = _replay(xp, out, chain)
    region[...] = src
    return out


def _view_scatter_vjp(ctx, g, base, src, chain):
    need = ctx.needs_input_grad
    gb = gs = None
    if need[0]:
        gb = apply(VIEW_SCATTER, (g, _replay_t(g, chain) * 0), {"chain": chain})
    if need[1]:
        gs = _replay_t(g, chain)
    return gb, gs


def _replay_t(t, chain):
    for op, params in chain:
        t = apply(op, (t,), params)
    return t


def _view_scatter_rule(op, args, bdims, params, batch_size):
    """``base`` with the region its view chain selects replaced by ``src``: replay the chain
    through the views' batching rules on a batched copy and write ``src`` into it."""
    out = _batched_front(args[0], bdims[0], batch_size).clone()
    view = out
    for vop, vparams in params["chain"]:
        view, vb = rule_for(vop)(vop, [view], [0], vparams, batch_size)
        view = _move_to_front(view, vb)
    src = _front_padded([view, args[1]], [0, bdims[1]], pad_to=view.dim() - 1)[1]
    view.copy_(src)
    return out, 0


VIEW_SCATTER = Op("_view_scatter", _view_scatter_kernel, _view_scatter_vjp, save_inputs=False,
                  shape=lambda base, src, chain: (base.shape, base.dtype), batch=_view_scatter_rule)


# no jvp rules written: forward AD derives these tangents from the vjps
from .._core.op import JVP_FROM_VJP, mark_unsupported  # noqa: E402

mark_unsupported("jvp", JVP_FROM_VJP, "_to_device", "copy", "conj", "real", "imag",
                 "_view_scatter")
