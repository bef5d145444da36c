"""ember's C code generator: the "inductor" backend of ``ember.compile``.

``compile_fx(gm, example_inputs, options=None)`` turns an op-level graph into fused C
kernels (or, with no C compiler, NumPy kernels with the same fusion groups); see
`compile_fx` for the list of passes and `config` for the settings.

What it does: decompositions traced and generalised (symbolic sizes included); pointwise
chains with their row and column reductions and broadcasts in one loop nest (softmax and
layer_norm forward are one kernel each); OpenMP over the outer loops from
``config.parallel_min_work`` elements, ``omp simd`` inner loops with vector accumulators;
float32/float64/ints/bool natively, float16/bfloat16 through float32; symbolic sizes as
kernel arguments; a Python wrapper calling kernels and the ops' eager kernels (matmul and
other externs, and every node the generator does not loop over), or with ``cpp_wrapper``
one C entry point (kernels and SciPy-BLAS matmuls) for graphs without other eager steps.

var/std/layer_norm statistics of long rows take one blocked Welford pass
(``codegen/welford.py``; shorter rows keep two passes over a row in cache, which measured
faster).

Not done: flash attention blocks (attention runs as its decomposition: matmuls and a fused softmax); explicit
intrinsics (the compiler vectorises the ``omp simd`` loops for the CPU capability's ISA)."""
from . import config
from .compile_fx import CompiledGraph, compile_fx

__all__ = ["compile_fx", "config", "CompiledGraph"]
