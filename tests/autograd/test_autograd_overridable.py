"""autograd.grad / autograd.backward reach function modes, against torch: the mode sees
the public function and runs it with itself popped (it sees none of the calls inside)."""
import numpy as np
import pytest
import torch

import ember


def _recording_mode(lib):
    class Recorder(lib.overrides.TorchFunctionMode):
        def __init__(self):
            super().__init__()
            self.seen = []

        def __torch_function__(self, func, types, args=(), kwargs=None):
            self.seen.append(func)
            return func(*args, **(kwargs or {}))
    return Recorder()


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_function_mode_sees_autograd_grad(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    mode = _recording_mode(lib)
    with mode:
        (g,) = lib.autograd.grad(y, x, retain_graph=True)
    assert mode.seen == [lib.autograd.grad]
    np.testing.assert_allclose(g.detach().numpy(), [2.0, 4.0])


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_function_mode_sees_autograd_backward(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    mode = _recording_mode(lib)
    y = (x * 3).sum()
    with mode:
        lib.autograd.backward([y], inputs=[x])
    assert mode.seen == [lib.autograd.backward]
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_function_mode_can_replace_autograd_grad(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)

    class Doubling(lib.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            r = func(*args, **(kwargs or {}))
            if func is lib.autograd.grad:
                return tuple(g * 2 for g in r)
            return r

    with Doubling():
        (g,) = lib.autograd.grad((x * x).sum(), [x])
    np.testing.assert_allclose(g.detach().numpy(), [4.0, 8.0])


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_function_mode_sees_tensor_backward_once(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    mode = _recording_mode(lib)
    with mode:
        y.backward()
    assert mode.seen == [lib.Tensor.backward]
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0])
