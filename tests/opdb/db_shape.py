"""Shape operators: cat/stack family, splits, flips, repeats, triangles, diagonals, grids."""
import warnings

import numpy as np

from .core import ALL_NUMERIC, COMPLEX, FLOATS, OpInfo, SampleInput, make

D = ALL_NUMERIC
DC = FLOATS + COMPLEX + ("int64", "bool", "float16", "bfloat16")


def _one(*shapes, noncontig=False):
    """Samples of one tensor of each shape."""
    def gen(dtype, rng):
        for s in shapes:
            yield SampleInput((make(s, dtype, rng),), name=str(s))
        if noncontig:
            yield SampleInput((make((3, 4), dtype, rng, noncontig=True),), name="noncontig")
    return gen


def _cat_samples(dtype, rng):
    yield SampleInput(([make((2, 3), dtype, rng), make((4, 3), dtype, rng)],), name="dim0")
    yield SampleInput(([make((2, 3), dtype, rng), make((2, 1), dtype, rng, noncontig=True),
                        make((2, 0), dtype, rng)], -1), name="dim-1-noncontig-empty")
    yield SampleInput(([make((2, 3), dtype, rng), make((0,), dtype, rng)], 1), name="legacy-empty")
    yield SampleInput(([make((3,), dtype, rng)],), name="single")
    yield SampleInput(([make((2, 3), dtype, rng), make((1, 3), "float64", rng)],),
                      name="promote", grad_args=(0,))
    yield SampleInput(([make((2, 3), dtype, rng), make((1, 3), "int8", rng)],), name="promote-int")


def _cat_errors(rng):
    yield SampleInput(([],)), ValueError
    yield SampleInput(([make((), "float32", rng)],)), RuntimeError
    yield SampleInput(([make((2, 3), "float32", rng), make((3,), "float32", rng)],)), RuntimeError
    yield SampleInput(([make((2, 3), "float32", rng), make((2, 2), "float32", rng)],)), \
        RuntimeError
    yield SampleInput(([make((2, 3), "float32", rng)], 2)), IndexError


def _stack_samples(dtype, rng):
    yield SampleInput(([make((2, 3), dtype, rng), make((2, 3), dtype, rng, noncontig=True)],),
                      name="dim0")
    yield SampleInput(([make((2, 3), dtype, rng)] * 3, -1), name="dim-1-same")
    yield SampleInput(([make((), dtype, rng), make((), dtype, rng)], 0), name="0d")
    yield SampleInput(([make((2,), dtype, rng), make((2,), "float64", rng)], 1), name="promote",
                      grad_args=(0,))


def _stack_errors(rng):
    yield SampleInput(([make((2, 3), "float32", rng), make((3,), "float32", rng)],)), RuntimeError
    yield SampleInput(([make((2, 3), "float32", rng)], 3)), IndexError


def _xstack_samples(dtype, rng):
    yield SampleInput(([make((3,), dtype, rng), make((2,), dtype, rng)],), name="1d")
    yield SampleInput(([make((2, 3), dtype, rng), make((2, 3), dtype, rng)],), name="2d")
    yield SampleInput(([make((), dtype, rng), make((), dtype, rng)],), name="0d")
    yield SampleInput(([make((2, 2, 3), dtype, rng), make((2, 2, 3), dtype, rng)],), name="3d")


def _col_samples(dtype, rng):
    yield SampleInput(([make((3,), dtype, rng), make((3, 2), dtype, rng), make((3,), dtype, rng)],),
                      name="mixed")
    yield SampleInput(([make((), dtype, rng), make((1,), dtype, rng)],), name="0d")


def _split_samples(dtype, rng):
    x = make((7, 4), dtype, rng)
    yield SampleInput((x, 3), name="int")
    yield SampleInput((x, (1, 4, 2)), name="sizes")
    yield SampleInput((x, 2, -1), name="dim-1")
    yield SampleInput((x, 10), name="bigger")
    yield SampleInput((make((0, 3), dtype, rng), 2), name="empty")


