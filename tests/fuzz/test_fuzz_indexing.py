"""Differential fuzzing of ``t[index]`` and ``t[index] = value`` against torch: ints,
slices with steps, None, Ellipsis, Python bools, bool masks, integer index tensors of
several dtypes, lists and 0-dim tensors, over every dtype, empty and 0-dim shapes and
non-contiguous layouts; values are scalars (including ones that overflow the
destination dtype) or tensors of other dtypes."""
from hypothesis import given, strategies as st

from fuzz_settings import fuzz_settings
from fuzz_core import DTYPES, Stats, run_both, with_layout
from fuzz_strategies import arrays, build_index, index_items, layouts, shapes, special_values

GET_BUDGET = 3000
SET_BUDGET = 2000

GET_STATS = Stats("getitem")
SET_STATS = Stats("setitem")


@st.composite
def _target(draw):
    dtype = draw(st.sampled_from(DTYPES))
    shape = draw(shapes(0, 4, 0, 4))
    arr = draw(arrays(dtype, shape))
    return dtype, shape, arr, draw(layouts())


@fuzz_settings(GET_BUDGET)
@given(_target(), st.data())
def _fuzz_get(target, data):
    dtype, shape, arr, layout = target
    items = data.draw(index_items(shape))

    def call(lib):
        return with_layout(lib, arr, layout)[build_index(lib, items)]
    cls, detail = run_both(call)
    GET_STATS.record("getitem", cls, detail, f"{dtype}{list(shape)} {layout} [{items!r}]"[:500])


@st.composite
def _values(draw, dtype):
    kind = draw(st.sampled_from(("int", "float", "special", "bool", "complex", "huge",
                                 "tensor", "tensor")))
    if kind == "int":
        return ("scalar", draw(st.integers(-300, 300)))
    if kind == "float":
        return ("scalar", draw(st.floats(-1e3, 1e3)))
    if kind == "special":
        return ("scalar", draw(st.sampled_from((float("nan"), float("inf"), -float("inf"),
                                                 -0.0, 1e300, 7e4, 3.5e38))))
    if kind == "bool":
        return ("scalar", draw(st.booleans()))
    if kind == "complex":
        return ("scalar", complex(draw(st.integers(-3, 3)), draw(st.sampled_from((0, 1)))))
    if kind == "huge":
        return ("scalar", draw(st.sampled_from((2 ** 31, 2 ** 40, -2 ** 40, 2 ** 63 - 1,
                                                 2 ** 64, 256, -129))))
    vdtype = draw(st.sampled_from((dtype,) * 3 + DTYPES))
    vshape = draw(shapes(0, 2, 0, 3))
    return ("tensor", (draw(arrays(vdtype, vshape, specials=0.0)), vdtype))


@fuzz_settings(SET_BUDGET)
@given(_target(), st.data())
def _fuzz_set(target, data):
    dtype, shape, arr, layout = target
    items = data.draw(index_items(shape))
    value = data.draw(_values(dtype))

    def call(lib):
        t = with_layout(lib, arr, layout)
        v = value[1] if value[0] == "scalar" else with_layout(lib, value[1][0], "contig")
        t[build_index(lib, items)] = v
        return t
    cls, detail = run_both(call)
    SET_STATS.record("setitem", cls, detail,
                     f"{dtype}{list(shape)} {layout} [{items!r}] = {value!r}"[:500])


def test_fuzz_getitem_against_torch():
    _fuzz_get()
    print(GET_STATS.summary())
    assert not GET_STATS.undocumented, GET_STATS.failure_message()


def test_fuzz_setitem_against_torch():
    _fuzz_set()
    print(SET_STATS.summary())
    assert not SET_STATS.undocumented, SET_STATS.failure_message()
