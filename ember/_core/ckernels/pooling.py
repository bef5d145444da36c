"""Max and average pooling in C: the one template of their forward and backward loops,
rendered for the eager library and for the compiler.

NumPy max pooling is several passes over strided window views plus a tie-breaking pass,
and its gradient a bincount; one loop per window does both at once.  The loops are
written once here, over named sizes (``LEAD`` planes of ``L0..`` inputs, ``O0..``
outputs, window ``K``, stride ``S``, padding ``P``, dilation ``D`` per pooled dim):

* the eager library (`source.render`) gets ``ck_max_pool{1,2,3}d_f32/_f64``,
  ``ck_max_pool_backward_f32/_f64`` and average pooling's forward and backward
  ``ck_avg_pool{1,2,3}d[_backward]_f32/_f64``, whose sizes are read from a geometry array
  at run time; `max_pool`, `max_pool_backward`, `avg_pool` and `avg_pool_backward` call
  them on NumPy arrays, or return None when the arrays do not fit (the op then runs its
  NumPy kernel, which computes the same thing);
* the compiler's C externs (`ember._inductor.codegen.c_externs`) render the same loops
  with the sizes as literals (`forward_source` / `backward_source`), which the C compiler
  folds.

Semantics are torch's: a window's value is its first largest element, or its last NaN; the
index is the flat position in the input plane; positions outside the input (padding, ceil
mode) are never chosen, so a window of -inf points at its first in-bounds element.  The
backward adds each gradient at its index, in output order.  Planes (every dim before the
pooled ones) are split over ``nt`` OpenMP threads from ``min_work`` window elements; ``nt
== 1`` never touches the OpenMP runtime.
"""
import ctypes
import math

import numpy as np

__all__ = ["forward_source", "backward_source", "avg_forward_source", "avg_backward_source",
           "render", "max_pool", "max_pool_backward", "avg_pool", "avg_pool_backward"]

_CTYPE = {"f32": "float", "f64": "double"}
_SUFFIX = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}


def _plane_function(fname, params, work, body, pragma, min_work):
    """``void fname(params, int nt)`` running ``body`` (C lines using the plane ``l`` and
    the sizes of ``params``) for each of ``LEAD`` planes, over threads when ``work`` (a C
    expression) reaches ``min_work``; ``params[0]`` is the size declarations."""
    decls, params = params[0], params[1:]
    inner = "\n".join("            " + ln for ln in body)
    return f"""
void {fname}({', '.join(params)}, int nt) {{
{decls}
    if (nt > 1 && (int64_t)({work}) >= (int64_t){int(min_work)}) {{
        {pragma}(omp parallel for num_threads(nt) schedule(static))
        for (int64_t l = 0; l < LEAD; l++) {{
{inner}
        }}
    }} else {{
        for (int64_t l = 0; l < LEAD; l++) {{
{inner}
        }}
    }}
}}
"""


def _decls(names, values):
    return "\n".join(f"    const int64_t {k} = {v};" for k, v in zip(names, values))


def _names(n, extra):
    return (["LEAD"] + [f"L{d}" for d in range(n)] + [f"O{d}" for d in range(n)]
            + [f"K{d}" for d in range(n)] + [f"S{d}" for d in range(n)]
            + [f"P{d}" for d in range(n)] + list(extra))


