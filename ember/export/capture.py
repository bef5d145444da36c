"""Whole-graph capture for ``ember.export``: ember.compile's capture in a strict mode.

The module runs once, eagerly in meaning, under a `CaptureSession` (``ember._dynamo``) with
its parameters and buffers replaced by stand-ins, so each becomes a graph input (lifted);
the user's tensor inputs are bound with symbolic sizes, the dimensions ``dynamic_shapes``
declares dynamic rendering as symbols.  When the function returns, the pending trace is
turned into one graph whose outputs are the buffers written in place (their new values)
and then the user's outputs.  Anything that would end the graph early in ember.compile (a
branch on a tensor's value, a call that cannot be recorded) is an error here, naming the
user's file:line, as torch.export's is.  Comparisons of symbolic sizes are noted as guards
(`ember.export.guards` checks them against the declared ranges).
"""
import operator
from .._core.tensor import Tensor
from .._dynamo import symbolic
from .._dynamo.cache import FunctionCache, RunEagerly
from .._dynamo.exc import Unsupported, UserError
from .._dynamo.graph_build import build_graph_module
from .._dynamo.graph_key import spec_of
from .._dynamo.session import CaptureSession, user_location
from ..func import _pytree
from ..func._pytree import tree_flatten, tree_unflatten
from ..nn.modules.module import Module
from ..nn.utils.stateless import _reparametrize
from .._dynamo.symbolic import render
from .dynamic_shapes import INT_OO, DimSpec, input_dim_specs
from .unbacked import UnbackedValues
from .sizes import lift_sizes
from .graph_signature import (ExportGraphSignature, InputKind, InputSpec, OutputKind,
                              OutputSpec, TensorArgument, ConstantArgument, SymIntArgument)

__all__ = ["capture"]



class _ExportCache(FunctionCache):
    """The capture's cache: the trace is made a graph by export itself, and what remains
    pending when the session ends runs op by op (it only settles the stand-ins)."""

    def lookup(self, trace, out_values, session):
        raise RunEagerly()


class _ExportSession(CaptureSession):
    """A capture session in which every graph break is an export error and random ops
    are graph nodes (a program draws anew each run)."""
    record_random = True
    record_literals = True

    def __init__(self, cache, strict):
        super().__init__(cache)
        self.strict = strict

    def graph_break(self, reason):
        where = user_location()
        self.abort()
        if "bool" in reason or "values" in reason or "item" in reason:
            hint = ("Python needed the values of a tensor the program computes (a branch on "
                    "a tensor's value, .item(), .numpy(), ...), which an exported program "
                    "cannot bake in. For data-dependent control flow, please use ember.cond "
                    "(torch.cond) to capture both branches, or make the condition depend on "
                    "shapes only.")
        else:
            hint = "ember.export captures one whole graph and cannot break it here."
        raise UserError(f"{hint}\n  reason: {reason}\n  at {where}")


def _module_state(mod):
    """(parameters, buffers, non-persistent buffer names) of ``mod``, by qualified name."""
    params = dict(mod.named_parameters())
    buffers = dict(mod.named_buffers())
    non_persistent = set()
    for prefix, m in mod.named_modules():
        for b in getattr(m, "_non_persistent_buffers_set", ()):
            non_persistent.add(f"{prefix}.{b}" if prefix else b)
    return params, buffers, non_persistent


class Capture:
    """What `capture` finds: the graph module and what each of its inputs and outputs is."""
    __slots__ = ("gm", "signature", "state_dict", "constants", "leaf_specs", "symbols",
                 "replacements", "sizes", "unbacked",
                 "guards", "out_spec", "in_spec", "leaf_values",
                 "flat_inputs", "flat_paths", "arg_of_leaf")


def _flat_paths(args, kwargs):
    """Readable access paths (``args[0]``, ``kwargs['x']``) of the flattened inputs."""
    out = []

    def walk(x, path):
        node = _pytree._REGISTRY.get(type(x))
        if node is not None:   # a registered class (a dataclass): its fields by name
            children, (kept, _) = node[0](x)
            names = kept if len(kept) == len(children) else range(len(children))
            for n, v in zip(names, children):
                walk(v, f"{path}.{n}")
        elif isinstance(x, (tuple, list)):
            for i, v in enumerate(x):
                walk(v, f"{path}[{i}]")
        elif isinstance(x, dict):
            for k, v in x.items():
                walk(v, f"{path}[{k!r}]")
        else:
            out.append(path)
    walk(tuple(args), "args")
    walk(dict(kwargs), "kwargs")
    return out


