"""Top-level ``torch.*`` runtime switches and ATen-style aliases that ordinary programs call:
warn-always, inter-op threads, flush-denormal, deterministic debug mode, the ``has_*`` build
flags, ``unsafe_*`` splits and the positional ``torch.*dropout*`` entry points."""
import builtins
import warnings

import numpy as np

from . import ops
from ._core.dispatch import overridable
from .nn.functional.dropout import _impl as _dropout_impl

__all__ = ["set_warn_always", "is_warn_always_enabled", "get_num_interop_threads",
           "set_num_interop_threads", "init_num_threads", "set_flush_denormal",
           "has_lapack", "has_mkl", "has_openmp", "has_spectral", "is_vulkan_available",
           "unsafe_chunk", "unsafe_split", "unsafe_split_with_sizes", "slice_copy",
           "dropout_", "alpha_dropout_", "feature_dropout", "feature_dropout_",
           "feature_alpha_dropout", "feature_alpha_dropout_", "constant_pad_nd",
           "native_layer_norm", "native_group_norm", "frobenius_norm", "nuclear_norm",
           "get_device_module", "AcceleratorError", "OutOfMemoryError", "FatalError",
           "ldexp_", "hash_tensor", "slice_inverse", "from_file", "lobpcg"]

# NumPy/SciPy supply LAPACK, FFTs and a BLAS; ember has no MKL-specific or OpenMP code paths
has_lapack, has_spectral = True, True
has_mkl, has_openmp = False, False

_WARN_ALWAYS = [False]
_INTEROP_THREADS = [1]  # ember runs one operator at a time: no inter-op pool


def set_warn_always(b, /):
    """Makes warnings that torch issues once per process issue every time."""
    _WARN_ALWAYS[0] = builtins.bool(b)


def is_warn_always_enabled():
    return _WARN_ALWAYS[0]


def get_num_interop_threads():
    return _INTEROP_THREADS[0]


def set_num_interop_threads(num):
    if not isinstance(num, int) or isinstance(num, builtins.bool) or num <= 0:
        raise RuntimeError("set_num_interop_threads expects a positive integer")
    _INTEROP_THREADS[0] = num


def init_num_threads():
    """Initialises the thread pools of the calling thread; ember's need no set-up."""


def set_flush_denormal(mode):
    """Returns whether denormals can be flushed to zero: False, NumPy always keeps them."""
    return False


def is_vulkan_available():
    return False


# the device types torch's device strings name (torch.device accepts each, built in or not)
_TORCH_DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip",
                       "ve", "fpga", "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu",
                       "mtia", "privateuseone")


def get_device_module(device=None):
    """The module of a device type (``ember.cuda`` for "cuda:0", ``ember.cpu`` for "cpu"); with
    no device, the current accelerator's, else ``ember.cpu``."""
    import sys
    from ._core.device import device as _device
    if isinstance(device, _device):
        name = device.type
    elif isinstance(device, str):
        name = device.split(":")[0]
        if name not in _TORCH_DEVICE_TYPES:
            name = _device(device).type  # raises torch's error for a malformed string
    elif device is None:
        from .accelerator import current_accelerator
        acc = current_accelerator()
        name = "cpu" if acc is None else acc.type
    else:
        raise RuntimeError(f"Invalid value of device '{device}', expect torch.device, str, or "
                           f"None")
    module = getattr(sys.modules[__package__], name, None)
    if module is None:
        raise RuntimeError(f"Device '{name}' does not have a corresponding module registered as "
                           f"'torch.{name}'.")
    return module


@overridable
def unsafe_chunk(input, chunks, dim=0):
    """`chunk` (ember's views carry no aliasing restriction the unsafe variant would lift)."""
    return ops.chunk(input, chunks, dim)


@overridable
def unsafe_split(tensor, split_size_or_sections, dim=0):
    # torch's unsafe form takes only an equal chunk size (unsafe_split_with_sizes takes a list)
    if not isinstance(split_size_or_sections, int):
        raise TypeError(f"unsafe_split(): argument 'split_size' (position 2) must be int, not "
                        f"{type(split_size_or_sections).__name__}")
    return ops.split(tensor, split_size_or_sections, dim)


@overridable
def unsafe_split_with_sizes(input, split_sizes, dim=0):
    return ops.split(input, list(split_sizes), dim)


@overridable
def slice_copy(input, dim=0, start=None, end=None, step=1):
    """A copy of ``input`` sliced along ``dim`` as ``input[..., start:end:step]``."""
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    d = dim % builtins.max(input.dim(), 1)
    index = (builtins.slice(None),) * d + (builtins.slice(start, end, step),)
    return input[index].clone()


@overridable
def dropout_(input, p, train):
    return _dropout_impl(input, p, train, True, False, False)


@overridable
def alpha_dropout_(input, p, train):
    return _dropout_impl(input, p, train, True, False, True)


def _feature_input(name, input):
    if input.dim() < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")


