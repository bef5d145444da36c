"""Intra-op thread count: ember's kernels run in NumPy/BLAS, so this is the BLAS thread pool
(``torch.get_num_threads`` / ``torch.set_num_threads``)."""
import os

__all__ = ["get_num_threads", "set_num_threads"]

_limits = []  # keeps the active threadpoolctl limiter alive


def get_num_threads():
    """The number of threads used for intra-op parallelism (BLAS)."""
    from threadpoolctl import threadpool_info
    counts = [i.get("num_threads") for i in threadpool_info() if i.get("user_api") == "blas"]
    return max(counts) if counts else (os.cpu_count() or 1)


def set_num_threads(int):
    """Sets the number of threads used for intra-op parallelism (BLAS)."""
    n = int
    if not isinstance(n, type(1)) or n < 1:
        raise RuntimeError(f"set_num_threads expects a positive integer, but got {n}")
    from threadpoolctl import threadpool_limits
    _limits.clear()
    _limits.append(threadpool_limits(limits=n, user_api="blas"))
