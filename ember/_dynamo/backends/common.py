"""`aot_autograd`: make a backend of graph compilers for the forward and backward halves."""

__all__ = ["aot_autograd", "AotBackend"]


class AotBackend:
    """A backend that wants the joint graph partitioned: ember's runtime traces the
    backward of each captured graph (`ember._dynamo.aot_autograd`), compiles the forward
    half with ``fw_compiler`` and the backward half with ``bw_compiler`` (default: the same).
    Called as a plain backend (no gradients needed), it compiles the graph with
    ``fw_compiler``."""

    def __init__(self, fw_compiler, bw_compiler=None):
        self.fw_compiler = fw_compiler
        self.bw_compiler = bw_compiler or fw_compiler

    def __call__(self, gm, example_inputs):
        return self.fw_compiler(gm, example_inputs)


def aot_autograd(fw_compiler=None, bw_compiler=None, **kwargs):
    """A backend that compiles the forward and backward graphs separately (torch's
    ``torch._dynamo.backends.common.aot_autograd``)."""
    if fw_compiler is None:
        raise TypeError("aot_autograd() needs fw_compiler")
    return AotBackend(fw_compiler, bw_compiler)
