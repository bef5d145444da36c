"""DataPipes (``torch.utils.data``'s ``IterDataPipe``/``MapDataPipe``): datasets that chain
by name.  A datapipe class decorated with ``@functional_datapipe("name")`` becomes the method
``name`` of every datapipe of its kind: ``dp.name(*args)`` is ``Cls(dp, *args)``.

Also the decorators and switches around them: ``non_deterministic`` and
``guaranteed_datapipes_determinism`` (refuse non-deterministic pipes when determinism is
required), ``argument_validation``/``runtime_validation`` (type checks of constructor
arguments and of yielded items against annotations that are plain classes) and
``runtime_validation_disabled``, and ``DataChunk`` (a batch that remembers its items).
"""
import functools
import inspect
import typing

from ..dataset import Dataset, IterableDataset

__all__ = ["IterDataPipe", "MapDataPipe", "DFIterDataPipe", "DataChunk", "functional_datapipe",
           "non_deterministic", "guaranteed_datapipes_determinism", "argument_validation",
           "runtime_validation", "runtime_validation_disabled"]

_STATE = {"determinism": False, "runtime_validation": True}


class _PipeBase:
    functions = None  # name -> registered constructor, per kind (set by each subclass)

    @classmethod
    def register_function(cls, function_name, function):
        cls.functions[function_name] = function

    @classmethod
    def register_datapipe_as_function(cls, function_name, cls_to_register):
        if function_name in cls.functions:
            # torch raises a plain Exception here
            raise Exception(f"Unable to add DataPipe function name {function_name} as it is "
                            f"already taken")

        def class_function(source_dp, *args, **kwargs):
            return cls_to_register(source_dp, *args, **kwargs)
        functools.update_wrapper(class_function, cls_to_register, assigned=("__doc__",))
        cls.functions[function_name] = class_function

    def __getattr__(self, name):
        functions = type(self).functions
        if name in functions:
            bound = functools.partial(functions[name], self)
            functools.update_wrapper(bound, functions[name], assigned=("__doc__",))
            return bound
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}")

    def __dir__(self):
        return list(super().__dir__()) + list(type(self).functions)

    def __class_getitem__(cls, item):
        """``IterDataPipe[int]``: the base of a datapipe whose items are ``int`` (its
        ``type``, which `runtime_validation` checks)."""
        return type(f"{cls.__name__}[{getattr(item, '__name__', item)}]", (cls,),
                    {"type": item, "__module__": cls.__module__})

    def __repr__(self):
        return type(self).__qualname__

    def __str__(self):
        return type(self).__qualname__


class IterDataPipe(_PipeBase, IterableDataset):
    """Iterable-style DataPipe: an ``IterableDataset`` whose registered functional forms
    chain it (``dp.map(fn).filter(pred)``)."""
    functions = {}


class MapDataPipe(_PipeBase, Dataset):
    """Map-style DataPipe: a ``Dataset`` (``__getitem__``, ``__len__``) whose registered
    functional forms chain it."""
    functions = {}


class DFIterDataPipe(IterDataPipe):
    """An IterDataPipe of DataFrames."""

    def _is_dfpipe(self):
        return True


class DataChunk(list):
    """A batch produced by a datapipe: a list that keeps the items it was made from."""

    def __init__(self, items):
        items = list(items)
        super().__init__(items)
        self.items = items

    def as_str(self, indent=""):
        return indent + "[" + ", ".join(str(i) for i in iter(self)) + "]"

    def __iter__(self):
        yield from super().__iter__()

    def raw_iterator(self):
        yield from self.items


class functional_datapipe:
    """Register a datapipe class as the functional method ``name`` of its kind of
    datapipe."""

    def __init__(self, name, enable_df_api_tracing=False):
        self.name = name
        self.enable_df_api_tracing = enable_df_api_tracing

    def __call__(self, cls):
        target = cls.cls if isinstance(cls, non_deterministic) else cls
        if isinstance(target, type) and issubclass(target, IterDataPipe):
            IterDataPipe.register_datapipe_as_function(self.name, cls)
        elif isinstance(target, type) and issubclass(target, MapDataPipe):
            MapDataPipe.register_datapipe_as_function(self.name, cls)
        return cls  # anything else is returned unregistered, as torch does


