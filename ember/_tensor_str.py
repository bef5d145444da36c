"""``torch._tensor_str``: the print options and the formatting of a tensor's values, for code
that prints tensors its own way (torch_geometric's OFF writer)."""
from ._core.printing import _OPTS, set_printoptions, tensor_body

__all__ = ["PRINT_OPTS", "set_printoptions"]


class _PrintOptions:
    """The current print options as attributes (``PRINT_OPTS.threshold``, ...): a live view
    of what ``set_printoptions`` sets."""

    def __getattr__(self, name):
        try:
            return _OPTS[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name, value):
        if name not in _OPTS:
            raise AttributeError(name)
        _OPTS[name] = value


PRINT_OPTS = _PrintOptions()


def _tensor_str(self, indent):
    """The values of tensor ``self`` as its repr prints them (no ``tensor(`` nor suffixes),
    continuation lines indented by ``indent``."""
    return tensor_body(self, indent)
