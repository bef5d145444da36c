"""``torch.__config__``: how this build was made and how it runs in parallel, as text.

Libraries read it (torch_geometric tests ``'USE_MKL=OFF' in torch.__config__.show()``), so the
build-settings line uses torch's ``KEY=VALUE`` spellings, answered for ember: its arrays are
NumPy's, its BLAS/LAPACK NumPy's, MKL/OpenMP as ``ember.backends`` and gloo/MPI as
``ember.distributed`` report them.
"""
import os

import numpy as np

from . import backends as _backends
from ._core import threads as _threads
from ._toplevel_extras import get_num_interop_threads

__all__ = ["show", "parallel_info"]


def _blas():
    try:
        deps = np.show_config(mode="dicts")["Build Dependencies"]
        return deps["blas"].get("name", "unknown"), deps["lapack"].get("name", "unknown")
    except (KeyError, TypeError, ValueError):  # a NumPy without the dict form of its config
        return "unknown", "unknown"


def _flag(on):
    return "ON" if on else "OFF"


def _cxx_flags():
    """The C compiler flags of the build: ember's C kernels are compiled at run time."""
    return ""


def show():
    """A human-readable description of ember's build configuration."""
    blas, lapack = _blas()
    from . import __version__, distributed
    settings = {"BLAS_INFO": blas, "LAPACK_INFO": lapack, "TORCH_VERSION": __version__,
                "USE_CUDA": "0", "USE_CUDNN": "OFF",
                "USE_GLOO": _flag(distributed.is_gloo_available()),
                "USE_MKL": _flag(_backends.mkl.is_available()),
                "USE_MKLDNN": _flag(_backends.mkldnn.is_available()),
                "USE_MPI": _flag(distributed.is_mpi_available()),
                "USE_NCCL": "OFF", "USE_OPENMP": _flag(_backends.openmp.is_available()),
                "USE_ROCM": "OFF", "USE_XPU": "OFF"}
    lines = ["ember built with:", f"  - NumPy {np.__version__}",
             f"  - BLAS: {blas}, LAPACK: {lapack} (NumPy's)",
             "  - Build settings: " + "".join(f"{k}={v}, " for k, v in settings.items()),
             ""]
    return "\n".join(lines)


def parallel_info():
    """ember's thread settings (``set_num_threads``) and the environment that seeds them."""
    lines = ["ATen/Parallel:",
             f"\tat::get_num_threads() : {_threads.get_num_threads()}",
             f"\tat::get_num_interop_threads() : {get_num_interop_threads()}",
             f"std::thread::hardware_concurrency() : {os.cpu_count()}",
             "Environment variables:"]
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        lines.append(f"\t{var} : {os.environ.get(var, '[not set]')}")
    lines.append("ATen parallel backend: ember threads")
    return "\n".join(lines) + "\n"
