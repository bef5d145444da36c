"""`ONNXProgram`: what `ember.onnx.export` returns (torch.onnx.ONNXProgram)."""
import os

__all__ = ["ONNXProgram"]


class ONNXProgram:
    """An exported ONNX model (``model_proto``, an ``onnx.ModelProto``) with the
    `ExportedProgram` it was made from (``exported_program``, or None)."""

    def __init__(self, model, exported_program):
        self.model = model
        self.exported_program = exported_program
        self._session = None

    @property
    def model_proto(self):
        """The ``onnx.ModelProto`` of the program."""
        return self.model

    def __repr__(self):
        g = self.model.graph
        return (f"ONNXProgram(inputs={[i.name for i in g.input]}, "
                f"outputs={[o.name for o in g.output]}, nodes={len(g.node)}, "
                f"opset={self.model.opset_import[0].version})")

    def save(self, destination, *, include_initializers=True, keep_initializers_as_inputs=False,
             external_data=None):
        """Save the model to ``destination`` (a path or a binary file object).

        ``include_initializers=False`` leaves the weights out (the graph then takes them as
        inputs); ``keep_initializers_as_inputs`` lists the weights among the graph inputs too
        (so they can be overridden at run time); ``external_data`` stores the weights in a
        file next to the model (``<destination>.data``) -- by default when the model is over
        protobuf's 2 GB limit."""
        import onnx
        from onnx import helper
        model = onnx.ModelProto()
        model.CopyFrom(self.model)
        g = model.graph
        if keep_initializers_as_inputs or not include_initializers:
            present = {i.name for i in g.input}
            for init in g.initializer:
                if init.name not in present:
                    g.input.append(helper.make_tensor_value_info(init.name, init.data_type,
                                                                 list(init.dims)))
        if not include_initializers:
            del g.initializer[:]
        if hasattr(destination, "write"):
            if external_data:
                raise ValueError("ONNXProgram.save: external_data needs a path destination, "
                                 "not a file object")
            destination.write(model.SerializeToString())
            return
        path = os.fspath(destination)
        if external_data is None:
            external_data = model.ByteSize() > 2 ** 31 - 1 if model.ByteSize() >= 0 else True
        if external_data:
            onnx.save_model(model, path, save_as_external_data=True, all_tensors_to_one_file=True,
                            location=os.path.basename(path) + ".data")
        else:
            onnx.save_model(model, path)

    def __call__(self, *args, **kwargs):
        """Run the model with ONNX Runtime on ember tensors (or arrays), flattened in the
        graph input order; returns a list of ember tensors."""
        import numpy as np

        from .._core.tensor import Tensor, wrap
        if self._session is None:
            try:
                import onnxruntime
            except ImportError as e:
                raise ImportError("ONNXProgram.__call__ needs onnxruntime: "
                                  "pip install onnxruntime") from e
            self._session = onnxruntime.InferenceSession(
                self.model.SerializeToString(), providers=["CPUExecutionProvider"])
        values = list(args) + list(kwargs.values())
        names = [i.name for i in self._session.get_inputs()]
        if len(values) != len(names):
            raise TypeError(f"ONNXProgram expects {len(names)} inputs ({names}), got "
                            f"{len(values)}")
        feed = {n: (v.numpy() if isinstance(v, Tensor) else np.asarray(v))
                for n, v in zip(names, values)}
        return [wrap(np.asarray(o)) for o in self._session.run(None, feed)]
