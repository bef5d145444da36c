"""ember's C code generator: the "inductor" backend of ``ember.compile``.

``compile_fx(gm, example_inputs, options=None)`` turns an op-level graph into fused C
kernels (or, with no C compiler, NumPy kernels with the same fusion groups); see
`compile_fx` for the list of passes and `config` for the settings."""
from . import config
from .compile_fx import CompiledGraph, compile_fx

__all__ = ["compile_fx", "config", "CompiledGraph"]
