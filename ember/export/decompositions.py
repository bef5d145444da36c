"""``ExportedProgram.run_decompositions``, ``default_decompositions`` and
``primitive_decompositions``.

A program is decomposed by capturing it again: its graph runs under export's capture with
the ops of the table replaced by their decompositions where the table gives a function of
its own, and then ember's decomposition pass (the compiler's, `ember._inductor.passes
.decompose`) decomposes the ops the table names, keeping every op it does not name (also
those a decomposition produces), so ``conv2d`` lowers to ``convolution`` and stops there
when ``convolution`` is not in the table.
"""
import re

from .._core.op import REGISTRY, Op
from .core_aten import CORE_ATEN
from .dynamic_shapes import Dim

__all__ = ["default_decompositions", "primitive_decompositions", "run_decompositions"]


class CustomDecompTable(dict):
    """op -> decomposition function (torch.export.decomp_utils.CustomDecompTable): every op
    that lowers through a decomposition, with its own."""

    def copy(self):
        return CustomDecompTable(self)


def _decomposable_ops():
    for op in list(REGISTRY.values()):
        low = op.lowering
        if op.decomp is not None and low is not None and low.kind == "decomposition":
            yield op


def default_decompositions():
    """The decomposition table to the Core ATen operator set (torch.export
    .default_decompositions): every ember op outside Core ATen (`core_aten.CORE_ATEN`) with
    its decomposition.  Keys are ember ops; ``table[ember.ops.aten.conv2d.default] = fn``
    replaces the entry of the op that overload stands for."""
    return CustomDecompTable({op: op.decomp for op in _decomposable_ops()
                              if op.name not in CORE_ATEN})


def primitive_decompositions():
    """The table that lowers every op to ember's primitive set (`ember.ops.primitives`),
    which the lite runtime and the C code generator run.  Beyond torch."""
    return CustomDecompTable({op: op.decomp for op in _decomposable_ops()})


def _target_name(key):
    if isinstance(key, Op):
        return key.name
    op = getattr(key, "ember_op", None)   # an OpOverload of a custom op ("ns::name")
    if isinstance(op, Op):
        return op.name
    for attr in ("_opname", "__name__"):
        v = getattr(key, attr, None)
        if isinstance(v, str):
            return v.split("::")[-1].split(".")[0]
    return None


def _dynamic_shapes_of(ep):
    """The dynamic_shapes that reproduce ``ep``'s symbols on a new capture."""
    from .graph_signature import InputKind
    from .._dynamo.symbolic import SymInt
    dims = {}
    placeholders = {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}
    specs = []
    for s in ep.graph_signature.input_specs:
        if s.kind is not InputKind.USER_INPUT or not hasattr(s.arg, "name") or \
                hasattr(s.arg, "value"):
            continue
        meta = placeholders[s.arg.name].meta["val"]
        spec = {}
        for d, size in enumerate(meta.shape):
            if isinstance(size, SymInt) and isinstance(size.expr, str):
                m = re.fullmatch(r"\(?(?:(\d+)\*)?(s\d+)(?: ([+-]) (\d+))?\)?", size.expr)
                if m is None:
                    continue
                a, sym, sign, b = m.groups()
                r = ep.range_constraints.get(sym)
                root = dims.get(sym)
                if root is None:
                    root = dims[sym] = Dim(sym, min=getattr(r, "lower", 0),
                                           max=getattr(r, "upper", None))
                dim = root
                if a or b:
                    dim = root * int(a or 1) + (int(b) if sign == "+" else -int(b or 0))
                spec[d] = dim
        specs.append(spec or None)
    return specs


def _example_inputs(ep):
    args, kwargs = ep.example_inputs if ep.example_inputs is not None else ((), {})
    return tuple(args), dict(kwargs or {})


def run_decompositions(ep, decomp_table):
    from .exported_program import _ExportedModule
    from . import export as _export
    overrides = {}
    if decomp_table is None:
        decomp_table = default_decompositions()
    names = None
    if decomp_table is not None:
        defaults = {op.name: op.decomp for op in REGISTRY.values() if op.decomp is not None}
        names = set()
        for key, fn in decomp_table.items():
            name = _target_name(key)
            if name is None:
                continue
            names.add(name)
            if defaults.get(name) is not fn:
                overrides[name] = fn
    module = _ExportedModule(ep)
    module._decomp_overrides = overrides
    args, kwargs = _example_inputs(ep)
    dyn = _dynamic_shapes_of(ep)
    new = _export(module, args, kwargs or None,
                  dynamic_shapes=tuple(dyn) if any(d for d in dyn) else None, strict=False)
    if names:
        _decompose(new, names)
        if new.alternate is not None:
            _decompose(new.alternate, names)
    return new


def _decompose(ep, names):
    from .._dynamo.higher_order_capture import map_subgraphs
    gm = ep.graph_module
    # the bodies of cond/while_loop/map nodes are graphs too: decomposed the same way
    map_subgraphs(gm, lambda sub: _decompose_graph(sub, names))
    _decompose_graph(gm, names)


def _decompose_graph(gm, names):
    from .._inductor import config
    from .._inductor.passes.decompose import decompose
    kept = config.keep_whole
    # exactly the table decides (not the compiler's choice of ops it runs whole); ops a
    # decomposition produces are kept too unless the table names them
    config.keep_whole = frozenset(set(REGISTRY) - set(names))
    try:
        decompose(gm)
    finally:
        config.keep_whole = kept
    gm.recompile()
