"""Pass 6, the wrapper: a generated Python function that runs a schedule.

It takes the graph's inputs (ember Tensors, Python scalars), reads the symbolic sizes off
the input shapes, allocates each kernel's output buffers with NumPy (or takes the memory of
a dead buffer, per the memory plan), calls the kernels (C through ctypes, or their NumPy
twins), runs eager steps (extern library calls such as matmul, and nodes the generator does
not handle: ``node.target(*args, **kwargs)``), drops buffers after their last reader, and
returns ember Tensors."""
import operator
import threading

import numpy as np

from ..._core import blas_threads as _blas_threads
from ..._core.tensor import Tensor, wrap
from .. import ir
from .. import sizes as _sizes
from ..passes.classify import is_node

__all__ = ["wrapper_source", "make_call"]


def threads():
    """OpenMP threads for a kernel call: ``blas_threads.openmp_threads()`` (each kernel
    then runs serially below ``config.parallel_min_work``)."""
    return _blas_threads.openmp_threads()


def eager(node, env):
    """Run ``node``'s op on the buffers of ``env`` (the wrapper's values it reads)."""
    def conv(a):
        if is_node(a):
            if "a_" + a.name in env:
                return env["a_" + a.name]
            v = env.get("b_" + a.name)
            if v is None:
                v = env["t_" + a.name]
            return tuple(wrap(x) for x in v) if isinstance(v, tuple) else wrap(v)
        if getattr(a, "expr", None) is not None:
            return _sizes.evaluate(_sizes.size(a), env)
        if isinstance(a, (list, tuple)):
            return type(a)(conv(x) for x in a)
        if type(a) is dict:  # a view chain's params (_view_scatter)
            return {k: conv(x) for k, x in a.items()}
        return a
    from ... import autograd
    op = node.target
    if getattr(op, "name", None) == "view":
        # the graph's view is a logical reshape: buffers here may be strided views
        # (eager permutes), which eager view refuses to reshape across
        from ..._core.op import REGISTRY
        op = REGISTRY["_reshape_copy"]
    with autograd.no_grad():  # params are where symbolic sizes usually are: evaluate them
        out = op(*conv(node.args), **{k: conv(v) for k, v in node.kwargs.items()})
    if isinstance(out, (tuple, list)):
        return tuple(o._data if isinstance(o, Tensor) else o for o in out)
    return out._data if isinstance(out, Tensor) else np.asarray(out)


def contig(a):
    """``a`` as a C-contiguous array of the same shape (np.ascontiguousarray makes 0-d
    arrays 1-d)."""
    return a if a.flags.c_contiguous else np.ascontiguousarray(a).reshape(a.shape)


def poolable(sched):
    """Intermediate buffers that may stay allocated from call to call (fresh large
    allocations cost page faults every call, measured 1.3 ms -> 100+ ms on a busy machine):
    kernel-written temporaries that share memory with no other buffer.  An output an eager
    step made that may alias one is copied (``_fresh``), so nothing the caller keeps does."""
    shared = {b.reuses for b in sched.buffers.values() if b.reuses} | \
        {n for n, b in sched.buffers.items() if b.reuses}
    out = set()
    for st in sched.steps:
        if not isinstance(st, ir.KernelStep):
            continue
        for s in st.kernel.stores:
            b = sched.buffers[s.buf]
            if b.kind == "temp" and s.buf not in shared:
                out.add(s.buf)
    return out


class _Pool(threading.local):
    def __init__(self):
        self.bufs = {}


def make_pool():
    """``pooled(shape, dtype, name)``: this thread's array for buffer ``name``, reused
    while the shape is the same (threads never share one)."""
    tls = _Pool()

    def pooled(shape, dtype, name):
        a = tls.bufs.get(name)
        if a is None or a.shape != shape or a.dtype != dtype:
            a = tls.bufs[name] = np.empty(shape, dtype)
        return a

    def fresh(a):
        """``a``, or a copy when it shares memory with one of this thread's buffers."""
        return a.copy() if any(np.may_share_memory(a, b) for b in tls.bufs.values()) else a
    pooled.fresh = fresh
    return pooled


def size_bindings(sched):
    """Lines binding each size symbol: a dimension of an input array, or an integer input
    (``d`` None) when the graph received the size itself."""
    L = []
    for s, (i, d) in sorted(sched.symbols.items()):
        src = sched.inputs[i]
        L.append(f"    {s} = int({src[1]})" if d is None else f"    {s} = {src}.shape[{d}]")
    return L


