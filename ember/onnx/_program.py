"""`ONNXProgram`: what `ember.onnx.export` returns (torch.onnx.ONNXProgram)."""
import os

__all__ = ["ONNXProgram"]


def _ort_session_initializer(model):
    """An ONNX Runtime session on the CPU for ``model`` (serialized bytes or a path)."""
    try:
        import onnxruntime
    except ImportError as e:
        raise ImportError("running an ONNXProgram needs onnxruntime: "
                          "pip install onnxruntime") from e
    return onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"])


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

    def _feed(self, names, args, kwargs):
        import numpy as np

        from .._core.tensor import Tensor
        values = list(args) + list((kwargs or {}).values())
        if len(values) != len(names):
            raise TypeError(f"ONNXProgram expects {len(names)} inputs ({names}), got "
                            f"{len(values)}")
        return {n: (v.detach().numpy() if isinstance(v, Tensor) else np.asarray(v))
                for n, v in zip(names, values)}

    def initialize_inference_session(self, initializer=_ort_session_initializer):
        """Create the ONNX Runtime session that `__call__` uses (``initializer``: a function
        from the serialized model to an ``InferenceSession``; default: the CPU provider)."""
        self._session = initializer(self.model.SerializeToString())

    def release(self):
        """Release the inference session (a later call creates a new one)."""
        self._session = None

    def __call__(self, *args, **kwargs):
        """Run the model with ONNX Runtime on ember tensors (or arrays), given in the graph
        input order; returns a list of ember tensors."""
        import numpy as np

        from .._core.tensor import wrap
        if self._session is None:
            self.initialize_inference_session()
        names = [i.name for i in self._session.get_inputs()]
        feed = self._feed(names, args, kwargs)
        return [wrap(np.asarray(o)) for o in self._session.run(None, feed)]

    def call_reference(self, *args, **kwargs):
        """Run the model with ONNX's reference evaluator (``onnx.reference``: slow, exact to
        the operator specifications), as `__call__` does."""
        import numpy as np
        from onnx.reference import ReferenceEvaluator

        from .._core.tensor import wrap
        ref = ReferenceEvaluator(self.model)
        names = [i.name for i in self.model.graph.input
                 if i.name not in {t.name for t in self.model.graph.initializer}]
        return [wrap(np.asarray(o)) for o in ref.run(None, self._feed(names, args, kwargs))]

    def compute_values(self, value_names, args=(), kwargs=None):
        """The values named ``value_names`` (any value of the graph, not only outputs) when
        the model runs on ``args``/``kwargs``, as ember tensors."""
        import onnx
        import onnxruntime
        import numpy as np

        from .._core.tensor import wrap
        model = onnx.ModelProto()
        model.CopyFrom(self.model)
        known = {o.name for o in model.graph.output}
        produced = {o for n in model.graph.node for o in n.output} | \
            {i.name for i in model.graph.input} | {t.name for t in model.graph.initializer}
        for name in value_names:
            if name not in produced:
                raise ValueError(f"ONNXProgram.compute_values: no value named {name!r}")
            if name not in known:
                model.graph.output.append(onnx.ValueInfoProto(name=name))
        sess = onnxruntime.InferenceSession(model.SerializeToString(),
                                            providers=["CPUExecutionProvider"])
        names = [i.name for i in sess.get_inputs()]
        out = dict(zip([o.name for o in sess.get_outputs()],
                       sess.run(None, self._feed(names, args, kwargs))))
        return [wrap(np.asarray(out[n])) for n in value_names]

    def apply_weights(self, state_dict):
        """Replace the initializers named like the keys of ``state_dict`` (name -> tensor)
        with those values; shapes and dtypes must match."""
        import numpy as np
        from onnx import numpy_helper

        from .._core.tensor import Tensor
        inits = {t.name: t for t in self.model.graph.initializer}
        for name, value in state_dict.items():
            if name not in inits:
                raise KeyError(f"ONNXProgram.apply_weights: the model has no weight {name!r}")
            arr = value.detach().numpy() if isinstance(value, Tensor) else np.asarray(value)
            old = numpy_helper.to_array(inits[name])
            if arr.shape != old.shape or arr.dtype != old.dtype:
                raise ValueError(f"ONNXProgram.apply_weights: {name!r} is {old.dtype} "
                                 f"{list(old.shape)} in the model, got {arr.dtype} "
                                 f"{list(arr.shape)}")
            inits[name].CopyFrom(numpy_helper.from_array(np.array(arr, order="C"), name))
        self.release()

    def optimize(self):
        """Drop the nodes and weights no output depends on (in place)."""
        from ._export import remove_unused
        remove_unused(self.model)
        self.release()

    def rename_axes(self, rename_mapping):
        """Rename symbolic dims (``dim_param``) of the graph's inputs, outputs and values:
        ``{old name: new name}``."""
        g = self.model.graph
        for info in list(g.input) + list(g.output) + list(g.value_info):
            for d in info.type.tensor_type.shape.dim:
                if d.HasField("dim_param") and d.dim_param in rename_mapping:
                    d.dim_param = str(rename_mapping[d.dim_param])
        self.release()
