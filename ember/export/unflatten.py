"""``ember.export.unflatten``: an exported program with its module hierarchy restored.

``ExportedProgram.module()`` runs one flat graph.  ``unflatten(ep)`` gives an
`UnflattenedModule` whose submodules are the original ones by name (``named_modules()``
and ``state_dict()`` keys as the exported module's), each an `InterpreterModule` running
the part of the graph its forward recorded.  Which part is read from each node's
``nn_module_stack`` (noted at capture, `ember.export.capture`).  As in torch, a submodule's
forward takes the values it reads from outside (its flat tensor inputs) and returns those
read after it; its own parameters and buffers are attributes.  A submodule called twice
keeps the graph of its first call: the second call runs inline in its caller (torch
makes a ``name@1`` copy instead).  A program without module stacks (one loaded from a
file, or one from ``run_decompositions``, which captures the flat graph again) unflattens
to the module tree with its state and the whole graph at the root: the same outputs and
state, but submodules without a graph of their own.
"""
import abc
import operator

from ..fx.node import map_arg
from ..nn.modules.module import Module
from .exported_program import ExportedProgram, _ExportedModule
from .graph_signature import InputKind, OutputKind

__all__ = ["unflatten", "UnflattenedModule", "InterpreterModule", "FlatArgsAdapter"]


class FlatArgsAdapter(abc.ABC):
    """Adapts the flat inputs of a call whose structure differs from the exported one
    (torch.export.unflatten.FlatArgsAdapter)."""

    @abc.abstractmethod
    def adapt(self, target_spec, input_spec, input_args, metadata=None, obj=None):
        """The flat inputs, as the program's ``target_spec`` wants them, made from
        ``input_args`` flattened with ``input_spec``."""

    def get_flat_arg_paths(self):
        return []


class InterpreterModule(Module):
    """A submodule of an `UnflattenedModule`: runs ``graph`` (placeholders its flat inputs,
    ``get_attr`` its own parameters and buffers, ``call_module`` its submodules)."""

    def __init__(self, graph=None, ty=None):
        super().__init__()
        self.graph = graph
        self._ty = ty

    def type_name(self):
        return self._ty

    def forward(self, *args):
        if self.graph is None:
            raise RuntimeError(
                f"this submodule ({self._ty or 'a module'}) was not called by the exported "
                f"program, so it has no graph to run; call its parent instead")
        return _interpret(self, self.graph, args)

    def print_readable(self, print_output=True):
        text = str(self.graph)
        if print_output:
            print(text)
        return text


def _fetch(mod, target):
    for part in target.split("."):
        mod = getattr(mod, part)
    return mod


def _interpret(mod, graph, args):
    env = {}
    it = iter(args)

    def get(n):
        return env[n]
    for n in graph.nodes:
        if n.op == "placeholder":
            try:
                env[n] = next(it)
            except StopIteration:
                raise TypeError(f"{type(mod).__name__}.forward() missing input {n.name!r}: "
                                f"it takes {sum(1 for m in graph.nodes if m.op == 'placeholder')}"
                                f" flat inputs, got {len(args)}") from None
        elif n.op == "get_attr":
            env[n] = _fetch(mod, n.target)
        elif n.op == "call_module":
            env[n] = _fetch(mod, n.target)(*map_arg(n.args, get), **map_arg(n.kwargs, get))
        elif n.op == "call_function":
            env[n] = n.target(*map_arg(n.args, get), **map_arg(n.kwargs, get))
        elif n.op == "output":
            return map_arg(n.args[0], get)
    raise RuntimeError("graph has no output node")


