"""What each placeholder and output of an exported graph is (torch.export.graph_signature).

An exported graph is functional: parameters, buffers and constant tensors are inputs
(lifted), and a buffer written in place (BatchNorm's running statistics) is an extra output,
its new value.  `ExportGraphSignature` says which input and output is which.
"""
import dataclasses
import enum

__all__ = ["InputKind", "OutputKind", "TensorArgument", "SymIntArgument", "SymFloatArgument",
           "SymBoolArgument", "CustomObjArgument", "ConstantArgument", "InputSpec",
           "OutputSpec", "ExportGraphSignature", "ExportBackwardSignature"]


class InputKind(enum.Enum):
    USER_INPUT = enum.auto()
    PARAMETER = enum.auto()
    BUFFER = enum.auto()
    CONSTANT_TENSOR = enum.auto()
    CUSTOM_OBJ = enum.auto()
    TOKEN = enum.auto()


class OutputKind(enum.Enum):
    USER_OUTPUT = enum.auto()
    LOSS_OUTPUT = enum.auto()
    BUFFER_MUTATION = enum.auto()
    GRADIENT_TO_PARAMETER = enum.auto()
    GRADIENT_TO_USER_INPUT = enum.auto()
    USER_INPUT_MUTATION = enum.auto()
    TOKEN = enum.auto()


@dataclasses.dataclass
class TensorArgument:
    name: str


@dataclasses.dataclass
class SymIntArgument:
    name: str


@dataclasses.dataclass
class SymFloatArgument:
    name: str


@dataclasses.dataclass
class SymBoolArgument:
    name: str


@dataclasses.dataclass
class CustomObjArgument:
    name: str
    class_fqn: str
    fake_val: object = None


@dataclasses.dataclass
class ExportBackwardSignature:
    gradients_to_parameters: dict
    gradients_to_user_inputs: dict
    loss_output: str


@dataclasses.dataclass
class ConstantArgument:
    name: str
    value: object


@dataclasses.dataclass
class InputSpec:
    kind: InputKind
    arg: object
    target: object
    persistent: object = None

    def __str__(self):
        target = "" if self.target is None else f" target='{self.target}'"
        persistent = "" if self.persistent is None else f" persistent={self.persistent}"
        return f"{self.arg.name}: {self.kind.name}{target}{persistent}"


@dataclasses.dataclass
class OutputSpec:
    kind: OutputKind
    arg: object
    target: object

    def __str__(self):
        target = "" if self.target is None else f" target='{self.target}'"
        return f"{getattr(self.arg, 'name', self.arg)}: {self.kind.name}{target}"


@dataclasses.dataclass
class ExportGraphSignature:
    """``input_specs`` in placeholder order, ``output_specs`` in output order."""
    input_specs: list
    output_specs: list

    def _names(self, kind, specs):
        return [s.arg.name for s in specs if s.kind is kind]

    @property
    def parameters(self):
        return [s.target for s in self.input_specs if s.kind is InputKind.PARAMETER]

    @property
    def buffers(self):
        return [s.target for s in self.input_specs if s.kind is InputKind.BUFFER]

    @property
    def non_persistent_buffers(self):
        return [s.target for s in self.input_specs
                if s.kind is InputKind.BUFFER and s.persistent is False]

    @property
    def lifted_tensor_constants(self):
        return [s.target for s in self.input_specs if s.kind is InputKind.CONSTANT_TENSOR]

    @property
    def user_inputs(self):
        return [s.arg.name if hasattr(s.arg, "name") else s.arg.value
                for s in self.input_specs if s.kind is InputKind.USER_INPUT]

    @property
    def user_outputs(self):
        return [getattr(s.arg, "name", None) for s in self.output_specs
                if s.kind is OutputKind.USER_OUTPUT]

    @property
    def inputs_to_parameters(self):
        return {s.arg.name: s.target for s in self.input_specs if s.kind is InputKind.PARAMETER}

    @property
    def inputs_to_buffers(self):
        return {s.arg.name: s.target for s in self.input_specs if s.kind is InputKind.BUFFER}

    @property
    def inputs_to_lifted_tensor_constants(self):
        return {s.arg.name: s.target for s in self.input_specs
                if s.kind is InputKind.CONSTANT_TENSOR}

    @property
    def buffers_to_mutate(self):
        return {s.arg.name: s.target for s in self.output_specs
                if s.kind is OutputKind.BUFFER_MUTATION}

    @property
    def user_inputs_to_mutate(self):
        return {s.arg.name: s.target for s in self.output_specs
                if s.kind is OutputKind.USER_INPUT_MUTATION}

    def __str__(self):
        ins = "\n".join("    " + str(s) for s in self.input_specs)
        outs = "\n".join("    " + str(s) for s in self.output_specs)
        return f"# inputs\n{ins}\n\n# outputs\n{outs}\n"
