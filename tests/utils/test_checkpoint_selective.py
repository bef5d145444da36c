"""Selective activation checkpointing and the other torch.utils.checkpoint names: gradients
equal torch's, saved operators are not recomputed during backward."""
import functools

import numpy as np
import pytest
import torch

import ember
from ember.utils import checkpoint as ecp

rng = np.random.default_rng(11)
X = rng.standard_normal((4, 4))
Y = rng.standard_normal((4, 4))


def _fn(lib):
    def fn(x, y):
        return lib.sigmoid(lib.matmul(lib.matmul(x, y), y)) * y
    return fn


def _policy(lib, saved):
    def policy(ctx, op, *args, **kwargs):
        assert ctx.is_recompute is False
        return lib.utils.checkpoint.CheckpointPolicy.MUST_SAVE if op in saved else \
            lib.utils.checkpoint.CheckpointPolicy.PREFER_RECOMPUTE
    return policy


class _Count(ember.DispatchMode):
    def __init__(self):
        self.names = []

    def __ember_dispatch__(self, op, args, kwargs):
        self.names.append(op.name)
        return op(*args, **kwargs)


@pytest.mark.parametrize("as_list", [False, True])
def test_gradients_equal_torchs_and_saved_ops_are_not_recomputed(as_list):
    grads = {}
    for lib, saved in ((torch, [torch.ops.aten.mm.default, torch.ops.aten.sigmoid.default]),
                       (ember, [ember.ops.aten.matmul.default, ember.ops.aten.sigmoid.default])):
        x = lib.tensor(X, requires_grad=True)
        y = lib.tensor(Y, requires_grad=True)
        sac = saved if as_list else _policy(lib, saved)
        ctx_fn = functools.partial(lib.utils.checkpoint.create_selective_checkpoint_contexts,
                                   sac)
        out = lib.utils.checkpoint.checkpoint(_fn(lib), x, y, use_reentrant=False,
                                              context_fn=ctx_fn)
        if lib is ember:
            counter = _Count()
            with counter:
                out.sum().backward()
            # the backward's own matmuls (two per product) run; the recomputation's do not,
            # nor the sigmoid (its backward is sigmoid_backward)
            assert counter.names.count("matmul") == 4 and "sigmoid" not in counter.names
        else:
            out.sum().backward()
        grads[lib.__name__] = (out.detach().numpy(), x.grad.numpy(), y.grad.numpy())
    for a, b in zip(grads["torch"], grads["ember"]):
        np.testing.assert_allclose(b, a, rtol=1e-10)


def test_without_policy_everything_is_recomputed():
    x = ember.tensor(X, requires_grad=True)
    y = ember.tensor(Y, requires_grad=True)
    ctx_fn = functools.partial(ecp.create_selective_checkpoint_contexts, [])
    out = ecp.checkpoint(_fn(ember), x, y, use_reentrant=False, context_fn=ctx_fn)
    counter = _Count()
    with counter:
        out.sum().backward()
    assert counter.names.count("matmul") == 6 and "sigmoid" in counter.names


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_argument_errors_and_settings(lib):
    cp = lib.utils.checkpoint
    with pytest.raises(TypeError, match="policy_fn_or_list must be either a function or a list"):
        cp.create_selective_checkpoint_contexts(3)
    assert [(p.name, p.value) for p in cp.CheckpointPolicy] == [
        ("MUST_SAVE", 0), ("PREFER_SAVE", 1), ("MUST_RECOMPUTE", 2), ("PREFER_RECOMPUTE", 3),
        ("MUST_CPU_OFFLOAD", 4), ("PREFER_CPU_OFFLOAD", 5)]
    ctx = cp.SelectiveCheckpointContext(is_recompute=False)
    assert ctx.is_recompute is False
    assert cp.get_device_states(lib.ones(2)) == ([], [])
    cp.set_device_states([], [])
    with cp.set_checkpoint_early_stop(False), cp.set_checkpoint_debug_enabled(None):
        pass
    with cp.GraphExecGroup():
        with pytest.raises(RuntimeError, match="cannot be nested"):
            with cp.GraphExecGroup():
                pass
