"""Settings of ember.compile's capture (``ember._dynamo.config``, torch's names)."""

# the first compile is static; a size seen to change is recompiled once as symbolic
automatic_dynamic_shapes = True
# with automatic_dynamic_shapes, sizes start static (False: symbolic from the first call)
assume_static_by_default = True
# compiled graphs kept per compiled function before ember generalises what varies (marks
# it dynamic) and says so once; beyond torch, there is no fall back to eager at the limit
cache_size_limit = 8
accumulated_cache_size_limit = 256
# a Python number that changes between calls becomes a graph input after one recompile
specialize_int = False
specialize_float = False
# .item() and friends: ember runs the pending graph and returns the value (a graph break)
capture_scalar_outputs = False
capture_dynamic_output_shape_ops = False
# raise at graph breaks instead of splitting the graph (what fullgraph=True sets per call)
error_on_graph_break = False
suppress_errors = False
verbose = False
# later calls whose guards match run the compiled graph without the Python, when the Python
# that ran during capture is provably free of side effects (ember._dynamo.replay)
replay = True
