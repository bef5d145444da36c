"""``compile_fx(gm, example_inputs, options=None)``: the "inductor" backend of
ember.compile, as one list of named passes.

    decompose  ops -> primitives (extern ops stay: matmul -> BLAS, sort, linalg, fft)
    cleanup    no-op views/casts, constant folding, CSE, dead code
    algebra    value-preserving rewrites for less work (softmax: exp(A) / sum(exp(A)))
    fuse       buffers and loop nests: pointwise chains with their reductions/broadcasts
    loops      merge contiguous loop dims
    memory     reuse dead buffers, drop them after their last reader
    codegen    C kernels from the scalar-function table (or their NumPy twins), and C
               for some extern steps (max pooling: codegen/c_externs)
    wrapper    the Python function that allocates, calls kernels and externs, returns;
               or, with cpp_wrapper, one C entry point (BLAS, views and gathers in C;
               a graph it cannot take keeps the Python wrapper, the reason logged)
    build      cc -O3 -fopenmp + CPU flags, cached on disk; no compiler: NumPy kernels

Nothing here raises for an unsupported graph: a node the generator cannot loop over runs
its eager kernel from the wrapper, and should a pass itself fail, the graph runs eagerly
(the reason is kept on the compiled function)."""
import ctypes
import logging

from . import config as _config
from . import ir
from .build import build_library, compiler_available
from .codegen import c_kernels, cpp_wrapper, numpy_kernels, wrapper
from .log import log_output_code
from .passes.algebra import algebra
from .passes.cleanup import cleanup
from .passes.decompose import decompose
from .passes.fuse import fuse
from .passes.loops import coalesce
from .passes.memory import plan_memory
from .passes.verify import verify_graph

__all__ = ["compile_fx", "CompiledGraph", "GRAPH_PASSES"]

_LOG = logging.getLogger(__name__)

GRAPH_PASSES = [("decompose", decompose), ("cleanup", cleanup), ("algebra", algebra)]

_OPTION_NAMES = {"cc", "cpp_wrapper", "verify_passes", "parallel_min_work", "decompose_random"}


class _Options:
    def __init__(self, options):
        options = dict(options or {})
        unknown = set(options) - _OPTION_NAMES
        if unknown:
            raise RuntimeError(f"unknown inductor option(s) {sorted(unknown)}; the options are "
                               f"{sorted(_OPTION_NAMES)}")
        for k in _OPTION_NAMES:
            setattr(self, k, options.get(k, getattr(_config, k)))


class CompiledGraph:
    """The compiled callable: ``compiled(*inputs) -> tuple of Tensors``.

    ``kernel_count`` is the number of generated kernels, ``backend`` "c" or "numpy" (or
    "eager" when compilation failed, with ``reason``), ``source`` the generated code,
    ``schedule`` the `ir.Schedule`; ``cpp_wrapper`` whether one C entry point runs the
    graph, and ``cpp_wrapper_reason`` why not when it was asked for."""

    def __init__(self, call, backend, source, schedule, kernel_count, reason=None):
        self._call = call
        self.backend = backend
        self.source = source
        self.schedule = schedule
        self.kernel_count = kernel_count
        self.reason = reason
        self.cpp_wrapper = False         # whether the graph runs as one C entry point
        self.cpp_wrapper_reason = None   # why not, when cpp_wrapper was asked for

    def __call__(self, *inputs):
        return self._call(*inputs)


def _copy_module(gm):
    """A copy of ``gm`` the passes may edit; metadata values are shared, not deep-copied
    (symbolic sizes keep their identity)."""
    from ..fx import Graph, GraphModule
    g = Graph()
    val_map = {}
    out = g.graph_copy(gm.graph, val_map, return_output_node=True)
    rv, old_out = out
    g.output(rv)
    return GraphModule(gm, g)


def compile_fx(gm, example_inputs, options=None):
    opts = _Options(options)
    try:
        return _compile(gm, opts)
    except Exception as e:  # noqa: BLE001 - a graph always runs; the reason is kept
        if opts.verify_passes:
            raise
        return CompiledGraph(lambda *a: tuple(gm(*a)), "eager", "", None, 0,
                             reason=f"{type(e).__name__}: {e}")


