"""A fused optimizer update as one functional node of a captured graph.

The fused updates (``_adam_step``, ``_sgd_step``, ...) write their inputs in place and
return nothing; a graph is functional.  `functional_update` makes the graph node for one:
its outputs are the new values of the inputs the update writes (params and state, not the
gradients), its kernel runs the fused eager kernel on copies of them (so the "eager"
backend keeps the few in-place NumPy calls per parameter that eager mode makes, instead
of the dozens of primitives of the decomposition), and its decomposition is the update's
functional one, which code generators lower (``lowering.kind == "decomposition"``).  It
is an operator of the captured graph only, never registered: users call the fused op.
"""
from .._core.op import Op
from ..ops.lowering import Lowering

__all__ = ["functional_update", "FunctionalUpdate"]

_MADE = {}


class FunctionalUpdate(Op):
    """``update`` (a fused in-place optimizer op) returning the new values of its inputs
    at positions ``written``."""
    __slots__ = ("update", "written", "ident")

    def __reduce__(self):
        return (functional_update, self.ident)


def functional_update(update, written, n_tensors, number_keys=()):
    """The functional node of ``update`` for inputs ``written``, called with its
    ``n_tensors`` tensors and then the values of the settings ``number_keys`` (Python
    numbers, such as the learning rate, passed as inputs rather than params so that a
    value that varies becomes a graph input instead of a recompile); made once."""
    written = tuple(written)
    ident = (update, written, n_tensors, tuple(number_keys))
    f = _MADE.get(ident)
    if f is not None:
        return f
    f = object.__new__(FunctionalUpdate)  # not Op.__init__: no registry entry of its own
    f.update, f.written, f.ident = update, written, ident
    f.name = update.name + "_functional"
    f.doc = f"{update.name}, returning the new values of the inputs it writes"

    def split(args, params):
        params = dict(params)
        params.update(zip(number_keys, args[n_tensors:]))
        return list(args[:n_tensors]), params

    def kernel(xp, *arrays, **params):
        arrays, params = split(arrays, params)
        for i in written:
            arrays[i] = arrays[i].copy()
        update.kernel(xp, *arrays, **params)
        return one(tuple(arrays[i] for i in written))

    def shape(*metas, **params):
        return one(tuple((tuple(metas[i].shape), metas[i].dtype) for i in written))

    def decomp(*args, **params):
        from ..ops.decompositions._util import cast
        args, params = split(args, params)
        news = update.decomp(*args, **params)
        return one(tuple(cast(news[i], args[i].dtype) for i in written))

    def one(outs):  # an op of one output returns it, not a tuple
        return outs[0] if len(written) == 1 else outs

    f.kernel, f.shape, f.decomp = kernel, shape, decomp
    f.vjp = f.jvp = f.batch = None
    f.save_inputs = f.save_output = False
    f.n_out = len(written)
    f.nondiff_outputs = ()
    f.view = False
    f.differentiable = False
    f.node_cls = None
    f._inplace = None
    f.category = update.category
    f.unsupported = dict(update.unsupported)
    f.lowering = Lowering("decomposition")
    _MADE[ident] = f
    return f