def _row_windows(n, ctype, init, update, finish, advance):
    """The body lines for one plane: for each row of outputs (every dim but the last
    fixed), ``init`` (lines over the row's ``o``), then ``update`` (lines using the row
    position ``o`` and the input position ``q``) once per window offset, in window order,
    for the outputs whose window element is inside the input, then ``finish`` and
    ``advance`` (lines with the outer output positions ``o0..`` in scope)."""
    m = n - 1  # the row dim
    # each window column's range of outputs inside the input is the same for every row:
    # computed once per plane (two divisions per offset and row cost more than the row)
    body, ind = [
        f"int64_t ck_lo[K{m}], ck_hi[K{m}];",
        f"for (int64_t k = 0; k < K{m}; k++) {{",
        f"    const int64_t first = k * D{m} - P{m};  /* input col of output 0 */",
        f"    const int64_t lo = first >= 0 ? 0 : (S{m} - 1 - first) / S{m};",
        f"    const int64_t hi = L{m} - first <= 0 ? 0 : (L{m} - first + S{m} - 1) / S{m};",
        f"    ck_lo[k] = lo; ck_hi[k] = hi > O{m} ? O{m} : hi;",
        "}"], ""
    for d in range(m):  # the outer output dims: one row each
        body.append(f"{ind}for (int64_t o{d} = 0; o{d} < O{d}; o{d}++) {{")
        ind += "    "
    body += [f"{ind}for (int64_t o = 0; o < O{m}; o++) {{"]
    body += [f"{ind}    {ln}" for ln in init] + [f"{ind}}}"]
    inner, base = ind, "0"
    for d in range(m):  # the outer window dims, in window order
        body.append(f"{inner}for (int64_t k{d} = 0; k{d} < K{d}; k{d}++) {{")
        inner += "    "
        body.append(f"{inner}const int64_t h{d} = o{d} * S{d} - P{d} + k{d} * D{d};")
        body.append(f"{inner}if (h{d} < 0 || h{d} >= L{d}) continue;")
        base = f"({base}) * L{d} + h{d}" if d else "h0"
    body += [
        f"{inner}for (int64_t k{m} = 0; k{m} < K{m}; k{m}++) {{",
        f"{inner}    const int64_t off = ({base}) * L{m} + k{m} * D{m} - P{m};",
        f"{inner}    const int64_t lo = ck_lo[k{m}], hi = ck_hi[k{m}];"]
    body += [f"{inner}    {ln}" for ln in update] + [f"{inner}}}"]
    for _ in range(m):  # the outer window loops
        inner = inner[:-4]
        body.append(inner + "}")
    body += [f"{ind}{ln}" for ln in finish + advance]
    for _ in range(m):  # the outer output loops
        ind = ind[:-4]
        body.append(ind + "}")
    return body


def _values(names, geometry, array):
    return [f"{array}[{i}]" for i in range(len(names))] if geometry is None else \
        [int(v) for v in geometry]


def forward_source(fname, ctype, n, geometry, pragma="CK_PRAGMA", min_work=0):
    """C of ``void fname(T *vals, int64_t *idx, const T *x, [const int64_t *g,] int nt)``:
    max pooling over the last ``n`` dims of C-contiguous ``x``.  ``geometry`` lists the
    sizes in the order of `_names` (lead, input sizes, output sizes, kernel, stride,
    padding, then dilation and whether to store indices) as ints, or is None: the function
    then takes them from the array ``g`` at run time.

    Each row of outputs (the last pooled dim) is updated once per window offset by a
    branch-free loop over the row; an output's candidates are still visited in window
    order, which is what the first-maximum and last-NaN rules need.  (No ``omp simd``:
    rows of pooled images are short, 14 for LeNet, and forced vectors of 16 ran 2.3x
    slower than the scalar loop.)"""
    names = _names(n, [f"D{d}" for d in range(n)] + ["NEED"])
    m = n - 1
    pin = " * ".join(f"L{d}" for d in range(n))
    pout = " * ".join(f"O{d}" for d in range(n))
    body = [f"const {ctype} *xp = x + l * ({pin});",
            f"{ctype} *vr = vals + l * ({pout});",
            f"int64_t *ir = NEED ? idx + l * ({pout}) : 0;"]
    init = [f"vr[o] = ({ctype})(-INFINITY);", "if (NEED) ir[o] = -1;"]
    update = [
        "if (NEED) {",
        "    for (int64_t o = lo; o < hi; o++) {",
        f"        const int64_t q = off + o * S{m};",
        f"        const {ctype} v = xp[q];",
        "        const int take = (ir[o] < 0) | (v > vr[o]) | (v != v);",
        "        vr[o] = take ? v : vr[o];",
        "        ir[o] = take ? q : ir[o];",
        "    }",
        "} else {",
        "    for (int64_t o = lo; o < hi; o++) {",
        f"        const {ctype} v = xp[off + o * S{m}];",
        "        vr[o] = (v > vr[o]) | (v != v) ? v : vr[o];",
        "    }",
        "}"]
    # a window with no element inside (dilation stepping over a short input): torch's
    # index is the window's first position at or after 0 (its value stays -inf)
    first = "".join(f"{{ int64_t h = {pos} * S{d} - P{d}; "
                    f"if (h < 0) h += (D{d} - 1 - h) / D{d} * D{d}; q = q * L{d} + h; }} "
                    for d, pos in [(d, f"o{d}") for d in range(m)] + [(m, "o")])
    finish = [f"if (NEED) for (int64_t o = 0; o < O{m}; o++) if (ir[o] < 0) {{",
              f"    int64_t q = 0; {first}", "    ir[o] = q;", "}"]
    body += _row_windows(n, ctype, init, update, finish,
                         [f"vr += O{m};", f"if (NEED) ir += O{m};"])
    params = [_decls(names, _values(names, geometry, "g")), f"{ctype} *restrict vals",
              "int64_t *restrict idx", f"const {ctype} *restrict x"]
    if geometry is None:
        params.append("const int64_t *restrict g")
    work = f"LEAD * {pout} * " + " * ".join(f"K{d}" for d in range(n))
    return _plane_function(fname, params, work, body, pragma, min_work)


