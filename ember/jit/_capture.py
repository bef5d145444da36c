"""A scripted method's program, captured with ``ember.export.export`` (all sizes dynamic).

The method runs on its first call's inputs under export, every dimension of every tensor
input ``Dim.AUTO``: export keeps a dimension symbolic unless the code specialises it.  The
ExportedProgram becomes the method's `Program`, its placeholders bound by the graph
signature (parameters and buffers by their names in the owning module).
"""
import inspect

from .._core.tensor import Tensor
from ..nn.modules.module import Module
from ._program import Program
from ._tree import flatten

__all__ = ["capture_program", "program_of_exported"]


class _MethodModule(Module):
    """The owner's state (the same dicts, so the same names) with ``forward`` = the method."""

    def __init__(self, owner, method):
        super().__init__()
        d = self.__dict__
        if owner is not None:
            d["_parameters"] = owner._parameters
            d["_buffers"] = owner._buffers
            d["_non_persistent_buffers_set"] = owner._non_persistent_buffers_set
            d["_modules"] = owner._modules
            d["training"] = owner.training

        def forward(*args):
            return method.compiled(owner, *args) if owner is not None else \
                method.compiled(*args)
        # export names the graph's inputs after forward's parameters: the method's own
        forward.__signature__ = inspect.Signature(
            [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD)
             for n in method.arg_names])
        d["forward"] = forward
        d["_jit_owner"] = owner

    def train(self, mode=True):
        # export captures both training modes: the method reads the owner's own flag
        super().train(mode)
        owner = self.__dict__["_jit_owner"]
        if owner is not None:
            owner.__dict__["training"] = bool(mode)
        return self


def _auto_shapes(x):
    from ..export import Dim
    if isinstance(x, Tensor):
        return {d: Dim.AUTO for d in range(x.dim())} if x.dim() else None
    if isinstance(x, (tuple, list)):
        return type(x)(_auto_shapes(v) for v in x)
    if isinstance(x, dict):
        return {k: _auto_shapes(v) for k, v in x.items()}
    return None


def capture_program(method, owner, example):
    from ..export import export
    wrapper = _MethodModule(owner, method)
    out = wrapper(*example)
    flat = []
    out_spec = flatten(out, flat)
    ep = export(wrapper, tuple(example), dynamic_shapes=_auto_shapes(tuple(example)),
                strict=False)
    return program_of_exported(ep, example, out_spec)


def program_of_exported(ep, example, out_spec, check_inputs=True):
    """The `Program` of ExportedProgram ``ep`` (its user inputs flattened from ``example``)."""
    from ..export import InputKind, OutputKind
    flat_in = []
    in_spec = flatten(tuple(example), flat_in)
    specs = []
    user = 0
    for s in ep.graph_signature.input_specs:
        if type(s.arg).__name__ == "ConstantArgument":
            continue  # a Python value of the example, baked into the graph: no placeholder
        if s.kind == InputKind.PARAMETER:
            specs.append(("parameter", s.target))
        elif s.kind == InputKind.BUFFER:
            if s.persistent is False:
                specs.append(("constant", s.target))
            else:
                specs.append(("buffer", s.target))
        elif s.kind == InputKind.CONSTANT_TENSOR:
            specs.append(("constant", s.target))
        else:
            specs.append(("input", user))
            user += 1
    if check_inputs and user != len(flat_in):
        raise RuntimeError(f"jit: the exported program takes {user} tensor inputs, the example "
                           f"has {len(flat_in)}")
    mutations = [s.target for s in ep.graph_signature.output_specs
                 if s.kind == OutputKind.BUFFER_MUTATION]
    constants = dict(ep.constants)
    program = Program(ep.graph_module, specs, constants, in_spec, out_spec, mutations,
                      exported=ep, training=getattr(ep, "training", None))
    alternate = getattr(ep, "alternate", None)
    if alternate is not None:  # the program of the other training mode
        program.alternate = program_of_exported(alternate, example, out_spec, check_inputs)
    return program