def _compile(gm, opts):
    work = _copy_module(gm)
    for name, p in GRAPH_PASSES:
        p(work)
        if opts.verify_passes:
            verify_graph(work, name)
    sched = fuse(work)
    kernels = [st.kernel for st in sched.steps if isinstance(st, ir.KernelStep)]
    for k in kernels:
        coalesce(k)
    dead_after = plan_memory(sched)
    fns, backend, ksrc = None, "numpy", ""
    cpp_reason = None
    if opts.cpp_wrapper:
        if not compiler_available(opts.cc):
            cpp_reason = "no C compiler"
        else:
            try:
                return _compile_cpp_wrapper(sched, kernels, opts, dead_after)
            except cpp_wrapper.Ineligible as e:
                cpp_reason = str(e)
        _LOG.info("cpp_wrapper: %s; the Python wrapper runs this graph", cpp_reason)
    externs = {}
    if compiler_available(opts.cc):
        externs = _c_externs(sched, opts.parallel_min_work)
    if (kernels or externs) and compiler_available(opts.cc):
        ksrc = c_kernels.source(kernels, sched.symbols, opts.parallel_min_work) + \
            "".join(e.source for e in externs.values())
        args = {k.name: _typed_args(k, sched) for k in kernels}
        for e in externs.values():
            args[e.name] = [(f"o{k}", "out", False) for k in range(len(e.outputs))] + \
                [(f"i{k}", "in", False) for k in range(len(e.inputs))] + [("nt", "nt", False)]
        fns, _info = build_library(ksrc, args)
        if fns is not None:
            backend = "c"
    if fns is None:
        externs = {}
        ksrc = numpy_kernels.RUNTIME + "\n" + "\n".join(
            numpy_kernels.kernel_source(k, sched.symbols) for k in kernels)
        g = {}
        exec(compile(ksrc, "<ember inductor numpy kernels>", "exec"), g)  # noqa: S102
        fns = {k.name: g[k.name] for k in kernels}
        backend = "numpy" if kernels else "none"
    wsrc = wrapper.wrapper_source(sched, dead_after, backend == "c", externs)
    log_output_code(f"{backend} kernels", ksrc)
    log_output_code("wrapper", wsrc)
    call = wrapper.make_call(wsrc, sched, fns)
    out = CompiledGraph(call, backend, ksrc + "\n" + wsrc, sched, len(kernels))
    out.cpp_wrapper_reason = cpp_reason  # why cpp_wrapper was asked for and not used
    return out


def _compile_cpp_wrapper(sched, kernels, opts, dead_after):
    """The whole graph as one C entry point (`codegen.cpp_wrapper`), or Ineligible."""
    from . import extern_blas
    entry, io, has_matmul = cpp_wrapper.entry_source(sched)
    if has_matmul and not extern_blas.available():
        raise cpp_wrapper.Ineligible("SciPy's BLAS pointers are unavailable")
    ksrc = c_kernels.source(kernels, sched.symbols, opts.parallel_min_work) + \
        extern_blas.blas_declarations() + entry
    args = {k.name: _typed_args(k, sched) for k in kernels}
    args["ek_entry"] = [(n, "in", False) for n in io] + \
        [(n, "sym", False) for n in sorted(sched.symbols)] + \
        [(x[1], "scalar", True) for x in sched.inputs if isinstance(x, tuple)] + \
        [("nt", "nt", False)]
    fns, info = build_library(ksrc, args)
    if fns is None:
        raise cpp_wrapper.Ineligible(f"the library did not build: {info}")
    if has_matmul:
        extern_blas.install(fns["ek_entry"]._lib_handle)
    fns["ek_entry"].restype = ctypes.c_int  # nonzero: run the Python wrapper instead
    wsrc = cpp_wrapper.shim_source(sched, io)
    log_output_code("c kernels and entry point", ksrc)
    log_output_code("cpp_wrapper shim", wsrc)
    python_call = []

    def fallback(*inputs):
        """The same kernels driven by the Python wrapper (built on first use)."""
        if not python_call:
            kfns = {k.name: fns[k.name] for k in kernels}
            python_call.append(wrapper.make_call(
                wrapper.wrapper_source(sched, dead_after, True), sched, kfns))
        return python_call[0](*inputs)
    call = wrapper.make_call(wsrc, sched, {"ek_entry": fns["ek_entry"], "_fallback": fallback})
    out = CompiledGraph(call, "c", ksrc + "\n" + wsrc, sched, len(kernels))
    out.cpp_wrapper = True
    return out


def _c_externs(sched, min_work):
    """``{step index: CExtern}``: the eager steps generated C computes instead."""
    from .codegen.c_externs import C_EXTERNS
    out = {}
    for i, st in enumerate(sched.steps):
        if isinstance(st, ir.EagerStep):
            emit = C_EXTERNS.get(getattr(st.node.target, "name", None))
            e = emit(st.node, f"extern{i}", min_work) if emit is not None else None
            if e is not None:
                out[i] = e
    return out


def _typed_args(k, sched):
    scal = {}
    for s in k.stores:
        for e in ir.walk(s.value):
            if isinstance(e, ir.ScalarArg):
                scal[e.name] = e.dtype.startswith("float")
    return [(n, kind, scal.get(n, False)) for n, kind in c_kernels.kernel_args(k, sched.symbols)]
