"""The operator record: everything ember knows about one operator.

An `Op` is declared once in ``ember/ops`` and carries its kernel (written against
the array namespace ``xp`` of its inputs), its derivative (a vjp written in ember
operators, so higher-order gradients, tracing and vmap of gradients work), its
shape/dtype rule and, optionally, a jvp rule, a vmap batching rule and a
decomposition.  Calling an Op runs it through the dispatcher.
"""
import enum

from .node import OpNode
from .tensor import Tensor

__all__ = ["Op", "REGISTRY", "ON_REGISTER", "Category", "RULES", "JVP_FROM_VJP", "mark_unsupported",
           "OPS"]

REGISTRY = {}
# called with each Op as it is declared: ember.ops fills in its decomposition and lowering
# path, so ops declared on first use get them too
ON_REGISTER = []


def op_by_name(name):
    """The registered `Op` called ``name`` (how a pickled op is found again)."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise RuntimeError(f"no operator named {name!r} is registered (a custom operator is "
                           f"registered when the module defining it is imported)") from None


class _Registry:
    """Every registered `Op` as an attribute (``OPS.add``) or by name (``OPS["ns::op"]``):
    how generated graph code names its ops (``ops.add(x, y)``)."""

    def __getattr__(self, name):
        try:
            return REGISTRY[name]
        except KeyError:
            raise AttributeError(f"no operator named {name!r} is registered") from None

    def __getitem__(self, name):
        return op_by_name(name)

    def __repr__(self):
        return "<ember operator registry>"


OPS = _Registry()


class Category(enum.StrEnum):
    """The closed set of operator categories.  Category helpers (``ember.ops._helpers``)
    derive the routine rules from it (elementwise shape and batching rules, ...), and vmap
    draws random ops per its ``randomness`` flag.  A member compares equal to its value, so
    ``Op(..., category="unary")`` is accepted; compare with ``is`` where it is hot."""
    UNARY = "unary"
    BINARY = "binary"
    ACTIVATION = "activation"
    REDUCTION = "reduction"
    SORTING = "sorting"
    BLAS = "blas"
    LINALG = "linalg"
    NN = "nn"
    RANDOM = "random"
    DISTRIBUTIONS = "distributions"


# the rules an op carries besides its kernel; each is present or marked in ``unsupported``
RULES = ("vjp", "jvp", "shape", "batch", "decomp", "lowering")

# the reason that marks a jvp rule as not written: forward AD derives it from the vjp
JVP_FROM_VJP = "derived from vjp"


def _camel(name):
    """torch's node name stem: each ``_``-separated part title-cased, a letter after a digit
    capitalised too (``log1p`` -> ``Log1P``, ``rad2deg`` -> ``Rad2Deg``)."""
    return "".join(p.title() for p in name.strip("_").split("_"))


# Operators whose node torch names otherwise than ``<Name>Backward0``: after the aten
# overload that ran (``x.max()`` is max's second overload; ``max(x, dim)`` ember's max_dim),
# or after the aten op behind ember's own (``special_sinc`` is aten's sinc).  A name, or a
# function of the call's ``(args, params)`` giving one (None: ``<Name>Backward0``).
def _tensor(a):
    return isinstance(a, Tensor)


def _partial_reduction(one):
    # a reduction over some of the dimensions is the ``dim`` overload (SumBackward1); over
    # all of them, as ``x.sum()``, the plain one
    def pick(args, params):
        dims = params.get("dims")
        return one if dims is not None and len(dims) < args[0].ndim else None
    return pick


_MATMUL_NODES = {(2, 2): "MmBackward0", (1, 1): "DotBackward0", (2, 1): "MvBackward0"}
NODE_NAMES = {
    "max": "MaxBackward1", "min": "MinBackward1",
    "max_dim": "MaxBackward0", "min_dim": "MinBackward0", "median_dim": "MedianBackward1",
    "special_i0": "I0Backward0", "special_sinc": "SincBackward0",
    "special_gammainc": "IgammaBackward0", "special_gammaincc": "IgammacBackward0",
    "norm": "LinalgVectorNormBackward0",
    # matmul is mm, dot or mv in torch for matrices and vectors
    "matmul": lambda args, params: _MATMUL_NODES.get((args[0].ndim, args[1].ndim)),
    # x - 2.0 is sub; 2.0 - x is torch's rsub.Scalar
    "sub": lambda args, params: "RsubBackward1" if not _tensor(args[0]) else None,
    # pow.Tensor_Scalar, pow.Tensor_Tensor, pow.Scalar
    "pow": lambda args, params: "PowBackward2" if not _tensor(args[0]) else
    "PowBackward1" if _tensor(args[1]) else None,
    "remainder": lambda args, params: "RemainderBackward1" if _tensor(args[1]) else None,
    "fmod": lambda args, params: "FmodBackward1" if _tensor(args[1]) else None,
    "clamp": lambda args, params: None if any(_tensor(a) for a in args[1:]) else
    "ClampBackward1",
    "scatter": lambda args, params: None if _tensor(args[-1]) else "ScatterBackward1",
    "lerp": lambda args, params: "LerpBackward1" if len(args) > 2 and _tensor(args[2]) else
    None,
    "sum": _partial_reduction("SumBackward1"),
    "mean": _partial_reduction("MeanBackward1"),
    "prod": _partial_reduction("ProdBackward1"),
}
_NODE_CLASSES = {}


def _node_class(name):
    """The node class called ``name`` (one per name, shared by the ops that use it)."""
    cls = _NODE_CLASSES.get(name)
    if cls is None:
        cls = _NODE_CLASSES[name] = type(name, (OpNode,), {"__slots__": ()})
    return cls


def _node_cls_for(name):
    """``op.node_cls`` of operator ``name``: its torch name, and for an operator whose node
    torch names after the overload that ran, the ``pick`` that `record` asks."""
    rule = NODE_NAMES.get(name)
    own = type(_camel(name) + "Backward0" if not isinstance(rule, str) else rule, (OpNode,),
               {"__slots__": ()})
    if callable(rule):
        def pick(args, params):
            n = rule(args, params)
            return own if n is None else _node_class(n)
        own.pick = staticmethod(pick)
    return own


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
        Without a rule, forward AD derives the tangent from the vjp (an extra backward pass);
        a rule returns NotImplemented for the inputs it leaves to that derivation.
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
    grad_reads: for an op whose inputs' gradients read different inputs, one tuple per input:
        the indices of the inputs its gradient formula reads (mul: ``((1,), (0,))``).  Only
        the inputs that the wanted gradients read are saved, as torch's nodes do: ``x * b``
        with ``b`` needing no gradient saves ``b`` alone, so an in-place write to ``x``
        before backward is fine.  None: ``save_inputs`` says what is saved.
    save_output: whether the vjp reads ``ctx.out``; for several outputs also a tuple of the
        indices it reads (the others are None there, and may be written in place after).
    n_out: number of outputs (1), or None for a list of outputs of data-dependent length.
    nondiff_outputs: indices of outputs that never carry gradients (e.g. argmax indices).
    view: the output is a view of input 0 (shares memory and version counter).
    batch(op, args, bdims, params, batch_size) -> (out, out_bdims): the vmap batching rule
        (``ember.ops._batching``); category helpers fill it for elementwise and dim-taking
        ops, ops without one run in a loop over the batch.
    category: a `Category` (or its string value), or None; anything else raises.
    unsupported: ``{rule: reason}`` for rules of `RULES` the op deliberately lacks, e.g.
        ``{"batch": "loop fallback, reason: the kernel is a sequential recurrence"}`` or
        ``{"jvp": JVP_FROM_VJP}``.  The registry self-test (tests/ops/test_registry.py)
        requires every rule to be present or marked here; a non-differentiable op
        (``differentiable=False``) needs neither vjp nor jvp.  A mark on a rule the op
        has raises.
    decomp(*inputs, **params): the op written in primitives (``ember.ops.decompositions``),
        what compile and export lower; primitives carry a mark instead.
    ufunc: a NumPy ufunc that computes the op exactly (the kernel's result) on two float32 or
        float64 arrays of one dtype, or one of them and a Python float or int, below the
        threaded C loops' size: the dispatcher's fast path for binary arithmetic
        (`ember._core.dispatch.apply_binary`); None for others.
    lowering: how a code generator reaches the op (`ember.ops.lowering.Lowering`: a scalar
        C expression, a loop kind, an extern library call, or through ``decomp``).
    """
    __slots__ = ("name", "kernel", "vjp", "jvp", "shape", "batch", "decomp", "save_inputs",
                 "save_output", "n_out", "nondiff_outputs", "view", "differentiable",
                 "node_cls", "grad_reads", "saved_by_need", "ufunc", "_inplace", "__weakref__",
                 "category", "doc", "unsupported", "lowering")

    def __init__(self, name, kernel, vjp=None, *, jvp=None, shape=None, batch=None, decomp=None,
                 save_inputs=True, save_output=False, n_out=1, nondiff_outputs=(), view=False,
                 differentiable=True, category=None, doc=None, unsupported=None,
                 lowering=None, grad_reads=None):
        if name in REGISTRY:
            raise RuntimeError(f"operator {name!r} is defined twice")
        if category is not None and category.__class__ is not Category:
            category = _as_category(name, category)
        self.name = name
        self.kernel = kernel
        self.vjp = vjp
        self.jvp = jvp
        self.shape = shape
        self.batch = batch
        self.decomp = decomp
        self.lowering = lowering
        self.save_inputs = save_inputs
        self.save_output = save_output
        self.grad_reads = grad_reads
        self.saved_by_need = _saved_by_need(grad_reads)
        self.ufunc = None
        self.n_out = n_out
        self.nondiff_outputs = nondiff_outputs
        self.view = view
        self.differentiable = differentiable
        self.category = category
        self.doc = doc
        self.unsupported = _check_unsupported(self, unsupported) if unsupported else {}
        self._inplace = None
        self.node_cls = _node_cls_for(name)
        REGISTRY[name] = self
        for hook in ON_REGISTER:
            hook(self)

    def __call__(self, *args, **params):
        return apply(self, args, params)

    def __repr__(self):
        return f"ember.ops.{self.name}"

    def __reduce__(self):
        return (op_by_name, (self.name,))   # by reference: the registered op

    @property
    def inplace(self):
        """The in-place variant (``add_`` for ``add``): writes the result into input 0."""
        if self._inplace is None:
            self._inplace = InplaceOp(self)
        return self._inplace


