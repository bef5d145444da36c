"""C source -> shared library for ember's C kernels, with the CPU capability level's flags.

The machinery (compile once, cache on disk under a key of source, compiler, flags, CPU and
Python/NumPy versions, trusted only when owned and intact, atomic writes, an advisory
lock, verified loading) is `ember_lite._build`, which imports nothing of ember so that the
lite runtime builds its programs with the same code and cache.  This module adds the level:
flags from `ember._core.cpu_capability` (DEFAULT/AVX2/AVX512, lowered by
``$EMBER_CPU_CAPABILITY``), and the level in the cache key.
"""
from ember_lite import _build as _lite
from ember_lite._build import (  # noqa: F401 - this module's public names, as before
    BASE_FLAGS, FALLBACK_FLAGS, OPENMP_FLAGS, BuildError, _usable_cache_dir, cache_dir,
    check_dir, find_compiler)

from .. import cpu_capability as _cpu

__all__ = ["build", "try_build", "Library", "cache_dir", "find_compiler", "check_dir",
           "BuildError"]


def build(name, source, check, level=None, flags=()):
    """Load the library for ``source`` (compiling and caching it first if needed), built for
    CPU capability ``level`` (default: the current one, `cpu_capability.current`) with
    OpenMP, or without its runtime when that fails.  Returns ``(lib, info)``: `ember_lite.
    _build.build`'s info plus ``cpu_capability`` and ``openmp``; raises `BuildError` with
    the reason when no library can be had (ValueError for an unknown ``level`` or
    $EMBER_CPU_CAPABILITY).  ``flags``: the library's own extra compiler flags."""
    level = _cpu.current() if level is None else _cpu.parse(level)
    base = _cpu.compile_flags(level) + tuple(flags) + BASE_FLAGS
    variants = [(base + OPENMP_FLAGS, {"cpu_capability": level, "openmp": True}),
                (base + FALLBACK_FLAGS, {"cpu_capability": level, "openmp": False})]
    return _lite.build(name, source, check, variants, tag=level)


def try_build(name, source, check):
    """`build`, for a caller that falls back to NumPy: ``(lib, info, None)``, or
    ``(None, {}, reason)`` when no usable library could be made."""
    return _lite.attempt(build, name, source, check)


class Library:
    """A kernel library built on first use (`try_build` of ``render()``, verified by
    ``check``): ``get()`` returns it, or None when it cannot be had (``reason`` says why);
    ``info`` is the build's info."""

    def __init__(self, name, render, check):
        self.name, self.render, self.check = name, render, check
        self.lib, self.info, self.reason, self.tried = None, {}, None, False

    def get(self):
        if not self.tried:
            self.tried = True
            self.lib, info, self.reason = try_build(self.name, self.render(), self.check)
            self.info = info or {}
        return self.lib
