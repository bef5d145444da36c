"""OpInfos of the factories that take sizes and ranges rather than tensors: ``range``,
``linspace``, ``logspace`` and ``empty_strided`` (its values are unspecified, so the record
fills it and checks shape, strides and values)."""
import warnings

from .core import OpInfo, SampleInput


def _range_fn(lib, start, end, step, **kw):
    with warnings.catch_warnings():  # deprecated in torch (and so in ember): still an operator
        warnings.simplefilter("ignore", UserWarning)
        return lib.range(start, end, step, **_dtype_kw(lib, kw))


def _ranges(dtype, rng):
    yield SampleInput((0, 5, 0.5), name="float-step")
    yield SampleInput((-2.0, 3.0, 1.25), name="negative-start")
    yield SampleInput((1, 4, 1), name="ints")
    yield SampleInput((5, 0, -2), {"dtype": _Dtype("int64")}, name="down-int64")


class _Dtype:
    """A dtype argument named for whichever library the record is called with."""

    def __init__(self, name):
        self.name = name


def _dtype_kw(lib, kw):
    return {k: getattr(lib, v.name) if isinstance(v, _Dtype) else v for k, v in kw.items()}


def _factory(name):
    def fn(lib, *args, **kw):
        return getattr(lib, name)(*args, **_dtype_kw(lib, kw))
    return fn


def _linspaces(dtype, rng):
    yield SampleInput((0, 1, 7), name="unit")
    yield SampleInput((-3.5, 2.0, 1), name="one-step")
    yield SampleInput((2, -4, 0), name="empty")
    yield SampleInput((0, 10, 6), {"dtype": _Dtype("int64")}, name="int64")
    yield SampleInput((1.0, -1.0, 5), {"dtype": _Dtype("float64")}, name="float64-down")


def _logspaces(dtype, rng):
    yield SampleInput((0, 2, 5), name="base10")
    yield SampleInput((-1.0, 1.0, 4), {"base": 2.0}, name="base2")
    yield SampleInput((1, 3, 3), {"dtype": _Dtype("float64")}, name="float64")


def _empty_strided(lib, size, stride, **kw):
    t = lib.empty_strided(size, stride, **_dtype_kw(lib, kw))
    return t.fill_(1.5), t.stride(), t.is_contiguous()


def _strides(dtype, rng):
    yield SampleInput(((2, 3), (3, 1)), name="contiguous")
    yield SampleInput(((2, 3), (1, 2)), name="transposed")
    yield SampleInput(((4, 2, 3), (6, 1, 2)), {"dtype": _Dtype("float64")}, name="3d")
    yield SampleInput(((0, 5), (5, 1)), name="empty")


OPS = [
    OpInfo("range", fn=_range_fn, samples=_ranges, grad=False,
           dtypes=("float32",)),
    OpInfo("linspace", fn=_factory("linspace"), samples=_linspaces, grad=False,
           dtypes=("float32",)),
    OpInfo("logspace", fn=_factory("logspace"), samples=_logspaces, grad=False,
           dtypes=("float32",)),
    OpInfo("empty_strided", fn=_empty_strided, samples=_strides, grad=False,
           dtypes=("float32",)),
]