def _tensor_split_samples(dtype, rng):
    x = make((7, 4), dtype, rng)
    yield SampleInput((x, 3), name="sections")
    yield SampleInput((x, (1, 5)), name="indices")
    yield SampleInput((x, (2, -2, 9), 0), name="neg-big-indices")
    yield SampleInput((x, np.array([1, 3]), 1), name="tensor-indices")
    yield SampleInput((x, np.array(2), 1), name="tensor-sections")
    yield SampleInput((x, 10), name="more-sections")


def _dir_split_samples(dtype, rng):
    yield SampleInput((make((4, 6, 2), dtype, rng), 2), name="sections")
    yield SampleInput((make((4, 6, 2), dtype, rng), (1, 3)), name="indices")


def _chunk_samples(dtype, rng):
    x = make((7, 4), dtype, rng)
    yield SampleInput((x, 3), name="3")
    yield SampleInput((x, 2, 1), name="dim1")
    yield SampleInput((x, 10), name="more")
    yield SampleInput((make((0, 2), dtype, rng), 3), name="empty")


def _unbind_samples(dtype, rng):
    yield SampleInput((make((3, 4), dtype, rng), 1), name="dim1")
    yield SampleInput((make((2, 3, 4), dtype, rng, noncontig=True),), name="noncontig")
    yield SampleInput((make((0, 3), dtype, rng),), name="empty")


def _narrow_samples(dtype, rng):
    x = make((5, 4), dtype, rng)
    yield SampleInput((x, 0, 1, 3), name="dim0")
    yield SampleInput((x, -1, -3, 2), name="neg")
    yield SampleInput((x, 1, 4, 0), name="len0")


def _narrow_errors(rng):
    x = make((5, 4), "float32", rng)
    yield SampleInput((x, 0, 3, 3)), RuntimeError
    yield SampleInput((x, 2, 0, 1)), IndexError


def _select_samples(dtype, rng):
    x = make((5, 4), dtype, rng)
    yield SampleInput((x, 0, 1), name="dim0")
    yield SampleInput((x, -1, -2), name="neg")
    yield SampleInput((make((3, 4), dtype, rng, noncontig=True), 1, 3), name="noncontig")


def _select_errors(rng):
    yield SampleInput((make((5, 4), "float32", rng), 0, 5)), IndexError
    yield SampleInput((make((5, 4), "float32", rng), 2, 0)), IndexError


def _flip_samples(dtype, rng):
    x = make((3, 4, 2), dtype, rng)
    yield SampleInput((x, (0,)), name="dim0")
    yield SampleInput((x, (0, -1)), name="two")
    yield SampleInput((x, ()), name="none")
    yield SampleInput((make((), dtype, rng), ()), name="0d")


def _roll_samples(dtype, rng):
    x = make((3, 4), dtype, rng)
    yield SampleInput((x, 2), name="flat")
    yield SampleInput((x, 1, 0), name="dim0")
    yield SampleInput((x, (-1, 5), (0, 1)), name="two")
    yield SampleInput((make((0, 3), dtype, rng), 1, 1), name="empty")


def _rot90_samples(dtype, rng):
    x = make((3, 4, 2), dtype, rng)
    for k in (0, 1, 2, 3, -1, 5):
        yield SampleInput((x, k), name=f"k{k}")
    yield SampleInput((x, 1, (2, 0)), name="dims")


def _rot90_errors(rng):
    x = make((3, 4), "float32", rng)
    yield SampleInput((x, 1, (0,))), RuntimeError
    yield SampleInput((x, 1, (1, 1))), RuntimeError
    yield SampleInput((make((3,), "float32", rng), 1)), RuntimeError


def _repeat_samples(dtype, rng):
    x = make((2, 3), dtype, rng)
    yield SampleInput((x, 2, 1), name="same-rank")
    yield SampleInput((x, 2, 1, 3), name="more-dims")
    yield SampleInput((x, 0, 1), name="zero")
    yield SampleInput((make((), dtype, rng), 3), name="0d")


def _tile_samples(dtype, rng):
    x = make((2, 3), dtype, rng)
    yield SampleInput((x, (2,)), name="fewer")
    yield SampleInput((x, (2, 1, 2)), name="more")


