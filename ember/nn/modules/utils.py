"""``torch.nn.modules.utils``: the argument helpers layers and user code import by this path
(``_pair(3) == (3, 3)``; kornia, timm-style layers) and the state-dict prefix stripper."""
import collections.abc
import itertools

__all__ = ["consume_prefix_in_state_dict_if_present"]


def _ntuple(n, name="parse"):
    """A parser that keeps an iterable as a tuple and repeats anything else ``n`` times."""
    def parse(x):
        if isinstance(x, collections.abc.Iterable):
            return tuple(x)
        return tuple(itertools.repeat(x, n))
    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")


def _reverse_repeat_tuple(t, n):
    """``t`` reversed with each element repeated ``n`` times: a layer's per-dimension padding
    as ``F.pad`` takes it (last dimension first)."""
    return tuple(x for x in reversed(t) for _ in range(n))


def _list_with_default(out_size, defaults):
    """An adaptive pool's output size with each None replaced by the input's size there."""
    if not isinstance(out_size, collections.abc.Iterable):
        return out_size
    out_size = list(out_size)
    if len(defaults) <= len(out_size):
        raise ValueError(f"Input dimension should be at least {len(out_size) + 1}")
    return [d if v is None else v for v, d in zip(out_size, defaults[-len(out_size):])]


def consume_prefix_in_state_dict_if_present(state_dict, prefix):
    """Strip ``prefix`` (a DataParallel/DDP model's "module.") from the keys of
    ``state_dict`` and of its ``_metadata``, in place."""
    for key in list(state_dict.keys()):
        if key.startswith(prefix):
            state_dict[key[len(prefix):]] = state_dict.pop(key)
    meta = getattr(state_dict, "_metadata", None)
    if meta is None:
        return
    bare = prefix.replace(".", "")
    for key in list(meta.keys()):
        # '' is the wrapper's own entry and stays; 'module' and 'module.xx' lose the prefix
        if key and (key == bare or key.startswith(prefix)):
            meta[key[len(prefix):]] = meta.pop(key)
