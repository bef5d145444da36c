"""default_collate / default_convert: turn a list of samples into a batch.

`collate` walks the structure of the first sample: a type found in ``collate_fn_map``
(exactly, else the first key it is an instance of, in insertion order) is collated by
that function; mappings, named tuples and sequences are rebuilt around their collated
fields (mutable ones as copies of the first sample, so subclasses keep their extra
state); anything else is a TypeError.  ``default_collate_fn_map`` holds torch's rules
for tensors, NumPy arrays and scalars, Python numbers and strings, and may be extended.
"""
import collections.abc
import copy
import re

import numpy as np

from ..._core.tensor import Tensor

__all__ = ["default_collate", "default_convert", "collate", "default_collate_fn_map",
           "collate_tensor_fn", "collate_numpy_array_fn", "collate_numpy_scalar_fn",
           "collate_float_fn", "collate_int_fn", "collate_str_fn"]

# dtype codes of NumPy arrays that hold strings or objects: not convertible to tensors
np_str_obj_array_pattern = re.compile(r"[SaUO]")

default_collate_err_msg_format = ("default_collate: batch must contain tensors, numpy arrays, "
                                  "numbers, dicts or lists; found {}")


def _rebuild_mapping(elem, values):
    """A mapping like ``elem`` holding ``values`` (a dict), as torch rebuilds it."""
    try:
        if isinstance(elem, collections.abc.MutableMapping):
            clone = copy.copy(elem)
            clone.update(values)
            return clone
        return type(elem)(values)
    except TypeError:  # no copy()/update(), or a constructor that takes no mapping
        return values


def _rebuild_sequence(elem, items):
    """A sequence like ``elem`` holding ``items`` (a list); a plain list where the type
    cannot be rebuilt (``range``)."""
    try:
        if isinstance(elem, collections.abc.MutableSequence):
            clone = copy.copy(elem)
            for i, x in enumerate(items):
                clone[i] = x
            return clone
        return type(elem)(items)
    except TypeError:
        return items


def default_convert(data):
    """Converts each NumPy array element into a :class:`ember.Tensor`, recursing into
    mappings, named tuples and sequences; a tensor, or anything else, is returned
    unchanged.  Used when automatic batching is disabled (``batch_size=None``)."""
    from ...ops.creation import as_tensor
    t = type(data)
    if isinstance(data, Tensor):
        return data
    if t.__module__ == "numpy" and t.__name__ not in ("str_", "string_"):
        if t.__name__ == "ndarray" and np_str_obj_array_pattern.search(data.dtype.str):
            return data
        return as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return _rebuild_mapping(data, {k: default_convert(data[k]) for k in data})
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # namedtuple
        return t(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]  # a list, as torch returns
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return _rebuild_sequence(data, [default_convert(d) for d in data])
    return data


def collate(batch, *, collate_fn_map=None):
    """General collate function that handles collection type of element within each batch.

    ``collate_fn_map`` maps element types to collate functions (called as
    ``fn(batch, collate_fn_map=collate_fn_map)``); types missing from it are matched by
    ``isinstance`` against its keys in insertion order."""
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        fn = collate_fn_map.get(elem_type)
        if fn is not None:
            return fn(batch, collate_fn_map=collate_fn_map)
        for key, fn in collate_fn_map.items():
            if isinstance(elem, key):
                return fn(batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, collections.abc.Mapping):
        return _rebuild_mapping(
            elem, {k: collate([d[k] for d in batch], collate_fn_map=collate_fn_map)
                   for k in elem})
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return elem_type(*(collate(s, collate_fn_map=collate_fn_map) for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        it = iter(batch)
        n = len(next(it))
        if not all(len(e) == n for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        # the fields go on as tuples (strings come back as a tuple of them, as in torch)
        transposed = [collate(s, collate_fn_map=collate_fn_map) for s in zip(*batch)]
        if isinstance(elem, tuple):
            return transposed  # a list, as torch returns
        return _rebuild_sequence(elem, transposed)
    raise TypeError(default_collate_err_msg_format.format(elem_type))


def collate_tensor_fn(batch, *, collate_fn_map=None):
    from ...ops.shape import stack
    return stack(list(batch), 0)


def collate_numpy_array_fn(batch, *, collate_fn_map=None):
    from ...ops.creation import as_tensor
    elem = batch[0]
    if np_str_obj_array_pattern.search(elem.dtype.str) is not None:
        raise TypeError(default_collate_err_msg_format.format(elem.dtype))
    return collate([as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch, *, collate_fn_map=None):
    from ...ops.creation import as_tensor
    return as_tensor(np.asarray(batch))


def collate_float_fn(batch, *, collate_fn_map=None):
    from ..._core import dtype as _dt
    from ...ops.creation import tensor
    return tensor(batch, dtype=_dt.float64)


def collate_int_fn(batch, *, collate_fn_map=None):
    from ...ops.creation import tensor
    return tensor(batch)


def collate_str_fn(batch, *, collate_fn_map=None):
    return batch


default_collate_fn_map = {
    Tensor: collate_tensor_fn,
    np.ndarray: collate_numpy_array_fn,  # memmap too (a subclass)
    (np.bool_, np.number, np.object_): collate_numpy_scalar_fn,  # not the string scalars
    float: collate_float_fn,
    int: collate_int_fn,  # bool too: a bool batch becomes a bool tensor
    str: collate_str_fn,
    bytes: collate_str_fn,
}


def default_collate(batch):
    """Takes in a batch of data and puts the elements within the batch into a tensor with
    an additional outer dimension - batch size: tensors are stacked, NumPy arrays and
    scalars and Python numbers become tensors (floats as float64), strings and bytes stay
    a list; mappings, named tuples and sequences are collated field by field."""
    return collate(batch, collate_fn_map=default_collate_fn_map)
