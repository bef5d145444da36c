"""`ExportableModule` (torch.onnx.ExportableModule): a module that carries what its export
needs -- example arguments, input/output names, dynamic shapes."""
import abc

from ..nn.modules.module import Module

__all__ = ["ExportableModule"]


class ExportableModule(Module, abc.ABC):
    """Abstract interface for ONNX exportable modules.

    Subclasses implement `example_arguments` (and optionally `input_names`, `output_names`,
    `dynamic_shapes`); ``module.to_onnx()`` or ``ember.onnx.export(module)`` then exports it
    with those, and keyword arguments given to either override them."""

    @abc.abstractmethod
    def example_arguments(self):
        """Return example arguments for the model's forward method: ``(args, kwargs)``, a
        tuple of positional arguments and a dict of keyword arguments (or None)."""

    def input_names(self):
        """Return names for the model's input tensors (None: the default names)."""
        return None

    def output_names(self):
        """Return names for the model's output tensors (None: the default names)."""
        return None

    def dynamic_shapes(self):
        """Return dynamic shape specifications for the model's inputs (torch.export's
        ``dynamic_shapes``; a dim may be named by a string), or None for static shapes."""
        return None

    def to_onnx(self, **kwargs):
        """Export the module to ONNX format (`ember.onnx.export` with this module's example
        arguments, names and dynamic shapes; ``kwargs`` are more export options)."""
        from ._export import export
        return export(self, **kwargs)
