"""default_collate / default_convert: turn a list of samples into a batch."""
import collections.abc
import re

import numpy as np

from ..._core.tensor import Tensor

__all__ = ["default_collate", "default_convert"]

_np_str = re.compile(r"[SaUO]")


def default_convert(data):
    """Converts NumPy arrays to tensors inside (nested) containers, leaving the rest."""
    from ...ops.creation import as_tensor
    if isinstance(data, Tensor):
        return data
    if isinstance(data, np.ndarray) and not _np_str.search(data.dtype.str):
        return as_tensor(data)
    if isinstance(data, np.generic) and not _np_str.search(data.dtype.str):
        return as_tensor(np.asarray(data))
    if isinstance(data, collections.abc.Mapping):
        return type(data)({k: default_convert(v) for k, v in data.items()}) \
            if not isinstance(data, dict) or type(data) is not dict else \
            {k: default_convert(v) for k, v in data.items()}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, (list, tuple)):
        return type(data)(default_convert(d) for d in data)
    return data


def default_collate(batch):
    """Stacks tensors/arrays/numbers into tensors with a new batch dimension, recursing into
    dicts, named tuples and sequences; strings are returned as lists."""
    from ...ops.creation import as_tensor, tensor
    from ...ops.shape import stack
    elem = batch[0]
    if isinstance(elem, Tensor):
        return stack(list(batch), 0)
    if isinstance(elem, np.ndarray):
        if _np_str.search(elem.dtype.str):
            raise TypeError(f"default_collate: batch must contain tensors, numpy arrays, numbers, "
                            f"dicts or lists; found {elem.dtype}")
        return stack([as_tensor(b) for b in batch], 0)
    if isinstance(elem, np.generic):
        return as_tensor(np.array(batch))
    if isinstance(elem, bool):
        return tensor(batch)
    if isinstance(elem, float):
        from ..._core import dtype as _dt
        return tensor(batch, dtype=_dt.float64)
    if isinstance(elem, int):
        return tensor(batch)
    if isinstance(elem, (str, bytes)):
        return list(batch)
    if isinstance(elem, collections.abc.Mapping):
        out = {k: default_collate([d[k] for d in batch]) for k in elem}
        if type(elem) is dict:
            return out
        try:
            return type(elem)(out)
        except TypeError:
            return out
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return type(elem)(*(default_collate(list(s)) for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        it = iter(batch)
        n = len(next(it))
        if not all(len(e) == n for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = [default_collate(list(s)) for s in zip(*batch)]
        if isinstance(elem, tuple):
            return transposed
        try:
            return type(elem)(transposed)
        except TypeError:
            return transposed
    raise TypeError(f"default_collate: batch must contain tensors, numpy arrays, numbers, dicts "
                    f"or lists; found {type(elem)}")
