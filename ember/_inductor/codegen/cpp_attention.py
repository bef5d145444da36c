"""``_flash_attention`` and its backward inside the ``cpp_wrapper`` entry point: the eager
library's blocked C kernels (`ember._core.ckernels.attention`), called on the entry
point's buffers through their addresses, which the shim passes in (the eager library is
loaded privately, so its symbols do not link; compiling the kernels into every graph's
translation unit instead took 10 s of cold compile per graph on a loaded machine).

As the eager call does, operands are read where they lie: a row stride and one element
offset per batch entry (leading dims broadcast, so permuted and expanded q/k/v/mask need
no copy; only a last dim without unit stride is copied).  The backward's g_out, out, lse
and g_lse are read as contiguous arrays of the full batch, copied when they are not.
Outputs the graph does not read (the forward's lse) go to pooled scratch.  A kernel out of
memory for its block buffers, or an empty L or S (which the eager op computes without the
kernel), leaves the entry point (``return 3``): the Python wrapper then runs the graph.
Without the compiled eager kernels (``EMBER_CKERNELS=0``, no library) such a graph keeps
the Python wrapper."""
import numbers

from ..._core import dtype as _dt
from ..._core.ckernels import PARALLEL_SIZE
from ..._core.ckernels import attention as _ck
from .. import sizes as _sizes
from ..passes.lower import _keys
from .cpp_externs import Ineligible, batch_strides
from .strided import Layout

__all__ = ["attention_forward", "attention_backward"]

_SUFFIX = {"float32": ("f32", "float"), "float64": ("f64", "double")}

# the kernels' signatures (ckernels/attention.py): q, k, v, mask, mkind, four offset
# arrays, ten sizes and strides, scale, causal, then the direction's own
_COMMON = "const T *, const T *, const T *, const void *, int, " + \
    "const int64_t *, " * 4 + "ptrdiff_t, " * 10 + "double, int"
_TYPES = {"fwd": "T *, T *, int", "bwd": "const T *, " * 4 + "T *, " * 4 + "int"}


def _kernel(entry, way, dt):
    """The C expression of eager kernel ``ck_flash_{way}_{sfx}`` as a typed function
    pointer (a parameter of the entry point)."""
    sfx, T = _SUFFIX[dt]
    name = f"ck_flash_{way}_{sfx}"
    address = _ck.pointer(name)
    if address is None:
        raise Ineligible("the compiled flash-attention kernels are unavailable")
    typedef = f"ek_{name}_t"
    entry.preamble(typedef, lambda: f"typedef int (*{typedef})(" +
                   f"{_COMMON}, {_TYPES[way]});\n".replace("T *", f"{T} *"))
    return f"(({typedef}){entry.address(name, address)})"


def _dtype(node):
    return node.meta["val"].dtype.name


def _rows(entry, name):
    """``name``'s layout with a unit stride in its last dim (copied when it has none)."""
    lay = entry.lay[name]
    if _sizes.key(lay.shape[-1]) != 1 and _sizes.key(lay.strides[-1]) != 1:
        lay = entry.lay[entry.contiguous(name)]
    return lay


def _matrix(lay):
    """``lay`` with at least two dims (a 1-d mask is one row)."""
    pad = 2 - len(lay.shape)
    if pad <= 0:
        return lay
    return Layout(lay.root, lay.offset, (1,) * pad + lay.shape, (0,) * pad + lay.strides)


def _stride(lay, dim):
    return 0 if _sizes.key(lay.shape[dim]) == 1 else lay.strides[dim]