class UnflattenedModule(_ExportedModule):
    """``unflatten(ep)`` (torch.export.UnflattenedModule): the exported module's hierarchy
    of `InterpreterModule`\\ s (see the module docstring).  A call checks its inputs as
    ``ep.module()`` does; a call whose input structure differs is adapted by
    ``flat_args_adapter`` when one is given.  Runs the program of the mode it was exported
    in (as torch's does)."""

    _submodule = InterpreterModule

    def __init__(self, export_module, flat_args_adapter=None):
        if not isinstance(export_module, ExportedProgram):
            raise TypeError(f"unflatten() takes an ExportedProgram, got "
                            f"{type(export_module).__name__}")
        super().__init__(export_module)
        object.__setattr__(self, "flat_args_adapter", flat_args_adapter)
        self.adapted = False
        ep = export_module
        self.graph_signature = ep.graph_signature
        self.module_call_graph = ep.module_call_graph
        self.range_constraints = ep.range_constraints
        self._n_state = sum(1 for s in ep.graph_signature.input_specs
                            if s.kind is not InputKind.USER_INPUT)
        self._root_graph = _build(self, ep)

    @property
    def graph(self):
        return self._root_graph

    @property
    def code(self):
        return str(self._root_graph)

    def _program_for_mode(self):
        return self._program

    def process_forward_inputs(self, *args, **kwargs):
        """The flat inputs of a call, adapted by ``flat_args_adapter`` when their structure
        differs from the exported one."""
        from ..func._pytree import tree_flatten
        flat, spec = tree_flatten((tuple(args), dict(kwargs)))
        want = self._program._in_spec
        if want is None or spec == want:
            return flat
        if self.flat_args_adapter is None:
            raise TypeError(f"Input treespec does not match with exported module's: the "
                            f"call has {spec.num_leaves} flat inputs structured as "
                            f"{spec}, the exported module {want}")
        flat = self.flat_args_adapter.adapt(target_spec=want, input_spec=spec,
                                            input_args=flat)
        self.adapted = True
        if len(flat) != want.num_leaves:
            raise ValueError(f"Flat args adaption failed, number of args mismatch Adatped: "
                             f"{len(flat)} Exported module: {want.num_leaves}")
        return flat

    def forward(self, *args, **kwargs):
        want = self._program._in_spec
        if want is not None and self.flat_args_adapter is not None:
            from ..func._pytree import tree_unflatten
            flat = self.process_forward_inputs(*args, **kwargs)
            args, kwargs = tree_unflatten(flat, want)
        return super().forward(*args, **kwargs)

    def _run_graph(self, ep, inputs):
        return _interpret(self, self._root_graph, inputs[self._n_state:])

    def print_readable(self, print_output=True):
        parts = [f"class {type(self).__name__}:\n{self._root_graph}"]
        for name, m in self.named_modules():
            if name and isinstance(m, InterpreterModule) and m.graph is not None:
                parts.append(f"class {name}({m._ty}):\n{m.graph}")
        text = "\n\n".join(parts)
        if print_output:
            print(text)
        return text


def unflatten(module, flat_args_adapter=None):
    """The exported program ``module`` as a module hierarchy like the one exported
    (torch.export.unflatten); see `UnflattenedModule`."""
    return UnflattenedModule(module, flat_args_adapter)


def _stack(n):
    return list(n.meta.get("nn_module_stack", {}).items())


def _submodule(root, fqn, ty):
    m = root
    for part in fqn.split("."):
        sub = m._modules.get(part)
        if sub is None:
            sub = InterpreterModule()
            m.add_module(part, sub)
        m = sub
    if isinstance(m, InterpreterModule) and m._ty is None:
        m._ty = ty
    return m


def _reorder(mod, prefix, rank):
    """Submodules in the exported module's order (they were made as state and calls
    were met)."""
    names = list(mod._modules)
    names.sort(key=lambda n: rank.get(f"{prefix}{n}", len(rank)))
    mod._modules = type(mod._modules)((n, mod._modules[n]) for n in names)
    for n in names:
        _reorder(mod._modules[n], f"{prefix}{n}.", rank)


