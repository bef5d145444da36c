"""Global module hooks of torch.nn.modules.module: full backward (pre) hooks and
buffer/module/parameter registration hooks, against torch."""
import warnings

import numpy as np
import pytest
import torch

import ember


def _backward_trace(lib):
    events = []
    mm = lib.nn.modules.module
    h1 = mm.register_module_full_backward_pre_hook(
        lambda m, go: events.append(("pre", type(m).__name__, go[0].shape[-1])) or
        (go[0] * 2,))
    h2 = mm.register_module_full_backward_hook(
        lambda m, gi, go: events.append(("post", type(m).__name__, go[0].shape[-1])))
    lib.manual_seed(0)
    net = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.Tanh())
    local = net[0].register_full_backward_hook(
        lambda m, gi, go: events.append(("local", type(m).__name__)))
    x = lib.ones(2, 3, requires_grad=True)
    net(x).sum().backward()
    grad = x.grad.tolist()
    for h in (h1, h2, local):
        h.remove()
    x.grad = None
    net(x).sum().backward()  # removed: no events, grads not doubled
    return events, grad, x.grad.tolist()


def test_global_full_backward_hooks_like_torch():
    te, tg, tg2 = _backward_trace(torch)
    ee, eg, eg2 = _backward_trace(ember)
    assert ee == te
    np.testing.assert_allclose(eg, tg, rtol=1e-5)
    np.testing.assert_allclose(eg2, tg2, rtol=1e-5)
    # the global pre-hook doubles grad_output at each of the 3 modules
    np.testing.assert_allclose(eg, 8 * np.array(eg2), rtol=1e-5)


def _registrations(lib):
    seen = []
    mm = lib.nn.modules.module
    hb = mm.register_module_buffer_registration_hook(
        lambda m, n, b: seen.append(("buffer", n)) or (b * 0 if b is not None else None))
    hm = mm.register_module_module_registration_hook(
        lambda m, n, s: seen.append(("module", n, type(s).__name__)))
    hp = mm.register_module_parameter_registration_hook(
        lambda m, n, p: seen.append(("param", n)))
    bn = lib.nn.BatchNorm1d(2)
    seq = lib.nn.Sequential(lib.nn.Linear(1, 1))
    seq.extra = lib.nn.ReLU()
    bn.running_mean = lib.ones(2)
    values = bn.running_mean.tolist(), bn.running_var.tolist()
    for h in (hb, hm, hp):
        h.remove()
    lib.nn.Linear(1, 1)
    return seen, values


def test_registration_hooks_like_torch():
    assert _registrations(ember) == _registrations(torch)


def test_regular_and_full_global_backward_hooks_do_not_mix():
    for lib in (torch, ember):
        mm = lib.nn.modules.module
        mm.register_module_full_backward_hook(lambda *a: None).remove()
        with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks"):
            mm.register_module_backward_hook(lambda *a: None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ember.nn.Linear(2, 2)(ember.ones(1, 2, requires_grad=True)).sum().backward()
