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
        # scripted programs (captured by export) check their inputs' static sizes, as an
        # exported program does; a trace runs on what it is given, as torch's traces do
        self.check_shapes = exported is not None

    def for_mode(self, training):
        """The program for a module in mode ``training``."""
        if self.alternate is not None and self.training is not None and \
                bool(training) != bool(self.training):
            return self.alternate
        return self

    @property
    def graph(self):
        return self.graph_module.graph

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
        if self.check_shapes:
            self._check_shapes(flat)
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

    def _check_shapes(self, flat):
        _check_shapes_of(self, flat)


def _check_shapes_of(program, flat):
    placeholders = [n for n in program.graph_module.graph.nodes if n.op == "placeholder"]
    symbols = {}
    for node, (kind, i) in zip(placeholders, program.input_specs):
        meta = node.meta.get("val")
        if kind != "input" or not hasattr(meta, "shape") or i >= len(flat):
            continue
        t = flat[i]
        if t.dim() != len(meta.shape):
            raise RuntimeError(f"jit: input {node.name} must have {len(meta.shape)} dimensions "
                               f"{_dims(meta.shape)}, got shape {list(t.shape)}")
        for d, (want, got) in enumerate(zip(meta.shape, t.shape)):
            expr = getattr(want, "expr", None)
            if isinstance(expr, str):
                if expr.isidentifier() and symbols.setdefault(expr, got) != got:
                    raise RuntimeError(f"jit: input {node.name}.shape[{d}] is {got}, but the "
                                       f"program's size {expr} is {symbols[expr]} elsewhere")
            elif int(want) != got:
                raise RuntimeError(f"jit: expected input {node.name}.shape[{d}] to be equal to "
                                   f"{int(want)}, but got {got} (the program specialised this "
                                   f"size when it was captured)")


def _dims(shape):
    return "[" + ", ".join(getattr(s, "expr", None) if isinstance(getattr(s, "expr", None), str)
                           else str(int(s)) for s in shape) + "]"


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

