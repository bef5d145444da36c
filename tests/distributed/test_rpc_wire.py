"""In-process checks of RPC's message encoding (tensors as raw buffers, the load allow-list)
and of TensorPipeRpcBackendOptions' validation; the multi-worker tests are in test_rpc.py."""
import os
import pickle
import subprocess

import numpy as np
import pytest

import ember
from ember.distributed.rpc import TensorPipeRpcBackendOptions
from ember.distributed.rpc import _wire


def _roundtrip(obj, track=False):
    frame, tracked = _wire.dumps(obj, track=track)
    out, received = _wire.loads(frame)
    return out, tracked, received, frame


def local_helper(x):
    return x + 1


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.int64, ember.bool,
                                   ember.float16, ember.bfloat16, ember.complex64])
def test_tensor_roundtrip_values_and_dtype(dtype):
    t = (ember.arange(12) % 5).reshape(3, 4).to(dtype)
    out, _, _, _ = _roundtrip({"t": t, "view": t.t(), "scalar": t[1, 2]})
    for key, ref in (("t", t), ("view", t.t()), ("scalar", t[1, 2])):
        assert out[key].dtype == dtype and tuple(out[key].shape) == tuple(ref.shape)
        assert ember.equal(out[key], ref)


def test_tensor_travels_as_raw_buffer():
    t = ember.arange(1 << 16, dtype=ember.float32)
    _, _, _, frame = _roundtrip(t)
    body = bytes(frame)
    # the raw float32 bytes appear verbatim in the frame (out of band, not pickled)
    assert t.numpy().tobytes() in body
    assert len(body) < t.numpy().nbytes + 1024


def test_requires_grad_and_tracking():
    w = ember.randn(3, requires_grad=True)
    p = ember.nn.Parameter(ember.ones(2))
    c = ember.zeros(2)
    out, tracked, received, _ = _roundtrip((w, p, c), track=True)
    assert tracked[0] is w and tracked[1] is p and len(tracked) == 2
    assert [s for s, _ in received] == [0, 1]
    assert received[0][1] is out[0] and received[1][1] is out[1]
    assert out[0].requires_grad and out[0].is_leaf and not out[2].requires_grad
    assert isinstance(out[1], ember.nn.Parameter)
    np.testing.assert_array_equal(out[0].detach().numpy(), w.detach().numpy())


@pytest.mark.parametrize("fn", [os.system, eval, exec, getattr, __import__, subprocess.Popen,
                                pickle.loads, ember.save, ember.load])
def test_refuses_dangerous_globals(fn):
    frame, _ = _wire.dumps((fn, ("echo pwned",)))
    with pytest.raises(pickle.UnpicklingError, match="refused"):
        _wire.loads(frame)


def test_refuses_dunder_and_allows_program_and_ember():
    with pytest.raises(pickle.UnpicklingError, match="dunder"):
        _wire.check_global(__name__, "local_helper.__globals__")
    assert _wire.check_global(__name__, "local_helper") is local_helper
    assert _wire.check_global("ember.ops.pointwise", "add") is ember.add
    assert _wire.check_global("builtins", "ValueError") is ValueError
    out, _, _, _ = _roundtrip((local_helper, ember.add, ember.nn.Linear, [1, 2.5, "s"]))
    assert out[0] is local_helper and out[1] is ember.add and out[2] is ember.nn.Linear


def test_backend_options_defaults_and_device_maps():
    o = TensorPipeRpcBackendOptions()
    assert (o.num_worker_threads, o.rpc_timeout, o.init_method) == (16, 60.0, "env://")
    o = TensorPipeRpcBackendOptions(num_worker_threads=4, rpc_timeout=5, init_method="tcp://a:1")
    assert (o.num_worker_threads, o.rpc_timeout, o.init_method) == (4, 5.0, "tcp://a:1")
    o.set_device_map("worker1", {"cpu": "cpu"})
    assert o.device_maps == {"worker1": {ember.device("cpu"): ember.device("cpu")}}
    with pytest.raises(ValueError, match="not available"):
        o.set_device_map("worker1", {"cuda:0": "cuda:1"})
    with pytest.raises(ValueError, match="not available"):
        TensorPipeRpcBackendOptions(device_maps={"w": {0: 1}})
    with pytest.raises(RuntimeError):
        o.set_device_map("worker1", {"nodevice:0": "cpu"})
    with pytest.raises(ValueError, match="num_worker_threads"):
        TensorPipeRpcBackendOptions(num_worker_threads=0)


def test_api_without_init_raises():
    import ember.distributed.rpc as rpc
    with pytest.raises(RuntimeError, match="init_rpc"):
        rpc.rpc_sync("worker1", local_helper, args=(1,))
    with pytest.raises(RuntimeError, match="init_rpc"):
        rpc.get_worker_info()


def test_dist_autograd_local_only_matches_autograd():
    import ember.distributed.autograd as dist_autograd
    ember.manual_seed(0)
    w = ember.randn(3, 2, requires_grad=True)
    x = ember.randn(4, 3)
    with dist_autograd.context() as cid:
        loss = ember.tanh(x @ w).sum()
        dist_autograd.backward(cid, [loss])
        grads = dist_autograd.get_gradients(cid)
        with pytest.raises(RuntimeError, match="Already have an autograd context"):
            with dist_autograd.context():
                pass
        with pytest.raises(RuntimeError, match="scalars"):
            dist_autograd.backward(cid, [x @ w])
    (ref,) = ember.autograd.grad(ember.tanh(x @ w).sum(), [w])
    assert w.grad is None and list(grads) == [w]
    np.testing.assert_allclose(grads[w].numpy(), ref.numpy(), rtol=1e-6)
    with pytest.raises(RuntimeError, match="Could not find autograd context"):
        dist_autograd.get_gradients(cid)