@overridable
def feature_dropout(input, p, train):
    """Zeroes whole channels (dim 1) with probability ``p``."""
    _feature_input("feature_dropout", input)
    return _dropout_impl(input, p, train, False, True, False)


@overridable
def feature_dropout_(input, p, train):
    _feature_input("feature_dropout_", input)
    return _dropout_impl(input, p, train, True, True, False)


@overridable
def feature_alpha_dropout(input, p, train):
    _feature_input("feature_alpha_dropout", input)
    return _dropout_impl(input, p, train, False, True, True)


@overridable
def feature_alpha_dropout_(input, p, train):
    _feature_input("feature_alpha_dropout_", input)
    return _dropout_impl(input, p, train, True, True, True)


# ---- ATen-level entry points some programs call directly --------------------------------
@overridable
def constant_pad_nd(input, pad, value=0):
    """``F.pad(input, pad, value=value)``: pads the last dims, innermost pair first."""
    from .nn import functional as F
    return F.pad(input, list(pad), mode="constant", value=value)


@overridable
def native_layer_norm(input, normalized_shape, weight, bias, eps):
    """Layer norm over the trailing ``normalized_shape`` dims, with the per-row mean and
    reciprocal standard deviation it used (both keeping the normalised dims as size 1)."""
    k = len(normalized_shape)
    if tuple(input.shape[input.dim() - k:]) != tuple(normalized_shape):
        raise RuntimeError(f"Given normalized_shape={list(normalized_shape)}, expected input "
                           f"with shape [*, {', '.join(map(str, normalized_shape))}], but got "
                           f"input of size{list(input.shape)}")
    dims = list(range(input.dim() - k, input.dim()))
    mean = input.mean(dims, keepdim=True)
    rstd = (input.var(dims, unbiased=False, keepdim=True) + eps).rsqrt()
    out = (input - mean) * rstd
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out, mean, rstd


@overridable
def native_group_norm(input, weight, bias, N, C, HxW, group, eps):
    """Group norm of an (N, C, *) input with ``group`` groups; returns the output and the
    (N, group) mean and reciprocal standard deviation."""
    if C % group:
        raise RuntimeError(f"Expected number of channels in input to be divisible by "
                           f"num_groups, but got input of shape {list(input.shape)} and "
                           f"num_groups={group}")
    g = input.reshape(N, group, -1)
    mean = g.mean(-1, keepdim=True)
    rstd = (g.var(-1, unbiased=False, keepdim=True) + eps).rsqrt()
    out = ((g - mean) * rstd).reshape(input.shape)
    affine = (1, C) + (1,) * (input.dim() - 2)
    if weight is not None:
        out = out * weight.reshape(affine)
    if bias is not None:
        out = out + bias.reshape(affine)
    return out, mean.reshape(N, group), rstd.reshape(N, group)


@overridable
def frobenius_norm(input, dim, keepdim=False):
    """The 2-norm of ``input`` over ``dim`` (sqrt of the summed squared magnitudes)."""
    warnings.warn("at::frobenius_norm is deprecated and it is just left for JIT compatibility. "
                  "It will be removed in a future PyTorch release. Please use "
                  "`linalg.vector_norm(A, 2., dim, keepdim)` instead", UserWarning, stacklevel=3)
    return (input.abs() ** 2).sum(list(dim), keepdim=keepdim).sqrt()


@overridable
def nuclear_norm(input, dim=None, keepdim=False):
    """The sum of the singular values over the two dims ``dim`` (default the last two);
    ``nuclear_norm(x, True)`` is torch's keepdim-only form."""
    from . import linalg
    warnings.warn("at::nuclear_norm is deprecated and it is just left for JIT compatibility. "
                  "It will be removed in a future PyTorch release. Please use "
                  "`linalg.matrix_norm(A, 'nuc', dim, keepdim)` instead", UserWarning,
                  stacklevel=3)
    if isinstance(dim, builtins.bool):
        dim, keepdim = None, dim
    if dim is None:
        dim = (-2, -1)
    return linalg.matrix_norm(input, "nuc", dim=tuple(dim), keepdim=keepdim)


# ---- errors torch raises from its device runtimes -----------------------------------------
class AcceleratorError(RuntimeError):
    """Exception raised while executing on device"""


class OutOfMemoryError(RuntimeError):
    """Exception raised when device is out of memory"""


class FatalError(Exception):
    """An unrecoverable error in the runtime (torch's native fatal error)."""


# ---- small top-level functions ------------------------------------------------------------
@overridable
def ldexp_(input, other):
    """In-place ``input * 2 ** other``."""
    return input.ldexp_(other)


_HASH_BITS = {"f": np.float64, "i": np.int64, "u": np.int64, "b": np.int64}


