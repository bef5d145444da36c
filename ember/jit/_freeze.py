"""``jit.freeze``, ``run_frozen_optimizations`` and ``optimize_for_inference``.

Freezing turns a module's parameters and buffers into constants of its programs: the
frozen module has no parameters or buffers (as in torch), and its methods run their
programs with the values the weights had when it was frozen.  Then constant folding runs:
every op whose inputs are all constants is computed once and its result becomes a
constant (BatchNorm's ``rsqrt(running_var + eps) * weight``: an inference batch norm is
first written as its scale and shift; transposed weights, ...), so
inference runs only the ops that depend on the inputs.  Folding evaluates the same ops
the program would, so results are unchanged (``optimize_numerics`` is accepted for
torch's signature; ember has no numerics-changing rewrites).
"""
import copy
import operator

from .._core.op import REGISTRY, Op
from .._core.tensor import Tensor
from ..autograd.grad_mode import no_grad
from ..fx import Graph, GraphModule
from ._program import Program
from ._script_module import ModuleState, ProgramMethod, RecursiveScriptModule, ScriptModule

__all__ = ["freeze", "run_frozen_optimizations", "optimize_for_inference"]

def _frozen_program(program, state):
    """``program`` with its parameter and buffer placeholders made constants."""
    specs = []
    constants = dict(program.constants)
    for kind, target in program.input_specs:
        if kind in ("parameter", "buffer"):
            constants[target] = state.get(target).detach()
            specs.append(("constant", target))
        else:
            specs.append((kind, target))
    # buffer mutations would write into constants: a frozen (eval) program drops them
    gm = program.graph_module
    mutations = []
    if program.buffer_mutations:
        gm = copy.deepcopy(gm)
        out = gm.graph.output_node()
        vals = out.args[0]
        out.args = (tuple(vals[len(program.buffer_mutations):]),)
        gm.graph.eliminate_dead_code()
        gm.recompile()
    frozen = Program(gm, specs, constants, program.in_spec, program.out_spec, mutations)
    frozen.check_shapes = program.check_shapes
    return frozen


def _batch_norm_as_scale_shift(gm, constant):
    """Inference batch norm whose weights and statistics are constants, written as
    ``shift + x * scale`` (the op's own formula), so that folding computes ``scale`` and
    ``shift`` once.  Returns whether the graph changed."""
    bn = REGISTRY.get("_native_batch_norm_legit_no_training")
    graph, changed = gm.graph, False
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target is not bn or len(node.args) != 5:
            continue
        x, w, b, rm, rv = node.args
        if not all(a is None or a in constant for a in (w, b, rm, rv)) or \
                any(u.target is not operator.getitem or (u.args[1] != 0 and u.users)
                    for u in node.users):
            continue
        meta = x.meta.get("val")
        if meta is None:
            continue
        shape = (meta.shape[1],) + (1,) * (len(meta.shape) - 2)

        def call(name, *args, **kwargs):
            return graph.call_function(REGISTRY[name], args, kwargs)
        with graph.inserting_before(node):
            scale = call("rsqrt", call("add", rv, node.kwargs["eps"]))
            if w is not None:
                scale = call("mul", scale, w)
            shift = call("mul", call("neg", rm), scale)
            if b is not None:
                shift = call("add", shift, b)
            out = call("add", call("view", shift, shape=shape),
                       call("mul", x, call("view", scale, shape=shape)))
        for u in list(node.users):
            if u.args[1] == 0:
                u.replace_all_uses_with(out)
            graph.erase_node(u)
        graph.erase_node(node)
        changed = True
    return changed


