"""Moves to devices ember has no backend for (Tensor/Module .xpu/.ipu/.mtia) raise torch's
errors of a build without them, or move to a third-party backend registered under that name;
torch.get_device_module and the torch.cpu device module behave as torch's on a CPU machine."""
import numpy as np
import pytest

import ember

import torch


def _error(fn):
    with pytest.raises(Exception) as e:
        fn()
    return type(e.value), str(e.value)


@pytest.mark.parametrize("kind", ["xpu", "ipu", "mtia"])
def test_moves_without_the_device_raise_torchs_error(kind):
    # (torch's ipu("ipu:0") fails later, in its dispatcher: ember reports the missing build)
    for args in [(), (None,), (0,), ("cpu",)] + ([] if kind == "ipu" else [(f"{kind}:0",)]):
        assert _error(lambda: getattr(ember.zeros(2), kind)(*args)) == \
            _error(lambda: getattr(torch.zeros(2), kind)(*args))
    assert _error(lambda: getattr(ember.nn.Linear(2, 2), kind)()) == \
        _error(lambda: getattr(torch.nn.Linear(2, 2), kind)())
    gm = ember.fx.symbolic_trace(ember.nn.Linear(2, 2))
    assert _error(lambda: getattr(gm, kind)(0)) == \
        _error(lambda: getattr(torch.nn.Linear(2, 2), kind)(0))


# (the fake_xpu fixture: tests/compat/conftest.py)


def test_moves_to_a_registered_backend(fake_xpu):
    x = ember.arange(4.0)
    y = x.xpu()
    assert y.device.type == "xpu" and x.device.type == "cpu"
    np.testing.assert_array_equal(y.cpu().numpy(), [0, 1, 2, 3])
    assert x.xpu(0).device.type == "xpu"
    m = ember.nn.Linear(3, 2)
    w = m.weight.detach().clone()
    assert m.xpu() is m
    assert m.weight.device.type == "xpu" and isinstance(m.weight, ember.nn.Parameter)
    np.testing.assert_array_equal(m.weight.detach().cpu().numpy(), w.numpy())
    # not an accelerator of its own kind: ipu is still missing
    with pytest.raises(RuntimeError, match="ipu"):
        x.ipu()


def test_get_device_module():
    assert ember.get_device_module() is ember.cpu  # no accelerator, as torch on this machine
    assert torch.get_device_module() is torch.cpu
    assert ember.get_device_module("cpu") is ember.cpu
    assert ember.get_device_module(ember.device("cpu")) is ember.cpu
    assert ember.get_device_module("cuda:0") is ember.cuda
    for bad in (3, 1.5):
        assert _error(lambda: ember.get_device_module(bad)) == \
            _error(lambda: torch.get_device_module(bad))
    t, _ = _error(lambda: torch.get_device_module("foo"))
    e, msg = _error(lambda: ember.get_device_module("foo"))
    assert e is t and "foo" in msg
    # torch.xpu is a module even without XPU; ember has no xpu module and says so
    with pytest.raises(RuntimeError, match="registered as 'torch.xpu'"):
        ember.get_device_module("xpu")
    assert not ember.accelerator.is_available() and not torch.accelerator.is_available()
    assert ember.accelerator.current_accelerator() is None


def test_cpu_module_matches_torch():
    c, tc = ember.cpu, torch.cpu
    for name in ("is_available", "is_initialized", "current_device", "device_count"):
        assert getattr(c, name)() == getattr(tc, name)()
    assert c.synchronize() is None and c.set_device("cpu") is None
    assert sorted(c.__all__) == sorted(tc.__all__)
    s = c.Stream()
    default = c.current_stream()
    with c.stream(s):
        assert c.current_stream() is s
        with c.stream(None):
            assert c.current_stream() is s
    assert c.current_stream() is default
    ev = c.Event()
    assert ev.query() is True and ev.record() is None and ev.wait(s) is None
    assert s.wait_stream(default) is None and s.wait_event(ev) is None
    caps, tcaps = c.get_capabilities(), tc.get_capabilities()
    assert caps["architecture"] == tcaps["architecture"]
    shared = [k for k in caps if k in tcaps and isinstance(tcaps[k], bool)]
    assert len(shared) > 20 or caps["architecture"] != "x86_64"
    assert {k: caps[k] for k in shared} == {k: tcaps[k] for k in shared}
    with pytest.raises(TypeError):
        caps["avx2"] = False