@overridable
def hash_tensor(input, dim=None, *, keepdim=False, mode=0):
    """An xor-reduction hash: each element widened to its 64-bit float or integer type and
    read as ``uint64`` bits, xor-ed over ``dim`` (all dims if None); returns ``uint64``."""
    from ._core import dtype as _dt
    if mode != 0:
        raise RuntimeError(f"Unknown hash_tensor mode: {mode}")
    a = np.asarray(input.detach().cpu().numpy())
    kind = "f" if input.dtype.is_floating_point else "b" if input.dtype == _dt.bool else \
        "c" if input.dtype.is_complex else "i"
    if kind == "c" or input.dtype == _dt.uint64:
        from .ops._helpers import not_implemented
        not_implemented("xor_sum_cpu", input.dtype)
    if dim is None and a.size == 0:
        raise RuntimeError("hash_tensor: Expected reduction dim to be specified for "
                           "input.numel() == 0. Specify the reduction dim with the 'dim' "
                           "argument.")
    bits = a.astype(_HASH_BITS[kind]).view(np.uint64)
    axis = None if dim is None else tuple(d % builtins.max(a.ndim, 1) for d in
                                          (dim if isinstance(dim, (tuple, list)) else (dim,)))
    for d in axis or ():
        if a.ndim and a.shape[d] == 0:
            raise IndexError(f"hash_tensor: Expected reduction dim {d} to have non-zero size.")
    out = np.bitwise_xor.reduce(bits, axis=axis, keepdims=keepdim) if a.ndim else bits
    return ops.tensor(np.asarray(out, dtype=np.uint64), dtype=_dt.uint64)


@overridable
def slice_inverse(input, src, dim=0, start=None, end=None, step=1):
    """The inverse of slicing: a view of ``input``'s memory with the geometry of ``src``, the
    tensor ``input`` was sliced from (``src[..., start:end:step]`` along ``dim``)."""
    return ops.as_strided(input, tuple(src.shape), tuple(src.stride()), src.storage_offset())


def from_file(filename, shared=None, size=0, *, dtype=None, layout=None, device=None,
              pin_memory=False, requires_grad=False):
    """A 1-D CPU tensor of ``size`` elements backed by a memory map of ``filename``: with
    ``shared`` its writes reach the file (created if needed), otherwise they stay private."""
    from ._core import dtype as _dt
    dtype = dtype or _dt.get_default_dtype()
    from ._core.storage import map_file
    raw = map_file(filename, builtins.bool(shared), size * dtype.itemsize)
    t = ops.from_numpy(raw.view(dtype.np))
    return t.requires_grad_() if requires_grad else t


def _module_load(self, other, assign=False):
    """How ``nn.Module.load_state_dict`` turns the state-dict value ``other`` into the value
    that replaces ``self`` when parameters are swapped: ``other`` detached with ``assign``,
    else ``self`` with ``other`` copied in, detached."""
    return other.detach() if assign else self.copy_(other).detach()


def _attach_methods():
    from ._core.overrides import overridable as method
    from ._core.tensor import Tensor
    for name, fn in (("hash_tensor", hash_tensor), ("slice_inverse", slice_inverse),
                     ("module_load", _module_load)):
        m = method(fn, name)
        m.__module__ = Tensor.__module__
        m.__ember_method__ = True
        setattr(Tensor, name, m)


_attach_methods()


@overridable
def lobpcg(A, k=None, B=None, X=None, n=None, iK=None, niter=None, tol=None, largest=None,
           method=None, tracker=None, ortho_iparams=None, ortho_fparams=None,
           ortho_bparams=None):
    """The ``k`` largest (or, with ``largest=False``, smallest) eigenpairs of the symmetric
    (generalized, with SPD ``B``) eigenproblem ``A X = B X diag(E)``, as torch's lobpcg
    returns them: eigenvalues largest-first (smallest-first), eigenvectors as columns.

    ember solves the problem directly (a Cholesky reduction of ``B`` and ``linalg.eigh``)
    instead of iterating, so the result is exact to round-off and differentiable through
    eigh; ``X``, ``n`` and ``iK`` only fix the block size and ``niter``/``tol``/``method``/
    ``tracker``/``ortho_*`` (the iteration's controls) have nothing to tune."""
    from . import linalg
    if getattr(A, "is_sparse", False):
        A = A.to_dense()
    if B is not None and getattr(B, "is_sparse", False):
        B = B.to_dense()
    m = A.shape[-1]
    if X is not None:
        n = X.shape[-1]
        k = n if k is None else builtins.min(k, n)
    else:
        k = 1 if k is None else k
        n = k if n is None else n
        k = builtins.min(k, n)
    if m < 3 * n:
        raise ValueError(f"LOBPCG algorithm is not applicable when the number of A rows (={m})"
                         f" is smaller than 3 x the number of requested eigenpairs (={n})")
    largest = True if largest is None else builtins.bool(largest)
    if B is None:
        E, V = linalg.eigh(A)
    else:
        L = linalg.cholesky(B)
        C = linalg.solve_triangular(L, A, upper=False)
        C = linalg.solve_triangular(L, C.mT, upper=False).mT
        E, Y = linalg.eigh(C)
        V = linalg.solve_triangular(L.mT, Y, upper=True)
    if largest:
        idx = ops.arange(m - 1, m - 1 - k, -1)
    else:
        idx = ops.arange(0, k)
    return E.index_select(-1, idx), V.index_select(-1, idx)
