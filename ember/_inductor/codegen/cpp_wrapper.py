"""``cpp_wrapper``: the whole graph as one C entry point.

``int ek_entry(<input, constant, output and pooled buffers>, <sizes>, <scalar inputs>,
int nt)`` takes the graph's buffers, allocated by a thin Python shim that reads the
symbolic sizes off the inputs (intermediates from a per-thread pool that keeps them
between calls; buffers share memory per the memory plan), calls the kernels in order,
makes the views the Python wrapper makes with NumPy as pointer arithmetic
(`strided`), and runs the extern steps in C (`cpp_externs`): matmuls, batched and
broadcast, through SciPy's BLAS (`ember._inductor.extern_blas`), embedding gathers and
index_put scatters (an embedding's gradient), and the ops in `EXTERNS`: flash attention
and its backward, the eager library's C kernels called through their addresses
(`cpp_attention`).  A step of several outputs writes each into the buffer of the
``getitem`` that reads it, or into pooled scratch.  One ctypes call runs the graph.

A view a kernel reads (kernels read contiguous rows) or a reshape NumPy would copy is
copied into a pooled buffer.  Any other eager step (a library call only Python can make)
keeps the Python wrapper, with the reason recorded.  A nonzero status (an index out of
range, a size BLAS cannot take) runs the graph once through the Python wrapper instead,
which raises eager's error or computes the value."""
import operator

from .. import ir
from .. import sizes as _sizes
from ..passes.classify import MOVEMENT
from ..passes.lower import _keys, _shape
from . import strided
from .c_kernels import kernel_args, pointer_ctype
from .cpp_attention import attention_backward, attention_forward
from .cpp_externs import Ineligible, gather_lines, index_put_lines, index_shape, matmul_lines
from .wrapper import size_bindings

__all__ = ["Ineligible", "entry_source", "shim_source", "EXTERNS"]

# op name -> emitter(entry, node, ins, out) -> C lines, for extern steps other modules
# run in C (e.g. attention kernels): ``entry.contiguous(name)`` gives a row-major pointer
# to an input buffer, ``entry.own(out)`` the output's memory, ``entry.ctype(name)`` its
# element type; the lines may ``return N;`` (N > 2) to have the Python wrapper run the graph.
# An op of several outputs gets ``out`` as a list, one buffer name per output (None where
# the graph reads none: ``entry.result`` gives it scratch memory).  ``entry.preamble(key,
# make)`` adds C at the top level of the translation unit once (types, functions the lines
# call); ``entry.address(name, address)`` a function of a library already loaded, passed in.
EXTERNS = {"_flash_attention": attention_forward,
           "_flash_attention_backward": attention_backward}


