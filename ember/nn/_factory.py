"""``torch.nn.factory_kwargs``: validate and merge the device/dtype/memory_format keyword
arguments a module passes on to tensor factories."""

__all__ = ["factory_kwargs"]

_KEYS = {"device", "dtype", "memory_format"}


def factory_kwargs(kwargs):
    """Return a canonicalized dict of factory kwargs (``device``, ``dtype``,
    ``memory_format``) from ``kwargs``, merging a nested ``factory_kwargs`` dict.

    Raises TypeError on an unknown key or on a key given both ways."""
    if kwargs is None:
        return {}
    simple = {k: v for k, v in kwargs.items() if k != "factory_kwargs"}
    unexpected = set(kwargs) - _KEYS - {"factory_kwargs"}
    if unexpected:
        raise TypeError(f"unexpected kwargs {unexpected}")
    nested = dict(kwargs.get("factory_kwargs", {}))
    for k in nested:  # torch passes unknown keys of the nested dict through unchecked
        if k in simple:
            raise TypeError(f"{k} specified twice, in **kwargs and in factory_kwargs")
    nested.update(simple)
    return nested
