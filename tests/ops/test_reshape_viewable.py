"""reshape decides view-or-copy without copying first (ops.views._viewable): views share
storage exactly where torch's do, copies do not, and pixel_shuffle (a reshape of a permuted
view) matches torch with its gradient."""
import numpy as np
import torch

import ember
from ember.ops.views import _viewable

RNG = np.random.default_rng(0)


def test_view_or_copy_like_torch():
    x = RNG.standard_normal((4, 6, 8))
    cases = [lambda t: t.transpose(0, 1).reshape(24, 8),  # copy
             lambda t: t[:, ::2].reshape(4, 24),  # copy
             lambda t: t[:, :, :4].reshape(4, 6, 2, 2),  # view: splits the last dim
             lambda t: t.transpose(1, 2).reshape(4, 8, 3, 2),  # view
             lambda t: t.reshape(2, 2, 48)]  # view
    for f in cases:
        e, t = ember.from_numpy(x.copy()), torch.from_numpy(x.copy())
        re, rt = f(e), f(t)
        np.testing.assert_array_equal(re.numpy(), rt.numpy())
        shares_t = rt.untyped_storage().data_ptr() == t.untyped_storage().data_ptr()
        assert np.shares_memory(re.numpy(), e.numpy()) == shares_t
    a = x.transpose(1, 0, 2)
    assert not _viewable(a, (24, 8)) and _viewable(a, (6, 4, 2, 4))


def test_pixel_shuffle_and_unshuffle_with_grads():
    x = RNG.standard_normal((2, 12, 5, 7)).astype(np.float32)
    g = RNG.standard_normal((2, 3, 10, 14)).astype(np.float32)
    out = []
    for lib in (torch, ember):
        a = lib.from_numpy(x).requires_grad_()
        y = lib.nn.functional.pixel_shuffle(a, 2)
        y.backward(lib.from_numpy(g))
        back = lib.nn.functional.pixel_unshuffle(y.detach(), 2)
        out.append((y.detach().numpy(), a.grad.numpy(), back.numpy()))
    for e, t in zip(out[1], out[0]):
        np.testing.assert_array_equal(e, t)
