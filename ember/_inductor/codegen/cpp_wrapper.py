"""``cpp_wrapper``: the whole graph as one C entry point.

``ek_entry(<input, constant and output buffers>, <sizes>, <scalar inputs>, int nt)`` takes
the graph's buffers, allocated by a thin Python shim that reads the symbolic sizes off
the inputs (intermediates from a per-thread pool that keeps them between calls; buffers
share memory per the memory plan), calls the kernels in order and runs
matmuls through SciPy's BLAS (`ember._inductor.extern_blas`).  One ctypes call runs the
graph.

A graph qualifies when every step is a generated kernel or a float32/float64 matmul of a
contiguous operand and a contiguous or transposed 2-D matrix; any other eager step (a
library call only Python can make) keeps the Python wrapper, with the reason recorded."""
from .. import ir
from .. import sizes as _sizes
from .c_kernels import _CT, kernel_args

__all__ = ["Ineligible", "entry_source", "shim_source"]


class Ineligible(Exception):
    """Why this graph keeps the Python wrapper."""


def _matmul_plan(st, sched, view_of):
    n = st.node
    a, b = n.args[0], n.args[1]
    m = n.meta["val"]
    if m.dtype.name not in ("float32", "float64"):
        raise Ineligible(f"matmul of {m.dtype.name}")
    ma, mb = a.meta["val"], b.meta["val"]
    if mb.ndim != 2 or ma.ndim < 2:
        raise Ineligible("matmul that is not (..., K) @ (K, N)")
    transb, bsrc = 0, b
    if b in view_of:
        src, dims = view_of[b]
        if tuple(d % 2 for d in dims) != (1, 0):
            raise Ineligible("matmul operand is a view other than a transpose")
        transb, bsrc = 1, src
    transa, asrc = 0, a
    if a in view_of:
        src, dims = view_of[a]
        if ma.ndim != 2 or tuple(d % 2 for d in dims) != (1, 0):
            raise Ineligible("matmul's left operand is a view other than a 2-D transpose")
        transa, asrc = 1, src
    sa = [_sizes.size(d) for d in ma.shape]
    sb = [_sizes.size(d) for d in mb.shape]
    M, K, N = _sizes.prod(sa[:-1]), sa[-1], sb[1]
    return dict(a="b_" + asrc.name, b="b_" + bsrc.name, c="b_" + n.name, transa=transa,
                transb=transb, M=M, N=N, K=K, lda=(M if transa else K),
                ldb=(K if transb else N), f=m.dtype.name == "float32")


