"""``torch.backends.cpu``: what the CPU offers ember's compiled kernels."""
__all__ = ["get_cpu_capability"]


def get_cpu_capability():
    """The widest vector instruction set of this CPU: 'AVX512', 'AVX2' or 'DEFAULT'."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = f.read()
    except OSError:
        return "DEFAULT"
    if "avx512f" in flags:
        return "AVX512"
    if "avx2" in flags:
        return "AVX2"
    return "DEFAULT"