def _input_names(mod, args, kwargs, flat, paths):
    """Placeholder names of the user's inputs: the forward's parameter names (``x``,
    ``x_0`` for nested ones), as torch names them."""
    from .dynamic_shapes import _argument_names
    names = _argument_names(mod, len(args), kwargs)
    out = []
    for p in paths:
        if p.startswith("args["):
            i = int(p[5:p.index("]")])
            rest = p[p.index("]") + 1:]
            base = names[i]
        else:
            base = p[len("kwargs['"):p.index("']")]
            rest = p[p.index("']") + 2:]
        suffix = "".join("_" + c for c in rest.replace(".", " ").replace("[", " ").replace("]", " ")
                         .replace("'", "").split())
        out.append(_identifier(base + suffix))
    return out


def _identifier(s):
    out = "".join(c if c.isalnum() or c == "_" else "_" for c in s)
    return out if out and not out[0].isdigit() else "_" + out


def capture(mod, args, kwargs, dynamic_shapes, strict, auto_static=(), replacements=None):
    """Capture ``mod(*args, **kwargs)`` as one graph (see the module docstring); a
    `Capture`.  ``auto_static``: ``Dim.AUTO`` leaves a first capture found specialised;
    ``replacements``: those it found equal to an expression of other sizes."""
    replacements = dict(replacements or {})
    kwargs = dict(kwargs or {})
    flat, in_spec = tree_flatten((tuple(args), kwargs))
    # the program runs on copies: export never writes the caller's example inputs
    copies = {}
    flat = [copies.setdefault(id(x), x.detach().clone()) if isinstance(x, Tensor) else x
            for x in flat]
    args, kwargs = tree_unflatten(flat, in_spec)
    paths = _flat_paths(args, kwargs)
    tensor_pos = [i for i, x in enumerate(flat) if isinstance(x, Tensor)]
    names = _input_names(mod, args, kwargs, flat, paths)
    specs = input_dim_specs(mod, args, kwargs, dynamic_shapes, flat, paths)

    params, buffers, non_persistent = _module_state(mod)
    stand_ins = {}
    for name, t in list(params.items()) + list(buffers.items()):
        s = t.detach().clone()
        stand_ins[name] = s
    role = {}
    for name in params:
        role[id(stand_ins[name])] = ("param", name)
    for name in buffers:
        role[id(stand_ins[name])] = ("buffer", name)

    cache = _ExportCache(f"{type(mod).__qualname__}.forward", None, "export",
                         dynamic=False, fullgraph=True)
    session = _ExportSession(cache, strict)
    session.module = mod
    leaf_specs = {}
    guards = []
    symbolic.GUARDS.append(guards)
    result = {}
    try:
        with session:
            user_tensors = [flat[i] for i in tensor_pos]
            session.bind_arguments(user_tensors, [names[i] for i in tensor_pos])
            for i in tensor_pos:
                a = session.arg_index.get(id(flat[i]))
                for d, ds in specs.get(i, {}).items():
                    lf = ("a", a, d)
                    if ds.kind == "static" or lf in auto_static:
                        continue
                    leaf_specs[lf] = ds
                    cache.dynamic_leaves.add(lf)
            cache.leaf_symbol = _LeafSymbols(leaf_specs, session.leaf_values, replacements)
            _check_hints(leaf_specs, session, paths, tensor_pos)
            readable = {id(t): t for t in user_tensors}
            readable.update((id(t), t) for t in stand_ins.values())
            unbacked = UnbackedValues(session, readable, leaf_specs,
                                      lambda: DimSpec("unbacked", None, -INT_OO, INT_OO))
            with _reparametrize(mod, stand_ins, True, False), unbacked, \
                    _ModuleCalls(mod, session):
                out = mod(*args, **kwargs)
            result["capture"] = _graph_of(session, out, role, flat, tensor_pos, names,
                                          stand_ins, non_persistent, params, buffers,
                                          unbacked.sources)
            # the ops still pending run when the session ends: their comparisons are not
            # the program's
            _stop_guards(guards)
    except Unsupported as e:
        raise UserError(str(e)) from None
    finally:
        _stop_guards(guards)
    c = result["capture"]
    c.leaf_specs = leaf_specs
    c.replacements = replacements
    c.guards = guards
    c.in_spec = in_spec
    c.leaf_values = dict(session.leaf_values)
    c.flat_inputs = flat
    c.flat_paths = paths
    c.arg_of_leaf = {a: tensor_pos[a] for a in range(len(tensor_pos))}
    return c