def _ri_samples(dtype, rng):
    x = make((3, 2), dtype, rng)
    yield SampleInput((x, 2), name="int-flat")
    yield SampleInput((x, 2, 1), name="int-dim")
    yield SampleInput((x, np.array([1, 0, 3]), 0), name="tensor")
    yield SampleInput((x, np.array([2]), -1), name="tensor-1")
    yield SampleInput((x, np.array([1, 2, 0]), 0), {"output_size": 3}, name="output-size")
    yield SampleInput((make((), dtype, rng), 3), name="0d")


def _tri_samples(dtype, rng):
    x = make((4, 5), dtype, rng)
    yield SampleInput((x,), name="default")
    yield SampleInput((x, 1), name="k1")
    yield SampleInput((make((2, 3, 3), dtype, rng, noncontig=True), -1), name="batched")
    yield SampleInput((x, -10), name="far")


def _diag_samples(dtype, rng):
    yield SampleInput((make((3,), dtype, rng),), name="1d")
    yield SampleInput((make((3,), dtype, rng), -2), name="1d-neg")
    yield SampleInput((make((3, 4), dtype, rng), 1), name="2d")
    yield SampleInput((make((3, 4), dtype, rng, noncontig=True), -1), name="2d-noncontig")


def _diagonal_samples(dtype, rng):
    x = make((3, 4, 5), dtype, rng)
    yield SampleInput((x,), name="default")
    yield SampleInput((x, 1, 2, 0), name="dims")
    yield SampleInput((x, -2, -1, 1), name="neg")
    yield SampleInput((x, 9), name="empty")


def _diag_embed_samples(dtype, rng):
    yield SampleInput((make((2, 3), dtype, rng),), name="default")
    yield SampleInput((make((2, 3), dtype, rng), 1, 0, 2), name="dims")
    yield SampleInput((make((3,), dtype, rng), -1), name="neg")


def _trace_samples(dtype, rng):
    yield SampleInput((make((3, 4), dtype, rng),), name="rect")
    yield SampleInput((make((3, 3), dtype, rng, noncontig=True),), name="noncontig")


def _meshgrid(lib, *ts, indexing="ij"):
    return lib.meshgrid(*ts, indexing=indexing)


def _mesh_samples(dtype, rng):
    yield SampleInput((make((3,), dtype, rng), make((2,), dtype, rng)), name="ij")
    yield SampleInput((make((3,), dtype, rng), make((2,), dtype, rng), make((4,), dtype, rng)),
                      {"indexing": "xy"}, name="xy")
    yield SampleInput((make((), dtype, rng), make((2,), dtype, rng)), name="0d")


def _cart_samples(dtype, rng):
    yield SampleInput((make((3,), dtype, rng), make((2,), dtype, rng)), name="two")
    yield SampleInput((make((3,), dtype, rng),), name="one")


def _comb_samples(dtype, rng):
    x = make((4,), dtype, rng)
    yield SampleInput((x,), name="default")
    yield SampleInput((x, 3), name="r3")
    yield SampleInput((x, 2, True), name="replacement")
    yield SampleInput((x, 0), name="r0")
    yield SampleInput((x, 5), name="r-big")


def _btensors_samples(dtype, rng):
    yield SampleInput((make((3, 1), dtype, rng), make((4,), dtype, rng), make((), dtype, rng)),
                      name="three")
    yield SampleInput((make((), dtype, rng), make((), dtype, rng)), name="0-dim")
    yield SampleInput((make((), dtype, rng),), name="one 0-dim")


def _atleast_samples(dtype, rng):
    for s in ((), (3,), (2, 3), (2, 3, 4)):
        yield SampleInput((make(s, dtype, rng),), name=str(s))
    yield SampleInput((make((), dtype, rng), make((2,), dtype, rng)), name="several")


def _unfold_samples(dtype, rng):
    x = make((5, 7), dtype, rng)
    yield SampleInput((x, 1, 3, 2), name="step2")
    yield SampleInput((x, 0, 2, 1), name="overlap")
    yield SampleInput((x, -1, 7, 3), name="whole")
    yield SampleInput((make((), dtype, rng), 0, 1, 1), name="0d")


