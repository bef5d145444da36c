"""The extern steps ``cpp_wrapper`` runs in C: matmul through SciPy's BLAS (2-D, batched,
broadcast, with strided or transposed operands), an embedding-style gather and index_put
(index tensors over the leading dims; an embedding's gradient adds rows).

Each emitter returns C lines, or raises `Ineligible`.  A status other than 0 leaves the
entry point (``return N;``): a size BLAS's 32-bit ints cannot hold, an index out of range.
The shim then runs the Python wrapper, which computes the value or raises eager's error."""
from .. import sizes as _sizes
from ..passes.lower import _keys, _shape
from .strided import Layout

__all__ = ["Ineligible", "matrix_mode", "batch_strides", "matmul_lines", "gather_lines",
           "index_put_lines", "index_shape"]


class Ineligible(Exception):
    """Why this graph keeps the Python wrapper."""


def _one(n):
    return _sizes.key(n) == 1


def matrix_mode(rows, cols, s_row, s_col):
    """``(trans, ld)`` reading a rows x cols matrix with these strides as BLAS's row-major
    operand (trans: stored transposed), or None when it must be copied first (no unit
    stride, or a leading dimension too small to be a real matrix: expanded, overlapping)."""
    def fits(ld, need):  # (a symbolic ld is checked at run time: the status is 1)
        return not (isinstance(ld, int) and isinstance(need, int) and need > 0 and ld < need)
    if s_col == 1 or _one(cols):
        if _one(rows) or fits(s_row, cols):
            return 0, (s_row if not _one(rows) else cols)
    if s_row == 1 or _one(rows):
        if _one(cols) or fits(s_col, rows):
            return 1, (s_col if not _one(cols) else rows)
    return None


def batch_strides(lay, batch):
    """Per batch dim of the output: this operand's stride (0 where it broadcasts)."""
    own = lay.shape[:-2]
    lead = len(batch) - len(own)
    out = []
    for d, n in enumerate(batch):
        k = d - lead
        if k < 0 or (_one(own[k]) and not _one(n)):
            out.append(0)
        else:
            out.append(lay.strides[k])
    return out


def _fold_rows(a, batch_a, batch):
    """Whether A's batch dims continue its rows at one stride (so the product is one gemm
    with batch x M rows): true for a contiguous (B, T, K) input of a linear layer."""
    step = a.strides[-2]
    size = a.shape[-2]
    for n, s in reversed(list(zip(batch, batch_a))):
        if _one(n):
            continue
        if _sizes.key(s) != _sizes.key(_sizes.mul(step, size)):
            return False
        step, size = s, n
    return True


def matmul_lines(node, lay_a, lay_b, out, ensure_contiguous):
    """C lines for ``out = lay_a @ lay_b`` (``out`` a contiguous C array of the node's
    shape); ``ensure_contiguous(operand index)`` returns the operand copied contiguous
    when its strides suit no BLAS call."""
    m = node.meta["val"]
    if m.dtype.name not in ("float32", "float64"):
        raise Ineligible(f"matmul of {m.dtype.name}")
    sfx, fn = ("f32", "sgemm") if m.dtype.name == "float32" else ("f64", "dgemm")
    a, b = lay_a, lay_b
    if len(a.shape) == 1:  # (K) @ (..., K, N): one row
        a = Layout(a.root, a.offset, (1,) + a.shape, (0,) + a.strides)
    if len(b.shape) == 1:  # (..., M, K) @ (K): one column
        b = Layout(b.root, b.offset, b.shape + (1,), b.strides + (0,))
    M, K, N = a.shape[-2], a.shape[-1], b.shape[-1]
    if _keys([b.shape[-2]]) != _keys([K]):
        raise Ineligible("matmul sizes the generator cannot match")
    out_shape = tuple(_shape(node))
    batch = out_shape[:len(out_shape) - (len(lay_a.shape) > 1) - (len(lay_b.shape) > 1)]
    modes = []
    for k, lay in ((0, a), (1, b)):
        mode = matrix_mode(lay.shape[-2], lay.shape[-1], lay.strides[-2], lay.strides[-1])
        if mode is None:
            fixed = ensure_contiguous(k)
            lay = Layout(fixed.root, fixed.offset, lay.shape,
                         _sizes.contiguous_strides(lay.shape))
            if k == 0:
                a = lay
            else:
                b = lay
            mode = matrix_mode(lay.shape[-2], lay.shape[-1], lay.strides[-2], lay.strides[-1])
            if mode is None:
                raise Ineligible("a matmul operand BLAS cannot read even when contiguous")
        modes.append(mode)
    (ta, lda), (tb, ldb) = modes
    sa, sb = batch_strides(a, batch), batch_strides(b, batch)
    call = "if (ember_gemm_{}({}, {}, {{M}}, {}, {}, 1, {{A}}, {}, {{B}}, {}, 0, {{C}}, {}, " \
        "ember_blas.{})) return 1;".format(
            sfx, ta, tb, _sizes.c_text(N), _sizes.c_text(K), _sizes.c_text(lda),
            _sizes.c_text(ldb), _sizes.c_text(N), fn)
    if not batch or (ta == 0 and all(s == 0 for s in sb) and _fold_rows(a, sa, batch)):
        rows = _sizes.mul(_sizes.prod(batch), M)
        return [call.format(M=_sizes.c_text(rows), A=a.pointer(), B=b.pointer(), C=out)]
    # one gemm per batch element: offsets from the loop counters
    L, oa, ob, oc = [], [], [], []
    c_step = _sizes.mul(M, N)
    for d, n in enumerate(batch):
        L.append("    " * d + f"for (int64_t q{d} = 0; q{d} < {_sizes.c_text(n)}; q{d}++)")
        oa.append(f"q{d}*{_sizes.c_text(sa[d])}")
        ob.append(f"q{d}*{_sizes.c_text(sb[d])}")
    lin = "0"
    for d, n in enumerate(batch):
        lin = f"({lin})*{_sizes.c_text(n)} + q{d}"
    oc = f"({lin})*{_sizes.c_text(c_step)}"
    L.append("    " * len(batch) + call.format(
        M=_sizes.c_text(M), A=f"{a.pointer()} + {' + '.join(oa)}",
        B=f"{b.pointer()} + {' + '.join(ob)}", C=f"{out} + {oc}"))
    return ["{"] + ["    " + ln for ln in L] + ["}"]


