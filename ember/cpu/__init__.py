"""``ember.cpu`` (``torch.cpu``): the CPU's device module, so device-agnostic code
(``torch.get_device_module(device).synchronize()``, ``.Stream()``, ``.stream(s)``) runs on
CPU.  The CPU executes in order on one stream: synchronising, streams and events are
no-ops, as they are in torch."""
import functools
import platform
from types import MappingProxyType

from .._core import cpu_capability as _cap

__all__ = ["is_available", "is_initialized", "synchronize", "current_device", "current_stream",
           "stream", "set_device", "device_count", "Stream", "StreamContext", "Event",
           "get_capabilities"]


def is_available():
    return True


def is_initialized():
    return True


def synchronize(device=None):
    """Waits for the CPU's pending work: there is none, operators return when done."""


def current_device():
    return "cpu"


def set_device(device):
    """Selects the current CPU device; there is only one."""


def device_count():
    return 1


class Stream:
    """The CPU's (only) stream, for device-agnostic code."""

    def __init__(self, priority=-1):
        pass

    def wait_stream(self, stream):
        pass

    def record_event(self):
        pass

    def wait_event(self, event):
        pass


class Event:
    """A CPU event: work before it is always complete."""

    def query(self):
        return True

    def record(self, stream=None):
        pass

    def synchronize(self):
        pass

    def wait(self, stream=None):
        pass


_DEFAULT_STREAM = Stream()
_CURRENT = [_DEFAULT_STREAM]


def current_stream(device=None):
    return _CURRENT[0]


class StreamContext:
    """Makes ``stream`` the current CPU stream inside the ``with`` block (None: no change)."""

    def __init__(self, stream):
        self.stream = stream
        self.prev_stream = _DEFAULT_STREAM

    def __enter__(self):
        if self.stream is not None:
            self.prev_stream, _CURRENT[0] = _CURRENT[0], self.stream

    def __exit__(self, *exc):
        if self.stream is not None:
            _CURRENT[0] = self.prev_stream


def stream(stream):
    return StreamContext(stream)


# torch's capability names -> the Linux /proc/cpuinfo flag that reports them (x86)
_X86_FLAGS = {
    "sse": "sse", "sse2": "sse2", "sse3": "pni", "ssse3": "ssse3", "sse4_1": "sse4_1",
    "sse4_2": "sse4_2", "sse4a": "sse4a", "avx": "avx", "avx2": "avx2", "avx_vnni": "avx_vnni",
    "avx512_f": "avx512f", "avx512_cd": "avx512cd", "avx512_dq": "avx512dq",
    "avx512_bw": "avx512bw", "avx512_vl": "avx512vl", "avx512_ifma": "avx512ifma",
    "avx512_vbmi": "avx512vbmi", "avx512_vbmi2": "avx512_vbmi2",
    "avx512_bitalg": "avx512_bitalg", "avx512_vpopcntdq": "avx512_vpopcntdq",
    "avx512_vnni": "avx512_vnni", "avx512_bf16": "avx512_bf16", "avx512_fp16": "avx512_fp16",
    "avx512_vp2intersect": "avx512_vp2intersect", "avx512_4vnniw": "avx512_4vnniw",
    "avx512_4fmaps": "avx512_4fmaps", "amx_bf16": "amx_bf16", "amx_tile": "amx_tile",
    "amx_int8": "amx_int8", "amx_fp16": "amx_fp16", "fma3": "fma", "fma4": "fma4",
    "f16c": "f16c", "bmi": "bmi1", "bmi2": "bmi2", "popcnt": "popcnt", "lzcnt": "abm",
    "aes": "aes", "sha": "sha_ni", "clflush": "clflush", "clflushopt": "clflushopt",
    "clwb": "clwb",
}


@functools.lru_cache(maxsize=None)
def get_capabilities():
    """An immutable mapping of the instruction-set features this CPU (and OS) supports, under
    torch's names, plus ``architecture``; on x86 read from /proc/cpuinfo (features the kernel
    does not report are absent rather than guessed)."""
    arch = platform.machine().lower()
    caps = {"architecture": "x86_64" if arch == "amd64" else arch}
    flags = _cap._proc_cpuinfo_flags() if arch in _cap._X86 else None
    if flags:
        caps.update({name: flag in flags for name, flag in _X86_FLAGS.items()})
    return MappingProxyType(caps)


from . import amp  # noqa: E402,F401  (torch.cpu.amp)
