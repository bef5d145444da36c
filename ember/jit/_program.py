"""`Program`: one method of a ScriptModule as a graph, and how to call it.

The graph is in ember's export format (see ``ember.export``): placeholders for parameters,
buffers, lifted constant tensors, then the user's flattened tensor inputs; ``call_function``
nodes on ember ops; an output tuple with the new values of mutated buffers first, then the
user's flattened outputs.  ``input_specs`` says what each placeholder is bound to:
``("parameter", name)``, ``("buffer", name)``, ``("constant", name)`` or ``("input", i)``.
A program reads parameters and buffers from the module that owns it at every call, so
``load_state_dict`` and optimizer steps on that module are seen, as in torch.
"""
from ._tree import flatten, unflatten

__all__ = ["Program"]


class Program:
    """A method's graph module with its input bindings and pytree specs."""

    def __init__(self, graph_module, input_specs, constants, in_spec, out_spec,
                 buffer_mutations=(), exported=None, training=None, alternate=None):
        self.graph_module = graph_module
        self.input_specs = list(input_specs)
        self.constants = dict(constants)
        self.in_spec = in_spec
        self.out_spec = out_spec
        self.buffer_mutations = list(buffer_mutations)
        self.exported = exported  # the ExportedProgram it came from, when it came from export
        # the training mode the graph was captured in (None: either), and the Program of the
        # other mode when it differs (a module's .train()/.eval() picks; see `for_mode`)
        self.training = training
        self.alternate = alternate

    def for_mode(self, training):
        """The program for a module in mode ``training``."""
        if self.alternate is not None and self.training is not None and \
                bool(training) != bool(self.training):
            return self.alternate
        return self

    @property
    def graph(self):
        return self.graph_module.graph

    def op_names(self):
        """The names of the ember ops the graph calls (subgraphs included)."""
        names = set()
        _collect_ops(self.graph_module, names, set())
        return names

    def __call__(self, state, args):
        """Run on the user's positional ``args``; ``state`` maps parameter/buffer names to
        tensors (the owning module's) and receives the mutated buffers."""
        flat = []
        spec = flatten(tuple(args), flat)
        if spec != self.in_spec:
            raise RuntimeError(f"jit: the program was made for inputs {_describe(self.in_spec)}"
                               f", but was called with {_describe(spec)}; Python values (not "
                               f"tensors) among the inputs are part of the program, with the "
                               f"values of the call it was captured from")
        bound = []
        for kind, target in self.input_specs:
            if kind == "input":
                bound.append(flat[target])
            elif kind == "constant":
                bound.append(self.constants[target])
            else:
                bound.append(state.get(target))
        outs = self.graph_module(*bound)
        outs = tuple(outs) if isinstance(outs, (tuple, list)) else (outs,)
        nmut = len(self.buffer_mutations)
        for name, value in zip(self.buffer_mutations, outs[:nmut]):
            state.set_buffer(name, value)
        return unflatten(self.out_spec, iter(outs[nmut:]))


def _collect_ops(gm, names, seen):
    if id(gm) in seen:
        return
    seen.add(id(gm))
    from .._core.op import Op
    for node in gm.graph.nodes:
        if node.op == "call_function":
            t = node.target
            if isinstance(t, Op):
                names.add(t.name)
            else:
                names.add(getattr(t, "__name__", repr(t)))
        elif node.op == "get_attr":
            sub = _get_attr(gm, node.target)
            if hasattr(sub, "graph"):
                _collect_ops(sub, names, seen)


def _get_attr(mod, target):
    for part in target.split("."):
        mod = getattr(mod, part)
    return mod


def _describe(spec):
    kind = spec[0]
    if kind == "T":
        return "Tensor"
    if kind in ("tuple", "list"):
        inner = ", ".join(_describe(s) for s in spec[1])
        return f"({inner})" if kind == "tuple" else f"[{inner}]"
    if kind == "dict":
        return "{" + ", ".join(f"{k}: {_describe(s)}" for k, s in zip(spec[1], spec[2])) + "}"
    return repr(spec[1])

