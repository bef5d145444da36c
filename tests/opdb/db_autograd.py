"""OpInfos of autograd's own operators: a custom ``autograd.Function`` (its forward is the
``autograd_function_apply`` operator, its backward ``autograd_function_backward``)."""
from .core import OpInfo, SampleInput, make


def _cube_times(lib, x, y):
    class CubeTimes(lib.autograd.Function):
        """x**3 * y with a hand-written, differentiable backward."""

        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a ** 3 * b

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            return 3 * a * a * b * g, a ** 3 * g
    return CubeTimes.apply(x, y)


def _pairs(dtype, rng):
    yield SampleInput((make((3, 4), dtype, rng), make((3, 4), dtype, rng)), name="same")
    yield SampleInput((make((2, 3), dtype, rng), make((2, 3), dtype, rng, noncontig=True)),
                      name="noncontig")


OPS = [
    OpInfo("autograd.Function", fn=_cube_times, samples=_pairs),
]