def _window_count(d, pos):
    """C statement multiplying ``cnt`` by the window length of dim ``d`` at output
    ``pos``: clipped to the padded input, and to the input itself unless ``INCL``."""
    return (f"{{ const int64_t s = {pos} * S{d} - P{d}; int64_t e = s + K{d}; "
            f"if (e > L{d} + P{d}) e = L{d} + P{d}; "
            f"cnt *= INCL ? e - s : (e < L{d} ? e : L{d}) - (s > 0 ? s : 0); }}")


def _avg_decls(n, geometry):
    """The size declarations of the average-pooling loops (`_names` with ``INCL`` and
    ``DIV``; no dilation)."""
    names = _names(n, ["INCL", "DIV"])
    return _decls(names, _values(names, geometry, "g")) + \
        "".join(f"\n    const int64_t D{d} = 1;" for d in range(n))


def avg_forward_source(fname, ctype, n, geometry, pragma="CK_PRAGMA", min_work=0):
    """C of ``void fname(T *vals, const T *x, [const int64_t *g,] int nt)``: average
    pooling over the last ``n`` dims of C-contiguous ``x``: window sums (in window order)
    divided by ``DIV``, or when that is 0 by the window's size (``INCL``: padding
    included, as torch's count_include_pad).  ``geometry`` as `forward_source`'s, with
    ``INCL`` and ``DIV`` after the padding."""
    m = n - 1
    pin = " * ".join(f"L{d}" for d in range(n))
    pout = " * ".join(f"O{d}" for d in range(n))
    body = [f"const {ctype} *xp = x + l * ({pin});", f"{ctype} *vr = vals + l * ({pout});"]
    update = ["for (int64_t o = lo; o < hi; o++) vr[o] += xp[off + o * S{m}];"
              .replace("{m}", str(m))]
    finish = (["int64_t outer = 1;", "{ int64_t cnt = 1;"]
              + [f"  {_window_count(d, f'o{d}')}" for d in range(m)]
              + ["  outer = cnt; }",
                 f"for (int64_t o = 0; o < O{m}; o++) {{",
                 "    int64_t cnt = outer;",
                 f"    {_window_count(m, 'o')}",
                 f"    vr[o] = vr[o] / ({ctype})(DIV ? DIV : cnt);",
                 "}"])
    body += _row_windows(n, ctype, ["vr[o] = 0;"], update, finish, [f"vr += O{m};"])
    params = [_avg_decls(n, geometry), f"{ctype} *restrict vals", f"const {ctype} *restrict x"]
    if geometry is None:
        params.append("const int64_t *restrict g")
    work = f"LEAD * {pout} * " + " * ".join(f"K{d}" for d in range(n))
    return _plane_function(fname, params, work, body, pragma, min_work)


