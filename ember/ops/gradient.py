"""``torch.gradient``: central finite differences, one-sided at the edges; a composite of
slices and arithmetic, so it is differentiable and batches under vmap."""
import numbers

from .._core.dispatch import overridable
from .._core.tensor import Tensor
from .shape import cat

__all__ = ["gradient"]


def _check(input, n_spacing, dims, edge_order):
    if input.dtype.name == "uint8":
        raise RuntimeError("torch.gradient does not support uint8 input.")
    if n_spacing is not None and dims is None and n_spacing != input.dim():
        raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar, or a "
                           f"list of length equal to 'self.dim() = {input.dim()}', since dim "
                           f"argument was not given, but got a list of length {n_spacing}")
    if n_spacing is not None and dims is not None and n_spacing != len(dims):
        raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or it's "
                           f"spacing and dim arguments to have the same length, but got a "
                           f"spacing argument of length {n_spacing} and a dim argument of length "
                           f"{len(dims)}.")
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    checked = dims if dims is not None else range(input.dim())
    wrapped = [_wrap(d, input.dim()) for d in checked]
    for d in wrapped:
        if wrapped.count(d) > 1:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    if any(input.size(d) < edge_order + 1 for d in wrapped):
        raise RuntimeError("torch.gradient expected each dimension size to be at least "
                           "edge_order+1")


def _wrap(d, n):
    if not -max(n, 1) <= d < max(n, 1):
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[{-max(n, 1)}, {max(n, 1) - 1}], but got {d})")
    return d % max(n, 1)


def _slicer(f, d):
    """``s(a, b)``: ``f[a:b]`` along dim ``d`` (negative ends count from the end)."""
    n = f.size(d)

    def s(a, b):
        a, b = a % n, n if b is None else b % n
        return f.narrow(d, a, b - a)
    return s


def _uniform(f, d, h, edge_order):
    s = _slicer(f, d)
    center = (s(2, None) - s(0, -2)) / h
    if edge_order == 1:
        first = (s(1, 2) - s(0, 1)) / h
        last = (s(-1, None) - s(-2, -1)) / h
    else:
        first = (-1.5 * s(0, 1) + 2 * s(1, 2) - 0.5 * s(2, 3)) / h
        last = (0.5 * s(-3, -2) - 2 * s(-2, -1) + 1.5 * s(-1, None)) / h
    return cat((first, center / 2, last), d)


def _coordinates(f, d, x, edge_order):
    if x.dim() != 1:
        raise RuntimeError(f"torch.gradient expected each element of spacing to have one "
                           f"dimension, but got an element with {x.dim()} dimensions!")
    s = _slicer(f, d)
    shape = [1] * f.dim()
    shape[d] = -1
    dx = x.diff()
    dx1, dx2 = dx[:-1], dx[1:]
    a = (-dx2 / (dx1 * (dx1 + dx2))).reshape(shape)
    b = ((dx2 - dx1) / (dx1 * dx2)).reshape(shape)
    c = (dx1 / (dx2 * (dx1 + dx2))).reshape(shape)
    center = a * s(0, -2) + b * s(1, -1) + c * s(2, None)
    if edge_order == 1:
        first = (s(1, 2) - s(0, 1)) / dx[0]
        last = (s(-1, None) - s(-2, -1)) / dx[-1]
    else:
        h0, h1 = dx[0], dx[1]
        first = (-(2.0 * h0 + h1) / (h0 * (h0 + h1)) * s(0, 1) + (h0 + h1) / (h0 * h1) * s(1, 2)
                 + (-h0) / (h1 * (h0 + h1)) * s(2, 3))
        g1, g2 = dx[-1], dx[-2]
        last = (g1 / (g2 * (g1 + g2)) * s(-3, -2) - (g1 + g2) / (g1 * g2) * s(-2, -1)
                + (2 * g1 + g2) / (g1 * (g1 + g2)) * s(-1, None))
    return cat((first, center, last), d)


@overridable
def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """Estimates the gradient of a function g : R^n -> R in one or more dimensions using the
    second-order accurate central differences method, and either first or second order
    estimates at the boundaries.  Returns one tensor per differentiated dimension.

    ``spacing``: a scalar (the step along every dimension), a list of scalars (one step per
    dimension) or a list of 1-D coordinate tensors; ``dim``: an int or a list of ints (by
    default every dimension); ``edge_order``: 1 or 2."""
    dims = [dim] if isinstance(dim, int) else (list(dim) if dim is not None else None)
    if isinstance(spacing, Tensor) and spacing.dim() == 0:
        spacing = spacing.item()
    scalar = isinstance(spacing, numbers.Number)
    _check(input, None if scalar else len(spacing), dims, edge_order)
    todo = [_wrap(d, input.dim()) for d in (dims if dims is not None else range(input.dim()))]
    steps = [spacing] * len(todo) if scalar else list(spacing)
    out = []
    for d, h in zip(todo, steps):
        if isinstance(h, Tensor) and h.dim() == 0:
            h = h.item()
        out.append(_coordinates(input, d, h, edge_order) if isinstance(h, Tensor) else
                   _uniform(input, d, h, edge_order))
    return tuple(out)
