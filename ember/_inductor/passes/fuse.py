"""Pass 3, fuse: decide which values live in buffers and which loops run together, and
lower each group to one `ir.Kernel`.

1. Realize: graph outputs, inputs of eager steps, reductions, inputs of reshapes that
   are not just unsqueezes/squeezes, and every ``config.max_inline_depth``-th value of a
   long chain get buffers; every other pointwise value is inlined
   into the loops that read it (recomputed there rather than stored and reloaded).
   A movement op whose only readers are eager steps stays an eager NumPy view (no copy).
2. Group (vertical and horizontal fusion): each realized value is a candidate loop nest;
   candidates over the same iteration space join one kernel: pointwise values of equal
   shape, reductions over the same input shape and dims, and the pointwise values around
   them over the full or the reduced space (softmax and layer_norm are one kernel each).
   A candidate joins a kernel only where the steps between them allow (no cycles).
3. Lower each group (`lower.Lowerer`); a group that cannot be lowered runs its nodes'
   eager kernels instead, so every graph compiles.
"""
import operator

from .. import ir
from .. import sizes as _sizes
from .classify import MOVEMENT, is_node, kind_of, reduction_dims
from .lower import Lowerer, Unsupported, constant_array, node_index

__all__ = ["fuse"]


def _shape(node):
    return tuple(_sizes.size(d) for d in node.meta["val"].shape)


def _keys(shape):
    return tuple(_sizes.key(d) for d in shape)


def _inputs(node):
    out = []

    def go(a):
        if is_node(a):
            out.append(a)
        elif isinstance(a, (list, tuple)):
            for x in a:
                go(x)
        elif isinstance(a, dict):
            for x in a.values():
                go(x)
    go(node.args)
    go(node.kwargs)
    return out


class _Group:
    def __init__(self, space, reduced, members):
        self.space, self.reduced, self.members = tuple(space), tuple(reduced), list(members)


def _is_trivial_view(node):
    x = node.args[0]
    a = [d for d in _shape(x) if d != 1]
    b = [d for d in _shape(node) if d != 1]
    return _keys(a) == _keys(b)


def fuse(gm):
    """The `ir.Schedule` of ``gm`` (a primitive-level GraphModule)."""
    graph = gm.graph
    nodes = [n for n in graph.nodes]
    out_node = graph.output_node()
    outputs = list(out_node.args[0]) if isinstance(out_node.args[0], (tuple, list)) else \
        [out_node.args[0]]
    kinds = {n: kind_of(n) for n in nodes if n.op != "output"}
    for n in nodes:  # getitem of a multi-output op, and anything else: eager
        if n.op == "call_function" and n.target is operator.getitem:
            kinds[n] = "item"

    realized = {n for n, k in kinds.items() if k in ("eager", "item", "reduction")}

    def need_buffer(n, for_eager):
        if not is_node(n) or kinds.get(n) in ("placeholder", "scalar_input", "constant", "eager",
                                                "item", "reduction") or n in realized:
            realized.add(n)
            return
        if for_eager and n.target.name in MOVEMENT and n not in outputs:
            kinds[n] = "eager"  # a NumPy view of its input's buffer: no copy
            realized.add(n)
            need_buffer(n.args[0], True)
            return
        realized.add(n)

    for n in reversed(nodes):
        k = kinds.get(n)
        if k in ("eager", "item"):
            for a in _inputs(n):
                need_buffer(a, True)
        elif k == "reduction":
            realized.add(n)
        elif k == "pointwise" and n.target.name in ("view", "_reshape_copy") and \
                not _is_trivial_view(n):
            need_buffer(n.args[0], False)
    for o in outputs:
        if is_node(o):
            need_buffer(o, False)
    cuts = _bound_inline_depth(nodes, kinds, realized)

    # ---- groups, in topological order, merged where the spaces match -------------------
    steps = []          # _Group or ("eager", node)
    where = {}          # node -> index in steps

    def deps(n, seen=None):
        """The realized nodes ``n``'s computation reads (through inlined values)."""
        seen = set() if seen is None else seen
        out = set()
        for a in _inputs(n):
            if a in seen:
                continue
            seen.add(a)
            if a in realized:
                out.add(a)
            else:
                out |= deps(a, seen)
        return out

    def candidate_space(n):
        if kinds[n] == "reduction":
            x = n.args[0]
            dims = reduction_dims(n)
            sh = _shape(x)
            return sh, tuple(d in dims for d in range(len(sh)))
        sh = _shape(n)
        return sh, (False,) * len(sh)

    def merged_space(g, n):
        """The space of group ``g`` with ``n`` added, or None when they do not fit."""
        space, red = candidate_space(n)
        if any(red):
            if any(g.reduced):
                ok = _keys(space) == _keys(g.space) and red == g.reduced
                return (space, red) if ok else None
            if all(node_index(_shape(m), space, red) is not None for m in g.members):
                return space, red
            return None
        return (g.space, g.reduced) if node_index(space, g.space, g.reduced) is not None \
            else None

    for n in nodes:
        k = kinds.get(n)
        if n not in realized or k in ("placeholder", "scalar_input", "constant"):
            continue
        if k in ("eager", "item"):
            where[n] = len(steps)
            steps.append(("eager", n))
            continue
        d = deps(n)
        placed = False
        for gi in range(len(steps) - 1, -1, -1):
            g = steps[gi]
            if not isinstance(g, _Group):
                continue
            sp = merged_space(g, n)
            if sp is None or any(p in cuts and where.get(p) == gi for p in d):
                continue  # (a cut's readers load it: a kernel inlines its own members)
            outside = [p for p in d if p in where and where[p] != gi]
            if all(where[p] < gi for p in outside):
                target = gi
            else:  # move the group after the steps n waits for, if none of them reads it
                later = steps[gi + 1:]
                reads_g = any(set(m for m in g.members) & _step_reads(s, deps) for s in later)
                if reads_g:
                    continue
                steps.append(steps.pop(gi))
                for m, i in list(where.items()):
                    if i > gi:
                        where[m] = i - 1
                for m in g.members:
                    where[m] = len(steps) - 1
                target = len(steps) - 1
            g.space, g.reduced = sp
            g.members.append(n)
            where[n] = target
            placed = True
            break
        if not placed:
            space, red = candidate_space(n)
            where[n] = len(steps)
            steps.append(_Group(space, red, [n]))

    return _build_schedule(gm, nodes, kinds, realized, steps, where, outputs, deps)


