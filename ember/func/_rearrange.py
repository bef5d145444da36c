"""``torch.func.rearrange``: einops-style rearrangement of a tensor's dimensions by a pattern
such as ``"b c (h w) -> b h w c"`` -- splits, merges, permutations, unit axes and an
ellipsis -- as one reshape, one permute and one reshape."""
import math
import re

from .._core.tensor import Tensor
from ..ops.shape import stack

__all__ = ["rearrange", "DimensionBindError"]


class DimensionBindError(Exception):
    """The sizes of a pattern's dimensions cannot be bound to the tensor's."""


_TOKEN = re.compile(r"\.\.\.|\(|\)|[A-Za-z_][A-Za-z0-9_]*|\d+")


def _parse(side):
    """A side of the pattern as a list of groups, each a list of names ('...' for the
    ellipsis, '1' for a unit axis); a bare name is a group of one."""
    groups, current = [], None
    rest = side.strip()
    for tok in _TOKEN.findall(side):
        rest = rest.replace(tok, "", 1)
        if tok == "(":
            if current is not None:
                raise ValueError(f"Nested parentheses are not allowed in '{side}'")
            current = []
        elif tok == ")":
            if current is None:
                raise ValueError(f"Unbalanced parentheses in '{side}'")
            groups.append(current)
            current = None
        elif tok.isdigit() and tok != "1":
            raise ValueError(f"Non-unit anonymous dimensions are not supported: '{tok}'")
        elif current is not None:
            if tok != "1":
                current.append(tok)
        else:
            groups.append([] if tok == "1" else [tok])
    if current is not None:
        raise ValueError(f"Unbalanced parentheses in '{side}'")
    if rest.strip():
        raise ValueError(f"Invalid characters in pattern side '{side}': '{rest.strip()}'")
    return groups


def _names(groups):
    return [n for g in groups for n in g]


def rearrange(tensor, pattern, **axes_lengths):
    """A reader-friendly smart element reordering for multidimensional tensors: the left side
    of ``pattern`` names ``tensor``'s dimensions (parentheses: one dimension made of several,
    whose sizes come from ``axes_lengths`` except at most one), the right side the result's.
    A list or tuple of tensors is stacked along a new first dimension first."""
    if isinstance(tensor, (list, tuple)):
        tensor = stack(list(tensor))
    if not isinstance(tensor, Tensor):
        raise TypeError(f"rearrange expects a Tensor, got {type(tensor).__name__}")
    if "->" not in pattern:
        raise ValueError(f"Pattern must contain '->': '{pattern}'")
    left, right = (_parse(s) for s in pattern.split("->"))
    lnames, rnames = _names(left), _names(right)
    for names in (lnames, rnames):
        seen = set()
        for n in names:
            if n in seen and n != "...":
                raise ValueError(f"Indexing expression contains duplicate dimension '{n}'")
            seen.add(n)
    if set(lnames) != set(rnames):
        raise ValueError(f"Identifiers only on one side of rearrange expression (should be on "
                         f"both): {set(lnames) ^ set(rnames)}")
    ell = [i for i, g in enumerate(left) if "..." in g]
    if ell and left[ell[0]] != ["..."]:
        raise ValueError("An ellipsis cannot be inside parentheses on the left side")
    n_ell = tensor.dim() - (len(left) - 1) if ell else 0
    if (ell and n_ell < 0) or (not ell and len(left) != tensor.dim()):
        raise ValueError(f"Number of dimensions in pattern ({len(left)}) must be equal to the "
                         f"number of dimensions in the tensor ({tensor.dim()})")
    sizes = {k: int(v) for k, v in axes_lengths.items()}
    elem_shape, elem_names = [], []
    dim = 0
    for g in left:
        if g == ["..."]:
            ell_sizes = list(tensor.shape[dim:dim + n_ell])
            elem_shape += ell_sizes
            elem_names += [f"...{i}" for i in range(n_ell)]
            dim += n_ell
            continue
        total = tensor.shape[dim]
        unknown = [n for n in g if n not in sizes]
        if len(unknown) > 1:
            raise DimensionBindError(f"cannot infer the sizes of two dimensions at once "
                                     f"{unknown[0]} and {unknown[1]}")
        known = math.prod(sizes[n] for n in g if n in sizes)
        if unknown:
            if known == 0 or total % known:
                pack = tuple(sizes.get(n, "?") for n in g)
                raise DimensionBindError(f"inferred dimension does not evenly fit into larger "
                                         f"dimension: {total} vs {pack}")
            sizes[unknown[0]] = total // known
        elif known != total:
            raise DimensionBindError(f"Dimension sizes do not match ({total} != {known}) when "
                                     f"matching dimension pack {tuple(g)}")
        elem_shape += [sizes[n] for n in g]
        elem_names += g
        dim += 1
    x = tensor.reshape(tuple(elem_shape))
    order = []
    out_shape = []
    for g in right:
        names = [f"...{i}" for i in range(n_ell)] if g == ["..."] else \
            [m for n in g for m in ([f"...{i}" for i in range(n_ell)] if n == "..." else [n])]
        order += [elem_names.index(n) for n in names]
        if g == ["..."]:
            out_shape += [elem_shape[elem_names.index(n)] for n in names]
        else:
            out_shape.append(math.prod(elem_shape[elem_names.index(n)] for n in names))
    return x.permute(tuple(order)).reshape(tuple(out_shape))
