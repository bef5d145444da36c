"""Settings of the inductor backend (module attributes, as torch._inductor.config).

``ember.compile(..., options={...})`` overrides them per compile; names match torch's where
torch has one."""
import os

# the C compiler: "auto" finds one ($CC, cc, gcc, clang); None forces the NumPy code
# generator (same fusion groups, no C), as on a machine without a compiler
cc = None if os.environ.get("EMBER_INDUCTOR_CC") == "none" else "auto"
# the whole graph as one C entry point instead of a Python wrapper calling kernels
cpp_wrapper = False
# check the graph between passes (fx lint, a TensorMeta on every value)
verify_passes = os.environ.get("EMBER_INDUCTOR_VERIFY", "0") == "1"
# a loop nest is split over OpenMP threads only from this many elements of work
parallel_min_work = 1 << 16
# decompose random operators too (off: they keep drawing from the eager generator per call)
decompose_random = False
# ops kept whole (their eager kernels run from the wrapper) although they decompose:
# their decompositions gather/scatter through index tables (col2im's scatter-add is
# NumPy's slow ufunc.at), while their kernels use strided windows and BLAS; measured on a
# small CNN training step.  embedding: its decomposition (an index) would wrap negative
# indices, where the op raises IndexError as torch does
keep_whole = frozenset(("im2col", "col2im", "max_pool", "max_pool_backward", "embedding",
                        "convolution", "convolution_backward"))
# flash attention runs its eager kernels, the blocked C ones (O(L d) memory, OpenMP); its
# decomposition would materialise the L x S scores
keep_whole = keep_whole | frozenset(("_flash_attention", "_flash_attention_backward"))
# the gradient of a slice (split's, a q/k/v projection's) writes a region of zeros: its
# eager kernel is a strided assignment, its decomposition an index_put through index tables
keep_whole = keep_whole | frozenset(("_index_view_backward",))
# a pointwise chain inlined deeper than this is cut into kernels at a buffer: the passes
# recurse over expression trees (about 4 Python frames a level; the limit is 1000)
max_inline_depth = 128
# a pointwise value with several readers is stored, not recomputed by each, once its
# expression loads more buffers than this (a residual stream stays linear in the depth)
max_inline_reads = 8
# var/std/layer_norm statistics of rows at least this long (a static length) take one
# blocked Welford pass instead of two (codegen/welford.py); 0: every row kernel does.
# Measured (float32, 2 loaded cores): 16 x 262144 rows 14% faster one-pass, 256 x 4096
# and 4096 x 256 10-40% slower (their rows stay in cache between the two passes)
welford_min_row = 1 << 15