def _bound_inline_depth(nodes, kinds, realized):
    """Realize a pointwise value whose inlined expression would be deeper than
    ``config.max_inline_depth`` (a long chain becomes several kernels): lowering and C
    generation recurse over the expression, and Python's recursion limit would otherwise
    send a 300-op chain back to eager.  Also realize a pointwise value read more than once
    whose expression loads more than ``config.max_inline_reads`` buffers: every reader
    would reload them all, and a residual stream (``x = x + f(x)`` per layer) would make
    each layer's kernels read every earlier layer's outputs, quadratic in the depth.
    Returns the values cut there: their readers go to other kernels, which load them."""
    from .. import config
    depth, reads, cuts = {}, {}, set()
    for n in nodes:
        if n.op != "call_function" or n in realized:
            continue
        inlined = [a for a in _inputs(n) if a not in realized]
        d = 1 + max((depth.get(a, 0) for a in inlined), default=0)
        loads = set(a for a in _inputs(n) if a in realized or a not in reads)
        for a in inlined:
            loads |= reads.get(a, set())
        if kinds.get(n) == "pointwise" and (
                d >= config.max_inline_depth or
                (len(loads) > config.max_inline_reads and len(n.users) > 1)):
            realized.add(n)
            cuts.add(n)
        else:
            depth[n], reads[n] = d, loads
    return cuts


def _step_reads(step, deps):
    if isinstance(step, _Group):
        out = set()
        for m in step.members:
            out |= deps(m)
        return out
    return set(_inputs(step[1]))