class _ModuleCalls:
    """Notes, while the program runs, which trace ops each submodule call recorded:
    ``session.module_calls`` gets ``(fqn, class name, first op, end op)`` per call, from
    which the graph's nodes get torch's ``nn_module_stack`` (`ember.export.unflatten`)."""

    def __init__(self, mod, session):
        self.fqn = {id(m): name for name, m in mod.named_modules() if name}
        self.session = session
        session.module_calls = []
        self.open = []

    def _ops(self):
        trace = self.session.trace
        return len(trace.ops) if trace is not None else 0

    def _pre(self, m, args):
        self.open.append((m, self._ops()))

    def _post(self, m, args, out):
        while self.open:
            top, start = self.open.pop()
            if top is m:
                name = self.fqn.get(id(m))
                if name is not None:
                    self.session.module_calls.append(
                        (name, type(m).__qualname__, start, self._ops()))
                break

    def __enter__(self):
        from ..nn.modules.module import (register_module_forward_hook,
                                         register_module_forward_pre_hook)
        self.handles = [register_module_forward_pre_hook(self._pre),
                        register_module_forward_hook(self._post, always_call=True)]
        return self

    def __exit__(self, *exc):
        for h in self.handles:
            h.remove()


def _tag_module_stacks(graph, ops, calls):
    """``node.meta["nn_module_stack"]``: ``{fqn: (fqn, class name)}`` of the submodule
    calls (outermost first) that recorded the op of each node; a multi-output op's getitems
    share their op's."""
    import operator as _op
    if not calls:
        return
    calls = sorted(calls, key=lambda c: (c[2], -c[3]))
    nodes = [n for n in graph.nodes if n.op == "call_function" and n.target is not _op.getitem]
    for node, i in zip(nodes, ops):
        node.meta["nn_module_stack"] = {
            name: (name, cls) for name, cls, a, b in calls if a <= i < b}
    for n in graph.nodes:
        if n.op == "call_function" and n.target is _op.getitem and \
                "nn_module_stack" in getattr(n.args[0], "meta", {}):
            n.meta["nn_module_stack"] = dict(n.args[0].meta["nn_module_stack"])


def _stop_guards(guards):
    """Stop noting comparisons into ``guards`` (by identity: guard lists compare equal)."""
    for i, g in enumerate(symbolic.GUARDS):
        if g is guards:
            del symbolic.GUARDS[i]
            return


class _LeafSymbols:
    """Names the symbol of each dynamic input size: one per `Dim` (the same Dim on two
    dimensions shares it), a derived dim an expression of its root's, ``Dim.AUTO`` and
    ``Dim.DYNAMIC`` one per dimension."""

    def __init__(self, leaf_specs, values, replacements):
        self.leaf_specs = leaf_specs
        self.values = values
        self.replacements = replacements

    def _render(self, expr, by_value):
        if type(expr) is not tuple:
            return str(int(expr))
        if expr[0] in symbolic._LEAF_KINDS:
            if expr in self.leaf_specs:
                return self(expr, self.values[expr], by_value)
            return str(self.values[expr])
        return f"({self._render(expr[1], by_value)} {expr[0]} " \
               f"{self._render(expr[2], by_value)})"

    def __call__(self, leaf, v, by_value):
        if leaf[0] == "u":
            return f"u{leaf[1]}"
        expr = self.replacements.get(leaf)
        if expr is not None:
            return self._render(expr, by_value)
        ds = self.leaf_specs.get(leaf)
        dim = ds.dim if ds is not None else None
        if dim is None:
            key = ("leaf", leaf)
        elif hasattr(dim, "root"):
            root = dim.root
            key = ("dim", root.__name__)
            name = by_value.get(key)
            if name is None:
                name = by_value[key] = f"s{len(by_value)}"
            s = name if dim.a == 1 else f"{dim.a}*{name}"
            return f"({s} + {dim.b})" if dim.b > 0 else f"({s} - {-dim.b})" if dim.b < 0 \
                else (s if dim.a == 1 else f"({s})")
        else:
            key = ("dim", dim.__name__)
        name = by_value.get(key)
        if name is None:
            name = by_value[key] = f"s{len(by_value)}"
        return name


