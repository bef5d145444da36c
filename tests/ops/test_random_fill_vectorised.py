"""The vectorised float32 Box-Muller block (ops._random_c, built with -fno-math-errno and
`omp simd`) against the NumPy emulation of torch's kernel: bit for bit (signed zeros too)
over a spread of every possible uniform in both roles (radius and angle), and randn's
stream against torch after the same seed."""
import numpy as np
import torch

import ember
from ember.ops import _random_c, random_streams as rs


def _emulated(u, mean, std):
    saved, _random_c._lib, _random_c._tried = _random_c._lib, None, True
    try:
        return rs._fill16_f32(u, np.float32(mean), np.float32(std))
    finally:
        _random_c._lib = saved


def test_fill16_bits_equal_emulation_in_both_roles():
    words = np.arange(0, 1 << 24, 97, dtype=np.uint32)  # a spread of the 2**24 uniforms
    words = np.concatenate([words, np.array([0, 1, 2, (1 << 24) - 1, (1 << 23)], np.uint32)])
    words = words[:words.size // 8 * 8]
    u = words.astype(np.float32) * np.float32(2.0 ** -24)
    halves = u.reshape(-1, 8)
    for rows in (np.concatenate([halves, halves[::-1]], 1),
                 np.concatenate([halves[::-1], halves], 1)):
        rows = np.ascontiguousarray(rows)
        for mean, std in ((0.0, 1.0), (0.25, 3.0)):
            c = _random_c.fill16(rows, np.float32(mean), np.float32(std))
            assert c is not None, "the C kernel did not build"
            ref = _emulated(rows, mean, std)
            assert np.array_equal(c.view(np.uint32), ref.view(np.uint32))


def test_randn_stream_matches_torch():
    for seed, shape in ((0, (256, 1024)), (7, (33,)), (3, (5, 16))):
        torch.manual_seed(seed)
        ember.manual_seed(seed)
        t, e = torch.randn(shape), ember.randn(shape)
        assert np.array_equal(e.numpy().view(np.uint32), t.numpy().view(np.uint32))
        t2, e2 = torch.empty(shape).normal_(0.5, 2.0), ember.empty(shape).normal_(0.5, 2.0)
        np.testing.assert_array_equal(e2.numpy(), t2.numpy())
