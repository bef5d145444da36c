"""``autocast``: regions where chosen operators run in lower precision.

Implemented as a dispatch mode following PyTorch's CPU autocast policy: operators in
`LOWER` (matrix products, convolutions, attention) cast their float32/float16/bfloat16
tensor inputs to the autocast dtype; operators in `FP32` (losses, linear algebra, FFTs,
numerically sensitive reductions) cast them to float32; operators in `PROMOTE` cast them
to the widest of their floating dtypes; every other operator runs as is.  float64
tensors are never cast.  The casts are ember operators, so autograd records them and
float32 parameters receive float32 gradients.

The mode sees ember's operators, which are sometimes finer than torch's: a composite
loss such as ``mse_loss`` of two bfloat16 tensors runs its pieces as is (torch computes
it in float32); losses with their own operator (cross_entropy, nll_loss, ctc_loss)
follow torch.
"""
import functools
import warnings
import weakref

from .._core import dtype as _dt
from .._core.dispatch import DispatchMode, overridable
from .._core.state import STATE
from .._core.tensor import Tensor, _version_of

__all__ = ["autocast", "is_autocast_available", "is_autocast_enabled", "get_autocast_dtype",
           "set_autocast_enabled", "set_autocast_dtype", "LOWER", "FP32", "PROMOTE"]

# ember operator name -> policy; torch's CPU lists mapped onto ember's operators
LOWER = frozenset({
    "matmul", "addmm", "linear", "einsum",  # mm/bmm/baddbmm/addbmm/linalg_vecdot/linear
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "convolution",
    "_flash_attention",                     # scaled_dot_product_attention
})
FP32 = frozenset({
    "cross_entropy_loss", "nll_loss", "_ctc_loss", "cdist", "prod", "view_as_complex",
    "cholesky_solve", "_fft_c2c", "_fft_r2c", "_fft_c2r",
    "linalg_cholesky_ex", "linalg_det", "linalg_eig", "linalg_eigh", "linalg_eigvals",
    "linalg_eigvalsh", "linalg_inv_ex", "linalg_ldl_factor_ex", "linalg_ldl_solve",
    "linalg_lstsq", "linalg_lu_factor_ex", "linalg_matrix_exp", "linalg_matrix_rank",
    "linalg_pinv", "linalg_qr", "linalg_slogdet", "linalg_solve_ex", "linalg_solve_triangular",
    "linalg_svd", "linalg_svdvals",
})
PROMOTE = frozenset({"cat", "stack", "index_copy"})

# torch's other accelerators (regions only set their state: no ember tensor lives there, and
# a region of another device type leaves CPU operators alone, as in torch)
_SUPPORTED = {"cpu": ("bfloat16", "float16"), "cuda": ("bfloat16", "float16", "float32"),
              "mps": ("bfloat16", "float16"), "xpu": ("bfloat16", "float16"),
              "hpu": ("bfloat16", "float16"), "mtia": ("bfloat16", "float16"),
              "xla": ("bfloat16", "float16")}
_DEFAULT_DTYPE = {"cpu": "bfloat16", "cuda": "float16", "mps": "float16", "xpu": "float16",
                  "hpu": "bfloat16", "mtia": "float16", "xla": "bfloat16"}
# per device type: [enabled, dtype]; the mode reads it at each call, so nested regions
# (and enabled=False inside an enabled one) take effect without reordering modes
_STATE = {d: [False, getattr(_dt, n)] for d, n in _DEFAULT_DTYPE.items()}
_CACHE = {}      # id(leaf weight) -> (weakref, version, dtype, cast)
_DEPTH = [0]     # nesting depth of autocast regions: the cast cache lives for the outermost
_CACHE_ENABLED = [True]  # torch.is_autocast_cache_enabled(): regions' default, set inside one


@overridable
def is_autocast_available(device_type):
    """Whether autocast is available for ``device_type``."""
    return device_type in _SUPPORTED


def _check_device(device_type):
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if device_type not in _SUPPORTED:
        raise RuntimeError(f"User specified an unsupported autocast device_type "
                           f"'{device_type}'")


@overridable
def is_autocast_enabled(device_type=None):
    """Whether autocast is enabled for ``device_type`` (default 'cuda', as in torch)."""
    if device_type is None:
        device_type = "cuda"
    _check_device(device_type)
    return _STATE[device_type][0]


@overridable
def set_autocast_enabled(device_type, enabled=None):
    if enabled is None:  # torch's old one-argument form sets the cuda flag
        device_type, enabled = "cuda", device_type
    _check_device(device_type)
    _STATE[device_type][0] = bool(enabled)
    _sync_mode()