def _as_strided_samples(dtype, rng):
    x = make((4, 5), dtype, rng)
    yield SampleInput((x, (3, 3), (5, 1)), name="window")
    yield SampleInput((x, (2, 2), (1, 2), 3), name="offset")
    yield SampleInput((x, (3, 2), (1, 1)), name="overlap")


def _squeeze_samples(dtype, rng):
    x = make((1, 3, 1, 2), dtype, rng)
    yield SampleInput((x, (0, 2)), name="tuple")
    yield SampleInput((x, (1, -2)), name="tuple-non1")
    yield SampleInput((x,), name="all")


def _bshapes(lib, *shapes):
    return lib.zeros(lib.broadcast_shapes(*shapes))


def _bshapes_samples(dtype, rng):
    yield SampleInput(((3, 1), (4,), 2 if False else (1, 1, 1)), name="mixed")
    yield SampleInput((5, (1,)), name="int")


def _bshapes_errors(rng):
    yield SampleInput(((3,), (4,))), RuntimeError


def _fliplr_errors(rng):
    yield SampleInput((make((3,), "float32", rng),)), RuntimeError


def _meshgrid_warn(lib, a, b):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = lib.meshgrid(a, b)
    # torch warns once per process, ember every time
    assert lib.__name__ != "ember" or any("indexing" in str(x.message) for x in w)
    return r


