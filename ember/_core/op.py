"""The operator record: everything ember knows about one operator.

An `Op` is declared once in ``ember/ops`` and carries its kernel (written against
the array namespace ``xp`` of its inputs), its derivative (a vjp written in ember
operators, so higher-order gradients, tracing and vmap of gradients work), its
shape/dtype rule and, optionally, a jvp rule, a vmap batching rule and a
decomposition.  Calling an Op runs it through the dispatcher.
"""

__all__ = ["Op", "REGISTRY"]

REGISTRY = {}


def _camel(name):
    return "".join(p[:1].upper() + p[1:] for p in name.strip("_").split("_"))


class Op:
    """One operator.  See the module docstring; fields:

    kernel(xp, *arrays, **params) -> array | tuple of arrays
    vjp(ctx, grad, *inputs, **params) -> one gradient (or None) per input; ``ctx.out`` is the
        output (if ``save_output``), ``ctx.needs_input_grad`` says which are wanted.
    jvp(out, tangents, *inputs, **params) -> the output tangent (a tuple for ``n_out > 1``), or
        None.  ``out`` is the output (tuple for several), ``tangents[i]`` input i's tangent or
        None (zero: rules skip its term rather than materialise zeros); written in ember ops so
        it composes with vmap and reverse mode.  The result may broadcast to the output and
        have another dtype (forward_ad fits it: expand, cast, real part for real outputs; None
        becomes zeros); complex follows the vjp's convention (``J t`` for holomorphic ops).
        Without a rule, forward AD derives the tangent from the vjp (an extra backward pass).
    shape(*inputs, **params) -> (shape, dtype): what the kernel returns, without data.
        Inputs are the op's positional inputs with tensors replaced by metadata objects
        (`ember._core.meta.TensorMeta`: ``.shape``, a tuple of ints or symbolic sizes that
        support ``+ - * //`` and ``==`` with ints, ``.ndim`` and ``.dtype``, an ember dtype);
        Python scalars and None come as they are, ``params`` as the kernel gets them (dtype
        params may be NumPy dtypes: `meta.as_dtype`).  Rules use plain arithmetic on sizes,
        never NumPy.  One output: ``(shape_tuple, ember_dtype)``; ``n_out > 1``: a tuple of
        such pairs.  An output whose shape depends on values (nonzero, unique, ...) is
        declared by raising `ember._core.meta.DataDependentShape`.  Category helpers live in
        `ember._core.meta` (broadcast, unary_float, predicate, reduction, ...), and
        ``meta.check_shapes(True)`` (or ``EMBER_CHECK_SHAPES=1``) verifies every rule against
        the real outputs as operators run.
    save_inputs: True (all), False, or a tuple of input indices the vjp reads.
    n_out: number of outputs (1), or None for a list of outputs of data-dependent length.
    nondiff_outputs: indices of outputs that never carry gradients (e.g. argmax indices).
    view: the output is a view of input 0 (shares memory and version counter).
    """
    __slots__ = ("name", "kernel", "vjp", "jvp", "shape", "batch", "decomp", "save_inputs",
                 "save_output", "n_out", "nondiff_outputs", "view", "differentiable",
                 "node_cls", "_inplace", "__weakref__", "category", "doc")

    def __init__(self, name, kernel, vjp=None, *, jvp=None, shape=None, batch=None, decomp=None,
                 save_inputs=True, save_output=False, n_out=1, nondiff_outputs=(), view=False,
                 differentiable=True, category=None, doc=None):
        if name in REGISTRY:
            raise RuntimeError(f"operator {name!r} is defined twice")
        self.name = name
        self.kernel = kernel
        self.vjp = vjp
        self.jvp = jvp
        self.shape = shape
        self.batch = batch
        self.decomp = decomp
        self.save_inputs = save_inputs
        self.save_output = save_output
        self.n_out = n_out
        self.nondiff_outputs = nondiff_outputs
        self.view = view
        self.differentiable = differentiable
        self.category = category
        self.doc = doc
        self._inplace = None
        from .node import Node
        self.node_cls = type(_camel(name) + "Backward0", (Node,), {"__slots__": ()})
        REGISTRY[name] = self

    def __call__(self, *args, **params):
        return apply(self, args, params)

    def __repr__(self):
        return f"ember.ops.{self.name}"

    def __reduce__(self):
        return (REGISTRY.__getitem__, (self.name,))

    @property
    def inplace(self):
        """The in-place variant (``add_`` for ``add``): writes the result into input 0."""
        if self._inplace is None:
            self._inplace = InplaceOp(self)
        return self._inplace


class InplaceOp:
    """``op_``: computes ``op`` and writes the result into its first input."""
    __slots__ = ("base", "name")

    def __init__(self, base):
        self.base = base
        self.name = base.name + "_"

    def __call__(self, target, *args, **params):
        return apply_inplace(self.base, target, args, params)

    def __repr__(self):
        return f"ember.ops.{self.name}"


from .dispatch import apply, apply_inplace  # noqa: E402  (dispatch needs Op defined first)