def _check_hints(leaf_specs, session, paths, tensor_pos):
    """Declared dims must have an example value export can generalise from (not 0/1) and
    inside their range; derived dims must agree with their root."""
    roots = {}
    for lf, ds in leaf_specs.items():
        v = session.leaf_values[lf]
        where = f"{paths[tensor_pos[lf[1]]]}.shape[{lf[2]}]"
        if ds.kind == "auto":
            continue
        if v in (0, 1):
            raise UserError(
                f"Received user-specified dim hint {ds.dim or 'Dim.DYNAMIC'} for {where}, but "
                f"the example input has size {v} there: export specializes sizes 0 and 1. "
                f"Give an example input with a size of at least 2 for a dynamic dimension.")
        if not ds.min <= v <= ds.max:
            raise UserError(
                f"Constraints violated ({getattr(ds.dim, '__name__', 'dim')})! The example "
                f"input {where} = {v} is outside the declared range [{ds.min}, {ds.max}].")
        dim = ds.dim
        if dim is not None and hasattr(dim, "root"):
            r = (v - dim.b) // dim.a if (v - dim.b) % dim.a == 0 else None
            name = dim.root.__name__
            if r is None or roots.setdefault(name, r) != r:
                raise UserError(
                    f"Constraints violated ({dim.__name__})! The example input {where} = {v} "
                    f"is not {dim.__name__} for {name} = {roots.get(name, r)}.")
        elif dim is not None:
            if roots.setdefault(dim.__name__, v) != v:
                raise UserError(
                    f"Constraints violated ({dim.__name__})! The dimensions declared as "
                    f"{dim.__name__} have different sizes in the example inputs: {where} = {v}, "
                    f"another {roots[dim.__name__]}.")


def _graph_of(session, out, role, flat, tensor_pos, names, stand_ins, non_persistent,
              params, buffers, unbacked):
    """Build the exported graph from the pending trace at the function's return."""
    trace = session.trace
    flat_out, out_spec = tree_flatten(out)
    user_index = {id(flat[i]): n for n, i in enumerate(tensor_pos)}
    out_values, out_plan = [], []
    const_tensors = {}
    for x in flat_out:
        if not isinstance(x, Tensor):
            out_plan.append(("const", x))
            continue
        lz = x.__dict__.get("_lazy")
        if lz is not None and trace is not None and lz.trace is trace:
            if lz.view is not None:
                trace._refresh_view(x, lz)
            out_plan.append(("value", lz.index))
            out_values.append(lz.index)
        else:
            out_plan.append(("tensor", x))
    mutated = list(trace.mutated.values()) if trace is not None else []
    mutation_values = []
    for t in mutated:
        lz = t.__dict__["_lazy"]
        mutation_values.append(lz.index)
    if trace is not None and (out_values or mutation_values):
        spec = spec_of(trace, mutation_values + out_values, session.cache)
        # a size of a user input no op reads (``zeros(x.shape[0] + y.shape[0])``): the
        # builder makes it a size placeholder; the program reads it from the input's own
        # placeholder instead (every user input has one), as torch's ``sym_size(y, 0)``
        foreign = [n for n, lf in spec.size_inputs if lf[0] != "a"]
        if foreign or spec.scalar_inputs:
            raise UserError(
                "ember.export: a size of an input that no operation reads is used by the "
                "program (" + ", ".join(foreign) + "); read the input in the program or "
                "declare the dimension static")
        gm = build_graph_module(trace, spec, grad_nodes=False, computed_sizes=True)
        size_names = {n for n, _ in spec.size_inputs}
        for node in list(gm.graph.nodes):
            if node.op == "placeholder" and node.name in size_names and not node.users:
                gm.graph.erase_node(node)
        _tag_module_stacks(gm.graph, spec.ops, getattr(session, "module_calls", ()))
        graph_inputs = [trace.inputs[k] for k in spec.inputs]
        symbols = dict(spec.symbols)
    else:
        from ..fx import Graph, GraphModule
        g = Graph()
        g.output(())
        gm = GraphModule(Module(), g)
        graph_inputs = []
        symbols = {}
    return _lift(gm, graph_inputs, role, user_index, flat, tensor_pos, names, out_plan,
                 mutated, stand_ins, non_persistent, params, buffers, symbols,
                 len(mutation_values), out_spec, session, unbacked)


