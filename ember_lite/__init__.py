"""ember_lite: a small runtime for ember program files, on NumPy alone (SciPy for special
functions, LAPACK and FFT).

``ember_lite.load(path_or_file)`` reads the ``lite/program.json`` graph of a file written by
``ember.export.save`` (the format is documented in `ember.export.serde`) and its weights,
and gives a `Program`: ``program(*arrays)`` returns a tuple of NumPy arrays (the user
outputs); ``program.input_specs`` and ``program.output_names`` describe it.  Dynamic sizes
bind from the input shapes.  Data-dependent control flow saved as ``cond``/``while_loop``/
``map`` runs its sub-graphs (`ember_lite._control_flow`), so every branch survives.

It never imports ember (no autograd, nn, fx or compiler), so a deployment needs NumPy and
SciPy only, and it loads in a fraction of ember's import time (see
``benchmarks/lite_runtime.py``).  Loading runs no code from the file: operator names must
be primitives this runtime has a kernel for, sizes are ``ast``-checked expressions.

With a C compiler, ``load`` also generates one C function for the graph (`ember_lite.
_cgen`: the elementwise math of ember's scalar-function table, shipped as the generated
`ember_lite._ctable`; reductions, gathers, views as strides; matrix products through the
OpenBLAS of NumPy's wheel, `ember_lite._cblas`), builds it once into the kernel cache that
ember's own C kernels use (`ember_lite._build`; ``$EMBER_CACHE_DIR``, else
``~/.cache/ember/kernels``; keyed by source, compiler, flags and CPU) and runs each call
through it.  ``program.backend`` is ``"c"``, or ``"numpy"`` with the reason in
``program.c_info``: no compiler, a failed build, a graph outside the generator's subset,
``load(f, c_kernels=False)`` or ``EMBER_LITE_C=0``.  The C comes from the graph this
runtime has checked, never from the file (a file's C would be code from an untrusted
source), and no size the file states reaches memory unchecked.

The kernels (`ember_lite.kernels`) are a deliberate second implementation of ember's
primitive set (`ember.ops.primitives.PRIMITIVES`, extern library calls included), kept
minimal: one NumPy call where NumPy has one, with torch's semantics as ember's own kernels
define them, and every result cast to the dtype the graph recorded.  What keeps the two
implementations equal is tests/export/test_lite_ops.py: every primitive runs through a saved
one-op program here and in ember eager, and the outputs must agree.

One runtime reads every program format version ember has written (``ember_lite.READS``);
tests/export/data keeps a file of each.
"""
from ._format import READS
from ._program import Program, load

__all__ = ["load", "Program", "READS"]