def wrapper_source(sched, dead_after, c_mode, externs=None):
    """The Python source of ``call(*args)``; ``externs`` maps step indices to the
    `c_externs.CExtern` computing them (C mode)."""
    externs = externs or {}
    pooled = poolable(sched)
    consts = sched.wrapper_consts = []  # params of direct kernel calls, by position
    L = ["def call(*args):"]
    ins = []
    for i, name in enumerate(sched.inputs):
        if isinstance(name, tuple):
            L.append(f"    {name[1]} = args[{i}]")
            continue
        b = sched.buffers.get(name)
        src = f"args[{i}]._data"
        if b is not None and b.contiguous:
            src = f"_contig({src})"
        L.append(f"    {name} = {src}")
        ins.append(name)
    L += size_bindings(sched)
    L.append("    nt = _threads()")
    for name in sched.constants:
        L.append(f"    {name} = _CONST[{name!r}]")
    for i, st in enumerate(sched.steps):
        if isinstance(st, ir.KernelStep):
            k = st.kernel
            stored = []
            for s in k.stores:
                if s.buf in stored:
                    continue
                stored.append(s.buf)
                b = sched.buffers[s.buf]
                shape = "(" + "".join(_sizes.py_text(d) + ", " for d in b.shape) + ")"
                if b.reuses:
                    L.append(f"    {s.buf} = {b.reuses}.reshape({shape}); del {b.reuses}")
                else:
                    alloc = "_pooled" if s.buf in pooled else "_np.empty"
                    L.append(f"    {s.buf} = {alloc}({shape}, _DT[{b.dtype.name!r}]"
                             + (f", {s.buf!r})" if s.buf in pooled else ")"))
            args = []
            for a, kind in _args(k, sched):
                if kind in ("out", "in"):
                    args.append(f"{a}.ctypes.data" if c_mode else a)
                else:
                    args.append(a)
            L.append(f"    {k.name}({', '.join(args)})")
        else:
            n = st.node
            m = n.meta.get("val")
            target = ("b_" if hasattr(m, "shape") else "t_") + n.name
            # only the names the op reads (locals() of a long wrapper costs ~50 us a call)
            names = []
            for a in n.all_input_nodes:
                if ("scalar", "a_" + a.name) in sched.inputs:
                    names.append("a_" + a.name)
                elif hasattr(a.meta.get("val"), "shape"):
                    names.append("b_" + a.name)
                else:
                    names.append("t_" + a.name)
            names += sorted(sched.symbols)
            if i in externs:
                L += _extern_call(externs[i], target, hasattr(m, "shape"))
                for name in dead_after.get(i, ()):
                    if not _reused_later(sched, name) and name not in sched.constants:
                        L.append(f"    del {name}")
                continue
            env = "{" + ", ".join(f"{x!r}: {x}" for x in dict.fromkeys(names)) + "}"
            direct = _direct_call(n, names, consts)
            L.append(f"    {target} = " + (direct if direct is not None else
                                           f"_eager(_NODES[{n.name!r}], {env})"))
            b = sched.buffers.get("b_" + n.name)
            if b is not None and b.contiguous and hasattr(m, "shape"):
                L.append(f"    {target} = _contig({target})")
        for name in dead_after.get(i, ()):
            if not _reused_later(sched, name) and name not in sched.constants:
                L.append(f"    del {name}")
    outs = []
    for o in sched.outputs:
        if isinstance(o, tuple):
            outs.append(f"_wrap(_np.asarray({o[1]!r}))")
            continue
        # an output may alias an input, as the eager program's would (AOT graphs return
        # saved inputs: copying them would cost a copy of every weight per step); constants
        # live across calls, so the caller gets its own copy of those
        b = sched.buffers[o]
        if b.kind == "constant":
            outs.append(f"_wrap(_np.array({o}, copy=True))")
        elif pooled and not _kernel_made(sched, o) and b.kind != "input":
            # an eager op may have returned a view of a pooled buffer, which the next call
            # overwrites: such an output is copied
            outs.append(f"_wrap(_fresh({o}))")
        else:
            outs.append(f"_wrap({o})")
    L.append("    return (" + "".join(x + ", " for x in outs) + ")")
    return "\n".join(L) + "\n"