def avg_backward_source(fname, ctype, n, geometry, pragma="CK_PRAGMA", min_work=0):
    """C of ``void fname(T *out, T *w, const T *gy, [const int64_t *g,] int nt)``: the
    input gradient of `avg_forward_source`'s pooling (same ``geometry``): each plane of
    ``out`` zeroed, then each output's gradient divided by its divisor (stored in ``w``,
    scratch the size of ``gy``) and added to every input element of its window -- window
    by window, in output order, the adjoint of the forward's loops with no column buffer."""
    m = n - 1
    pin = " * ".join(f"L{d}" for d in range(n))
    pout = " * ".join(f"O{d}" for d in range(n))
    body = [f"{ctype} *op = out + l * ({pin});", f"const {ctype} *gr = gy + l * ({pout});",
            f"{ctype} *wr = w + l * ({pout});",
            f"for (int64_t q = 0; q < {pin}; q++) op[q] = 0;"]
    init = (["int64_t cnt = 1;"] + [_window_count(d, f"o{d}") for d in range(m)]
            + [_window_count(m, "o"), f"wr[o] = gr[o] / ({ctype})(DIV ? DIV : cnt);"])
    update = [f"for (int64_t o = lo; o < hi; o++) op[off + o * S{m}] += wr[o];"]
    body += _row_windows(n, ctype, init, update, [], [f"gr += O{m};", f"wr += O{m};"])
    params = [_avg_decls(n, geometry), f"{ctype} *restrict out", f"{ctype} *restrict w",
              f"const {ctype} *restrict gy"]
    if geometry is None:
        params.append("const int64_t *restrict g")
    work = f"LEAD * {pout} * " + " * ".join(f"K{d}" for d in range(n))
    return _plane_function(fname, params, work, body, pragma, min_work)


def backward_source(fname, ctype, geometry, pragma="CK_PRAGMA", min_work=0):
    """C of ``void fname(T *out, const T *g, const int64_t *idx, [const int64_t *geo,] int
    nt)``: each plane of ``out`` (``PIN`` elements) zeroed, then every gradient of the
    plane's ``POUT`` outputs added at its index.  ``geometry`` is ``(LEAD, PIN, POUT)`` as
    ints, or None: the function then reads them from ``geo``."""
    names = ["LEAD", "PIN", "POUT"]
    values = _values(names, geometry, "geo")
    body = [f"{ctype} *op = out + l * PIN;",
            "const int64_t *iq = idx + l * POUT;",
            f"const {ctype} *gp = g + l * POUT;",
            "for (int64_t q = 0; q < PIN; q++) op[q] = 0;",
            "for (int64_t o = 0; o < POUT; o++) {",
            "    const int64_t q = iq[o];",
            "    if (q >= 0 && q < PIN) op[q] += gp[o];",
            "}"]
    params = [_decls(names, values), f"{ctype} *restrict out", f"const {ctype} *restrict g",
              "const int64_t *restrict idx"]
    if geometry is None:
        params.append("const int64_t *restrict geo")
    return _plane_function(fname, params, "LEAD * (PIN + POUT)", body, pragma, min_work)


def render():
    """The eager library's pooling kernels (sizes read at run time)."""
    parts = ["\n/* ---- max and average pooling (ember/_core/ckernels/pooling.py) ---- */\n"]
    for suffix, ctype in _CTYPE.items():
        for n in (1, 2, 3):
            parts.append(forward_source(f"ck_max_pool{n}d_{suffix}", ctype, n, None))
            parts.append(avg_forward_source(f"ck_avg_pool{n}d_{suffix}", ctype, n, None))
            parts.append(avg_backward_source(f"ck_avg_pool{n}d_backward_{suffix}", ctype, n,
                                             None))
        parts.append(backward_source(f"ck_max_pool_backward_{suffix}", ctype, None))
    return "".join(parts)


# ---- the eager callers ---------------------------------------------------------------------

_P, _I = ctypes.c_void_p, ctypes.c_int


def _fn(name, nargs=5):  # pointers, then the int thread count
    from . import _fn as lookup
    return lookup(name, [_P] * (nargs - 1) + [_I])


# window elements from which the kernels use threads: a window element costs about 1 ns,
# and a LeNet step with its pooling (300K elements) on 2 threads ran no faster on a quiet
# machine and 10x slower next to torch's busy OpenMP pool (the benchmarks' setting)
PARALLEL_WORK = 1 << 23


def _threads(work):
    if work < PARALLEL_WORK:
        return 1
    from . import _threads as threads
    return threads(work)


def _fits(x):
    from . import ENABLED
    return ENABLED and type(x) is np.ndarray and x.dtype in _SUFFIX and x.ndim >= 1


