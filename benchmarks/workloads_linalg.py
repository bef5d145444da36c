"""Linear-algebra workloads (issue 4): solve, eigh, svd."""
from .workloads import _arr, workload


@workload("linalg_solve_256", "linalg")
def linalg_solve_256(lib):
    a, b = _arr(lib, (256, 256)), _arr(lib, (256, 16), 1)
    return lambda: lib.linalg.solve(a, b)


@workload("linalg_eigh_256", "linalg")
def linalg_eigh_256(lib):
    x = _arr(lib, (256, 256))
    a = x + x.mT
    return lambda: lib.linalg.eigh(a)


@workload("linalg_svd_256x128", "linalg")
def linalg_svd_256x128(lib):
    a = _arr(lib, (256, 128))
    return lambda: lib.linalg.svd(a, full_matrices=False)
