"""Named result tuples (``torch.return_types``): ``values, indices = x.max(0)`` and
``r.values`` both work, and they print like PyTorch's.

Other areas add their own with `structseq` (e.g. ``slogdet``); ``ember.return_types``
is this module.
"""
import collections
import sys

__all__ = ["structseq", "max", "min", "sort", "topk", "kthvalue", "median", "nanmedian",
           "mode", "aminmax", "cummax", "cummin"]


def _repr(self):
    body = ",\n".join(f"{f}={v!r}" for f, v in zip(self._fields, self))
    return f"ember.return_types.{type(self).__name__}(\n{body})"


def structseq(name, fields):
    """A tuple subclass with named fields, registered as ``ember.return_types.<name>``."""
    if name in _TYPES:
        return _TYPES[name]
    base = collections.namedtuple(name, fields)
    cls = type(name, (base,), {"__slots__": (), "__repr__": _repr, "__str__": _repr,
                               "__module__": __name__})
    cls.__qualname__ = name
    globals()[name] = cls
    _TYPES[name] = cls
    return cls


_TYPES = {}
_VI = ("values", "indices")
max = structseq("max", _VI)
min = structseq("min", _VI)
sort = structseq("sort", _VI)
topk = structseq("topk", _VI)
kthvalue = structseq("kthvalue", _VI)
median = structseq("median", _VI)
nanmedian = structseq("nanmedian", _VI)
mode = structseq("mode", _VI)
cummax = structseq("cummax", _VI)
cummin = structseq("cummin", _VI)
aminmax = structseq("aminmax", ("min", "max"))

# ``import ember.return_types`` works like ``import torch.return_types``
sys.modules.setdefault("ember.return_types", sys.modules[__name__])