class _Entry:
    """The entry point's body, built step by step; ``lay`` maps each buffer to its
    layout, ``declared`` the C variables that exist."""

    def __init__(self, sched, io):
        self.sched, self.io = sched, io
        self.body, self.pooled = [], []
        self.declared = set(io)
        self.lay = {n: strided.contiguous(n, sched.buffers[n].shape) for n in io}
        self.preambles = {}  # key -> top-level C the body calls
        self.parts = {}      # multi-output node -> its output buffers (None: scratch)
        self.addresses = {}  # void * parameter -> the address the shim passes

    def preamble(self, key, make):
        """Top-level C (``make()``) the body needs, added to the source once per key."""
        if key not in self.preambles:
            self.preambles[key] = make()

    def address(self, name, address):
        """A ``void *`` parameter of the entry point the shim passes ``address`` to (a
        function of a library loaded in this process): its C name."""
        self.addresses["p_" + name] = address
        return "p_" + name

    def scratch(self, tag, shape, dtype):
        """A pooled array of ``shape`` the body may use, no graph value: a C pointer."""
        name = "s_" + tag
        if name not in self.declared:
            self.sched.buffers[name] = ir.Buffer(name, tuple(shape), dtype)
            self.pooled.append(name)
            self.declared.add(name)
        return name

    def result(self, name, tag, meta):
        """Memory for one output of a multi-output step: buffer ``name``'s, or scratch of
        ``meta``'s shape and dtype where the graph reads no such output (``name`` None)."""
        if name is not None:
            return self.own(name)
        return self.scratch(tag, [_sizes.size(d) for d in meta.shape], meta.dtype)

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

    def broadcast(self, name, shape, tag):
        """A C pointer to buffer ``name`` broadcast to ``shape``, row-major: as
        `contiguous` when it has that shape, else a pooled copy."""
        lay = self.lay[name]
        if _keys(lay.shape) == _keys(shape):
            return self.contiguous(name)
        try:
            src = strided.expanded(lay, shape)
        except strided.Unsupported as e:
            raise Ineligible(str(e)) from None
        dst = self.scratch(tag, shape, self.sched.buffers[name].dtype)
        self.body += strided.copy_loops(self.ctype(name), src, dst)
        return dst

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
        if n.target is operator.getitem and getattr(n.args[0], "name", None) in self.parts:
            return self._part(n, out)
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
        if name == "index_put" and len(ins) >= 3 and len(ins) == len(n.args):
            return self._index_put(n, ins, out)
        if name == "_index_view_backward" and len(ins) == 1:
            return self._index_view_backward(n, ins[0], out)
        if name in EXTERNS:
            if isinstance(n.meta.get("val"), tuple):
                out = self.parts[n.name] = self._outputs(n)
            lines = EXTERNS[name](self, n, ins, out)
            self.body += lines
            return False
        raise Ineligible(f"an eager step ({n.target}) only Python can run")

    def _index_put(self, n, ins, out):
        x, values = (a.meta["val"] for a in n.args[:2])
        idx = [a.meta["val"] for a in n.args[2:]]
        # (an accumulating put adds in C's arithmetic: not for bool or the half types,
        # whose buffers hold bytes and bits)
        if values.dtype != x.dtype or len(idx) > x.ndim or \
                any(i.dtype.name not in ("int64", "int32") for i in idx) or \
                (n.kwargs.get("accumulate") and
                 x.dtype.name in ("bool", "float16", "bfloat16")):
            raise Ineligible("an index_put the entry point does not run")
        ishape = index_shape([self.lay[i].shape for i in ins[2:]])
        target = ishape + tuple(self.lay[ins[0]].shape[len(idx):])
        try:
            indices = [(strided.expanded(self.lay[i], ishape), self.ctype(i)) for i in ins[2:]]
        except strided.Unsupported as e:
            raise Ineligible(str(e)) from None
        vals = self.broadcast(ins[1], target, n.name + "_values")
        src = self.contiguous(ins[0])
        self.own(out)
        self.body += index_put_lines(n, src, vals, indices, out, self.ctype(out))
        return False

    def _index_view_backward(self, n, g, out):
        """A slice's gradient: zeros, and ``g`` written into the region the slice read."""
        shape = tuple(_sizes.size(d) for d in n.kwargs["shape"])
        self.own(out)
        try:
            dst = strided.region(strided.contiguous(out, shape), n.kwargs["key"])
        except strided.Unsupported as e:
            raise Ineligible(str(e)) from None
        if _keys(dst.shape) != _keys(self.lay[g].shape):
            raise Ineligible("a slice gradient of an unexpected shape")
        self.body.append(f"memset({out}, 0, sizeof({self.ctype(out)}) * "
                         f"{_sizes.c_text(_sizes.prod(shape))});")
        self.body += strided.copy_between(self.ctype(out), self.lay[g], dst)
        return False

    def _outputs(self, n):
        """The buffer of each output of multi-output node ``n`` the graph reads (the first
        ``getitem`` of it), None for the others."""
        outs = [None] * len(n.meta["val"])
        for u in n.users:
            if u.target is operator.getitem and isinstance(u.args[1], int) and \
                    "b_" + u.name in self.sched.buffers and outs[u.args[1]] is None:
                outs[u.args[1]] = "b_" + u.name
        return outs

    def _part(self, n, out):
        """``getitem`` of a multi-output step: the memory that step wrote."""
        src = self.parts[n.args[0].name][n.args[1]]
        if src != out:  # a second getitem of the same output
            if src is None:
                raise Ineligible(f"{n.name} reads an output the entry point did not keep")
            if out in self.declared:
                self.body += strided.copy_loops(self.ctype(out), self.lay[src], out)
                self.own(out)
            else:
                self.lay[out] = self.lay[src]
        return False


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
    io = io + e.pooled + list(e.addresses)
    sched.entry_addresses = e.addresses  # for the shim
    scalars = [x[1] for x in sched.inputs if isinstance(x, tuple)]
    params = [f"void *{n}" if n in e.addresses else
              f"{pointer_ctype(sched.buffers[n].dtype.name)} *{n}" for n in io]
    params += [f"int64_t {s}" for s in sorted(sched.symbols)]
    params += [f"double {s}" for s in scalars] + ["int nt"]
    L = [f"int ek_entry({', '.join(params)}) {{"]
    L += ["    " + ln for ln in e.body] + ["    return 0;", "}"]
    head = "#include <stdlib.h>\n#include <string.h>\n" + "".join(e.preambles.values())
    return head + "\n".join(L) + "\n", io, blas


def shim_source(sched, io):
    """The Python side: inputs, sizes, output buffers, one call."""
    L = ["def call(*args):"]
    for i, name in enumerate(sched.inputs):
        if isinstance(name, tuple):
            L.append(f"    {name[1]} = float(args[{i}])")
        else:
            L.append(f"    {name} = _contig(args[{i}]._data)")
    L += size_bindings(sched)
    for name in sched.constants:
        L.append(f"    {name} = _CONST[{name!r}]")
    addresses = getattr(sched, "entry_addresses", {})
    for o in io:
        b = sched.buffers.get(o)
        if b is not None and b.kind in ("output", "temp"):
            shape = "(" + "".join(_sizes.py_text(d) + ", " for d in b.shape) + ")"
            alloc = f"_np.empty({shape}, _DT[{b.dtype.name!r}])" if b.kind == "output" else \
                f"_pooled({shape}, _DT[{b.dtype.name!r}], {o!r})"
            L.append(f"    {o} = {alloc}")
    args = [str(addresses[n]) if n in addresses else f"{n}.ctypes.data" for n in io]
    args += sorted(sched.symbols)
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
