"""`ExportedProgram`: a captured, functional graph with its weights and signature.

``module()`` gives back a callable `nn.Module`: its parameters and buffers are the
program's state, each call checks the inputs against the shapes and ranges the program
was exported for, runs the graph and writes buffer mutations back (BatchNorm's running
statistics).  Beyond torch, which bakes the training flag in at export, the module keeps
``train()``/``eval()`` meaningful: export captures the program in both modes when they
differ, and the module runs the graph of its current mode.
"""
import copy
import re

from ember_lite._format import eval_size

from .._core.tensor import Tensor
from .._dynamo.symbolic import SymInt
from ..func._pytree import tree_flatten, tree_unflatten
from ..nn.modules.module import Module
from .graph_signature import InputKind, OutputKind

__all__ = ["ExportedProgram", "ModuleCallSignature", "ModuleCallEntry", "eval_size"]


class ModuleCallSignature:
    def __init__(self, inputs, outputs, in_spec, out_spec, forward_arg_names=None):
        self.inputs, self.outputs = inputs, outputs
        self.in_spec, self.out_spec = in_spec, out_spec
        self.forward_arg_names = forward_arg_names


class ModuleCallEntry:
    def __init__(self, fqn, signature=None):
        self.fqn, self.signature = fqn, signature


class ExportedProgram:
    """A program captured by `ember.export.export` (torch.export.ExportedProgram).

    ``graph_module(*params, *buffers, *constants, *user_tensor_inputs)`` returns the
    buffer mutations and then the user outputs, flat (see ``graph_signature``).
    Beyond torch: ``example_inputs`` are kept, and ``alternate`` is the program of the other
    training mode when it differs (see the module docstring)."""

    def __init__(self, root, graph, graph_signature, state_dict, range_constraints,
                 module_call_graph=None, example_inputs=None, constants=None, *,
                 verifiers=None, in_spec=None, out_spec=None, training=None, alternate=None):
        from ..fx import GraphModule
        if isinstance(root, GraphModule) and root.graph is graph:
            gm = root
        else:
            gm = GraphModule(root if isinstance(root, Module) else Module(), graph)
        self._graph_module = gm
        self._graph_signature = graph_signature
        self._state_dict = state_dict
        self._range_constraints = range_constraints
        self._constants = constants if constants is not None else {}
        self._example_inputs = example_inputs
        self._verifiers = verifiers or []
        self._module_call_graph = module_call_graph or [
            ModuleCallEntry("", ModuleCallSignature([], [], in_spec, out_spec))]
        self._in_spec = in_spec
        self._out_spec = out_spec
        self.training = training
        self.alternate = alternate
        self.alternate_error = None   # why the other mode's program could not be captured

    # ---- torch's properties ------------------------------------------------------------
    graph_module = property(lambda self: self._graph_module)
    graph_signature = property(lambda self: self._graph_signature)
    state_dict = property(lambda self: self._state_dict)
    range_constraints = property(lambda self: self._range_constraints)
    constants = property(lambda self: self._constants)
    module_call_graph = property(lambda self: self._module_call_graph)
    verifiers = property(lambda self: self._verifiers)

    @property
    def example_inputs(self):
        """The ``(args, kwargs)`` the program was exported with."""
        return self._example_inputs

    @example_inputs.setter
    def example_inputs(self, value):
        if value is not None and not (isinstance(value, tuple) and len(value) == 2 and
                                      isinstance(value[0], tuple) and
                                      isinstance(value[1], dict)):
            raise ValueError("Example inputs should be a tuple containing example arguments "
                             "(as a tuple), and example kwargs (as a dictionary).")
        self._example_inputs = value

    @property
    def graph(self):
        return self.graph_module.graph

    @property
    def call_spec(self):
        from collections import namedtuple
        return namedtuple("CallSpec", ["in_spec", "out_spec"])(self._in_spec, self._out_spec)

    @property
    def tensor_constants(self):
        return self.constants

    @property
    def dialect(self):
        return "EMBER"

    def parameters(self):
        for _, p in self.named_parameters():
            yield p

    def named_parameters(self):
        for name in self.graph_signature.parameters:
            yield name, self.state_dict[name]

    def buffers(self):
        for _, b in self.named_buffers():
            yield b

    def named_buffers(self):
        for name in self.graph_signature.buffers:
            yield name, (self.state_dict[name] if name in self.state_dict
                         else self.constants[name])

    def __call__(self, *args, **kwargs):
        raise RuntimeError("Unable to call ExportedProgram directly. You should use "
                           "`exported_program.module()` instead.")

    def __str__(self):
        code = self.graph_module.code.strip("\n")
        code = "\n".join("        " + line for line in code.splitlines())
        return (f"ExportedProgram:\n    class GraphModule(ember.nn.Module):\n{code}\n\n"
                f"Graph signature: {_indent(str(self.graph_signature))}\n"
                f"Range constraints: {self.range_constraints}\n")

    __repr__ = __str__

    # ---- running it -----------------------------------------------------------------------
    def module(self, check_guards=True):
        """A callable `nn.Module` running this program (see the module docstring); with
        ``check_guards`` each call checks its inputs' shapes, dtypes and ranges first."""
        m = _ExportedModule(self)
        m._check_guards = bool(check_guards)
        return m

    def _state_args(self):
        """The graph's leading inputs: parameters, buffers and constants, in order."""
        out = []
        for s in self.graph_signature.input_specs:
            if s.kind is InputKind.PARAMETER or s.kind is InputKind.BUFFER:
                out.append(self.state_dict[s.target] if s.target in self.state_dict
                           else self.constants[s.target])
            elif s.kind is InputKind.CONSTANT_TENSOR:
                out.append(self.constants[s.target])
        return out

    def run_decompositions(self, decomp_table=None, decompose_custom_triton_ops=False):
        """A new program with the ops of ``decomp_table`` decomposed (``None``:
        `default_decompositions`, down to the Core ATen set; ``{}``: none;
        `primitive_decompositions`: ember's primitive set); an entry whose function is not
        the op's own decomposition replaces it."""
        from .decompositions import run_decompositions
        return run_decompositions(self, decomp_table)

    def validate(self):
        """Check that the signature and the graph agree: one input spec per placeholder and
        one output spec per output, each naming its node, and every parameter, buffer and
        constant present in ``state_dict``/``constants``; raises RuntimeError naming what
        disagrees."""
        graph = self.graph
        placeholders = [n.name for n in graph.nodes if n.op == "placeholder"]
        sig = self.graph_signature
        named = [s.arg.name for s in sig.input_specs if not hasattr(s.arg, "value")]
        if named != placeholders:
            raise RuntimeError(f"ExportedProgram: the input specs name {named}, the graph's "
                               f"placeholders are {placeholders}")
        for s in sig.input_specs:
            if s.kind in (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR) \
                    and s.target not in self.state_dict and s.target not in self.constants:
                raise RuntimeError(f"ExportedProgram: input {s.arg.name} is {s.kind.name} "
                                   f"{s.target!r}, which neither state_dict nor constants has")
        out = next(n for n in graph.nodes if n.op == "output")
        outs = [getattr(a, "name", None) for a in out.args[0]]
        specs = [s.arg.name for s in sig.output_specs if not hasattr(s.arg, "value")]
        if outs != specs:
            raise RuntimeError(f"ExportedProgram: the output specs name {specs}, the graph "
                               f"returns {outs}")


