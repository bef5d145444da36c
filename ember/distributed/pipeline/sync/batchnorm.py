"""``DeferredBatchNorm`` (PyTorch 1.8's ``Pipe(deferred_batch_norm=True)``).

Inside a pipeline each BatchNorm sees one micro-batch at a time.  Normalizing by the
micro-batch's own statistics is what the pipeline computes anyway, but updating the
running statistics once per micro-batch would give a different moving average than
un-pipelined training.  So the layer only sums each micro-batch's values and squares and
commits one update when all ``chunks`` micro-batches of the mini-batch have passed: the
running mean and (unbiased) variance then equal those that one BatchNorm call on the whole
mini-batch produces.  Recomputation under activation checkpointing does not count again.
"""
import threading
from contextlib import contextmanager

from ....nn import functional as F
from ....nn.modules.normalization import _BatchNorm

__all__ = ["DeferredBatchNorm"]

_LOCAL = threading.local()


def is_recomputing():
    """True while a checkpointed partition is being recomputed in backward."""
    return getattr(_LOCAL, "recomputing", False)


@contextmanager
def recomputing():
    prev = is_recomputing()
    _LOCAL.recomputing = True
    try:
        yield
    finally:
        _LOCAL.recomputing = prev


class DeferredBatchNorm(_BatchNorm):
    """A BatchNorm whose running statistics are committed once per ``chunks`` micro-batches."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, chunks=1):
        super().__init__(num_features, eps, momentum, affine, track_running_stats=True)
        self.chunks = chunks
        self._reset_tracking()

    def _reset_tracking(self):
        self.sum = self.sum_squares = None
        self.counter = 0
        self.tracked = 0

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    def _track(self, input):
        from ..._ember import no_grad
        dims = [0] + list(range(2, input.dim()))
        with no_grad():
            x = input.detach().to(self.running_mean.dtype)
            s, ss = x.sum(dims), (x * x).sum(dims)
            if self.sum is None:
                self.sum, self.sum_squares = s, ss
            else:
                self.sum = self.sum + s
                self.sum_squares = self.sum_squares + ss
        self.counter += input.numel() // input.shape[1]
        self.tracked += 1

    def _commit(self):
        from ..._ember import no_grad
        n = self.counter
        with no_grad():
            mean = self.sum / n
            var = self.sum_squares / n - mean * mean
            # the running variance is the unbiased one, as BatchNorm's own update
            if n > 1:
                var = var * (n / (n - 1))
            self.num_batches_tracked.add_(1)
            m = (1.0 / float(self.num_batches_tracked) if self.momentum is None
                 else self.momentum)
            self.running_mean.mul_(1 - m).add_(mean * m)
            self.running_var.mul_(1 - m).add_(var * m)
        self._reset_tracking()

    def forward(self, input):
        self._check_input_dim(input)
        if not self.training:
            return F.batch_norm(input, self.running_mean, self.running_var, self.weight,
                                self.bias, False, 0.0, self.eps)
        if not is_recomputing():
            self._track(input)
            if self.tracked >= self.chunks:
                self._commit()
        return F.batch_norm(input, None, None, self.weight, self.bias, True, 0.0, self.eps)

    @classmethod
    def convert_deferred_batch_norm(cls, module, chunks=1):
        """``module`` with every running-statistics BatchNorm replaced by a
        DeferredBatchNorm that shares its parameters and buffers."""
        if isinstance(module, _BatchNorm) and not isinstance(module, cls) \
                and module.track_running_stats:
            out = cls(module.num_features, module.eps, module.momentum, module.affine, chunks)
            if module.affine:
                out.register_parameter("weight", module.weight)
                out.register_parameter("bias", module.bias)
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                out.register_buffer(name, getattr(module, name))
            out.train(module.training)
            return out
        for name, child in list(module.named_children()):
            new = cls.convert_deferred_batch_norm(child, chunks)
            if new is not child:
                module.add_module(name, new)
        return module