def _build(root, ep):
    """Split ``ep``'s graph over the module tree under ``root``; the root's graph."""
    from ..fx import Graph
    graph = ep.graph
    sig = ep.graph_signature
    state = {}
    for s in sig.input_specs:
        if s.kind is not InputKind.USER_INPUT:
            state[s.arg.name] = s.target
    for s in sig.input_specs:
        if s.kind is InputKind.CONSTANT_TENSOR:
            owner = _submodule(root, s.target.rsplit(".", 1)[0], None) if "." in s.target \
                else root
            object.__setattr__(owner, s.target.rsplit(".", 1)[-1], ep.constants[s.target])
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    user = [n for n in placeholders if n.name not in state]
    body = [n for n in graph.nodes if n.op not in ("placeholder", "output")]
    for n in body:
        for fqn, (_, ty) in _stack(n):
            _submodule(root, fqn, ty)
    order = [e.fqn for e in ep.module_call_graph if e.fqn]
    for fqn in order:
        _submodule(root, fqn, None)
    _reorder(root, "", {fqn: i for i, fqn in enumerate(order)})
    built = set()
    output = graph.output_node()
    out = output.args[0]
    kinds = [s.kind for s in sig.output_specs if not hasattr(s.arg, "value")]
    mutated = {v: s.target for v, s in zip(out, [s for s in sig.output_specs
                                                   if not hasattr(s.arg, "value")])
               if s.kind is OutputKind.BUFFER_MUTATION}
    user_out = {v for v, k in zip(out, kinds) if k is not OutputKind.BUFFER_MUTATION}
    written = set()

    def owned_target(t, prefix):
        return prefix == "" or t.startswith(prefix + ".")

    def owned(n, prefix):
        t = state.get(n.name) if n.op == "placeholder" else None
        return t is not None and owned_target(t, prefix)

    def fill(g, prefix, depth, nodes, env):
        def look(x):
            if x not in env and owned(x, prefix):
                env[x] = g.get_attr(state[x.name][len(prefix) + 1 if prefix else 0:])
            return env[x]
        i = 0
        while i < len(nodes):
            st = _stack(nodes[i])
            child = st[depth][0] if len(st) > depth else None
            j = i + 1
            while j < len(nodes) and (lambda s: (s[depth][0] if len(s) > depth else None))(
                    _stack(nodes[j])) == child:
                j += 1
            run = nodes[i:j]
            if child is None or child in built:
                # a repeated call runs inline: its nodes belong to this graph
                for n in run:
                    env[n] = g.node_copy(n, look)
            else:
                built.add(child)
                inside = set(run)
                ext = []
                for n in run:
                    for a in n.all_input_nodes:
                        if a not in inside and a not in ext and not owned(a, child):
                            ext.append(a)
                sub = Graph()
                sub_env = {a: sub.placeholder(a.name) for a in ext}
                fill(sub, child, depth + 1, run, sub_env)
                for n in run:   # the innermost module owning a mutated buffer writes it
                    if n in mutated and n not in written and owned_target(mutated[n], child):
                        buf = sub.get_attr(mutated[n][len(child) + 1:])
                        sub.call_function(_write_buffer, (buf, sub_env[n]))
                        written.add(n)
                outs = [n for n in run if any(u not in inside and not (
                    u is output and n in written and n not in user_out) for u in n.users)]
                sub.output(sub_env[outs[0]] if len(outs) == 1
                           else tuple(sub_env[o] for o in outs))
                mod = _submodule(root, child, st[depth][1][1])
                mod.graph = sub
                rel = child[len(prefix) + 1:] if prefix else child
                call = g.call_module(rel, tuple(look(a) for a in ext))
                if len(outs) == 1:
                    env[outs[0]] = call
                else:
                    for k, o in enumerate(outs):
                        env[o] = g.call_function(operator.getitem, (call, k))
            i = j

    g = Graph()
    env = {n: g.placeholder(n.name) for n in user}
    fill(g, "", 0, body, env)
    results = []
    for x in out:
        if x in written:   # the module wrote it: the root's write-back copies it onto itself
            x = g.get_attr(mutated[x])
        elif x not in env and owned(x, ""):
            x = g.get_attr(state[x.name])
        else:
            x = env[x]
        results.append(x)
    g.output(tuple(results))
    return g


def _write_buffer(buf, value):
    """A submodule's write of its buffer's new value (BatchNorm's running statistics)."""
    from ..autograd.grad_mode import no_grad
    with no_grad():
        buf.copy_(value)
