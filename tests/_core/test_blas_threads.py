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
    big = np.ones((512, 512), np.float32)
    blas_threads.matmul(np, big, big)
    assert calls == []  # large products keep the configured threads
    real_set(real_get())