def _extern_call(e, target, single):
    """Wrapper lines running extern ``e`` (generated C) for the step defining ``target``."""
    outs = [f"_np.empty({tuple(shape)!r}, _np.dtype({dt!r}))" for shape, dt in e.outputs]
    if single:
        L = [f"    {target} = {outs[0]}"]
        ptrs = [f"{target}.ctypes.data"]
    else:
        L = [f"    {target} = ({''.join(o + ', ' for o in outs)})"]
        ptrs = [f"{target}[{k}].ctypes.data" for k in range(len(outs))]
    ins = []
    for k, a in enumerate(e.inputs):
        L.append(f"    _x{k} = _contig(b_{a.name})")
        ins.append(f"_x{k}.ctypes.data")
    L.append(f"    {e.name}({', '.join(ptrs + ins)}, nt)")
    if ins:
        L.append(f"    del {', '.join(f'_x{k}' for k in range(len(ins)))}")
    return L


def _kernel_made(sched, name):
    return any(isinstance(st, ir.KernelStep) and any(s.buf == name for s in st.kernel.stores)
               for st in sched.steps)


def _direct_call(n, names, consts):
    """Source calling ``n``'s kernel on the arrays themselves (what the dispatcher would do
    with no mode, autograd or device to consider: about 15 us less per step), or None when
    a param is symbolic (it is evaluated per call by `eager`) or the target is no
    primitive."""
    from ..._core.op import Op
    from ...ops.primitives import PRIMITIVES
    from .. import config
    op = n.target
    if op is operator.getitem and names[0].startswith("t_") and isinstance(n.args[1], int):
        return f"{names[0]}[{n.args[1]}]"  # an output of a multi-output step
    # primitives and the ops kept whole have array kernels; other ops may run Python on
    # tensors (autograd.Function)
    if not isinstance(op, Op) or (op.name not in PRIMITIVES and
                                  op.name not in config.keep_whole) or any(
            getattr(x, "expr", None) is not None for x in _leaves((n.args, n.kwargs))):
        return None
    name = "_reshape_copy" if op.name == "view" else op.name
    it = iter(names)
    index = {a: next(it) for a in n.all_input_nodes}

    def text(a):
        if is_node(a):
            return index[a]
        if isinstance(a, (list, tuple)):
            inner = ", ".join(text(x) for x in a)
            return f"[{inner}]" if isinstance(a, list) else f"({inner}{',' if len(a) == 1 else ''})"
        consts.append(a)
        return f"_CONSTS[{len(consts) - 1}]"
    args = ", ".join(["_np"] + [text(a) for a in n.args])
    kw = ", ".join(f"{k}={text(v)}" for k, v in n.kwargs.items())
    call = f"_KERNELS[{name!r}]({args}{', ' if kw else ''}{kw})"
    return f"_arr({call})" if op.n_out == 1 else f"_arrs({call})"


def _leaves(a):
    if isinstance(a, (list, tuple)):
        return [y for x in a for y in _leaves(x)]
    if isinstance(a, dict):
        return [y for x in a.values() for y in _leaves(x)]
    return [a]


def _arr(r):
    return r if type(r) is np.ndarray else np.asarray(r)


def _arrs(r):
    return tuple(_arr(x) for x in r)


def _args(k, sched):
    from .c_kernels import kernel_args
    return kernel_args(k, sched.symbols)


def _reused_later(sched, name):
    return any(b.reuses == name for b in sched.buffers.values())


def make_call(source, sched, kernels):
    """Compile the wrapper source with its globals: ``kernels`` maps kernel names to
    callables (ctypes functions or NumPy functions)."""
    nodes = {st.node.name: st.node for st in sched.steps if isinstance(st, ir.EagerStep)}
    from ..._core.op import REGISTRY
    pool = make_pool()
    g = {"_np": np, "_threads": threads, "_eager": eager, "_contig": contig, "_wrap": wrap,
         "_pooled": pool, "_fresh": pool.fresh, "_arr": _arr, "_arrs": _arrs, "_CONSTS": getattr(sched, "wrapper_consts", []),
         "_KERNELS": {name: op.kernel for name, op in REGISTRY.items()},
         "_NODES": nodes, "_CONST": dict(sched.constants),
         "_DT": {b.dtype.name: b.dtype.np for b in sched.buffers.values()}}
    g.update(kernels)
    exec(compile(source, "<ember inductor wrapper>", "exec"), g)  # noqa: S102 - our own source
    return g["call"]
