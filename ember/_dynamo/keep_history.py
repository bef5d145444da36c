"""The graph node of an in-place write made without grad to a value that has a history.

In eager mode ``y.mul_(2)`` under ``no_grad`` (or inside a custom Function's forward) on a
tensor with autograd history changes its values and keeps its ``grad_fn``: a gradient
that reaches ``y`` later flows into the history ``y`` had.  A captured graph is
functional, so the write is a new value recorded without grad, which has no history;
`KEEP_HISTORY` ``(new, old)`` is that value again with ``old``'s history: its output is
``new`` and its derivative passes the output's gradient to ``old`` unchanged (none to
``new``).  `ember._dynamo.trace.Trace.assign` records it.  Like
`ember._dynamo.functional_update`, it is an operator of the captured graph only, never
registered: no user calls it.
"""
from .._core import meta as _meta
from .._core.node import OpNode
from .._core.op import Op
from ..ops.lowering import Lowering

__all__ = ["KEEP_HISTORY"]


class _KeepHistory(Op):
    __slots__ = ()

    def __init__(self):  # not Op.__init__: no registry entry
        self.name = "_keep_history"
        self.doc = "``new``'s values with ``old``'s autograd history (gradient to ``old``)."
        self.kernel = lambda xp, new, old: new.copy()
        self.vjp = lambda ctx, g, new, old: (None, g)
        self.jvp = lambda out, tangents, new, old: tangents[1]
        self.shape = _meta.same
        self.batch = None
        # what code generators lower: the forward only (the graph's backward is the
        # vjp's ops), so the identity on ``new`` is all a generated kernel computes
        self.decomp = _decomp
        self.lowering = Lowering("decomposition")
        self.save_inputs = self.save_output = False
        self.n_out = 1
        self.nondiff_outputs = ()
        self.view = False
        self.differentiable = True
        self.category = None
        self.unsupported = {}
        self._inplace = None
        self.node_cls = type("KeepHistoryBackward0", (OpNode,), {"__slots__": ()})

    def __reduce__(self):
        return (_keep_history, ())


def _decomp(new, old):
    from ..ops.decompositions._util import prim
    return prim._stop_gradient(new)


KEEP_HISTORY = _KeepHistory()


def _keep_history():
    return KEEP_HISTORY
