"""ember.onnx: export models to ONNX (torch.onnx).

``ember.onnx.export(model, args, f)`` captures the model whole (as `ember.export` does),
lowers each ember operator to ONNX operators (decomposing into ember's primitives what has
no direct lowering) and returns an `ONNXProgram`.  Dynamic dims (``dynamic_axes`` or
``dynamic_shapes``) stay symbolic: sizes the model computes from them are computed in the
ONNX graph.  The ``onnx`` package is an optional extra (``pip install ember[onnx]``),
imported only when an export runs, so ``import ember.onnx`` costs nothing without it.
"""
from . import errors
from ._export import OperatorExportTypes, TrainingMode, export, is_in_onnx_export
from ._exportable import ExportableModule
from ._observer import InputObserver
from ._program import ONNXProgram
from .errors import OnnxExporterError

__all__ = ["errors", "export", "is_in_onnx_export", "OnnxExporterError", "ONNXProgram",
           "ExportableModule", "InputObserver", "TrainingMode", "OperatorExportTypes"]