class guaranteed_datapipes_determinism:
    """Inside the block, constructing a datapipe marked ``non_deterministic`` raises."""

    def __init__(self):
        self.prev = _STATE["determinism"]
        _STATE["determinism"] = True

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        _STATE["determinism"] = self.prev


class non_deterministic:
    """Mark an IterDataPipe class as non-deterministic (``@non_deterministic``), or decide
    per instance with a function of the constructor's arguments returning True when the
    instance is non-deterministic (``@non_deterministic(fn)``)."""
    cls = None

    def __init__(self, arg):
        if isinstance(arg, type):
            if not issubclass(arg, IterDataPipe):
                raise TypeError(f"Only `IterDataPipe` can be decorated with `non_deterministic`"
                                f", but {arg.__name__} is found")
            self.cls = arg
        elif callable(arg):
            self.deterministic_fn = arg
        else:
            raise TypeError(f"{arg} can not be decorated by non_deterministic")

    def _refuse(self):
        raise TypeError(f"{self.cls.__name__} is non-deterministic, but you set "
                        f"'guaranteed_datapipes_determinism'. You can turn off determinism for "
                        f"this DataPipe if that is acceptable for your application")

    def __call__(self, *args, **kwargs):
        if self.cls is not None:
            if _STATE["determinism"]:
                self._refuse()
            return self.cls(*args, **kwargs)
        if not (isinstance(args[0], type) and issubclass(args[0], IterDataPipe)):
            raise TypeError(f"Only `IterDataPipe` can be decorated, but {args[0].__name__} is "
                            f"found")
        self.cls = args[0]
        return self.deterministic_wrapper_fn

    def deterministic_wrapper_fn(self, *args, **kwargs):
        res = self.deterministic_fn(*args, **kwargs)
        if not isinstance(res, bool):
            raise TypeError(f"deterministic_fn of `non_deterministic` decorator is required to "
                            f"return a boolean value, but {type(res)} is found")
        if _STATE["determinism"] and res:
            self._refuse()
        return self.cls(*args, **kwargs)


def _plain(hint):
    """The class an annotation names when it is a plain class (others are not checked)."""
    return hint if isinstance(hint, type) and typing.get_origin(hint) is None else None


def argument_validation(f):
    """Decorator for a datapipe's ``__init__``: arguments annotated with a DataPipe class
    must be instances of it."""
    signature = inspect.signature(f)
    hints = typing.get_type_hints(f)

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        for name, value in bound.arguments.items():
            cls = _plain(hints.get(name))
            if cls is not None and issubclass(cls, (IterDataPipe, MapDataPipe)) and \
                    not isinstance(value, cls):
                raise TypeError(f"Expected argument '{name}' as a {cls.__name__}, but found "
                                f"{type(value)}")
        return f(*args, **kwargs)
    return wrapper


class runtime_validation_disabled:
    """Inside the block, `runtime_validation` checks nothing."""

    def __init__(self):
        self.prev = _STATE["runtime_validation"]
        _STATE["runtime_validation"] = False

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        _STATE["runtime_validation"] = self.prev


def runtime_validation(f):
    """Decorator for a datapipe's ``__iter__``: each item it yields must be an instance of
    the datapipe's item type (``class Ints(IterDataPipe[int])``, else the iterator's
    annotated element type), when that is a plain class."""
    if f.__name__ != "__iter__":
        raise TypeError(f"Can not decorate function {f.__name__} with 'runtime_validation'")
    args = typing.get_args(typing.get_type_hints(f).get("return"))
    annotated = args[0] if args else None

    @functools.wraps(f)
    def wrapper(self):
        item = _plain(getattr(type(self), "type", annotated))
        if not _STATE["runtime_validation"] or item is None:
            yield from f(self)
            return
        for x in f(self):
            if not isinstance(x, item):
                raise RuntimeError(f"Expected an instance as subtype of {item.__name__}, but "
                                   f"found {x}({type(x)})")
            yield x
    return wrapper
