"""The optional ``onnx`` package, imported when an export runs (``import ember.onnx`` stays
cheap and works without it)."""

__all__ = ["require_onnx"]


def require_onnx():
    """The ``onnx`` module, or an ImportError that says how to install it."""
    try:
        import onnx
    except ImportError as e:
        raise ImportError("ember.onnx.export needs the 'onnx' package: "
                          "pip install ember[onnx] (or pip install onnx)") from e
    return onnx
