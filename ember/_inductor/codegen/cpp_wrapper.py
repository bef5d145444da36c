"""``cpp_wrapper``: the whole graph as one C entry point.

``int ek_entry(<input, constant, output and pooled buffers>, <sizes>, <scalar inputs>,
int nt)`` takes the graph's buffers, allocated by a thin Python shim that reads the
symbolic sizes off the inputs (intermediates from a per-thread pool that keeps them
between calls; buffers share memory per the memory plan), calls the kernels in order,
makes the views the Python wrapper makes with NumPy as pointer arithmetic
(`strided`), and runs the extern steps in C (`cpp_externs`): matmuls, batched and
broadcast, through SciPy's BLAS (`ember._inductor.extern_blas`), and embedding gathers.
One ctypes call runs the graph.

A view a kernel reads (kernels read contiguous rows) or a reshape NumPy would copy is
copied into a pooled buffer.  Any other eager step (a library call only Python can make)
keeps the Python wrapper, with the reason recorded.  A nonzero status (an index out of
range, a size BLAS cannot take) runs the graph once through the Python wrapper instead,
which raises eager's error or computes the value."""
from .. import ir
from .. import sizes as _sizes
from ..passes.classify import MOVEMENT
from ..passes.lower import _shape
from . import strided
from .c_kernels import kernel_args, pointer_ctype
from .cpp_externs import Ineligible, gather_lines, matmul_lines

__all__ = ["Ineligible", "entry_source", "shim_source", "EXTERNS"]

# op name -> emitter(entry, node, ins, out) -> C lines, for extern steps other modules
# run in C (e.g. attention kernels): ``entry.contiguous(name)`` gives a row-major pointer
# to an input buffer, ``entry.own(out)`` the output's memory, ``entry.ctype(name)`` its
# element type; the lines may ``return N;`` (N > 2) to have the Python wrapper run the graph
EXTERNS = {}


class _Entry:
    """The entry point's body, built step by step; ``lay`` maps each buffer to its
    layout, ``declared`` the C variables that exist."""

    def __init__(self, sched, io):
        self.sched, self.io = sched, io
        self.body, self.pooled = [], []
        self.declared = set(io)
        self.lay = {n: strided.contiguous(n, sched.buffers[n].shape) for n in io}

    def ctype(self, name):
        return pointer_ctype(self.sched.buffers[name].dtype.name)

    def own(self, name):
        """Give buffer ``name`` memory of its own: the memory plan's dead buffer, or a
        pooled array the shim passes in."""
        b = self.sched.buffers[name]
        if name not in self.declared:
            if b.reuses:
                ct = self.ctype(name)
                self.body.append(f"{ct} *{name} = ({ct} *){b.reuses};")
            else:
                self.pooled.append(name)
            self.declared.add(name)
        self.lay[name] = strided.contiguous(name, b.shape)
        return name

    def contiguous(self, name):
        """A C pointer to buffer ``name``'s value in row-major order: its own memory, a
        pointer into a view's root, or a copy."""
        lay = self.lay.get(name)
        if lay is None:
            raise Ineligible(f"{name} has no value the entry point knows")
        if lay.root == name and lay.offset == 0 and lay.is_contiguous():
            return name
        if lay.is_contiguous() and name not in self.declared:
            self.body.append(f"{self.ctype(name)} *{name} = {lay.pointer()};")
            self.declared.add(name)
        else:
            self.own(name)
            self.body += strided.copy_loops(self.ctype(name), lay, name)
        self.lay[name] = strided.contiguous(name, lay.shape)
        return name

    def kernel(self, k):
        for r in k.buffers_read():
            self.contiguous(r)
        for s in k.stores:
            self.own(s.buf)
        args = [a for a, _ in kernel_args(k, self.sched.symbols)]
        self.body.append(f"{k.name}({', '.join(args)});")

    def eager(self, n):
        name = getattr(n.target, "name", None)
        out = "b_" + n.name
        ins = ["b_" + a.name for a in n.args if hasattr(a, "meta")]
        if any(i not in self.lay for i in ins):
            raise Ineligible(f"{n.target} reads a value the entry point does not hold")
        if name in MOVEMENT and len(ins) == 1:
            try:
                lay = strided.view_layout(n, self.lay[ins[0]])
            except strided.Unsupported as e:
                raise Ineligible(str(e)) from None
            if lay is None:  # a reshape NumPy would copy
                src = self.lay[ins[0]]
                self.own(out)
                self.body += strided.copy_loops(self.ctype(out), src, out)
            elif out in self.declared:  # an output of the graph: its own memory
                self.body += strided.copy_loops(self.ctype(out), lay, out)
                self.own(out)
            else:
                self.lay[out] = lay
            return False
        if name == "matmul" and len(ins) == 2 and not n.kwargs:
            self.own(out)

            def ensure(k):
                return self.lay[self.contiguous(ins[k])]
            self.body += matmul_lines(n, self.lay[ins[0]], self.lay[ins[1]], out, ensure)
            return True
        if name in ("index", "embedding") and _gather(n):
            table, index = self.contiguous(ins[0]), self.contiguous(ins[1])
            self.own(out)
            self.body += gather_lines(n, table, index, out, self.ctype(out),
                                      self.ctype(index), name == "index")
            return False
        if name in EXTERNS:
            lines = EXTERNS[name](self, n, ins, out)
            self.body += lines
            return False
        raise Ineligible(f"an eager step ({n.target}) only Python can run")


def _gather(n):
    """``x[i]`` with one integer index tensor on dim 0, or ``embedding(x, i)``."""
    if len(n.args) != 2 or not hasattr(n.args[1], "meta") or \
            (n.kwargs and n.target.name != "embedding"):
        return False
    x, i = n.args[0].meta.get("val"), n.args[1].meta.get("val")
    return hasattr(x, "shape") and hasattr(i, "shape") and x.ndim >= 1 and \
        i.dtype.name in ("int64", "int32")


def entry_source(sched):
    """``(C source of ek_entry, its buffer arguments in order, whether it calls BLAS)``;
    raises `Ineligible`."""
    io = [x for x in sched.inputs if isinstance(x, str)] + list(sched.constants)
    io += [o for o in dict.fromkeys(sched.outputs) if isinstance(o, str) and o not in io]
    e = _Entry(sched, io)
    blas = False
    for st in sched.steps:
        if isinstance(st, ir.KernelStep):
            e.kernel(st.kernel)
        else:
            blas |= e.eager(st.node)
    for o in dict.fromkeys(sched.outputs):  # an output left as a view: copied out
        if isinstance(o, str) and sched.buffers[o].kind == "output":
            lay = e.lay[o]
            if lay.root != o or lay.offset != 0 or not lay.is_contiguous():
                e.body += strided.copy_loops(e.ctype(o), lay, o)
    io = io + e.pooled
    scalars = [x[1] for x in sched.inputs if isinstance(x, tuple)]
    params = [f"{pointer_ctype(sched.buffers[n].dtype.name)} *{n}" for n in io]
    params += [f"int64_t {s}" for s in sorted(sched.symbols)]
    params += [f"double {s}" for s in scalars] + ["int nt"]
    L = [f"int ek_entry({', '.join(params)}) {{"]
    L += ["    " + ln for ln in e.body] + ["    return 0;", "}"]
    return "#include <stdlib.h>\n#include <string.h>\n" + "\n".join(L) + "\n", io, blas


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
    L.append(f"    if ek_entry({', '.join(args)}):")
    L.append("        return _fallback(*args)  # eager's error, or a size BLAS cannot take")
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
