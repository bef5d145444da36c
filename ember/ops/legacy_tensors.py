"""The legacy typed tensor classes: ``FloatTensor``, ``LongTensor``, ...

In torch these are not subclasses of ``Tensor`` but constructors whose
``isinstance`` answers whether a tensor has their dtype (on the CPU, strided);
``FloatTensor(2, 3)`` makes an uninitialised tensor, ``LongTensor([1, 2])``
converts data, ``FloatTensor(t)`` aliases a tensor of the same type and rejects
any other.  ``tensor.type(ember.DoubleTensor)`` casts to its dtype.
"""
import numpy as np

from .._core import dtype as _dt
from .._core.tensor import Size, Tensor, wrap
from .creation import tensor as _tensor

__all__ = ["FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor",
           "IntTensor", "ShortTensor", "CharTensor", "ByteTensor", "BoolTensor"]


class tensortype(type):
    """The metaclass of the typed tensor classes (``torch.tensortype``)."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor) and obj.dtype is cls.dtype and not obj.is_sparse and \
            obj.device.type == "cpu"

    def __call__(cls, *args, device=None, **kwargs):
        if kwargs:
            raise TypeError(f"new() received an invalid combination of arguments - got "
                            f"keyword arguments {sorted(kwargs)}; expected at most 'device'")
        if device is not None and str(device) != "cpu":
            raise RuntimeError(f"legacy constructor expects device type: cpu but device type: "
                               f"{device} was passed")
        d = cls.dtype
        if not args:
            return wrap(np.empty((0,), dtype=d.np))
        if len(args) == 1 and isinstance(args[0], Size) or \
                all(isinstance(a, int) and not isinstance(a, bool) for a in args):
            shape = tuple(args[0]) if isinstance(args[0], Size) else args
            if any(s < 0 for s in shape):
                raise RuntimeError(f"Trying to create tensor with negative dimension "
                                   f"{min(shape)}: {list(shape)}")
            return wrap(np.empty(shape, dtype=d.np))
        if len(args) != 1:
            raise TypeError(f"new() received an invalid combination of arguments - got "
                            f"({', '.join(type(a).__name__ for a in args)})")
        data = args[0]
        if isinstance(data, Tensor):
            if data.dtype is not d:
                raise TypeError(f"expected {cls.__name__} ({d}) but got a tensor of dtype "
                                f"{data.dtype}")
            return data.detach()
        if isinstance(data, (str, bytes)) or not (
                isinstance(data, (list, tuple, np.ndarray, np.generic, float, complex)) or
                hasattr(data, "__len__") or hasattr(data, "__array__")):
            raise TypeError(f"new(): invalid data type '{type(data).__name__}'")
        if isinstance(data, np.ndarray):
            return wrap(np.array(data, dtype=d.np))
        return _tensor(data, dtype=d)

    def __repr__(cls):
        return f"<class '{_dt.REPR_PREFIX[0]}{cls.__name__}'>"

    @property
    def is_sparse(cls):
        return False

    @property
    def is_cuda(cls):
        return False


def _make(name, d):
    return tensortype(name, (), {"dtype": d, "__module__": "ember", "__doc__":
                                 f"The legacy constructor of CPU tensors of dtype {d.name}."})


FloatTensor = _make("FloatTensor", _dt.float32)
DoubleTensor = _make("DoubleTensor", _dt.float64)
HalfTensor = _make("HalfTensor", _dt.float16)
BFloat16Tensor = _make("BFloat16Tensor", _dt.bfloat16)
LongTensor = _make("LongTensor", _dt.int64)
IntTensor = _make("IntTensor", _dt.int32)
ShortTensor = _make("ShortTensor", _dt.int16)
CharTensor = _make("CharTensor", _dt.int8)
ByteTensor = _make("ByteTensor", _dt.uint8)
BoolTensor = _make("BoolTensor", _dt.bool)