OPS = [
    OpInfo("cat", samples=_cat_samples, dtypes=DC, errors=_cat_errors),
    OpInfo("concat", samples=_cat_samples, dtypes=FLOATS),
    OpInfo("cat_out", fn=lambda lib, ts, *a: lib.cat(ts, *a, out=lib.empty(0, dtype=ts[0].dtype)),
           samples=_cat_samples, dtypes=("float32", "int64"), grad=False),
    OpInfo("stack", samples=_stack_samples, dtypes=DC, errors=_stack_errors),
    OpInfo("hstack", samples=_xstack_samples, dtypes=FLOATS + ("int64",)),
    OpInfo("vstack", samples=_xstack_samples, dtypes=FLOATS + ("int64",)),
    OpInfo("row_stack", samples=_xstack_samples, dtypes=FLOATS),
    OpInfo("dstack", samples=_xstack_samples, dtypes=FLOATS + ("int64",)),
    OpInfo("column_stack", samples=_col_samples, dtypes=FLOATS + ("int64",)),
    OpInfo("split", samples=_split_samples, dtypes=D),
    OpInfo("Tensor.split", samples=_split_samples, dtypes=FLOATS),
    OpInfo("tensor_split", samples=_tensor_split_samples, dtypes=FLOATS + ("int64",)),
    OpInfo("hsplit", samples=_dir_split_samples, dtypes=FLOATS),
    OpInfo("vsplit", samples=_dir_split_samples, dtypes=FLOATS),
    OpInfo("dsplit", samples=_dir_split_samples, dtypes=FLOATS),
    OpInfo("chunk", samples=_chunk_samples, dtypes=FLOATS + ("int64", "bool")),
    OpInfo("unbind", samples=_unbind_samples, dtypes=FLOATS + ("int64",)),
    OpInfo("narrow", samples=_narrow_samples, dtypes=DC, errors=_narrow_errors),
    OpInfo("select", samples=_select_samples, dtypes=DC, errors=_select_errors),
    OpInfo("flip", samples=_flip_samples, dtypes=DC),
    OpInfo("fliplr", samples=_one((3, 4), (2, 3, 4), noncontig=True), dtypes=FLOATS + ("int64",),
           errors=_fliplr_errors),
    OpInfo("flipud", samples=_one((3,), (3, 4), noncontig=True), dtypes=FLOATS + ("int64",)),
    OpInfo("roll", samples=_roll_samples, dtypes=DC),
    OpInfo("rot90", samples=_rot90_samples, dtypes=FLOATS + ("int64",), errors=_rot90_errors),
    OpInfo("Tensor.repeat", samples=_repeat_samples, dtypes=DC),
    OpInfo("tile", samples=_tile_samples, dtypes=FLOATS + ("int64",)),
    OpInfo("repeat_interleave", samples=_ri_samples, dtypes=DC),
    OpInfo("repeat_interleave_counts", fn=lambda lib: lib.repeat_interleave(
        lib.tensor([2, 0, 3])), samples=lambda dt, rng: iter([SampleInput(())]),
        dtypes=("int64",), grad=False),
    OpInfo("tril", samples=_tri_samples, dtypes=DC),
    OpInfo("triu", samples=_tri_samples, dtypes=DC),
    OpInfo("tril_", fn=lambda lib, x, *a: x.clone().tril_(*a), samples=_tri_samples,
           dtypes=FLOATS + ("int64",)),
    OpInfo("triu_", fn=lambda lib, x, *a: x.clone().triu_(*a), samples=_tri_samples,
           dtypes=FLOATS),
    OpInfo("diag", samples=_diag_samples, dtypes=DC),
    OpInfo("diagonal", samples=_diagonal_samples, dtypes=DC),
    OpInfo("diag_embed", samples=_diag_embed_samples, dtypes=DC),
    OpInfo("diagflat", samples=lambda dt, rng: iter([
        SampleInput((make((2, 2), dt, rng),), name="2d"),
        SampleInput((make((3,), dt, rng), 1), name="offset")]), dtypes=FLOATS + ("int64",)),
    OpInfo("trace", samples=_trace_samples, dtypes=FLOATS + ("int64", "int8"),
           errors=lambda rng: iter([(SampleInput((make((2, 2), "bool", rng),)),
                                     NotImplementedError),
                                    (SampleInput((make((2, 2, 2), "float32", rng),)),
                                     RuntimeError)])),
    OpInfo("meshgrid", fn=_meshgrid, samples=_mesh_samples, dtypes=FLOATS + ("int64",)),
    OpInfo("meshgrid_default", fn=_meshgrid_warn, samples=lambda dt, rng: iter([SampleInput(
        (make((3,), dt, rng), make((2,), dt, rng)))]), dtypes=FLOATS),
    OpInfo("cartesian_prod", samples=_cart_samples, dtypes=FLOATS + ("int64",)),
    OpInfo("combinations", samples=_comb_samples, dtypes=FLOATS + ("int64", "bool")),
    OpInfo("broadcast_tensors", samples=_btensors_samples, dtypes=FLOATS + ("int64",)),
    OpInfo("broadcast_shapes", fn=_bshapes, samples=_bshapes_samples, dtypes=("float32",),
           grad=False, errors=_bshapes_errors),
    OpInfo("atleast_1d", samples=_atleast_samples, dtypes=FLOATS + ("int64",)),
    OpInfo("atleast_2d", samples=_atleast_samples, dtypes=FLOATS + ("int64",)),
    OpInfo("atleast_3d", samples=_atleast_samples, dtypes=FLOATS + ("int64",)),
    OpInfo("Tensor.unfold", samples=_unfold_samples, dtypes=DC),
    OpInfo("as_strided", samples=_as_strided_samples, dtypes=FLOATS + ("int64",)),
    OpInfo("squeeze_dims", fn="squeeze", samples=_squeeze_samples, dtypes=FLOATS + ("bool",)),
]



_VIEW_TARGETS = {"float32": ("int32", "uint8"), "float64": ("int64", "uint8")}


def _view_dtype_samples(dtype, rng):
    same, other = _VIEW_TARGETS[dtype]
    yield SampleInput((make((3, 4), dtype, rng),), dict(target=same), name="same-itemsize")
    yield SampleInput((make((2, 5), dtype, rng),), dict(target=other), name="to-bytes")


def _view_dtype(lib, x, target):
    return x.view(getattr(lib, target))


OPS.append(OpInfo("Tensor.view-dtype", fn=_view_dtype, samples=_view_dtype_samples,
                  dtypes=FLOATS, grad=False, gradcheck=False))