@overridable
def get_autocast_dtype(device_type):
    """The dtype autocast casts to on ``device_type``."""
    _check_device(device_type)
    return _STATE[device_type][1]


@overridable
def set_autocast_dtype(device_type, dtype):
    _check_device(device_type)
    _STATE[device_type][1] = dtype


def _eligible(t):
    return isinstance(t, Tensor) and t.dtype in (_dt.float32, _dt.float16, _dt.bfloat16)


def _cast(t, dtype, cache):
    if not _eligible(t) or t.dtype == dtype:
        return t
    if cache and t._requires_grad and t.grad_fn is None and t._base is None and \
            dtype != _dt.float32 and STATE.grad_enabled:
        # leaf weights are cast once per region (torch's cast cache); the version guards
        # against a weight updated in place inside the region
        hit = _CACHE.get(id(t))
        ver = _version_of(t)[0]
        if hit is not None and hit[0]() is t and hit[1] == ver and hit[2] == dtype:
            return hit[3]
        out = t.to(dtype)
        _CACHE[id(t)] = (weakref.ref(t), ver, dtype, out)
        return out
    return t.to(dtype)


def _map(args, f):
    return tuple(_map(a, f) if isinstance(a, (list, tuple)) else f(a) for a in args) \
        if isinstance(args, tuple) else [_map(a, f) if isinstance(a, (list, tuple)) else f(a)
                                         for a in args]


def _widest(args, acc):
    for a in args:
        if isinstance(a, (list, tuple)):
            _widest(a, acc)
        elif _eligible(a) and (acc[0] is None or a.dtype.itemsize > acc[0].itemsize):
            acc[0] = a.dtype
    return acc[0]


class _AutocastMode(DispatchMode):
    """Casts operator inputs by the CPU policy while CPU autocast is enabled."""

    def __init__(self, cache):
        self.cache = cache

    def __ember_dispatch__(self, op, args, kwargs):
        enabled, dtype = _STATE["cpu"]
        name = op.name
        if enabled:
            if name in LOWER:
                args = _map(args, lambda a: _cast(a, dtype, self.cache))
            elif name in FP32:
                args = _map(args, lambda a: _cast(a, _dt.float32, False))
            elif name in PROMOTE:
                wide = _widest(args, [None])
                if wide is not None:
                    args = _map(args, lambda a: _cast(a, wide, False))
        return op(*args, **kwargs)


_MODE = []  # the mode pushed by set_autocast_enabled outside any autocast region


def _sync_mode():
    # set_autocast_enabled('cpu', True) outside a region still needs the mode pushed
    want = _STATE["cpu"][0] and _DEPTH[0] == 0
    if want and not _MODE:
        _MODE.append(_AutocastMode(True))
        _MODE[0].__enter__()
    elif not want and _MODE:
        _MODE.pop().__exit__(None, None, None)


class autocast:
    """Context manager / decorator running a region in mixed precision.

    ``autocast(device_type, dtype=None, enabled=True, cache_enabled=None)``; on 'cpu' the
    default dtype is bfloat16.
    """

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        _check_device(device_type)
        self.device = device_type
        self.fast_dtype = _STATE[device_type][1] if dtype is None else dtype
        self._enabled = bool(enabled)
        self._cache_enabled = _CACHE_ENABLED[0] if cache_enabled is None else \
            bool(cache_enabled)
        if self._enabled and self.fast_dtype.name not in _SUPPORTED[device_type]:
            names = ", ".join(f"torch.{n}" for n in _SUPPORTED[device_type])
            warnings.warn(f"In {device_type.upper()} autocast, but the target dtype is not "
                          f"supported. Disabling autocast.\n{device_type.upper()} Autocast only "
                          f"supports dtypes of {names} currently.", UserWarning, stacklevel=2)
            self._enabled = False

    def __enter__(self):
        st = _STATE[self.device]
        self._prev = list(st)
        self._prev_cache = _CACHE_ENABLED[0]
        st[0], st[1] = self._enabled, self.fast_dtype
        _CACHE_ENABLED[0] = self._cache_enabled
        _DEPTH[0] += 1
        self._mode = None
        if self._enabled and self.device == "cpu":
            self._mode = _AutocastMode(self._cache_enabled)
            self._mode.__enter__()
        return self

    def __exit__(self, *exc):
        if self._mode is not None:
            self._mode.__exit__(*exc)
        _STATE[self.device][:] = self._prev
        _CACHE_ENABLED[0] = self._prev_cache
        _DEPTH[0] -= 1
        if _DEPTH[0] == 0:
            _CACHE.clear()
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with autocast(self.device, self.fast_dtype, self._enabled, self._cache_enabled):
                return func(*args, **kwargs)
        return wrapper
