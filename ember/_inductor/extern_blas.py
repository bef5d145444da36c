"""BLAS for generated C: the gemm/gemv that SciPy already ships, called through pointers.

SciPy exports its BLAS as Cython C-API capsules (``scipy.linalg.cython_blas.__pyx_capi__``),
one per routine, with the Fortran calling convention (every argument by pointer, column-major,
32-bit ``int`` sizes).  `blas_pointers` reads the function addresses out of those capsules;
generated C declares the function-pointer types and row-major helpers from
`blas_declarations` (`ember_lite._cblas`, shared with the lite runtime, which takes the same
routines from NumPy's own ILP64 OpenBLAS) and receives the addresses at run time, as
arguments or once through ``ember_blas_install`` (`install`).  The addresses are never
baked into the source: they change from process to process, and the built library is
cached on disk by source hash.
No new dependency: SciPy is one of ember's already.

Threading: SciPy's OpenBLAS is a separate library from NumPy's, with a pool of its own;
``ember.set_num_threads`` (threadpoolctl) limits it only if it is loaded by then, which
importing this module's pointers does.  Calling it from inside an OpenMP parallel region
would nest its threads in OpenMP's: generated code calls it from serial code.
"""
import ctypes
import functools

from ember_lite import _cblas

__all__ = ["ROUTINES", "BlasUnavailable", "blas_pointers", "blas_declarations", "install",
           "available"]

ROUTINES = _cblas.ROUTINES

# the start of each capsule's C signature: the argument list the declarations assume
# (LP64 BLAS: 32-bit int sizes; a future ILP64 SciPy would show `long` or int64 here)
_SIGNATURE = {
    "sgemm": "void (char *, char *, int *, int *, int *, ",
    "dgemm": "void (char *, char *, int *, int *, int *, ",
    "sgemv": "void (char *, int *, int *, ",
    "dgemv": "void (char *, int *, int *, ",
}


class BlasUnavailable(RuntimeError):
    """SciPy's BLAS capsules are missing or do not have the expected signature."""


def _capsule_api():
    api = ctypes.pythonapi
    get_name = api.PyCapsule_GetName
    get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    get_pointer = api.PyCapsule_GetPointer
    get_pointer.restype, get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object,
                                                                  ctypes.c_char_p]
    return get_name, get_pointer


@functools.lru_cache(maxsize=None)
def _pointers():
    try:
        from scipy.linalg import cython_blas
        capi = cython_blas.__pyx_capi__
    except (ImportError, AttributeError) as e:
        raise BlasUnavailable(f"scipy.linalg.cython_blas exports no C API: {e}") from None
    get_name, get_pointer = _capsule_api()
    out = {}
    for routine in ROUTINES:
        capsule = capi.get(routine)
        if capsule is None:
            raise BlasUnavailable(f"scipy.linalg.cython_blas does not export {routine}")
        # the capsule's name is its C signature, and GetPointer wants that exact name
        name = get_name(capsule)
        text = (name or b"").decode("ascii", "replace")
        if not text.startswith(_SIGNATURE[routine]):
            raise BlasUnavailable(f"scipy's {routine} has signature {text!r}, not the "
                                  f"LP64 Fortran one ({_SIGNATURE[routine]}...)")
        address = get_pointer(capsule, name)
        if not address:
            raise BlasUnavailable(f"no function pointer in scipy's {routine} capsule")
        out[routine] = int(address)
    return out


def blas_pointers():
    """``{routine: address}`` of SciPy's sgemm, dgemm, sgemv and dgemv (ints, valid for
    the life of this process); raises `BlasUnavailable` when SciPy does not export them
    as expected."""
    return dict(_pointers())


def available():
    """Whether `blas_pointers` works here (the caller otherwise lowers matmul to NumPy)."""
    try:
        _pointers()
    except BlasUnavailable:
        return False
    return True


def blas_declarations():
    """C source to put once at the top of a generated translation unit: `ember_lite._cblas.
    declarations` for SciPy's LP64 Fortran-ABI routines (the types ``ember_{s,d}{gemm,gemv}
    _t``, the ``ember_blas`` table with its setter ``ember_blas_install``, and the row-major
    helpers ``ember_gemm_f32/_f64`` and ``ember_gemv_f32/_f64``, which return -1 when a size
    does not fit BLAS's 32-bit ints)."""
    return _cblas.declarations(_cblas.LP64)


def install(lib):
    """Hand SciPy's BLAS pointers to a loaded library built with `blas_declarations`
    (its ``ember_blas_install``); once per loaded library, before its kernels run."""
    _cblas.install(lib, _pointers())