def _saved_by_need(reads):
    """``grad_reads`` as a table that recording reads: entry ``mask`` (bit i set when input i
    needs a gradient) holds, per input, whether it is saved."""
    if reads is None:
        return None
    n = len(reads)
    table = []
    for mask in range(1 << n):
        wanted = {j for i in range(n) if mask >> i & 1 for j in reads[i]}
        table.append(tuple(i in wanted for i in range(n)))
    return tuple(table)


def _as_category(name, category):
    try:
        return Category(category)
    except ValueError:
        raise ValueError(f"operator {name!r}: unknown category {category!r}; the categories are "
                         f"{[c.value for c in Category]} (ember._core.op.Category)") from None


def _check_unsupported(op, marks):
    marks = dict(marks)
    for rule, reason in marks.items():
        if rule not in RULES:
            raise ValueError(f"operator {op.name!r}: unsupported={{{rule!r}: ...}} names no rule; "
                             f"the rules are {list(RULES)}")
        if not isinstance(reason, str) or not reason.strip():
            raise ValueError(f"operator {op.name!r}: the mark of rule {rule!r} needs a reason "
                             f"string")
        if getattr(op, rule, None) is not None:
            raise ValueError(f"operator {op.name!r} has a {rule} rule and marks it unsupported")
    return marks


def mark_unsupported(rule, reason, *ops):
    """Mark ``rule`` of each of ``ops`` (Ops or registered names) as deliberately absent with
    ``reason``, after declaration: for groups of ops made by helpers, e.g.
    ``mark_unsupported("jvp", JVP_FROM_VJP, "sort", "topk")``.  An op that has the rule (a
    jvp written later, say) keeps it and gets no mark."""
    for op in ops:
        op = REGISTRY[op] if isinstance(op, str) else op
        if getattr(op, rule, None) is None:
            op.unsupported.update(_check_unsupported(op, {rule: reason}))


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