def _operands(entry, node, ins, batch):
    """C declarations of the kernels' shared arguments for q, k, v and the mask (pointers,
    per-batch-entry offsets in a pooled scratch, row strides), and the argument list."""
    q, k, v = (_rows(entry, n) for n in ins[:3])
    dt = _dtype(node.args[0])
    if dt not in _SUFFIX or any(_dtype(a) != dt for a in node.args[1:3]):
        raise Ineligible(f"flash attention of {dt}")
    ops = [q, k, v]
    mask = node.args[3]
    mkind, mrs, mcs = 0, 0, 0
    if mask is not None:
        mdt = _dtype(mask)
        if mdt == "bool":
            mkind = 1
        elif mdt == dt:
            mkind = 2
        else:
            raise Ineligible(f"flash attention with a {mdt} mask")
        m = _matrix(entry.lay[ins[3]])
        mrs, mcs = _stride(m, -2), _stride(m, -1)
        ops.append(m)
    for lay in ops:
        if len(lay.shape) - 2 > len(batch):
            raise Ineligible("flash attention operands of an unexpected batch")
    B = _sizes.prod(batch)
    offs = entry.scratch(f"{node.name}_offsets", (_sizes.mul(B, 4),), _dt.int64)
    lines = ["{", "    int64_t j = 0;"]
    for d, n in enumerate(batch):
        lines.append("    " * (d + 1) + f"for (int64_t q{d} = 0; q{d} < {_sizes.c_text(n)}; "
                     f"q{d}++)")
    body = []
    for slot, lay in enumerate(ops):
        terms = [f"q{d}*{_sizes.c_text(s)}" for d, s in enumerate(batch_strides(lay, batch))
                 if _sizes.key(s) != 0]
        body.append(f"{offs}[{slot}*{_sizes.c_text(B)} + j] = {' + '.join(terms) or '0'};")
    if mask is None:
        body.append(f"{offs}[3*{_sizes.c_text(B)} + j] = 0;")
    ind = "    " * (len(batch) + 1)
    lines += [ind + "{"] + [ind + "    " + ln for ln in body + ["j++;"]] + [ind + "}", "}"]
    L, S = q.shape[-2], k.shape[-2]
    E, Ev = q.shape[-1], v.shape[-1]
    if _keys([k.shape[-1]]) != _keys([E]) or _keys([v.shape[-2]]) != _keys([S]):
        raise Ineligible("flash attention sizes the generator cannot match")
    ptr = [lay.pointer() for lay in (q, k, v)]
    mptr = ops[3].pointer() if mask is not None else "NULL"
    c = _sizes.c_text
    args = ptr + [mptr, str(mkind)] + [f"{offs} + {slot}*{c(B)}" for slot in range(4)] + \
        [c(B), c(L), c(S), c(E), c(Ev), c(_stride(q, -2)), c(_stride(k, -2)),
         c(_stride(v, -2)), c(mrs), c(mcs)]
    threads = f"(({c(B)})*({c(L)})*({c(S)})*({c(E)}) / 64 >= {PARALLEL_SIZE} ? nt : 1)"
    empty = f"if (({c(L)}) == 0 || ({c(S)}) == 0) return 3;"
    return lines + [empty], args, threads


def _scale(node):
    scale = node.kwargs.get("scale")
    if not isinstance(scale, numbers.Real) or isinstance(scale, bool):
        raise Ineligible("flash attention with a symbolic scale")
    return repr(float(scale)), "1" if node.kwargs.get("causal") else "0"


def attention_forward(entry, node, ins, outs):
    """``(out, lse) = _flash_attention(q, k, v, mask, scale=, causal=)``."""
    out_meta, lse_meta = node.meta["val"]
    batch = tuple(_sizes.size(d) for d in out_meta.shape[:-2])
    lines, args, threads = _operands(entry, node, ins, batch)
    scale, causal = _scale(node)
    o = entry.result(outs[0], f"{node.name}_out", out_meta)
    lse = entry.result(outs[1], f"{node.name}_lse", lse_meta)
    fn = _kernel(entry, "fwd", _dtype(node.args[0]))
    lines.append(f"if (!{fn}({', '.join(args)}, {scale}, {causal}, {o}, {lse}, {threads})) "
                 "return 3;")
    return lines


def attention_backward(entry, node, ins, outs):
    """``(dq, dk, dv, ds) = _flash_attention_backward(q, k, v, mask, g_out, out, lse, g_lse,
    scale=, causal=, mask_grad=)`` (``ds`` written only when asked for and read)."""
    dq_m, dk_m, dv_m, ds_m = node.meta["val"]
    dt = dq_m.dtype.name
    args_n = list(node.args) + [None] * (8 - len(node.args))
    if any(a is not None and _dtype(a) != dt for a in args_n[:3] + args_n[4:]):
        raise Ineligible("flash attention backward of mixed dtypes")
    batch = tuple(_sizes.size(d) for d in dq_m.shape[:-2])
    names = {}
    it = iter(ins)
    for i, a in enumerate(args_n):
        if a is not None:
            names[i] = next(it)
    fwd_ins = [names[i] for i in range(3)] + ([names[3]] if 3 in names else [])
    lines, args, threads = _operands(entry, node, fwd_ins, batch)
    L, S = dq_m.shape[-2], dk_m.shape[-2]
    Ev = dv_m.shape[-1]
    rows, vec = batch + (_sizes.size(L),), batch + (_sizes.size(L), _sizes.size(Ev))
    dense = []
    for i, shape, tag in ((4, vec, "g_out"), (5, vec, "out"), (6, rows, "lse"),
                          (7, rows, "g_lse")):
        if i not in names:
            dense.append("NULL")
            continue
        dense.append(entry.broadcast(names[i], shape, f"{node.name}_{tag}"))
    if dense[2] == "NULL":
        raise Ineligible("flash attention backward without lse")
    scale, causal = _scale(node)
    grads = [entry.result(outs[k], f"{node.name}_{k}", m)
             for k, m in enumerate((dq_m, dk_m, dv_m))]
    ds = "NULL"
    if outs[3] is not None:
        ds = entry.result(outs[3], f"{node.name}_3", ds_m)
        if not node.kwargs.get("mask_grad", True):
            ds = "NULL"  # an empty (batch, L, 0) array
    fn = _kernel(entry, "bwd", dt)
    call = args + [scale, causal] + dense + grads + [ds, threads]
    lines.append(f"if (!{fn}({', '.join(call)})) return 3;")
    return lines
