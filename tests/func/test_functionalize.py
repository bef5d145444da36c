"""func.functionalize: torch's results (input mutations written back once, outputs never
aliasing inputs), composed with grad, vmap and jvp; each case run with torch and ember."""
import importlib

import pytest
import torch

import ember

LIBS = pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])


def _func(lib):
    return importlib.import_module(lib.__name__ + ".func")


def _mutating(x):
    v = x.view(2, 2)
    v.add_(1)            # an input mutated through a view
    y = x * 2
    y.mul_(3)            # an intermediate mutated
    return y, x.view(-1)


@LIBS
@pytest.mark.parametrize("remove", ["mutations", "mutations_and_views"])
def test_values_write_back_and_no_aliasing(lib, remove):
    x = lib.zeros(4)
    y, v = _func(lib).functionalize(_mutating, remove=remove)(x)
    assert x.tolist() == [1.0] * 4 and y.tolist() == [6.0] * 4 and v.tolist() == [1.0] * 4
    v.add_(10)           # the output is not a view of the input
    assert x.tolist() == [1.0] * 4


@LIBS
def test_untouched_inputs_are_not_written(lib):
    x = lib.ones(3)
    version = x._version
    out = _func(lib).functionalize(lambda a: (a * 2).sin())(x)
    assert x._version == version and out.tolist() == torch.ones(3).mul(2).sin().tolist()


@LIBS
@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning")
def test_composes_with_grad_vmap_jvp(lib):
    F = _func(lib)

    def g(x):
        y = x.clone()
        y.mul_(2)
        y.sin_()
        return y.sum()
    x = lib.tensor([0.1, 0.2, 0.3])
    assert lib.allclose(F.grad(F.functionalize(g))(x), 2 * lib.cos(2 * x))
    a = lib.zeros(2, 3)
    out = F.vmap(F.functionalize(lambda t: t.add_(1)))(a)
    assert out.tolist() == [[1.0] * 3] * 2 and a.tolist() == [[1.0] * 3] * 2
    p, t = F.jvp(F.functionalize(lambda t: t.mul_(2).sin()), (lib.ones(2),), (lib.ones(2),))
    assert lib.allclose(p, lib.sin(lib.tensor(2.0)).expand(2))
    assert lib.allclose(t, 2 * lib.cos(lib.tensor(2.0)).expand(2))


@LIBS
def test_bad_remove_is_a_runtime_error(lib):
    with pytest.raises(RuntimeError, match="received invalid argument for remove=views"):
        _func(lib).functionalize(lambda x: x, remove="views")
