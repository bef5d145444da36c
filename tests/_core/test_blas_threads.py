"""The BLAS threading policy: small products single-threaded, thread count restored."""
import numpy as np
import threadpoolctl

import ember
from ember._core import blas_threads


def _numpy_blas_threads():
    return [i["num_threads"] for i in threadpoolctl.threadpool_info()
            if i.get("user_api") == "blas" and "numpy" in i["filepath"]]


def test_small_products_restore_the_thread_count_and_compute_right():
    before = _numpy_blas_threads()
    a = np.random.default_rng(0).standard_normal((16, 8)).astype(np.float32)
    b = np.random.default_rng(1).standard_normal((8, 4)).astype(np.float32)
    np.testing.assert_allclose(blas_threads.matmul(np, a, b), a @ b, rtol=1e-6)
    np.testing.assert_allclose((ember.tensor(a) @ ember.tensor(b)).numpy(), a @ b, rtol=1e-6)
    assert _numpy_blas_threads() == before


def test_policy_runs_small_gemms_with_one_thread(monkeypatch):
    calls = []
    blas_threads._load()
    if blas_threads._set is None:  # a BLAS without thread control: nothing to check
        return
    real_set, real_get = blas_threads._set, blas_threads._get
    monkeypatch.setattr(blas_threads, "_get", lambda: 2)
    monkeypatch.setattr(blas_threads, "_set", lambda n: (calls.append(n), real_set(n)))
    a = np.ones((4, 4), np.float32)
    blas_threads.matmul(np, a, a)
    assert calls == [1, 2]  # one thread for the product, then the previous count back
    calls.clear()
    # a measured single-threaded rate and no back-off hold: the state of a process whose
    # threaded products have not collapsed (the back-off has its own tests)
    monkeypatch.setattr(blas_threads, "_rate", {("f", "f"): 1.0})
    monkeypatch.setattr(blas_threads, "_hold_until", 0.0)
    monkeypatch.setattr(blas_threads, "_strikes", 0)
    big = np.ones((512, 512), np.float32)
    blas_threads.matmul(np, big, big)
    assert calls == []  # large products keep the configured threads
    real_set(real_get())


def _openblas_threads():
    return [i["num_threads"] for i in threadpoolctl.threadpool_info()
            if i.get("internal_api") == "openblas"]


def test_small_lapack_runs_every_openblas_pool_at_one_thread():
    import scipy.linalg  # noqa: F401 - SciPy's OpenBLAS joins the pools
    seen = []
    probe = blas_threads.small_lapack(lambda xp, a: seen.append(_openblas_threads()) or a)
    with threadpoolctl.threadpool_limits(2, user_api="blas"):
        before = _openblas_threads()
        assert len(before) >= 2 and set(before) == {2}  # NumPy's and SciPy's pools
        small = np.zeros((3, 256, 128), np.float32)
        assert probe(np, small) is small
        large = np.zeros((1024, 1024), np.float32)  # m*n*min(m, n) = SMALL_LAPACK
        probe(np, large)
        assert _openblas_threads() == before  # restored
    assert seen == [[1] * len(before), before]


def test_svd_and_eigvalsh_kernels_run_single_threaded(monkeypatch):
    import scipy.linalg
    seen = []
    real_svd, real_eigvalsh = scipy.linalg.svd, np.linalg.eigvalsh
    monkeypatch.setattr(scipy.linalg, "svd", lambda *a, **k: (
        seen.append(("svd", _openblas_threads())), real_svd(*a, **k))[1])
    monkeypatch.setattr(np.linalg, "eigvalsh", lambda *a, **k: (
        seen.append(("eigvalsh", _openblas_threads())), real_eigvalsh(*a, **k))[1])
    x = np.random.default_rng(0).standard_normal((64, 32)).astype(np.float32)
    with threadpoolctl.threadpool_limits(2, user_api="blas"):
        u, s, vh = ember.linalg.svd(ember.tensor(x), full_matrices=False)
        w = ember.linalg.eigvalsh(ember.tensor(x.T @ x))
        assert set(_openblas_threads()) == {2}
    assert [name for name, _ in seen] == ["svd", "eigvalsh"]
    assert all(set(counts) == {1} for _, counts in seen)
    np.testing.assert_allclose(s.numpy(), np.linalg.svd(x, compute_uv=False), rtol=1e-5)
    np.testing.assert_allclose(((u * s) @ vh).numpy(), x, atol=1e-5)
    np.testing.assert_allclose(np.sort(w.numpy()), np.sort(s.numpy() ** 2), rtol=1e-4)
