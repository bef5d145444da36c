"""The errors `ember.onnx.export` raises (torch.onnx.errors)."""

__all__ = ["OnnxExporterError", "OnnxExporterWarning", "UnsupportedOperatorError"]


class OnnxExporterError(RuntimeError):
    """Errors raised by the ONNX exporter: the program cannot be written as an ONNX model."""


class OnnxExporterWarning(UserWarning):
    """Warnings the ONNX exporter gives (an argument it accepts and ignores, ...)."""


class UnsupportedOperatorError(OnnxExporterError):
    """Raised when an operator is unsupported by the exporter: it has no ONNX lowering (and
    no decomposition into operators that have one) at opset ``version``.  The message names
    the operator, the graph node (``node``) and why (``reason``)."""

    def __init__(self, name, version, supported_version, *, reason=None, node=None):
        self.name = name
        where = f" (graph node {node!r})" if node is not None else ""
        if supported_version is not None:
            msg = (f"Exporting the operator {name!r}{where} to ONNX opset version {version} is "
                   f"not supported. Support for this operator was added in version "
                   f"{supported_version}, try exporting with this version")
        else:
            msg = f"Exporting the operator {name!r}{where} to ONNX opset version {version} " \
                  f"is not supported"
        if reason:
            msg += f": {reason}"
        super().__init__(msg)