def _indent(s):
    return "\n" + "\n".join("    " + line for line in s.splitlines())


class _ExportedModule(Module):
    """``ExportedProgram.module()``: the program's state as parameters and buffers under
    their original names, the graph as forward."""

    _submodule = Module   # the class of the modules that hold nested state

    def __init__(self, ep):
        super().__init__()
        from ..nn.parameter import Parameter
        object.__setattr__(self, "_program", ep)
        self.training = bool(ep.training) if ep.training is not None else True
        sig = ep.graph_signature
        for s in sig.input_specs:
            if s.kind is InputKind.PARAMETER:
                t = ep.state_dict[s.target]
                p = t if isinstance(t, Parameter) else Parameter(t, requires_grad=t.requires_grad)
                _owner(self, s.target, self._submodule).register_parameter(s.target.rsplit(".", 1)[-1], p)
            elif s.kind is InputKind.BUFFER:
                persistent = s.persistent is not False
                t = ep.state_dict[s.target] if persistent else ep.constants[s.target]
                _owner(self, s.target, self._submodule).register_buffer(s.target.rsplit(".", 1)[-1], t,
                                                       persistent=persistent)

    @property
    def _forward_arg_names(self):
        """The exported forward's argument names (a new export of this module names its
        placeholders after them)."""
        calls = self._program.module_call_graph
        return calls[0].signature.forward_arg_names if calls and calls[0].signature else None

    @property
    def graph(self):
        """The graph of the program this module runs in its current mode."""
        return self._program_for_mode().graph

    @property
    def code(self):
        return self._program_for_mode().graph_module.code

    def print_readable(self, print_output=True):
        text = self.code
        if print_output:
            print(text)
        return text

    def _program_for_mode(self):
        ep = self._program
        if ep.training is None or bool(ep.training) == self.training:
            return ep
        if ep.alternate is None and ep.alternate_error is not None:
            mode = "training" if ep.training else "eval"
            raise RuntimeError(
                f"this program was exported in {mode} mode and its "
                f"{'eval' if ep.training else 'training'} mode could not be captured at export "
                f"({ep.alternate_error}); call .{'train' if ep.training else 'eval'}() on the "
                f"module to run it as exported")
        return ep if ep.alternate is None else ep.alternate

    def forward(self, *args, **kwargs):
        ep = self._program_for_mode()
        sig = ep.graph_signature
        tensors, user_specs = self._user_inputs(ep, args, kwargs)
        state = []
        for s in sig.input_specs:
            if s.kind is InputKind.PARAMETER:
                state.append(_get(self, s.target))
            elif s.kind is InputKind.BUFFER:
                state.append(_get(self, s.target))
            elif s.kind is InputKind.CONSTANT_TENSOR:
                state.append(ep.constants[s.target])
        outs = self._run_graph(ep, state + tensors)
        return self._program_outputs(ep, sig, outs, tensors, user_specs)

    def _user_inputs(self, ep, args, kwargs):
        """The call's tensor inputs, checked against the program's structure, shapes,
        dtypes and ranges (raises naming the input that differs); and the user input
        specs."""
        sig = ep.graph_signature
        flat, spec = tree_flatten((tuple(args), dict(kwargs)))
        if ep._in_spec is not None and spec != ep._in_spec:
            expected = ep._in_spec
            raise TypeError(
                f"the exported program takes inputs of the structure it was exported with "
                f"({_spec_text(expected)}), got ({_spec_text(spec)})")
        user_specs = [s for s in sig.input_specs if s.kind is InputKind.USER_INPUT]
        placeholders = {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}
        tensors = []
        symbols = {}
        checks = []
        for i, (s, x) in enumerate(zip(user_specs, flat)):
            where = f"*args[{i}]" if i < len(args) else f"kwargs input {i}"
            if hasattr(s.arg, "value"):   # a Python constant the program baked in
                if x != s.arg.value:
                    raise RuntimeError(
                        f"Expected input at {where} to be equal to {s.arg.value!r}, but got "
                        f"{x!r}: the exported program specialized this non-tensor input")
                continue
            if not isinstance(x, Tensor):
                raise RuntimeError(f"Expected input at {where} to be a tensor, but got "
                                   f"{type(x).__name__}")
            if self.__dict__.get("_check_guards", True):
                meta = placeholders[s.arg.name].meta["val"]
                _check_input(x, meta, where, symbols, checks, ep.range_constraints)
            tensors.append(x)
        for where, expr, got in checks:
            _bind_derived(expr, got, symbols, where, ep.range_constraints)
            want = eval_size(expr, symbols)
            if want != got:
                raise RuntimeError(f"Expected input at {where} to be equal to {expr} = {want}, "
                                   f"but got {got}")
        return tensors, user_specs

    def _program_outputs(self, ep, sig, outs, tensors, user_specs):
        if not isinstance(outs, (tuple, list)):
            outs = (outs,)
        results = []
        from ..autograd.grad_mode import no_grad
        for o, out_spec in zip(outs, sig.output_specs):
            if out_spec.kind is OutputKind.BUFFER_MUTATION:
                with no_grad():
                    _get(self, out_spec.target).copy_(o)
            elif out_spec.kind is OutputKind.USER_INPUT_MUTATION:
                name = out_spec.target
                k = [u.arg.name for u in user_specs if hasattr(u.arg, "name")].index(name)
                with no_grad():
                    tensors[k].copy_(o)
            else:
                results.append(o)
        # constant outputs (Python values the program returned) are not graph outputs
        it = iter(results)
        user = []
        for out_spec in sig.output_specs:
            if out_spec.kind is OutputKind.USER_OUTPUT:
                user.append(out_spec.arg.value if hasattr(out_spec.arg, "value") else next(it))
        if ep._out_spec is None:
            return user[0] if len(user) == 1 else tuple(user)
        return tree_unflatten(user, ep._out_spec)

    def _run_graph(self, ep, inputs):
        overrides = self.__dict__.get("_decomp_overrides")
        if not overrides:
            return ep.graph_module(*inputs)
        from ..fx import Interpreter

        class _Decomposing(Interpreter):
            def call_function(self, target, args, kwargs):
                fn = overrides.get(getattr(target, "name", None))
                return (fn or target)(*args, **kwargs)
        return _Decomposing(ep.graph_module).run(*inputs)

    def __deepcopy__(self, memo):
        new = copy.copy(self)
        memo[id(self)] = new
        for k, v in self.__dict__.items():
            if k != "_program":
                new.__dict__[k] = copy.deepcopy(v, memo)
        return new


