"""Names torch.nn.functional's module namespace carries besides its functions, which
programs import from it: the ``__torch_function__`` helpers, the ``BroadcastingList*``
annotations (an int or a list of ints), ``boolean_dispatch`` and ``assert_int_or_pair``."""
from ..._core.tensor import Tensor
from ...overrides import (handle_torch_function, has_torch_function,
                          has_torch_function_unary, has_torch_function_variadic)

__all__ = ["Tensor", "handle_torch_function", "has_torch_function", "has_torch_function_unary",
           "has_torch_function_variadic", "BroadcastingList1", "BroadcastingList2",
           "BroadcastingList3", "boolean_dispatch", "assert_int_or_pair"]


class _BroadcastingList:
    """``BroadcastingListN[T]``: the annotation of an argument given as one T or N of them
    (it names no type at run time, as in torch)."""

    def __getitem__(self, types):
        return None


BroadcastingList1 = _BroadcastingList()
BroadcastingList2 = _BroadcastingList()
BroadcastingList3 = _BroadcastingList()


def assert_int_or_pair(arg, arg_name, message):
    """Raise AssertionError with ``message.format(arg_name)`` unless ``arg`` is an int or a
    pair."""
    if not (isinstance(arg, int) or len(arg) == 2):
        raise AssertionError(message.format(arg_name))


def boolean_dispatch(arg_name, arg_index, default, if_true, if_false, module_name, func_name):
    """A function calling ``if_true`` or ``if_false`` by the boolean argument ``arg_name``
    (keyword, or positional at ``arg_index``; ``default`` when absent).  At most one of the
    two may have a docstring; the result takes it."""
    def fn(*args, **kwargs):
        flag = kwargs[arg_name] if arg_name in kwargs else \
            (args[arg_index] if arg_index < len(args) else default)
        return if_true(*args, **kwargs) if flag else if_false(*args, **kwargs)
    docs = [f.__doc__ for f in (if_true, if_false) if f.__doc__ is not None]
    if len(docs) == 2:
        raise RuntimeError("only one function can have a docstring")
    fn.__doc__ = docs[0] if docs else None
    for f in (if_true, if_false):
        f.__doc__ = fn.__doc__
    if module_name is not None:
        fn.__module__ = module_name
    if func_name is not None:
        fn.__name__ = func_name
    return fn