def entry_source(sched):
    """``(C source of ek_entry, its buffer arguments in order, whether it calls BLAS)``;
    raises `Ineligible`."""
    view_of, plans = {}, {}
    for i, st in enumerate(sched.steps):
        if isinstance(st, ir.KernelStep):
            continue
        n = st.node
        name = getattr(n.target, "name", None)
        if name == "permute" and n.meta["val"].ndim == 2 and not \
                sched.buffers["b_" + n.name].contiguous and \
                "b_" + n.name not in sched.outputs:
            view_of[n] = (n.args[0], tuple(n.kwargs["dims"]))
            continue
        if name == "matmul":
            plans[i] = None  # filled once every view is known
            continue
        raise Ineligible(f"an eager step ({n.target}) only Python can run")
    for i in plans:
        plans[i] = _matmul_plan(sched.steps[i], sched, view_of)
    for n in view_of:
        users = [u for u in n.users]
        if any(getattr(u.target, "name", None) != "matmul" for u in users):
            raise Ineligible("a transposed view read by something else than a matmul")
    io = [x for x in sched.inputs if isinstance(x, str)] + list(sched.constants)
    io += [o for o in dict.fromkeys(sched.outputs) if isinstance(o, str) and o not in io]
    # intermediates come from the shim's per-thread pool: they stay allocated between calls
    # (a fresh large malloc costs page faults every call)
    for st in sched.steps:
        if isinstance(st, ir.KernelStep):
            outs = [s.buf for s in st.kernel.stores]
        elif st.node in view_of:
            continue
        else:
            outs = ["b_" + st.node.name]
        for name in outs:
            b = sched.buffers.get(name)
            if b is not None and b.kind == "temp" and not b.reuses and name not in io:
                io.append(name)
    scalars = [x[1] for x in sched.inputs if isinstance(x, tuple)]
    params = [f"{_CT[sched.buffers[n].dtype.name]} *{n}" for n in io]
    params += [f"int64_t {s}" for s in sorted(sched.symbols)]
    params += [f"double {s}" for s in scalars] + ["int nt"]
    L = [f"void ek_entry({', '.join(params)}) {{"]
    declared = set(io)
    for i, st in enumerate(sched.steps):
        outs = [s.buf for s in st.kernel.stores] if isinstance(st, ir.KernelStep) else \
            ([] if i not in plans else [plans[i]["c"]])
        for name in dict.fromkeys(outs):
            if name in declared:
                continue
            declared.add(name)
            b = sched.buffers[name]
            ct = _CT[b.dtype.name]
            L.append(f"    {ct} *{name} = ({ct} *){b.reuses};")  # per the memory plan
        if isinstance(st, ir.KernelStep):
            args = [a for a, _ in kernel_args(st.kernel, sched.symbols)]
            L.append(f"    {st.kernel.name}({', '.join(args)});")
        elif i in plans:
            p = plans[i]
            sfx, fn = ("f32", "sgemm") if p["f"] else ("f64", "dgemm")
            M, N, K = (_sizes.c_text(p[x]) for x in "MNK")
            L.append(f"    ember_gemm_{sfx}({p['transa']}, {p['transb']}, {M}, {N}, {K}, 1, "
                     f"{p['a']}, {_sizes.c_text(p['lda'])}, "
                     f"{p['b']}, {_sizes.c_text(p['ldb'])}, 0, {p['c']}, {N}, ember_blas.{fn});")
    L.append("}")
    return "#include <stdlib.h>\n" + "\n".join(L) + "\n", io, bool(plans)


def shim_source(sched, io):
    """The Python side: inputs, sizes, output buffers, one call."""
    L = ["def call(*args):"]
    for i, name in enumerate(sched.inputs):
        if isinstance(name, tuple):
            L.append(f"    {name[1]} = float(args[{i}])")
        else:
            L.append(f"    {name} = _contig(args[{i}]._data)")
    for s, (i, d) in sorted(sched.symbols.items()):
        L.append(f"    {s} = {sched.inputs[i]}.shape[{d}]")
    for name in sched.constants:
        L.append(f"    {name} = _CONST[{name!r}]")
    for o in io:
        b = sched.buffers[o]
        if b.kind in ("output", "temp"):
            shape = "(" + "".join(_sizes.py_text(d) + ", " for d in b.shape) + ")"
            alloc = f"_np.empty({shape}, _DT[{b.dtype.name!r}])" if b.kind == "output" else \
                f"_pooled({shape}, _DT[{b.dtype.name!r}], {o!r})"
            L.append(f"    {o} = {alloc}")
    args = [f"{n}.ctypes.data" for n in io] + sorted(sched.symbols)
    args += [x[1] for x in sched.inputs if isinstance(x, tuple)] + ["_threads()"]
    L.append(f"    ek_entry({', '.join(args)})")
    outs = []
    for o in sched.outputs:
        if isinstance(o, tuple):
            outs.append(f"_wrap(_np.asarray({o[1]!r}))")
        elif sched.buffers[o].kind == "constant":
            outs.append(f"_wrap(_np.array({o}, copy=True))")
        else:
            outs.append(f"_wrap({o})")
    L.append("    return (" + "".join(x + ", " for x in outs) + ")")
    return "\n".join(L) + "\n"
