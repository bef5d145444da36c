"""``torch.backends.cpu``: what the CPU offers ember's compiled kernels."""
from .._core import cpu_capability as _cpu_capability

__all__ = ["get_cpu_capability"]


def get_cpu_capability():
    """The vector instruction set ember's C code is built for, as torch names it:
    'DEFAULT', 'AVX2' or 'AVX512'.  The best this CPU has, lowered by
    $EMBER_CPU_CAPABILITY (or torch's $ATEN_CPU_CAPABILITY) = default/avx2/avx512; a
    request above the CPU's level is clamped with a warning, an unknown one raises
    ValueError."""
    return _cpu_capability.current()
