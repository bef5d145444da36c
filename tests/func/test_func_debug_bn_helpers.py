"""torch.func.debug_unwrap and replace_all_batch_norm_modules_, against torch.func."""
import numpy as np
import torch

import ember


def _unwrapped_shapes(lib):
    seen = []

    def f(x):
        seen.append((tuple(lib.func.debug_unwrap(x).shape),
                     tuple(lib.func.debug_unwrap(x, recurse=False).shape)))
        return x * 2

    x = lib.arange(24.0).reshape(4, 3, 2)
    lib.func.vmap(lib.func.vmap(f))(x)
    lib.func.vmap(f, in_dims=1)(x)
    plain = lib.ones(2)
    assert lib.func.debug_unwrap(plain) is plain
    return seen


def test_debug_unwrap_same_shapes_as_torch():
    shapes = _unwrapped_shapes(ember)
    assert shapes == _unwrapped_shapes(torch)
    assert shapes[0] == ((4, 3, 2), (3, 2))  # one vmap level peeled, or all of them


def test_debug_unwrap_values():
    def f(x):
        return lib.func.debug_unwrap(x).sum() + x * 0
    for lib in (torch, ember):
        out = lib.func.vmap(f)(lib.arange(6.0).reshape(3, 2))
        assert out.tolist() == [[15.0, 15.0]] * 3


def test_replace_all_batch_norm_modules_then_vmap():
    outs = []
    for lib in (torch, ember):
        lib.manual_seed(0)
        net = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.BatchNorm1d(4),
                                lib.nn.Sequential(lib.nn.BatchNorm1d(4, track_running_stats=False)))
        assert lib.func.replace_all_batch_norm_modules_(net) is net
        bn = net[1]
        assert bn.running_mean is None and bn.running_var is None
        assert bn.num_batches_tracked is None and not bn.track_running_stats
        assert "running_mean" not in net.state_dict() and len(net.state_dict()) == 6
        x = lib.randn(5, 2, 3)
        outs.append(lib.func.vmap(net)(x).detach().numpy())
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-5, atol=1e-5)
