"""``compile_fx(gm, example_inputs, options=None)``: the "inductor" backend of
ember.compile, as one list of named passes.

    decompose  ops -> primitives (extern ops stay: matmul -> BLAS, sort, linalg, fft)
    cleanup    no-op views/casts, constant folding, CSE, dead code
    fuse       buffers and loop nests: pointwise chains with their reductions/broadcasts
    loops      merge contiguous loop dims
    memory     reuse dead buffers, drop them after their last reader
    codegen    C kernels from the scalar-function table (or their NumPy twins)
    wrapper    the Python function that allocates, calls kernels and externs, returns
    build      cc -O3 -fopenmp + CPU flags, cached on disk; no compiler: NumPy kernels

Nothing here raises for an unsupported graph: a node the generator cannot loop over runs
its eager kernel from the wrapper, and should a pass itself fail, the graph runs eagerly
(the reason is kept on the compiled function)."""
from . import config as _config
from . import ir
from .build import build_library, compiler_available
from .codegen import c_kernels, numpy_kernels, wrapper
from .log import log_output_code
from .passes.cleanup import cleanup
from .passes.decompose import decompose
from .passes.fuse import fuse
from .passes.loops import coalesce
from .passes.memory import plan_memory
from .passes.verify import verify_graph

__all__ = ["compile_fx", "CompiledGraph", "GRAPH_PASSES"]

GRAPH_PASSES = [("decompose", decompose), ("cleanup", cleanup)]

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
    ``schedule`` the `ir.Schedule`."""

    def __init__(self, call, backend, source, schedule, kernel_count, reason=None):
        self._call = call
        self.backend = backend
        self.source = source
        self.schedule = schedule
        self.kernel_count = kernel_count
        self.reason = reason

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
    if kernels and compiler_available(opts.cc):
        ksrc = c_kernels.source(kernels, sched.symbols, opts.parallel_min_work)
        args = {k.name: _typed_args(k, sched) for k in kernels}
        fns, _info = build_library(ksrc, args)
        if fns is not None:
            backend = "c"
    if fns is None:
        ksrc = numpy_kernels.RUNTIME + "\n" + "\n".join(
            numpy_kernels.kernel_source(k, sched.symbols) for k in kernels)
        g = {}
        exec(compile(ksrc, "<ember inductor numpy kernels>", "exec"), g)  # noqa: S102
        fns = {k.name: g[k.name] for k in kernels}
        backend = "numpy" if kernels else "none"
    wsrc = wrapper.wrapper_source(sched, dead_after, backend == "c")
    log_output_code(f"{backend} kernels", ksrc)
    log_output_code("wrapper", wsrc)
    call = wrapper.make_call(wsrc, sched, fns)
    # cpp_wrapper (the whole graph as one C entry point) is not generated yet: the Python
    # wrapper runs the same kernels, so the option changes speed only, never results
    return CompiledGraph(call, backend, ksrc + "\n" + wsrc, sched, len(kernels))


def _typed_args(k, sched):
    scal = {}
    for s in k.stores:
        for e in ir.walk(s.value):
            if isinstance(e, ir.ScalarArg):
                scal[e.name] = e.dtype.startswith("float")
    return [(n, kind, scal.get(n, False)) for n, kind in c_kernels.kernel_args(k, sched.symbols)]
