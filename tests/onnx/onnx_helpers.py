"""Helpers for the ONNX tests: export, check, run with ONNX Runtime."""
import numpy as np
import onnx
import onnxruntime as ort

import ember
import ember.onnx


def session(program):
    onnx.checker.check_model(program.model_proto, full_check=True)
    return ort.InferenceSession(program.model_proto.SerializeToString(),
                                providers=["CPUExecutionProvider"])


def run(sess, *inputs):
    feed = {i.name: np.asarray(t.numpy() if isinstance(t, ember.Tensor) else t)
            for i, t in zip(sess.get_inputs(), inputs)}
    return sess.run(None, feed)


def flat(out):
    if isinstance(out, ember.Tensor):
        return [out]
    r = []
    for o in out:
        r.extend(flat(o))
    return r


def assert_close(got, expected, rtol=1e-5, atol=1e-5):
    expected = [e.detach().numpy() for e in flat(expected)]
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.shape == e.shape, (g.shape, e.shape)
        assert g.dtype == e.dtype, (g.dtype, e.dtype)
        if e.dtype == np.bool_ or e.dtype.kind in "iu":
            np.testing.assert_array_equal(g, e)
        else:
            np.testing.assert_allclose(g, e, rtol=rtol, atol=atol, equal_nan=True)


def graph_ops(fn, inputs):
    """The ember op names of ``fn``'s exported graph."""
    ep = ember.export.export(fn, tuple(inputs))
    return {getattr(n.target, "name", None) for n in ep.graph.nodes if n.op == "call_function"}


def one_op_program(name, inputs, params, expected):
    """An ONNXProgram of one ``name`` node on ``inputs`` (metadata from the tensors and the
    eager result ``expected``), built without ember.export."""
    from ember._core.meta import TensorMeta
    from ember._core.op import REGISTRY
    from ember.fx import Graph
    from ember.onnx._convert import GraphInput, GraphOutput, convert
    g = Graph()
    phs = []
    for i, t in enumerate(inputs):
        p = g.placeholder(f"x{i}")
        p.meta["val"] = TensorMeta(tuple(t.shape), t.dtype)
        phs.append(p)
    node = g.call_function(REGISTRY[name], tuple(phs), dict(params))
    outs = flat(expected)
    node.meta["val"] = TensorMeta(tuple(outs[0].shape), outs[0].dtype)
    g.output((node,))
    model = convert(g, [GraphInput(p, f"x{i}") for i, p in enumerate(phs)], [GraphOutput(0, "y")])
    return ember.onnx.ONNXProgram(model, None)
