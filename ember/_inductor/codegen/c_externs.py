"""Extern steps computed by generated C instead of their eager kernels: max pooling, whose
eager kernels are several NumPy passes over strided windows (forward) and a bincount
(backward): about a third of a LeNet training step.

``C_EXTERNS[op name](node, fname)`` returns a `CExtern` (the C function and how the
wrapper calls it) or None where the step keeps its eager kernel (a dtype other than
float32/float64, symbolic sizes).  The function's arguments are its outputs, then its
inputs (C-contiguous), then ``int nt``; lead planes (batch x channels) are split over the
threads from ``parallel_min_work`` elements of work.

Semantics are torch's: a window's maximum is its first largest element, or its last NaN;
the index is the flat position in the input plane; positions outside the input (padding,
ceil mode) are never chosen.  The backward adds each gradient at its index."""
import dataclasses
import math

from .. import sizes as _sizes
from ..passes.lower import _shape
from .c_kernels import pointer_ctype

__all__ = ["CExtern", "C_EXTERNS"]


@dataclasses.dataclass
class CExtern:
    name: str       # the C function
    source: str
    outputs: list   # (shape, dtype name) per output, in the node's output order
    inputs: list    # the graph nodes it reads, in argument order


def _static(shape):
    return all(isinstance(_sizes.size(d), int) for d in shape)


def _function(fname, params, work, body, min_work):
    """``void fname(params, int nt)``: ``body`` (lines using ``l``) per lead plane
    ``l < LEAD``, over threads when the work is large enough."""
    lead = body[0]
    lines = [f"void {fname}({', '.join(params)}, int nt) {{",
             f"    int par = nt > 1 && {work}LL >= {int(min_work)}LL;",
             "    if (par) {",
             "        EK_PRAGMA(omp parallel for num_threads(nt) schedule(static))",
             f"        for (int64_t l = 0; l < {lead}; l++) {{"]
    lines += ["            " + ln for ln in body[1:]]
    lines += ["        }", "    } else {",
              f"        for (int64_t l = 0; l < {lead}; l++) {{"]
    lines += ["            " + ln for ln in body[1:]]
    lines += ["        }", "    }", "}"]
    return "\n".join(lines) + "\n"


def max_pool(node, fname, min_work):
    x = node.args[0]
    m = x.meta["val"]
    kw = node.kwargs
    if m.dtype.name not in ("float32", "float64") or not _static(m.shape) or \
            set(kw) != {"ks", "stride", "pad", "dil", "ceil", "need_idx"}:
        return None
    vals = node.meta["val"][0]
    ks, st, pad, dil = (tuple(int(v) for v in kw[k]) for k in ("ks", "stride", "pad", "dil"))
    n = len(ks)
    in_shape = tuple(int(d) for d in m.shape)
    out_shape = tuple(int(d) for d in vals.shape)
    L, O = in_shape[-n:], out_shape[-n:]
    lead, pin, pout = math.prod(in_shape[:-n]), math.prod(L), math.prod(O)
    T = pointer_ctype(m.dtype.name)
    need = bool(kw["need_idx"])
    body = [str(lead), f"const {T} *xp = x + l*{pin}LL;"]
    ind = ""
    for d in range(n):
        body.append(f"{ind}for (int64_t o{d} = 0; o{d} < {O[d]}; o{d}++) {{")
        ind += "    "
    flat_o = " + ".join(f"o{d}*{math.prod(O[d + 1:])}" for d in range(n))
    body += [f"{ind}{T} best = ({T})(-INFINITY);", f"{ind}int64_t bi = -1;"]
    inner = ind
    for d in range(n):
        body.append(f"{inner}for (int64_t k{d} = 0; k{d} < {ks[d]}; k{d}++) {{")
        inner += "    "
        body.append(f"{inner}int64_t h{d} = o{d}*{st[d]} - {pad[d]} + k{d}*{dil[d]};")
        body.append(f"{inner}if (h{d} < 0 || h{d} >= {L[d]}) continue;")
    flat_h = " + ".join(f"h{d}*{math.prod(L[d + 1:])}" for d in range(n))
    body += [f"{inner}int64_t q = {flat_h};", f"{inner}{T} v = xp[q];",
             f"{inner}if (bi < 0 || v > best || v != v) {{ best = v; bi = q; }}"]
    for _ in range(n):  # the window loops
        inner = inner[:-4]
        body.append(inner + "}")
    body.append(f"{ind}vals[l*{pout}LL + {flat_o}] = best;")
    if need:
        body.append(f"{ind}idx[l*{pout}LL + {flat_o}] = bi;")
    for _ in range(n):  # the output loops
        ind = ind[:-4]
        body.append(ind + "}")
    params = [f"{T} *restrict vals", "int64_t *restrict idx", f"const {T} *restrict x"]
    src = _function(fname, params, lead * pout * math.prod(ks), body, min_work)
    outputs = [(out_shape, m.dtype.name), (out_shape if need else (0,), "int64")]
    return CExtern(fname, src, outputs, [x])


def max_pool_backward(node, fname, min_work):
    g, idx = node.args[:2]
    gm, im = g.meta["val"], idx.meta["val"]
    in_shape = tuple(int(d) for d in node.kwargs.get("in_shape", ()))
    n = node.kwargs.get("n")
    if gm.dtype.name not in ("float32", "float64") or im.dtype.name != "int64" or \
            not _static(gm.shape) or not in_shape or not isinstance(n, int) or \
            tuple(_shape(idx)) != tuple(_shape(g)):
        return None
    lead = math.prod(in_shape[:-n])
    pin, pout = math.prod(in_shape[-n:]), math.prod(int(d) for d in gm.shape[-n:])
    T = pointer_ctype(gm.dtype.name)
    body = [str(lead), f"{T} *op = out + l*{pin}LL;",
            f"for (int64_t q = 0; q < {pin}; q++) op[q] = 0;",
            f"for (int64_t o = 0; o < {pout}; o++) {{",
            f"    int64_t q = idx[l*{pout}LL + o];",
            f"    if (q >= 0 && q < {pin}) op[q] += g[l*{pout}LL + o];",
            "}"]
    params = [f"{T} *restrict out", f"const {T} *restrict g", "const int64_t *restrict idx"]
    src = _function(fname, params, lead * pin, body, min_work)
    return CExtern(fname, src, [(in_shape, gm.dtype.name)], [g, idx])


C_EXTERNS = {"max_pool": max_pool, "max_pool_backward": max_pool_backward}