def max_pool(x, ks, stride, pad, dil, outs, need_idx):
    """``(values, indices)`` of max pooling ``x`` (float32/float64) over its last
    ``len(ks)`` dims into output sizes ``outs`` (indices an empty int64 array unless
    ``need_idx``), or None when the C kernel cannot be had."""
    n = len(ks)
    if not _fits(x) or n > 3 or x.ndim < n:
        return None
    f = _fn(f"ck_max_pool{n}d_{_SUFFIX[x.dtype]}")
    if f is None:
        return None
    x = np.ascontiguousarray(x)
    shape = x.shape[:x.ndim - n] + tuple(outs)
    lead = math.prod(x.shape[:x.ndim - n])
    vals = np.empty(shape, x.dtype)
    idx = np.empty(shape if need_idx else (0,), np.int64)
    geo = np.array((lead,) + x.shape[x.ndim - n:] + tuple(outs) + tuple(ks) + tuple(stride)
                   + tuple(pad) + tuple(dil) + (int(bool(need_idx)),), np.int64)
    f(vals.ctypes.data, idx.ctypes.data, x.ctypes.data, geo.ctypes.data,
      _threads(vals.size * math.prod(ks)))
    return vals, idx


def _avg_geometry(lead, ins, outs, ks, stride, pad, include_pad, override):
    return np.array((lead,) + tuple(ins) + tuple(outs) + tuple(ks) + tuple(stride)
                    + tuple(pad) + (int(bool(include_pad)), int(override or 0)), np.int64)


def _avg_fits(x, n, override):
    return _fits(x) and n <= 3 and x.ndim >= n and not (override and int(override) != override)


def avg_pool(x, ks, stride, pad, outs, include_pad, override):
    """Average pooling of ``x`` (float32/float64) over its last ``len(ks)`` dims into
    output sizes ``outs``, divided by ``override`` or the window size (padding counted
    with ``include_pad``), or None when the C kernel cannot be had."""
    n = len(ks)
    f = _fn(f"ck_avg_pool{n}d_{_SUFFIX[x.dtype]}", 4) if _avg_fits(x, n, override) else None
    if f is None:
        return None
    x = np.ascontiguousarray(x)
    vals = np.empty(x.shape[:x.ndim - n] + tuple(outs), x.dtype)
    geo = _avg_geometry(math.prod(x.shape[:x.ndim - n]), x.shape[x.ndim - n:], outs, ks,
                        stride, pad, include_pad, override)
    f(vals.ctypes.data, x.ctypes.data, geo.ctypes.data, _threads(vals.size * math.prod(ks)))
    return vals


def avg_pool_backward(g, in_spatial, ks, stride, pad, include_pad, override):
    """The input gradient of `avg_pool` (sizes ``g.shape[:-n] + in_spatial``) from the
    output gradient ``g`` (float32/float64), or None when the C kernel cannot be had."""
    n = len(ks)
    f = _fn(f"ck_avg_pool{n}d_backward_{_SUFFIX[g.dtype]}") \
        if _avg_fits(g, n, override) else None
    if f is None:
        return None
    g = np.ascontiguousarray(g)
    lead = g.shape[:g.ndim - n]
    out = np.empty(lead + tuple(in_spatial), g.dtype)
    w = np.empty_like(g)
    geo = _avg_geometry(math.prod(lead), in_spatial, g.shape[g.ndim - n:], ks, stride, pad,
                        include_pad, override)
    f(out.ctypes.data, w.ctypes.data, g.ctypes.data, geo.ctypes.data,
      _threads(g.size * math.prod(ks)))
    return out


def max_pool_backward(g, idx, in_shape, n):
    """The input gradient of max pooling (shape ``in_shape``) from the output gradient
    ``g`` and the indices ``idx`` (same shape), or None when the C kernel cannot be had."""
    if not _fits(g) or idx.dtype != np.int64 or idx.shape != g.shape:
        return None
    f = _fn(f"ck_max_pool_backward_{_SUFFIX[g.dtype]}")
    if f is None:
        return None
    g, idx = np.ascontiguousarray(g), np.ascontiguousarray(idx)
    in_shape = tuple(in_shape)
    lead = math.prod(in_shape[:len(in_shape) - n])
    out = np.empty(in_shape, g.dtype)
    geo = np.array((lead, math.prod(in_shape[len(in_shape) - n:]),
                    math.prod(g.shape[g.ndim - n:])), np.int64)
    f(out.ctypes.data, g.ctypes.data, idx.ctypes.data, geo.ctypes.data,
      _threads(out.size + g.size))
    return out
