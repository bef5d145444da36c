"""Strided layouts for ``cpp_wrapper``: the views the Python wrapper makes with NumPy
(permute, slice, select, expand, flip, reshape), as C pointer arithmetic.

A `Layout` is an element ``offset`` into a root buffer (contiguous memory a C variable
points at) and one ``stride`` per dim, sizes ints or `sizes.Sym`.  `view_layout` gives
the layout of a movement node's value from its input's, or None where the value is no
view of that memory (a reshape across non-mergeable strides): it is then copied, as
NumPy's reshape would (`copy_loops`)."""
import dataclasses

from .. import sizes as _sizes
from ..passes.lower import _keys, _shape

__all__ = ["Layout", "contiguous", "expanded", "view_layout", "copy_loops", "Unsupported"]


class Unsupported(Exception):
    """A movement node ``cpp_wrapper`` has no layout for (a symbolic slice bound)."""


@dataclasses.dataclass(frozen=True)
class Layout:
    root: str       # the C variable of the memory
    offset: object  # elements
    shape: tuple
    strides: tuple

    def is_contiguous(self):
        """Row-major with no gaps (size-1 dims have any stride)."""
        want = _sizes.contiguous_strides(self.shape)
        return all(_sizes.key(n) == 1 or _sizes.key(s) == _sizes.key(w)
                   for n, s, w in zip(self.shape, self.strides, want))

    def pointer(self):
        return self.root if self.offset == 0 else \
            f"({self.root} + {_sizes.c_text(self.offset)})"


def contiguous(root, shape):
    shape = tuple(shape)
    return Layout(root, 0, shape, _sizes.contiguous_strides(shape))


def _index(x, key):
    """slice/select/_index_view: entries (start, stop, step) or ints, over leading dims."""
    off, shape, strides, d = x.offset, [], [], 0
    for entry in key:
        size, stride = x.shape[d], x.strides[d]
        if isinstance(entry, tuple):
            if entry == (None, None, None):
                shape.append(size)
                strides.append(stride)
            else:
                if not isinstance(size, int):
                    raise Unsupported("a slice of a symbolic dim")
                start, stop, step = slice(*entry).indices(size)
                shape.append(len(range(start, stop, step)))
                strides.append(_sizes.mul(stride, step))
                off = _sizes.add(off, _sizes.mul(stride, start))
        else:
            i = int(entry)
            if i < 0:
                if not isinstance(size, int):
                    raise Unsupported("a negative index into a symbolic dim")
                i += size
            off = _sizes.add(off, _sizes.mul(stride, i))
        d += 1
    return Layout(x.root, off, tuple(shape) + x.shape[d:], tuple(strides) + x.strides[d:])


def _reshape(x, shape):
    """The strides of ``x`` read as ``shape`` without a copy, or None: dims map one to
    one where the sizes agree, static groups split or merge where their strides chain
    (NumPy's rule), size-1 dims come and go."""
    old = [(n, s) for n, s in zip(x.shape, x.strides) if _sizes.key(n) != 1]
    new_shape = tuple(shape)
    out, i = [], 0
    dims = [n for n in new_shape if _sizes.key(n) != 1]
    j = 0
    while j < len(dims):
        if i < len(old) and _sizes.key(old[i][0]) == _sizes.key(dims[j]):
            out.append(old[i][1])
            i += 1
            j += 1
            continue
        # a static group: old dims i..i2 and new dims j..j2 of equal product
        if i >= len(old) or not isinstance(old[i][0], int) or not isinstance(dims[j], int):
            return None
        i2, j2, po, pn = i + 1, j + 1, old[i][0], dims[j]
        while po != pn:
            if po < pn:
                if i2 >= len(old) or not isinstance(old[i2][0], int):
                    return None
                po *= old[i2][0]
                i2 += 1
            else:
                if j2 >= len(dims) or not isinstance(dims[j2], int):
                    return None
                pn *= dims[j2]
                j2 += 1
        for k in range(i, i2 - 1):  # the old group is one run of memory
            if _sizes.key(old[k][1]) != _sizes.key(_sizes.mul(old[k + 1][1], old[k + 1][0])):
                return None
        step = old[i2 - 1][1]
        group = []
        for n in reversed(dims[j:j2]):
            group.append(step)
            step = _sizes.mul(step, n)
        out += reversed(group)
        i, j = i2, j2
    if i != len(old):
        return None
    it = iter(out)
    strides = tuple(0 if _sizes.key(n) == 1 else next(it) for n in new_shape)
    return Layout(x.root, x.offset, new_shape, strides)