def gather_lines(node, table, index, out, ctype, itype, negative_wraps):
    """C lines for ``out = table[index]`` (an advanced index of dim 0 by one integer
    tensor, or an embedding lookup, where a negative index is out of range: not
    ``negative_wraps``); ``table`` and ``index`` are contiguous C pointers."""
    x, i = (a.meta["val"] for a in node.args[:2])
    rows = _sizes.size(x.shape[0])
    row = _sizes.prod([_sizes.size(d) for d in x.shape[1:]])
    count = _sizes.prod([_sizes.size(d) for d in i.shape])
    V, R = _sizes.c_text(rows), _sizes.c_text(row)
    lines = [
        "{",
        f"    const {itype} *ix = (const {itype} *){index};",
        f"    for (int64_t j = 0; j < {_sizes.c_text(count)}; j++) {{",
        "        int64_t v = (int64_t)ix[j];",
        f"        if (v < 0) v += {V};" if negative_wraps else "",
        f"        if (v < 0 || v >= {V}) return 2;",
        f"        memcpy({out} + j*{R}, {table} + v*{R}, sizeof({ctype}) * {R});",
        "    }",
        "}"]
    return [ln for ln in lines if ln]


def index_put_lines(node, x, values, indices, out, ctype):
    """C lines for ``out = index_put(x, values, *indices, accumulate=)``: index tensors
    over x's leading dims (their layouts, broadcast together to the index shape I), values
    a contiguous C pointer of shape I + x.shape[len(indices):], ``x`` and ``out``
    contiguous C pointers.  Positions are written in order (the last of duplicates wins,
    or each adds, as NumPy's assignment and ``add.at`` do); a negative index counts from
    the end, one out of range leaves with status 2."""
    xs = [_sizes.size(d) for d in node.args[0].meta["val"].shape]
    k = len(indices)
    ishape = indices[0][0].shape
    row = _sizes.prod(xs[k:])
    c = _sizes.c_text
    op = "+=" if node.kwargs.get("accumulate") else "="
    L = ["{", f"    if ({out} != {x}) memcpy({out}, {x}, sizeof({ctype}) * "
         f"{c(_sizes.prod(xs))});", "    int64_t j = 0;"]
    for d, n in enumerate(ishape):
        L.append("    " * (d + 1) + f"for (int64_t p{d} = 0; p{d} < {c(n)}; p{d}++)")
    ind = "    " * (len(ishape) + 1)
    body = ["int64_t f = 0, v;"]
    for d, (lay, itype) in enumerate(indices):
        pos = [c(lay.offset)] + [f"p{e}*{c(s)}" for e, s in enumerate(lay.strides)
                                 if _sizes.key(s) != 0]
        body += [f"v = (int64_t)((const {itype} *){lay.root})[{' + '.join(pos)}];",
                 f"if (v < 0) v += {c(xs[d])};",
                 f"if (v < 0 || v >= {c(xs[d])}) return 2;",
                 f"f = f*{c(xs[d])} + v;"]
    body += [f"{ctype} *dst = {out} + f*{c(row)};",
             f"const {ctype} *src = {values} + j*{c(row)};",
             f"for (int64_t r = 0; r < {c(row)}; r++) dst[r] {op} src[r];", "j++;"]
    L += [ind + "{"] + [ind + "    " + ln for ln in body] + [ind + "}", "}"]
    return L


def index_shape(shapes):
    """The broadcast shape of index tensors of these shapes, or `Ineligible` where two
    sizes differ that are not 1 (or cannot be told apart: symbolic)."""
    nd = max(len(sh) for sh in shapes)
    out = []
    for d in range(nd):
        size = 1
        for sh in shapes:
            n = sh[d - nd + len(sh)] if d - nd + len(sh) >= 0 else 1
            if _one(n):
                continue
            if not _one(size) and _sizes.key(size) != _sizes.key(n):
                raise Ineligible("index tensors of shapes the generator cannot broadcast")
            size = n
        out.append(size)
    return tuple(out)
