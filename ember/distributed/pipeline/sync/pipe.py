"""`Pipe` (PyTorch 1.8): runs an ``nn.Sequential`` as a pipeline of partitions over
micro-batches, with activation checkpointing.

As in 1.8, consecutive layers whose parameters sit on one device form a partition (here,
ember's CPU device: one partition unless a registered device holds some layers), each
micro-batch moves to a partition's device before it runs there, and ``checkpoint`` chooses
which micro-batches keep no activations and recompute them in backward:
``"always"`` (all), ``"except_last"`` (all but the last) or ``"never"``.  Checkpointing is
off when gradients are disabled.  ``forward`` returns an RRef to the output, as 1.8 did: an
RPC `RRef` when RPC is initialized, else a local `PipeRRef` with the same
``local_value``/``to_here`` methods.
"""
import contextlib

from ....nn import Module, Sequential
from .batchnorm import DeferredBatchNorm, recomputing

__all__ = ["Pipe", "PipeRRef"]

_MODES = ("always", "except_last", "never")


class PipeRRef:
    """The RRef-like result of `Pipe.forward` outside RPC: the output lives here."""

    def __init__(self, value):
        self._value = value

    def local_value(self):
        return self._value

    def to_here(self, timeout=None):
        return self._value

    def is_owner(self):
        return True

    def __repr__(self):
        return f"PipeRRef({type(self._value).__name__})"


def _device_of(module):
    for p in module.parameters():
        return p.device
    for b in module.buffers():
        return b.device
    return None


def _partition(module):
    parts, devices, current, dev = [], [], [], None
    for layer in module.children():
        d = _device_of(layer)
        if current and d is not None and dev is not None and d != dev:
            parts.append(Sequential(*current))
            devices.append(dev)
            current = []
        if d is not None:
            dev = d
        current.append(layer)
    if current:
        parts.append(Sequential(*current))
        devices.append(dev)
    return parts, devices


def _to(value, device):
    from ...._core.tensor import Tensor
    if device is None:
        return value
    if isinstance(value, Tensor):
        return value.to(device)
    if isinstance(value, tuple):
        return tuple(_to(v, device) for v in value)
    return value


def _scatter(value, chunks):
    from ...._core.tensor import Tensor
    if isinstance(value, Tensor):
        return list(value.chunk(chunks))
    if isinstance(value, tuple):
        parts = [_scatter(v, chunks) for v in value]
        n = min(len(p) for p in parts)
        return [tuple(p[i] for p in parts) for i in range(n)]
    raise TypeError(f"Pipe: expected a Tensor or a tuple of Tensors, got {type(value).__name__}")


def _gather(outputs):
    from ..._ember import cat
    first = outputs[0]
    if isinstance(first, tuple):
        return tuple(cat([o[i] for o in outputs]) for i in range(len(first)))
    return cat(outputs)


class Pipe(Module):
    r"""Wraps an ``nn.Sequential`` to run as a pipeline over ``chunks`` micro-batches.

    Args:
        module (nn.Sequential): the layers; consecutive layers on one device form a
            partition.
        chunks (int): number of micro-batches the input is split into (along dim 0).
        checkpoint (str): ``"always"``, ``"except_last"`` (default) or ``"never"``.
        deferred_batch_norm (bool): replace the BatchNorm layers by `DeferredBatchNorm`,
            whose running statistics are updated once per mini-batch, as un-pipelined
            training would (they share the original layers' parameters and buffers).

    Example::
        >>> model = Pipe(nn.Sequential(nn.Linear(16, 8), nn.ReLU(), nn.Linear(8, 4)), chunks=4)
        >>> out = model(torch.randn(32, 16)).local_value()
    """

    def __init__(self, module, chunks=1, checkpoint="except_last", deferred_batch_norm=False):
        super().__init__()
        if not isinstance(module, Sequential):
            raise TypeError("module must be nn.Sequential to be partitioned")
        if not isinstance(chunks, int) or isinstance(chunks, bool) or chunks <= 0:
            raise ValueError("number of chunks must be positive integer")
        if checkpoint not in _MODES:
            raise ValueError("checkpoint is not one of 'always', 'except_last', or 'never'")
        kids = list(module._modules.values())
        if len({id(k) for k in kids}) != len(kids):
            raise ValueError("module with duplicate children is not supported")
        if deferred_batch_norm:
            module = DeferredBatchNorm.convert_deferred_batch_norm(module, chunks)
        self.chunks = chunks
        self.checkpoint = checkpoint
        parts, self.devices = _partition(module)
        self.partitions = Sequential(*parts)

    def __len__(self):
        return sum(len(p) for p in self.partitions)

    def __getitem__(self, index):
        return list(m for p in self.partitions for m in p)[index]

    def __iter__(self):
        for p in self.partitions:
            yield from p

    def _checkpointed(self, i, n):
        from ..._ember import is_grad_enabled
        if not is_grad_enabled():
            return False
        if self.checkpoint == "always":
            return True
        if self.checkpoint == "except_last":
            return i < n - 1
        return False

    def forward(self, input):
        """Runs every micro-batch through every partition; returns an RRef to the output
        (the micro-batch outputs concatenated)."""
        from ....utils.checkpoint import checkpoint
        batches = _scatter(input, self.chunks)
        n = len(batches)
        outputs = []
        for i, mb in enumerate(batches):
            ckpt = self._checkpointed(i, n)
            for part, dev in zip(self.partitions, self.devices):
                mb = _to(mb, dev)
                args = mb if isinstance(mb, tuple) else (mb,)
                if ckpt:
                    mb = checkpoint(part, *args, use_reentrant=False,
                                    context_fn=_recompute_context)
                else:
                    mb = part(*args)
            outputs.append(mb)
        return _rref(_gather(outputs))


def _recompute_context():
    return contextlib.nullcontext(), recomputing()


def _rref(value):
    from ...rpc import RRef, _state
    if _state._AGENT[0] is None:
        return PipeRRef(value)
    return RRef(value)
