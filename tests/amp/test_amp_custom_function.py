"""torch.amp.custom_fwd / custom_bwd (and the deprecated torch.cuda.amp spellings): what the
decorated forward and backward see under autocast, vs torch."""
import pytest
import torch

import ember

LIBS = pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])


def _function(lib, cast_inputs):
    seen = {}

    class Mul(lib.autograd.Function):
        @staticmethod
        @lib.amp.custom_fwd(device_type="cpu", cast_inputs=cast_inputs)
        def forward(ctx, a, b):
            seen["fwd"] = (a.dtype, b.dtype, lib.is_autocast_enabled("cpu"))
            ctx.save_for_backward(a, b)
            return a @ b

        @staticmethod
        @lib.amp.custom_bwd(device_type="cpu")
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            seen["bwd"] = lib.is_autocast_enabled("cpu")
            return g @ b.t(), a.t() @ g
    return Mul, seen


def _name(dt):
    return str(dt).split(".")[1]


@LIBS
@pytest.mark.parametrize("cast_inputs", [None, "float32"])
@pytest.mark.parametrize("autocast_on", [True, False])
def test_forward_and_backward_autocast_state(lib, cast_inputs, autocast_on):
    Mul, seen = _function(lib, None if cast_inputs is None else getattr(lib, cast_inputs))
    a = lib.ones(2, 2, requires_grad=True)
    b = lib.ones(2, 2, dtype=lib.bfloat16)
    with lib.autocast("cpu", dtype=lib.bfloat16, enabled=autocast_on):
        out = Mul.apply(a, b.float() if not autocast_on or cast_inputs else b)
    out.float().sum().backward()
    fa, fb, fwd_autocast = seen["fwd"]
    expect_cast = cast_inputs is not None and autocast_on
    assert _name(fa) == "float32" and (_name(fb) == "float32" if expect_cast or not autocast_on
                                       else _name(fb) == "bfloat16")
    assert fwd_autocast == (autocast_on and cast_inputs is None)
    assert seen["bwd"] == (autocast_on and cast_inputs is None)
    assert a.grad.tolist() == [[2.0, 2.0], [2.0, 2.0]]


@LIBS
def test_device_type_must_be_a_string(lib):
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
        lib.amp.custom_fwd(lambda ctx, x: x, device_type=None)


@LIBS
def test_cuda_spellings_are_deprecated_and_pass_through_without_cuda(lib):
    with pytest.warns(FutureWarning, match="torch.amp.custom_fwd"):
        f = lib.cuda.amp.custom_fwd(lambda ctx, x: x * 2)
    with pytest.warns(FutureWarning, match="torch.amp.custom_bwd"):
        g = lib.cuda.amp.custom_bwd(lambda ctx, x: x * 3)

    class Ctx:
        pass
    ctx = Ctx()
    assert f(ctx, lib.ones(1)).tolist() == [2.0] and g(ctx, lib.ones(1)).tolist() == [3.0]
