"""Keeps freed tensor buffers in the process heap instead of giving them back to the kernel.

Eager training makes and frees many short-lived buffers of 128 KiB to a few MiB (every
activation, gradient and temporary).  glibc's malloc serves those with ``mmap`` or trims them
off the top of the heap as soon as they are freed (its thresholds adapt, but only up to twice
the largest buffer freed so far), so the next buffer of the same size is new memory again:
the kernel zeroes and maps it one 4 KiB page at a time.  The tiny GPT training step of
``benchmarks/`` took ~12,500 page faults per step (~29 ms of system time at 2 threads, about a
third of the step); with the thresholds below it takes 5 and the step runs 108 -> 83 ms at one
thread, 85 -> 60 ms at two (torch: 83 and 47-61 ms; measured alone in each process).

`apply` fixes glibc's thresholds once, at import: buffers up to ``MMAP_THRESHOLD`` come from the
heap, and the heap keeps up to ``TRIM_THRESHOLD`` of free memory at its top.  The cost is that
the process holds on to up to that much freed memory, as a caching allocator does.  It is a
process-wide setting, so it is skipped when the user chose glibc's malloc settings already
(``MALLOC_*_`` variables or ``glibc.malloc`` tunables), when ``EMBER_MALLOC_TUNING=0``, and on
any C library other than glibc.  Beyond PyTorch, whose CPU allocator leaves malloc as it is.
"""
import ctypes
import os
import sys

__all__ = ["MMAP_THRESHOLD", "TRIM_THRESHOLD", "apply", "state"]

MMAP_THRESHOLD = 32 << 20  # glibc's maximum: 16 MiB buffers (4M floats) were mapped anew
TRIM_THRESHOLD = 64 << 20

# mallopt parameter numbers (glibc's malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3

_USER_SETTINGS = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_",
                  "MALLOC_MMAP_MAX_")

_state = {"applied": False, "reason": "not tried"}


def _why_not(environ):
    if environ.get("EMBER_MALLOC_TUNING", "1") == "0":
        return "disabled by EMBER_MALLOC_TUNING=0"
    if not sys.platform.startswith("linux"):
        return f"not glibc ({sys.platform})"
    chosen = [name for name in _USER_SETTINGS if name in environ]
    if "glibc.malloc." in environ.get("GLIBC_TUNABLES", ""):
        chosen.append("GLIBC_TUNABLES")
    if chosen:
        return f"the user set glibc's malloc settings ({', '.join(chosen)})"
    return None


def apply(environ=None):
    """Sets glibc's mmap and trim thresholds unless the user or the platform rules it out;
    returns `state()`."""
    environ = os.environ if environ is None else environ
    reason = _why_not(environ)
    if reason is None:
        try:
            libc = ctypes.CDLL(None)
            libc.gnu_get_libc_version  # only glibc has it (musl's mallopt is a no-op)
            mallopt = libc.mallopt
        except (OSError, AttributeError):
            reason = "not glibc"
        else:
            mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
            if not (mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
                    and mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)):
                reason = "mallopt refused the thresholds"
    _state.update(applied=reason is None, reason=reason)
    return state()


def state():
    """``{"applied": bool, "reason": why not, or None}``."""
    return dict(_state)
