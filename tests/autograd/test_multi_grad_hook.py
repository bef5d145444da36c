"""autograd.graph.register_multi_grad_hook and Variable._execution_engine.queue_callback,
against torch."""
import pytest
import torch

import ember

LIBS = pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])


def _calls(lib, mode):
    a, b, c = (lib.ones(2, requires_grad=True) for _ in range(3))
    x, y = a * 2, b * 3
    log = []

    def fn(g):
        if mode == "all":
            log.append([None if t is None else t.tolist() for t in g])
        else:
            log.append(g.tolist())
    h = lib.autograd.graph.register_multi_grad_hook((x, y), fn, mode=mode)
    (x * 5).sum().backward(retain_graph=True)  # y is not reached
    (x + y).sum().backward(retain_graph=True)
    (c * 1).sum().backward()  # neither is reached: no call
    h.remove()
    (x + y).sum().backward()  # removed: no call
    return log


@pytest.mark.parametrize("mode", ["all", "any"])
def test_multi_grad_hook_like_torch(mode):
    assert _calls(ember, mode) == _calls(torch, mode)


def test_multi_grad_hook_mode_is_checked():
    for lib in (torch, ember):
        with pytest.raises(ValueError, match="Expects mode to be one of"):
            lib.autograd.graph.register_multi_grad_hook((lib.ones(1, requires_grad=True),),
                                                        print, mode="some")


@LIBS
def test_queue_callback_runs_at_the_end_of_backward(lib):
    order = []
    x = lib.ones(2, requires_grad=True)
    y = x * 2

    def hook(g):
        order.append("hook")
        lib.autograd.Variable._execution_engine.queue_callback(lambda: order.append("end"))
    y.register_hook(hook)
    z = y * 3
    z.register_hook(lambda g: order.append("z"))
    z.sum().backward()
    assert order == ["z", "hook", "end"]
    with pytest.raises(RuntimeError, match="only be installed during backward"):
        lib.autograd.Variable._execution_engine.queue_callback(print)