def expanded(x, shape):
    """Layout ``x`` broadcast to ``shape`` (new leading dims and size-1 dims at stride 0)."""
    shape = tuple(shape)
    lead = len(shape) - len(x.shape)
    if lead < 0:
        raise Unsupported("a broadcast to fewer dims")
    strides = [0] * lead
    for d, (n, s) in enumerate(zip(x.shape, x.strides)):
        strides.append(s if _sizes.key(n) == _sizes.key(shape[lead + d]) else 0)
    return Layout(x.root, x.offset, shape, tuple(strides))


def view_layout(node, x):
    """The layout of movement ``node``'s value given its input's layout ``x``, or None when
    it needs a copy; raises `Unsupported`."""
    name = node.target.name
    shape = _shape(node)
    if name == "_stop_gradient":
        return x
    if name == "permute":
        dims = [d % len(x.shape) for d in node.kwargs["dims"]]
        return Layout(x.root, x.offset, tuple(x.shape[d] for d in dims),
                      tuple(x.strides[d] for d in dims))
    if name == "expand":
        return expanded(x, shape)
    if name == "flip":
        off, strides = x.offset, list(x.strides)
        for d in {d % len(x.shape) for d in node.kwargs["dims"]}:
            off = _sizes.add(off, _sizes.mul(_sizes.add(x.shape[d], -1), strides[d]))
            strides[d] = _sizes.mul(strides[d], -1)
        return Layout(x.root, off, x.shape, tuple(strides))
    if name in ("slice", "select", "_index_view"):
        out = _index(x, node.kwargs["key"])
        if _keys(out.shape) != _keys(shape):
            raise Unsupported(f"{name} of an unexpected shape")
        return out
    if name in ("view", "_reshape_copy"):
        if x.is_contiguous():
            return Layout(x.root, x.offset, shape, _sizes.contiguous_strides(shape))
        return _reshape(x, shape)
    raise Unsupported(f"no layout for {name}")


def region(x, key):
    """The layout of ``x[key]`` (a basic index key of slices and ints), for writes into it."""
    if any(entry is None for entry in key):
        raise Unsupported("an index key that inserts dims")
    return _index(x, key)


def copy_between(ctype, src, dst):
    """C lines copying layout ``src`` into layout ``dst`` of the same shape."""
    nd = len(src.shape)
    L = ["{"]
    si, di = [_sizes.c_text(src.offset)], [_sizes.c_text(dst.offset)]
    for d, (n, s, t) in enumerate(zip(src.shape, src.strides, dst.strides)):
        L.append("    " * (d + 1) + f"for (int64_t j{d} = 0; j{d} < {_sizes.c_text(n)}; j{d}++)")
        si.append(f"j{d}*{_sizes.c_text(s)}")
        di.append(f"j{d}*{_sizes.c_text(t)}")
    L.append("    " * (nd + 1) + f"(({ctype} *){dst.root})[{' + '.join(di)}] = "
             f"(({ctype} *){src.root})[{' + '.join(si)}];")
    L.append("}")
    return L


def copy_loops(ctype, src, dst):
    """C lines copying layout ``src`` into the contiguous array ``dst`` (a C pointer)."""
    nd = len(src.shape)
    L = ["{", "    int64_t p = 0;"]
    index = [_sizes.c_text(src.offset)]
    for d, (n, s) in enumerate(zip(src.shape, src.strides)):
        L.append("    " * (d + 1) + f"for (int64_t j{d} = 0; j{d} < {_sizes.c_text(n)}; j{d}++)")
        index.append(f"j{d}*{_sizes.c_text(s)}")
    L.append("    " * (nd + 1) + f"{dst}[p++] = (({ctype} *){src.root})[{' + '.join(index)}];")
    L.append("}")
    return L