def _same_sizes(a, b):
    """Sizes equal as written (symbolic ones by expression: comparing them would note a
    guard)."""
    def key(s):
        return ("sym", s.expr) if isinstance(s, symbolic.SymInt) else ("int", int(s))
    return len(a) == len(b) and all(key(x) == key(y) for x, y in zip(a, b))


def _whole_copy_source(graph, node):
    """The new value of a mutated input: ``src`` where the graph computes it as
    ``copy(dst, src)`` of the same shape and dtype (``dst.copy_(src)``: a write-back of a
    value the graph already has), else ``node``."""
    from .._core.meta import TensorMeta
    if node.op != "call_function" or getattr(node.target, "name", None) != "copy" or \
            len(node.args) != 2 or not hasattr(node.args[1], "meta"):
        return node
    src = node.args[1]
    mine, theirs = node.meta.get("val"), src.meta.get("val")
    if not (isinstance(mine, TensorMeta) and isinstance(theirs, TensorMeta)) or \
            mine.dtype != theirs.dtype or not _same_sizes(mine.shape, theirs.shape):
        return node
    node.replace_all_uses_with(src)
    graph.erase_node(node)
    return src


def _lift(gm, graph_inputs, role, user_index, flat, tensor_pos, names, out_plan, mutated,
          stand_ins, non_persistent, params, buffers, symbols, n_mut, out_spec, session,
          unbacked):
    """Re-order the placeholders as torch's (parameters, buffers, constants, user inputs),
    every parameter and buffer included, and write the signature."""
    from .._core.meta import TensorMeta
    graph = gm.graph
    old = [n for n in graph.nodes if n.op == "placeholder"]
    by_tensor = {id(t): node for t, node in zip(graph_inputs, old)}
    first = next(iter(graph.nodes))
    constants, const_names = {}, {}
    input_specs = []
    new_nodes = {}

    def placeholder(name, t):
        with graph.inserting_before(first):
            node = graph.placeholder(name)
        node.meta["val"] = TensorMeta(tuple(int(s) for s in t.shape), t.dtype)
        return node

    def user_meta(n, t, node):
        old_node = by_tensor.get(id(t))
        if old_node is not None:
            node.meta["val"] = old_node.meta["val"]
        else:
            a = session.arg_index.get(id(t))
            shape = []
            for d, s in enumerate(t.shape):
                lf = ("a", a, d)
                name = symbols.get(lf)
                shape.append(symbolic.SymInt(int(s), name) if name else int(s))
            node.meta["val"] = TensorMeta(tuple(shape), t.dtype)

    for name in params:
        node = placeholder("p_" + _identifier(name.replace(".", "_")), stand_ins[name])
        new_nodes[id(stand_ins[name])] = node
        input_specs.append(InputSpec(InputKind.PARAMETER, TensorArgument(node.name), name))
    for name in buffers:
        node = placeholder("b_" + _identifier(name.replace(".", "_")), stand_ins[name])
        new_nodes[id(stand_ins[name])] = node
        input_specs.append(InputSpec(InputKind.BUFFER, TensorArgument(node.name), name,
                                     name not in non_persistent))
    for t in graph_inputs:
        if id(t) in role or id(t) in user_index:
            continue
        cname = f"lifted_tensor_{len(constants)}"
        node = placeholder("c_" + cname, t)
        constants[cname] = t.detach().clone()
        const_names[id(t)] = cname
        new_nodes[id(t)] = node
        input_specs.append(InputSpec(InputKind.CONSTANT_TENSOR, TensorArgument(node.name),
                                     cname))
    for kind, x in out_plan:
        if kind == "tensor" and id(x) not in new_nodes and id(x) not in user_index:
            # a tensor made outside the graph and returned: a constant output
            cname = f"lifted_tensor_{len(constants)}"
            node = placeholder("c_" + cname, x)
            constants[cname] = x.detach().clone()
            new_nodes[id(x)] = node
            input_specs.append(InputSpec(InputKind.CONSTANT_TENSOR, TensorArgument(node.name),
                                         cname))
    for n, i in enumerate(tensor_pos):
        t = flat[i]
        if id(t) in new_nodes:   # the same tensor passed twice
            continue
        node = placeholder(names[i], t)
        user_meta(n, t, node)
        new_nodes[id(t)] = node
        input_specs.append(InputSpec(InputKind.USER_INPUT, TensorArgument(node.name), None))
    for i, x in enumerate(flat):
        if not isinstance(x, Tensor):
            input_specs.append(InputSpec(InputKind.USER_INPUT,
                                         ConstantArgument(names[i], x), None))
    for t, node in zip(graph_inputs, old):
        node.replace_all_uses_with(new_nodes[id(t)])
        graph.erase_node(node)
    # outputs: mutations, then the user's
    out_node = next(n for n in graph.nodes if n.op == "output")
    produced = list(out_node.args[0])
    mutation_nodes, produced = produced[:n_mut], produced[n_mut:]
    output_specs = []
    results = []
    mutation_nodes = [_whole_copy_source(graph, node) for node in mutation_nodes]
    # buffer mutations in the buffers' order, then input mutations, as torch lists them
    order = {name: i for i, name in enumerate(buffers)}

    def rank(pair):
        r = role.get(id(pair[0]))
        return (0, order[r[1]]) if r is not None and r[0] == "buffer" and r[1] in order \
            else (1, 0)
    pairs = sorted(zip(mutated, mutation_nodes), key=rank)
    for t, node in pairs:
        r = role.get(id(t))
        if r is not None and r[0] == "buffer":
            output_specs.append(OutputSpec(OutputKind.BUFFER_MUTATION,
                                           TensorArgument(node.name), r[1]))
        elif id(t) in user_index:
            output_specs.append(OutputSpec(OutputKind.USER_INPUT_MUTATION,
                                           TensorArgument(node.name), new_nodes[id(t)].name))
        elif r is not None:
            raise UserError(f"ember.export: the program writes in place into parameter "
                            f"{r[1]!r}; an exported program may only mutate buffers")
        else:
            raise UserError("ember.export: the program writes in place into a tensor that is "
                            "neither an input nor a buffer")
        results.append(node)
    sources = {f"u{k}": (new_nodes[id(t)], index) for k, (t, index) in unbacked.items()}
    sizes = lift_sizes(gm, sources)
    names = dict(symbols)
    names.update({("u", k, 0): f"u{k}" for k in unbacked})
    it = iter(produced)
    for kind, x in out_plan:
        if kind == "value":
            node = next(it)
            results.append(node)
            output_specs.append(OutputSpec(OutputKind.USER_OUTPUT, TensorArgument(node.name),
                                           None))
        elif kind == "tensor":
            node = new_nodes[id(x)]
            results.append(node)
            output_specs.append(OutputSpec(OutputKind.USER_OUTPUT, TensorArgument(node.name),
                                           None))
        elif isinstance(x, symbolic.SymInt) and type(x.expr) is tuple and \
                type(render(x.expr, session.leaf_values, names)) is str:
            # a size or a value read from an input, returned: computed by the graph
            node = sizes.node(render(x.expr, session.leaf_values, names), out_node)
            results.append(node)
            output_specs.append(OutputSpec(OutputKind.USER_OUTPUT, SymIntArgument(node.name),
                                           None))
        else:
            output_specs.append(OutputSpec(OutputKind.USER_OUTPUT, ConstantArgument("", x),
                                           None))
    out_node.args = (tuple(results),)
    for node in reversed(list(graph.nodes)):   # outputs of a multi-output op nobody reads
        if node.op == "call_function" and node.target is operator.getitem and not node.users:
            graph.erase_node(node)
    gm.recompile()
    c_sizes = sizes
    c = Capture()
    c.gm = gm
    c.signature = ExportGraphSignature(input_specs, output_specs)
    state = {}
    for name, p in params.items():
        state[name] = p
    for name, b in buffers.items():
        if name in non_persistent:
            constants[name] = b
        else:
            state[name] = b
    c.state_dict = state
    c.constants = constants
    c.symbols = symbols
    c.out_spec = out_spec
    c.sizes = c_sizes
    c.unbacked = unbacked
    return c
