"""The markers and annotations of TorchScript code: ``export``, ``ignore``, ``unused``,
``annotate``, ``Final``.

The decorators mark a method (``fn._torchscript_modifier``, torch's attribute) and return
it unchanged, so the module keeps working as Python; ``jit.script`` reads the mark (see
``ember.jit._script``).
"""
import collections
import enum
import typing

__all__ = ["Attribute", "FunctionModifiers", "export", "ignore", "unused", "annotate", "Final",
           "get_modifier"]

Final = typing.Final

# ``self.x = jit.Attribute(value, type)`` in a module's ``__init__``: the value with its
# TorchScript type; a scripted module holds the value itself (torch.jit.Attribute)
Attribute = collections.namedtuple("Attribute", ["value", "type"])


class FunctionModifiers(enum.Enum):
    """How ``jit.script`` treats a marked function (torch's names)."""
    UNUSED = "unused (ignored and replaced with raising of an exception)"
    IGNORE = "ignore (leave as a call to Python, cannot be torch.jit.save'd)"
    EXPORT = "export (compile this function even if nothing calls it)"
    DEFAULT = "default (compile if called from a exported function / forward)"
    COPY_TO_SCRIPT_WRAPPER = ("if this method is not scripted, copy the python method onto the "
                              "scripted model")
    _DROP = "_drop (function is fully ignored, declaration can be unscriptable)"
    IGNORE_DROP = "ignore with drop=True (like unused)"


def get_modifier(fn):
    return getattr(fn, "_torchscript_modifier", None)


def export(fn):
    """Compile this method of a module too (not only ``forward`` and what it calls), so it
    is a method of the scripted module and of its saved program::

        class M(nn.Module):
            @ember.jit.export
            def encode(self, x):
                return self.fc(x)
    """
    fn._torchscript_modifier = FunctionModifiers.EXPORT
    return fn


def unused(fn):
    """Leave this method out of the scripted module: calling it there raises.  The Python
    module is unchanged."""
    if isinstance(fn, property):
        fget = fn.fget
        fget._torchscript_modifier = FunctionModifiers.UNUSED
        return fn
    fn._torchscript_modifier = FunctionModifiers.UNUSED
    return fn


def ignore(drop=False, **kwargs):
    """Leave this function as Python: it is not checked or rewritten, and a scripted
    module calls it as Python.  ``@ignore(drop=True)`` is ``@unused``."""
    if callable(drop):  # used as @ignore without arguments
        drop._torchscript_modifier = FunctionModifiers.IGNORE
        return drop
    if not isinstance(drop, bool):
        raise RuntimeError(f"Argument to @torch.jit.ignore must be a bool or a function but "
                           f"got {drop}")
    drop_on_export = kwargs.pop("drop_on_export", None)
    if kwargs:
        raise TypeError(f"ignore() got unexpected keyword arguments {sorted(kwargs)}")
    if drop_on_export is not None:
        drop = drop or bool(drop_on_export)

    def decorator(fn):
        fn._torchscript_modifier = FunctionModifiers.IGNORE_DROP if drop else \
            FunctionModifiers.IGNORE
        return fn
    return decorator


def annotate(the_type, the_value):
    """Give ``the_value`` the TorchScript type ``the_type`` (``jit.annotate(List[int], [])``):
    returns ``the_value``, as torch does in Python."""
    return the_value
