"""``torch.nn.attention``: choosing the kernel behind ``scaled_dot_product_attention``.

`sdpa_kernel` enables exactly the listed backends for a block, through the backend flags
of ``ember.backends.cuda`` (``flash_sdp_enabled`` ...), as torch does.  ember has one CPU
attention implementation, a blocked FlashAttention, so ``FLASH_ATTENTION`` and ``MATH``
select it.  The flash-attention implementation registry (FA3/FA4 in torch's CUDA build) is
the same registry; ember registers no implementation of its own in it.
"""
import contextlib
import enum
import logging

from ...backends import cuda as _cuda

__all__ = ["SDPBackend", "sdpa_kernel", "WARN_FOR_UNFUSED_KERNELS",
           "register_flash_attention_impl", "activate_flash_attention_impl",
           "list_flash_attention_impls", "current_flash_attention_impl",
           "restore_flash_attention_impl"]

# torch warns from its fused CUDA kernels when set; nothing in ember falls back silently
WARN_FOR_UNFUSED_KERNELS = False

_log = logging.getLogger(__name__)


class SDPBackend(enum.IntEnum):
    """An enum-like class that contains the different backends for scaled dot product
    attention."""
    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4

    __str__ = enum.Enum.__str__  # "SDPBackend.MATH", as torch prints it


# backend -> its flag in ember.backends.cuda
_FLAGS = {SDPBackend.MATH: "math", SDPBackend.FLASH_ATTENTION: "flash",
          SDPBackend.EFFICIENT_ATTENTION: "mem_efficient", SDPBackend.CUDNN_ATTENTION: "cudnn"}
_PRIORITY = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH,
             SDPBackend.CUDNN_ATTENTION, SDPBackend.OVERRIDEABLE]


def _enabled():
    return [b for b in _PRIORITY if b in _FLAGS and getattr(_cuda, f"{_FLAGS[b]}_sdp_enabled")()]


def _enable_only(backends):
    for b, flag in _FLAGS.items():
        getattr(_cuda, f"enable_{flag}_sdp")(b in backends)


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority=False):
    """Context manager to select which backend to use for scaled dot product attention.

    ``backends``: an `SDPBackend` or a list of them, the only ones enabled inside the block;
    ``set_priority``: their order is the order of preference.  The previous flags (and
    priority) are restored on exit."""
    if not isinstance(backends, (list, SDPBackend)):
        raise AssertionError(f"Backend must be an instance of SDPBackend or a list of "
                             f"SDPBackend instances, got {type(backends).__name__}")
    if isinstance(backends, SDPBackend):
        backends = [backends]
    backends = list(dict.fromkeys(backends))
    previous, previous_priority = _enabled(), list(_PRIORITY)
    try:
        _enable_only(backends)
        if set_priority:
            _PRIORITY[:] = backends + [b for b in previous_priority if b not in backends]
        yield {}
    finally:
        _enable_only(previous)
        _PRIORITY[:] = previous_priority


# ---- flash attention implementation registry -----------------------------------------------

_IMPLS = {}
_ACTIVE = None  # (name, handle) of the activated implementation


def register_flash_attention_impl(impl, *, register_fn):
    """Register the callable that activates a flash attention impl (for SDPA backend
    providers; users call `activate_flash_attention_impl`)."""
    _IMPLS[impl] = register_fn


def activate_flash_attention_impl(impl):
    """Activate a previously registered flash attention impl: its ``register_fn`` is called
    and the handle it returns (if any) is kept until `restore_flash_attention_impl`."""
    global _ACTIVE
    restore_flash_attention_impl(_raise_warn=False)
    register_fn = _IMPLS.get(impl)
    if register_fn is None:
        raise ValueError(f"Unknown flash attention impl '{impl}'. Available implementations: "
                         f"{list_flash_attention_impls()}")
    handle = register_fn()
    if handle is not None:
        _ACTIVE = (impl, handle)


def list_flash_attention_impls():
    """Return the names of all available flash attention implementations."""
    return sorted(_IMPLS)


def current_flash_attention_impl():
    """Return the currently activated flash attention impl name, if any (None: the
    default)."""
    return None if _ACTIVE is None else _ACTIVE[0]


def restore_flash_attention_impl(_raise_warn=True):
    """Restore the default flash attention implementation."""
    global _ACTIVE
    if _ACTIVE is not None:
        _ACTIVE[1].remove()
    elif _raise_warn:
        _log.warning("Trying to restore default FA2 impl when no custom impl was activated")
    _ACTIVE = None