def fold_constants(program):
    """Constant folding (see the module docstring): a new `Program`."""
    gm = program.graph_module
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    constant = {node for node, (kind, _) in zip(placeholders, program.input_specs)
                if kind == "constant"}
    if any(n.target is REGISTRY.get("_native_batch_norm_legit_no_training")
           for n in gm.graph.nodes):
        gm = copy.deepcopy(gm)
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        constant = {node for node, (kind, _) in zip(placeholders, program.input_specs)
                    if kind == "constant"}
        if _batch_norm_as_scale_shift(gm, constant):
            gm.recompile()
    value = {}
    for node, (kind, target) in zip(placeholders, program.input_specs):
        if kind == "constant":
            value[node] = program.constants[target]
    with no_grad():
        for node in gm.graph.nodes:
            if node.op != "call_function":
                continue
            deps = node.all_input_nodes
            if not deps or not all(d in value for d in deps):
                continue
            if node.target is operator.getitem:
                value[node] = value[node.args[0]][node.args[1]]
            elif _foldable(node):
                args = [value[a] if a in value else a for a in node.args]
                value[node] = node.target(*args, **node.kwargs)
    needed = set()  # constant values that the remaining nodes (or the output) read
    for node in gm.graph.nodes:
        if node.op != "placeholder" and node not in value:
            needed.update(a for a in node.all_input_nodes if a in value)
    g = Graph()
    env, specs, constants = {}, [], {}
    for node, spec in zip(placeholders, program.input_specs):  # constants kept as they are
        if spec[0] == "constant" and node in needed:
            env[node] = g.placeholder(node.name)
            env[node].meta.update(node.meta)
            specs.append(spec)
            constants[spec[1]] = program.constants[spec[1]]
    for node in gm.graph.nodes:  # folded values
        if node.op == "placeholder" or node not in needed:
            continue
        v = value[node]
        if isinstance(v, Tensor):
            name = f"_folded_{node.name}"
            env[node] = g.placeholder(name)
            env[node].meta["val"] = node.meta.get("val")
            specs.append(("constant", name))
            constants[name] = v.detach()
        else:
            env[node] = v  # a Python value (a size): inlined as a literal
    for node, spec in zip(placeholders, program.input_specs):
        if spec[0] != "constant":
            env[node] = g.placeholder(node.name)
            env[node].meta.update(node.meta)
            specs.append(spec)
    for node in gm.graph.nodes:
        if node.op != "placeholder" and node not in value:
            env[node] = g.node_copy(node, lambda a: env[a])
    g.eliminate_dead_code()
    folded = Program(GraphModule(gm, g), specs, constants, program.in_spec, program.out_spec,
                     program.buffer_mutations)
    folded.check_shapes = program.check_shapes
    return folded


def _foldable(node):
    op = node.target
    # random ops draw new numbers at every call: never folded
    return isinstance(op, Op) and "random" not in str(op.category or "") and \
        not any(hasattr(type(v), "graph_module") for v in node.kwargs.values())


def _freeze_module(mod, preserved_attrs):
    state = ModuleState(mod)
    keep = {"forward"} | set(preserved_attrs or ())
    methods = []
    for name, m in mod.__dict__["_jit_methods"].items():
        if name not in keep and name != "forward":
            continue
        program = _frozen_program(m.program().for_mode(False), state)
        methods.append(ProgramMethod(name, fold_constants(program), m.arg_names,
                                     _defaults(m)))
    frozen = RecursiveScriptModule()
    frozen.__dict__["_jit_original_name"] = mod.original_name
    frozen.__dict__["training"] = False
    for meth in methods:
        frozen.__dict__["_jit_methods"][meth.name] = meth
    return frozen


def freeze(mod, preserved_attrs=None, optimize_numerics=True):
    """Freeze a ScriptModule (torch.jit.freeze): parameters and buffers become constants of
    its programs, then constant folding runs (see the module docstring).  The module must
    be in eval mode.  ``preserved_attrs``: methods kept besides ``forward``."""
    if not isinstance(mod, ScriptModule):
        raise RuntimeError("Freezing expects a ScriptModule as input. Please use "
                           "torch.jit.script or torch.jit.trace to script your 'nn.Module'.")
    if mod.training:
        raise RuntimeError("Freezing is currently only implemented for modules in eval mode. "
                           "Please call .eval() on your module before freezing.")
    return _freeze_module(mod, preserved_attrs)


def run_frozen_optimizations(mod, optimize_numerics=True, preserved_methods=None):
    """Run constant folding on the programs of frozen module ``mod``, in place."""
    methods = mod.__dict__["_jit_methods"]
    for name, m in list(methods.items()):
        methods[name] = ProgramMethod(name, fold_constants(m.program()), m.arg_names,
                                      _defaults(m))


def optimize_for_inference(mod, other_methods=None):
    """Freeze ``mod`` in eval mode (if it is not frozen yet) and fold its constants: a
    ScriptModule for inference (torch.jit.optimize_for_inference)."""
    if not isinstance(mod, ScriptModule):
        raise RuntimeError("optimize_for_inference expects a ScriptModule as input. Please use "
                           "torch.jit.script or torch.jit.trace to script your 'nn.Module'.")
    if _is_frozen(mod):
        run_frozen_optimizations(mod, preserved_methods=other_methods)
        return mod
    return freeze(mod.eval(), preserved_attrs=other_methods)


def _is_frozen(mod):
    return not any(True for _ in mod.parameters()) and not any(True for _ in mod.buffers()) and \
        all(isinstance(m, ProgramMethod) for m in mod.__dict__["_jit_methods"].values())


def _defaults(method):
    sig = getattr(method, "signature", None)
    return sig.defaults if sig is not None else getattr(method, "defaults", None)
