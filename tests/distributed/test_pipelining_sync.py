"""PyTorch 1.8's ``Pipe`` (ember.distributed.pipeline.sync): micro-batched outputs and
gradients equal the plain Sequential's (and torch's), and each checkpoint mode recomputes
exactly the micro-batches 1.8 defines."""
import numpy as np
import pytest

import ember
from ember.distributed.pipeline.sync import Pipe, PipeRRef


class Counting(ember.nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return x * 1.0


def _seq(lib, counter=None):
    lib.manual_seed(0)
    layers = [lib.nn.Linear(6, 5), lib.nn.Tanh(), lib.nn.Linear(5, 2)]
    if counter is not None:
        layers.insert(2, counter)
    return lib.nn.Sequential(*layers)


@pytest.mark.parametrize("mode,chunks,calls", [
    ("always", 4, 8), ("except_last", 4, 7), ("never", 4, 4), ("except_last", 1, 1)])
def test_checkpoint_modes_and_values_match_torch(mode, chunks, calls):
    import torch
    counter = Counting()
    seq = _seq(ember, counter)
    tseq = _seq(torch)
    with torch.no_grad():
        for (n, p), q in zip(tseq.named_parameters(), [p for p in seq.parameters()]):
            p.copy_(torch.from_numpy(q.detach().numpy()))
    pipe = Pipe(seq, chunks=chunks, checkpoint=mode)
    x = np.linspace(-2, 2, 48, dtype=np.float32).reshape(8, 6)
    out = pipe(ember.from_numpy(x))
    assert isinstance(out, PipeRRef)
    y = out.local_value()
    assert y is out.to_here()
    y.pow(2).sum().backward()
    assert counter.calls == calls
    tx = torch.from_numpy(x)
    ty = tseq(tx)
    ty.pow(2).sum().backward()
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-6)
    for p, q in zip(seq.parameters(), tseq.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-5)


def test_no_recompute_without_grad():
    counter = Counting()
    pipe = Pipe(_seq(ember, counter), chunks=3, checkpoint="always")
    with ember.no_grad():
        out = pipe(ember.randn(6, 6)).local_value()
    assert counter.calls == 3 and tuple(out.shape) == (6, 2)


def test_pipe_is_a_sequential_view_and_rejects_bad_arguments():
    seq = _seq(ember)
    pipe = Pipe(seq, chunks=2)
    assert len(pipe) == 3 and pipe[0] is seq[0] and list(pipe)[2] is seq[2]
    assert [p is q for p, q in zip(pipe.parameters(), seq.parameters())] == [True] * 4
    with pytest.raises(TypeError, match="nn.Sequential"):
        Pipe(ember.nn.Linear(2, 2))
    with pytest.raises(ValueError, match="positive integer"):
        Pipe(seq, chunks=0)
    with pytest.raises(ValueError, match="checkpoint is not one of"):
        Pipe(seq, checkpoint="sometimes")
    lin = ember.nn.Linear(2, 2)
    with pytest.raises(ValueError, match="duplicate children"):
        Pipe(ember.nn.Sequential(lin, lin))


def _bn_seq(lib, momentum):
    lib.manual_seed(1)
    return lib.nn.Sequential(lib.nn.Conv2d(2, 3, 1), lib.nn.BatchNorm2d(3, momentum=momentum),
                             lib.nn.ReLU(), lib.nn.Flatten(), lib.nn.Linear(12, 4),
                             lib.nn.BatchNorm1d(4, momentum=momentum))


@pytest.mark.parametrize("momentum,mode", [(0.1, "except_last"), (None, "always"),
                                           (0.3, "never")])
def test_deferred_batch_norm_running_stats_equal_unpipelined_training(momentum, mode):
    """Running statistics after two mini-batches of 4 micro-batches equal torch's plain
    BatchNorm on the whole mini-batches; the outputs are each micro-batch normalized by its
    own statistics (the plain model applied to each micro-batch), and checkpoint
    recomputation does not count twice."""
    import torch
    from ember.distributed.pipeline.sync.batchnorm import DeferredBatchNorm
    seq, tseq = _bn_seq(ember, momentum), _bn_seq(torch, momentum)
    with torch.no_grad():
        for p, q in zip(tseq.parameters(), seq.parameters()):
            p.copy_(torch.from_numpy(q.detach().numpy()))
    ref = _bn_seq(ember, momentum)
    ref.load_state_dict(seq.state_dict())
    pipe = Pipe(seq, chunks=4, checkpoint=mode, deferred_batch_norm=True)
    bns = [m for m in pipe if isinstance(m, DeferredBatchNorm)]
    assert len(bns) == 2
    tbn2 = torch.nn.BatchNorm1d(4, momentum=momentum)
    rng = np.random.default_rng(0)
    for step in range(2):
        x = rng.standard_normal((16, 2, 2, 2)).astype(np.float32) * (step + 1) + step
        y = pipe(ember.from_numpy(x)).local_value()
        y.pow(2).sum().backward()
        tseq(torch.from_numpy(x))
        per_mb = ember.cat([ref(ember.from_numpy(c)) for c in np.split(x, 4)])
        np.testing.assert_allclose(y.detach().numpy(), per_mb.detach().numpy(),
                                   rtol=1e-5, atol=1e-5)
        # the second BatchNorm's mini-batch is what the pipeline fed it: the first one's
        # micro-batch-normalized outputs, concatenated
        fed = ember.cat([ref[:5](ember.from_numpy(c)) for c in np.split(x, 4)])
        tbn2(torch.from_numpy(fed.detach().numpy()))
        for bn, tbn in zip(bns, [tseq[1], tbn2]):
            np.testing.assert_allclose(bn.running_mean.numpy(), tbn.running_mean.numpy(),
                                       rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(bn.running_var.numpy(), tbn.running_var.numpy(),
                                       rtol=1e-5, atol=1e-6)
            assert int(bn.num_batches_tracked) == step + 1
    # evaluation normalizes with the committed running statistics, like torch's eval mode
    tseq[5] = tbn2
    pipe.eval()
    tseq.eval()
    x = rng.standard_normal((8, 2, 2, 2)).astype(np.float32)
    np.testing.assert_allclose(pipe(ember.from_numpy(x)).local_value().detach().numpy(),
                               tseq(torch.from_numpy(x)).detach().numpy(), rtol=1e-4,
                               atol=1e-5)


def test_deferred_batch_norm_shares_the_layers_parameters_and_buffers():
    from ember.distributed.pipeline.sync.batchnorm import DeferredBatchNorm
    bn = ember.nn.BatchNorm1d(3)
    seq = ember.nn.Sequential(ember.nn.Linear(2, 3), bn)
    pipe = Pipe(seq, chunks=2, deferred_batch_norm=True)
    dbn = pipe[1]
    assert isinstance(dbn, DeferredBatchNorm) and dbn.chunks == 2
    assert dbn.weight is bn.weight and dbn.running_mean is bn.running_mean
    assert set(dbn.state_dict()) == set(bn.state_dict())
    pipe(ember.randn(6, 2))
    assert int(bn.num_batches_tracked) == 1 and bn.running_mean.abs().sum().item() > 0
    with pytest.raises(ValueError, match="at least 2D"):
        dbn(ember.randn(3))