def _spec_text(spec):
    return f"{spec.num_leaves} leaves"


def _owner(root, target, make=Module):
    """The submodule that holds ``target`` (``"a.b.weight"`` -> ``root.a.b``), created as
    ``make()`` where missing."""
    m = root
    for part in target.split(".")[:-1]:
        sub = m._modules.get(part)
        if sub is None:
            sub = make()
            m.add_module(part, sub)
        m = sub
    return m


def _get(root, target):
    m = root
    parts = target.split(".")
    for part in parts[:-1]:
        m = m._modules[part]
    last = parts[-1]
    return m._parameters[last] if last in m._parameters else m._buffers[last]


_SYMBOL = re.compile(r"^s\d+$")


def _check_input(x, meta, where, symbols, checks, ranges):
    shape = tuple(meta.shape)
    if x.ndim != len(shape):
        raise RuntimeError(f"Expected input at {where} to have {len(shape)} dimensions, but got "
                           f"{x.ndim} (shape {list(x.shape)})")
    if x.dtype != meta.dtype:
        raise RuntimeError(f"Expected input at {where} to have dtype {meta.dtype}, but got "
                           f"{x.dtype}")
    for d, (want, got) in enumerate(zip(shape, x.shape)):
        at = f"{where}.shape[{d}]"
        expr = want.expr if isinstance(want, SymInt) and isinstance(want.expr, str) else None
        if expr is None:
            if int(want) != got:
                raise RuntimeError(f"Expected input at {at} to be equal to {int(want)}, but "
                                   f"got {got}")
        elif _SYMBOL.match(expr):
            r = ranges.get(expr)
            if r is not None and not _low_ok(r, got) <= got <= r.upper:
                side = f">= {r.lower}" if got < r.lower else f"<= {r.upper}"
                raise RuntimeError(f"Expected input at {at} to be {side}, but got {got}")
            if expr in symbols and symbols[expr] != got:
                raise RuntimeError(f"Expected input at {at} to be equal to {symbols[expr]} "
                                   f"(the size of another input's dimension with the same "
                                   f"symbol {expr}), but got {got}")
            symbols[expr] = got
        else:
            checks.append((at, expr, got))


def _low_ok(r, got):
    """The least size range ``r`` lets an input have: sizes 0 and 1 pass a lower bound of 2
    or less (export's 0/1 specialisation, not the program's), as torch's input checks."""
    return r.lower if r.lower > 2 else min(r.lower, got)


def _bind_derived(expr, got, symbols, where, ranges):
    """A derived size (``2*s0``) whose symbol no input binds alone: solve for the symbol."""
    names = [n for n in re.findall(r"s\d+", expr) if n not in symbols]
    if len(set(names)) != 1:
        return
    name = names[0]
    b = eval_size(expr, {**symbols, name: 0})
    a = eval_size(expr, {**symbols, name: 1}) - b
    if a == 0 or (got - b) % a:
        raise RuntimeError(f"Expected input at {where} to be of the form {expr}, but got {got}")
    value = (got - b) // a
    r = ranges.get(name)
    if r is not None and not _low_ok(r, value) <= value <= r.upper:
        raise RuntimeError(f"Expected input at {where} = {expr} with {name} in "
                           f"[{r.lower}, {r.upper}], but got {got} ({name} = {value})")
    symbols[name] = value
