"""Variable-length sequence batches for the recurrent layers (``torch.nn.utils.rnn``).

A `PackedSequence` stores the time steps of a batch of sorted sequences back to
back: step ``t`` contributes ``batch_sizes[t]`` rows (the sequences still running).
Packing and unpacking are one ``index_select`` each over a flat view of the
padded batch, so they are differentiable and cost one operator.
"""
from collections import namedtuple

import numpy as np

from ..._core.tensor import Tensor
from ...ops import cat, index_select, tensor as _tensor

__all__ = ["PackedSequence", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence",
           "pack_sequence", "unpad_sequence", "unpack_sequence", "invert_permutation"]


def _long(idx):
    return _tensor(np.asarray(idx, dtype=np.int64))


class PackedSequence(namedtuple("PackedSequence",
                                ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])):
    """Holds the data and list of ``batch_sizes`` of a packed sequence."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:
            raise TypeError("PackedSequence requires batch_sizes")
        if not isinstance(batch_sizes, Tensor):
            batch_sizes = _long(batch_sizes)
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def _map_data(self, fn):
        return type(self)(fn(self.data), self.batch_sizes, self.sorted_indices,
                          self.unsorted_indices)

    def to(self, *args, **kwargs):
        data = self.data.to(*args, **kwargs)
        return self if data is self.data else self._map_data(lambda d: data)

    def cpu(self, *args, **kwargs):
        return self._map_data(lambda d: d.cpu(*args, **kwargs))

    def cuda(self, *args, **kwargs):
        return self._map_data(lambda d: d.cuda(*args, **kwargs))

    def double(self):
        return self._map_data(lambda d: d.double())

    def float(self):
        return self._map_data(lambda d: d.float())

    def half(self):
        return self._map_data(lambda d: d.half())

    def long(self):
        return self._map_data(lambda d: d.long())

    def int(self):
        return self._map_data(lambda d: d.int())

    def byte(self):
        return self._map_data(lambda d: d.byte())

    def char(self):
        return self._map_data(lambda d: d.char())

    def short(self):
        return self._map_data(lambda d: d.short())

    @property
    def is_cuda(self):
        return self.data.is_cuda

    def is_pinned(self):
        return False


def invert_permutation(permutation):
    """The inverse of an index permutation (None stays None)."""
    if permutation is None:
        return None
    p = np.asarray(permutation._data)
    inv = np.empty_like(p)
    inv[p] = np.arange(p.size, dtype=p.dtype)
    return _tensor(inv)


def _lengths_np(lengths):
    if isinstance(lengths, Tensor):
        if lengths.dim() != 1:
            raise RuntimeError(f"'lengths' argument should be a 1D CPU int64 tensor, but got "
                               f"{lengths.dim()}D {lengths.device} {lengths.dtype} tensor")
        return np.asarray(lengths._data).astype(np.int64)
    return np.asarray(list(lengths), dtype=np.int64)


def _batch_sizes(lengths):
    """batch_sizes[t] = number of sequences longer than t (lengths sorted decreasingly)."""
    t = np.arange(int(lengths[0]) if lengths.size else 0)
    return (lengths[None, :] > t[:, None]).sum(1).astype(np.int64)


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Packs a Tensor containing padded sequences of variable length."""
    lens = _lengths_np(lengths)
    if enforce_sorted:
        if np.any(lens[1:] > lens[:-1]):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when "
                               "`enforce_sorted` is True. You can pass `enforce_sorted=False` to "
                               "pack_padded_sequence and/or pack_sequence to sidestep this "
                               "requirement if you do not need ONNX exportability.")
        sorted_indices = None
    else:
        order = np.argsort(-lens, kind="stable")
        lens = lens[order]
        sorted_indices = _long(order)
    if input.dim() < 2:
        raise RuntimeError(f"input must have at least 2 dimensions, got {input.dim()}")
    if batch_first:
        input = input.transpose(0, 1)
    T, B = input.shape[0], input.shape[1]
    if lens.size != B:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got "
                           f"{lens.size} (batch_size={B})")
    if lens.size and lens.min() <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element "
                           "in 'lengths' that is <= 0")
    if lens.size and lens[0] > T:
        raise RuntimeError(f"Expected sequence length to be larger than or equal to max length "
                           f"({lens[0]}), but got {T}")
    bs = _batch_sizes(lens)
    cols = np.arange(B) if sorted_indices is None else order
    idx = np.concatenate([t * B + cols[:b] for t, b in enumerate(bs)]) if bs.size else \
        np.zeros(0, np.int64)
    flat = input.reshape((T * B,) + tuple(input.shape[2:]))
    data = index_select(flat, 0, _long(idx))
    return PackedSequence(data, _long(bs), sorted_indices, invert_permutation(sorted_indices))


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """Pads a packed batch of variable length sequences (the inverse of pack_padded_sequence)."""
    data, bs = sequence.data, np.asarray(sequence.batch_sizes._data, dtype=np.int64)
    B = int(bs[0]) if bs.size else 0
    T = bs.size
    if total_length is not None:
        if total_length < T:
            raise ValueError(f"Expected total_length to be at least the length of the longest "
                             f"sequence in input, but got total_length={total_length} and max "
                             f"sequence length being {T}")
        T = total_length
    lens = (bs[None, :] > np.arange(B)[:, None]).sum(1).astype(np.int64)
    # gather index for each padded (t, b): its packed row, or the padding row at the end
    n = data.shape[0]
    idx = np.full((T, B), n, dtype=np.int64)
    off = 0
    for t, b in enumerate(bs):
        idx[t, :b] = np.arange(off, off + b)
        off += b
    uns = sequence.unsorted_indices
    if uns is not None:
        perm = np.asarray(uns._data)
        idx = idx[:, perm]
        lens = lens[perm]
    if batch_first:
        idx = idx.T
    pad_row = data.new_full((1,) + tuple(data.shape[1:]), padding_value)
    out = index_select(cat([data, pad_row], 0), 0, _long(idx.reshape(-1)))
    out = out.reshape(idx.shape + tuple(data.shape[1:]))
    return out, _long(lens)


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Pads a list of variable length Tensors with ``padding_value``."""
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got "
                         f"{padding_side}.")
    if isinstance(sequences, Tensor):
        sequences = sequences.unbind(0)
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    lens = [s.shape[0] for s in sequences]
    T, B = max(lens), len(sequences)
    trailing = tuple(sequences[0].shape[1:])
    n = sum(lens)
    idx = np.full((T, B), n, dtype=np.int64)
    off = 0
    for b, L in enumerate(lens):
        rows = np.arange(off, off + L)
        if padding_side == "right":
            idx[:L, b] = rows
        else:
            idx[T - L:, b] = rows
        off += L
    if batch_first:
        idx = idx.T
    ref = sequences[0]
    pad_row = ref.new_full((1,) + trailing, padding_value)
    out = index_select(cat(sequences + [pad_row], 0), 0, _long(idx.reshape(-1)))
    return out.reshape(idx.shape + trailing)


def pack_sequence(sequences, enforce_sorted=True):
    """Packs a list of variable length Tensors."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths,
                                enforce_sorted=enforce_sorted)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """Unpads a padded Tensor into a list of variable length Tensors."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [seq[:int(L)] for seq, L in zip(padded_sequences, _lengths_np(lengths))]


def unpack_sequence(packed_sequences):
    """Unpacks a PackedSequence into a list of variable length Tensors."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
