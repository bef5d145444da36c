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