def _build_schedule(gm, nodes, kinds, realized, steps, where, outputs, deps):
    buffers, constants, inputs, symbols = {}, {}, [], {}
    bufname = {}

    def add_buffer(n, kind):
        name = "b_" + n.name
        m = n.meta["val"]
        buffers[name] = ir.Buffer(name, _shape(n), m.dtype, n, kind)
        bufname[n] = name
        return name

    scalar_names = {}
    for n in nodes:
        k = kinds.get(n)
        if k == "placeholder":
            inputs.append(add_buffer(n, "input"))
            for d, s in enumerate(n.meta["val"].shape):
                e = getattr(s, "expr", None)
                if e is not None and str(e) not in symbols and str(e).isidentifier():
                    symbols[str(e)] = (len(inputs) - 1, d)
        elif k == "scalar_input":
            scalar_names[n] = "a_" + n.name
            inputs.append(("scalar", scalar_names[n]))
            # a size passed as its own input (a tensor read only for its size): the
            # symbol is that integer, d = None
            e = getattr(n.meta.get("val"), "expr", None)
            if e is not None and str(e) not in symbols and str(e).isidentifier():
                symbols[str(e)] = (len(inputs) - 1, None)
        elif k == "constant":
            constants[add_buffer(n, "constant")] = constant_array(n)

    out_steps = []
    kernel_id = 0
    for i, step in enumerate(steps):
        if not isinstance(step, _Group):
            n = step[1]
            m = n.meta.get("val")
            if hasattr(m, "shape"):
                out_steps.append(ir.EagerStep(n, [add_buffer(n, "temp")]))
            else:  # a multi-output node: its getitems name the buffers
                out_steps.append(ir.EagerStep(n, []))
            continue
        for mnode in step.members:
            add_buffer(mnode, "temp")
        try:
            kern = _lower_group(step, f"kernel{kernel_id}", bufname, scalar_names, where, i)
            kernel_id += 1
            out_steps.append(ir.KernelStep(kern))
        except Unsupported as e:
            step.reason = str(e)
            for n in _closure(step.members, realized):
                if n not in bufname:
                    add_buffer(n, "temp")
                out_steps.append(ir.EagerStep(n, [bufname[n]]))
    outs = []
    for o in outputs:
        outs.append(bufname[o] if is_node(o) else ("const", o))
    sched = ir.Schedule(out_steps, buffers, inputs, outs, symbols, constants)
    for name in outs:
        if isinstance(name, str) and buffers[name].kind == "temp":
            buffers[name].kind = "output"
    _prune_stores(sched)
    return sched


def _closure(members, realized):
    """``members`` and the inlined values they read, in graph order."""
    seen = set(members)
    stack = list(members)
    while stack:
        n = stack.pop()
        for a in _inputs(n):
            if a not in seen and a not in realized and a.op != "placeholder" and \
                    getattr(a.target, "name", None) != "tensor":
                seen.add(a)
                stack.append(a)
    return sorted(seen, key=lambda n: list(n.graph.nodes).index(n))


def _lower_group(g, name, bufname, scalar_names, where, gi):
    members = set(g.members)

    def buffer_of(n):
        if n in members:
            return None
        if n in bufname and (n not in where or where[n] != gi):
            return bufname[n]
        return None

    low = Lowerer(g.space, g.reduced, buffer_of, scalar_names.get)
    stores = []
    for m in g.members:
        idx = node_index(_shape(m), g.space, g.reduced)
        if idx is None:
            raise Unsupported("member does not fit the space")
        e = low.expr(m, idx)
        strides = _sizes.contiguous_strides(_shape(m))
        a = ir.Affine.const(0, len(g.space))
        for i, s in zip(idx, strides):
            a = a + i.scale(s)
        stores.append(ir.Store(bufname[m], a, e, m.meta["val"].dtype.name))
    return ir.Kernel(name, g.space, g.reduced, stores, list(g.members))


def _prune_stores(sched):
    """Drop stores of values no other step reads and no output is: they lived only inside
    their kernel (a reduction consumed by the same loop nest)."""
    needed = set(o for o in sched.outputs if isinstance(o, str))
    for st in sched.steps:
        if isinstance(st, ir.KernelStep):
            needed |= set(st.kernel.buffers_read())
        else:
            for a in _inputs(st.node):
                needed.add("b_" + a.name)
    for st in sched.steps:
        if isinstance(st, ir.KernelStep):
            st.kernel.stores = [s for s in st.kernel.stores if s.buf in needed]
    sched.steps = [st for st in sched.steps
                   if not (isinstance(st, ir.KernelStep) and not st.kernel.stores)]
    defined = set()
    for st in sched.steps:
        if isinstance(st, ir.KernelStep):
            defined |= {s.buf for s in st.kernel.stores}
        else:
            defined |= set(st.outputs)
    for name in list(sched.buffers):
        b = sched.buffers[name]
        if b.kind in ("temp", "output") and name not in defined:
            del sched.buffers[name]
    for st in sched.steps:
        if isinstance(st, ir.KernelStep):
            for r in st.kernel.buffers_read():
                sched.buffers[r].contiguous = True
