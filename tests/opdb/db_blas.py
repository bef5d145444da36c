"""OpInfos of the linear-algebra basics: matmul family, einsum, tensordot, kron, cross, cdist."""
import warnings

from .core import COMPLEX, FLOATS, HALVES, INTS, OpInfo, SampleInput, make

NUM = FLOATS + COMPLEX
NUM_INT = FLOATS + COMPLEX + INTS
# float32 products of ~10 terms of magnitude ~9 carry ~1e-5 absolute error
TOL = dict(atol=1e-4, rtol=1e-5)


def _pairs(*shape_pairs, noncontig=()):
    def gen(dtype, rng):
        for i, (sa, sb) in enumerate(shape_pairs):
            nc = i in noncontig
            yield SampleInput((make(sa, dtype, rng, noncontig=nc), make(sb, dtype, rng,
                                                                         noncontig=nc)),
                              name=f"{sa}x{sb}{'-nc' if nc else ''}")
    return gen


def _err(*cases):
    """errors(rng): each case is (shapes, dtypes, kwargs, exception)."""
    def gen(rng):
        for shapes, dts, kw, exc in cases:
            yield SampleInput(tuple(make(s, d, rng) for s, d in zip(shapes, dts)), kw), exc
    return gen


F, D, L = "float32", "float64", "int64"
MATMUL_SHAPES = [((4,), (4,)), ((3, 4), (4,)), ((4,), (4, 5)), ((4,), (2, 4, 5)),
                 ((2, 3, 4), (4,)), ((3, 4), (4, 5)), ((2, 1, 3, 4), (3, 4, 5)),
                 ((2, 3, 4), (4, 5)), ((3, 4), (2, 4, 5)), ((2, 3, 4), (2, 4, 5)),
                 ((0, 4), (4, 5)), ((3, 0), (0, 5)), ((2, 3, 4), (4, 5))]
MATMUL_ERRORS = _err((((2, 3), (4, 5)), (F, F), {}, RuntimeError),
                     (((3,), (4,)), (F, F), {}, RuntimeError),
                     (((2, 3), (4,)), (F, F), {}, RuntimeError),
                     (((2, 2, 3), (3, 4, 5)), (F, F), {}, RuntimeError),
                     (((2, 2, 3), (2, 4, 5)), (F, F), {}, RuntimeError),
                     (((), (3,)), (F, F), {}, RuntimeError),
                     (((2, 3), (3, 4)), (F, D), {}, RuntimeError),
                     (((3,), (3,)), (F, D), {}, RuntimeError),
                     (((2, 3), (3, 4)), ("int32", L), {}, RuntimeError),
                     (((2, 3), (3, 4)), (F, "complex64"), {}, RuntimeError),
                     (((2, 3), (3, 4)), ("bool", "bool"), {}, NotImplementedError))


def _addmm_samples(kind):
    shapes = {"addmm": ((3, 5), (3, 4), (4, 5), (5,)), "addmv": ((3,), (3, 4), (4,), (1,)),
              "addr": ((3, 4), (3,), (4,), (4,)),
              "baddbmm": ((2, 3, 5), (2, 3, 4), (2, 4, 5), (3, 5)),
              "addbmm": ((3, 5), (2, 3, 4), (2, 4, 5), (1, 5))}[kind]

    def gen(dtype, rng):
        full, m1, m2, bc = shapes
        yield SampleInput((make(full, dtype, rng), make(m1, dtype, rng), make(m2, dtype, rng)),
                          name="plain")
        yield SampleInput((make(bc, dtype, rng), make(m1, dtype, rng), make(m2, dtype, rng)),
                          name="broadcast-input")
        yield SampleInput((make(full, dtype, rng), make(m1, dtype, rng, noncontig=True),
                           make(m2, dtype, rng, noncontig=True)), {"beta": 2, "alpha": 3},
                          name="beta-alpha-nc")
        yield SampleInput((make(full, dtype, rng), make(m1, dtype, rng), make(m2, dtype, rng)),
                          {"beta": 0}, name="beta0")
        if dtype[0] in "fc":
            yield SampleInput((make(full, dtype, rng), make(m1, dtype, rng),
                               make(m2, dtype, rng)), {"beta": 0.5, "alpha": -1.5},
                              name="float-scalars")
    return gen


def _addmm_errors(kind):
    bad = {"addmm": ((3, 5), (3, 4), (3, 5)), "addmv": ((3,), (3, 4), (5,)),
           "addr": ((3, 5), (3,), (4,)), "baddbmm": ((2, 3, 5), (2, 3, 4), (3, 4, 5)),
           "addbmm": ((3, 5), (2, 3, 4), (3, 4, 5))}[kind]
    rank = {"addmm": ((3, 5), (3,), (4, 5)), "addmv": ((3,), (3, 4), (4, 1)),
            "addr": ((3, 4), (3, 1), (4,)), "baddbmm": ((2, 3, 5), (3, 4), (2, 4, 5)),
            "addbmm": ((3, 5), (3, 4), (2, 4, 5))}[kind]
    cases = [(bad, (F, F, F), {}, RuntimeError), (rank, (F, F, F), {}, RuntimeError)]
    if kind != "addr":  # addr promotes mixed dtypes
        sh = {"addmm": ((3, 5), (3, 4), (4, 5)), "addmv": ((3,), (3, 4), (4,)),
              "baddbmm": ((2, 3, 5), (2, 3, 4), (2, 4, 5)),
              "addbmm": ((3, 5), (2, 3, 4), (2, 4, 5))}[kind]
        cases.append((sh, (D, F, F), {}, RuntimeError))
        cases.append((sh, (F, F, D), {}, RuntimeError))
    return _err(*cases)


def _einsum_samples(dtype, rng):
    def m(*s, **kw):
        return make(s, dtype, rng, **kw)
    cases = [
        ("ij,jk->ik", (m(3, 4), m(4, 5))), ("ij,jk", (m(3, 4), m(4, 5))),
        ("bij,bjk->bik", (m(2, 3, 4), m(2, 4, 5, noncontig=True))),
        ("ii", (m(4, 4),)), ("ii->i", (m(4, 4),)), ("iij->j", (m(3, 3, 2),)),
        ("ij->ji", (m(3, 4),)), ("ijk->", (m(2, 3, 4),)), ("i,j->ij", (m(3,), m(4,))),
        ("i,i", (m(4,), m(4,))), ("ij,k->i", (m(3, 4), m(5,))),
        ("...ij,...jk->...ik", (m(2, 1, 3, 4), m(5, 4, 2))), ("...ij->...", (m(2, 3, 4),)),
        ("i j , j k -> i k", (m(2, 3), m(3, 2))), ("ij,ij->ij", (m(1, 3), m(2, 3))),
        ("ab,bc,cd->ad", (m(2, 3), m(3, 4), m(4, 2))), ("Ab,bA->A", (m(3, 2), m(2, 3))),
        ("ij,jk->ik", (m(0, 4), m(4, 5))), ("bn,anm,bm->ba", (m(2, 3), m(4, 3, 5), m(2, 5))),
    ]
    for eq, ops in cases:
        yield SampleInput((eq,) + ops, name=eq)


def _einsum_sublist(lib, a, b):
    return lib.einsum(a, [0, 1], b, [Ellipsis, 1, 2], [0, 2])


def _einsum_list(lib, a, b):
    return lib.einsum("ij,jk->ik", [a, b])


def _einsum_errors(rng):
    a = make((2, 3), F, rng)
    for eq, ops in (("ij,jk", (a, make((4, 4), F, rng))), ("ij,jk->ik", (a,)),
                    ("ij->ii", (a,)), ("ijk->ij", (a,)), ("ij,jk", (a, make((3, 4), D, rng))),
                    ("ij->k", (a,)), ("i$j", (a,)), ("ii", (a,))):
        yield SampleInput((eq,) + ops), RuntimeError


def _tensordot_samples(dtype, rng):
    def m(*s, **kw):
        return make(s, dtype, rng, **kw)
    yield SampleInput((m(2, 3, 4), m(3, 4, 5)), name="default-2")
    yield SampleInput((m(2, 3), m(3, 4)), {"dims": 1}, name="int-1")
    yield SampleInput((m(2, 3), m(4, 5)), {"dims": 0}, name="outer")
    yield SampleInput((m(3, 2, 4, noncontig=True), m(4, 5, 3)), {"dims": ([0, 2], [2, 0])},
                      name="lists")
    yield SampleInput((m(3, 4), m(4, 3)), {"dims": ([-1], [0])}, name="negative")


def _cross_samples(dtype, rng):
    def m(*s, **kw):
        return make(s, dtype, rng, **kw)
    yield SampleInput((m(4, 3), m(4, 3)), {"dim": 1}, name="dim1")
    yield SampleInput((m(3, 2), m(3, 2)), {"dim": 0}, name="dim0")
    yield SampleInput((m(2, 5, 3), m(1, 5, 3, noncontig=True)), {"dim": -1}, name="broadcast")
    yield SampleInput((m(2, 3, 3), m(2, 3, 3)), {"dim": -2}, name="neg-dim")
    yield SampleInput((m(0, 3), m(0, 3)), {"dim": 1}, name="empty")


def _cdist_samples(dtype, rng):
    def m(*s, **kw):
        return make(s, dtype, rng, **kw)
    yield SampleInput((m(4, 3), m(5, 3)), name="p2")
    for p in (0.0, 1.0, 3.0, 0.5, float("inf")):
        yield SampleInput((m(4, 3), m(5, 3)), {"p": p}, name=f"p{p}")
    yield SampleInput((m(2, 4, 3), m(2, 5, 3, noncontig=True)), {"p": 1.0}, name="batched")
    yield SampleInput((m(3, 1, 4, 3), m(2, 5, 3)), name="broadcast-batch")
    yield SampleInput((m(30, 3), m(6, 3)), name="mm-auto")
    yield SampleInput((m(4, 3), m(5, 3)), {"compute_mode": "use_mm_for_euclid_dist"},
                      name="mm-forced")
    yield SampleInput((m(30, 3), m(6, 3)), {"compute_mode": "donot_use_mm_for_euclid_dist"},
                      name="no-mm")
    yield SampleInput((m(0, 3), m(5, 3)), name="empty")


def _kron_samples(dtype, rng):
    def m(*s, **kw):
        return make(s, dtype, rng, **kw)
    yield SampleInput((m(2, 3), m(3, 2)), name="2d")
    yield SampleInput((m(2, 3), m(4,)), name="mixed-ndim")
    yield SampleInput((m(2, 1, 2, noncontig=True), m(3, 2)), name="3d-nc")
    yield SampleInput((m(), m(3,)), name="0d")


def _quiet(fn):
    """Deprecation warnings fire once per process, so which test sees them depends on test
    order; test_blas.py checks the warnings themselves."""
    def call(lib, *args, **kwargs):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(lib, *args, **kwargs)
    return call


OPS = [
    OpInfo("matmul", samples=_pairs(*MATMUL_SHAPES, noncontig=(5, 9)),
           dtypes=NUM_INT + HALVES, errors=MATMUL_ERRORS, **TOL),
    OpInfo("Tensor.matmul", samples=_pairs(((3, 4), (4, 5)), ((2, 3, 4), (4,))),
           dtypes=NUM, **TOL),
    OpInfo("__matmul__", fn=lambda lib, a, b: a @ b, samples=_pairs(*MATMUL_SHAPES[:10]),
           dtypes=NUM, **TOL),
    OpInfo("__rmatmul__", fn=lambda lib, a, b: b.__rmatmul__(a),
           samples=_pairs(((3, 4), (4, 5)), ((4,), (4, 2))), dtypes=FLOATS, **TOL),
    OpInfo("matmul_out", fn=lambda lib, a, b: lib.matmul(a, b, out=lib.empty(0, dtype=a.dtype)),
           samples=_pairs(((3, 4), (4, 5)), ((2, 3, 4), (4,))), dtypes=FLOATS, grad=False, **TOL),
    OpInfo("mm", samples=_pairs(((3, 4), (4, 5)), ((3, 4), (4, 5)), ((0, 2), (2, 3)),
                                noncontig=(1,)), dtypes=NUM_INT,
           errors=_err((((2, 3), (4, 5)), (F, F), {}, RuntimeError),
                       (((3,), (3, 5)), (F, F), {}, RuntimeError),
                       (((2, 2, 3), (3, 5)), (F, F), {}, RuntimeError),
                       (((2, 3), (3, 4)), (F, D), {}, RuntimeError)), **TOL),
    OpInfo("bmm", samples=_pairs(((2, 3, 4), (2, 4, 5)), ((2, 3, 4), (2, 4, 5)),
                                 ((0, 3, 4), (0, 4, 2)), noncontig=(1,)), dtypes=NUM_INT,
           errors=_err((((2, 3), (4, 5)), (F, F), {}, RuntimeError),
                       (((2, 2, 3), (3, 3, 5)), (F, F), {}, RuntimeError),
                       (((2, 2, 3), (2, 4, 5)), (F, F), {}, RuntimeError),
                       (((2, 2, 3), (2, 3, 5)), (F, D), {}, RuntimeError)), **TOL),
    OpInfo("mv", samples=_pairs(((3, 4), (4,)), ((3, 4), (4,)), ((0, 4), (4,)),
                                noncontig=(1,)), dtypes=NUM_INT,
           errors=_err((((2, 3), (4,)), (F, F), {}, RuntimeError),
                       (((2, 3), (3, 1)), (F, F), {}, RuntimeError),
                       (((2, 3), (3,)), (F, D), {}, RuntimeError)), **TOL),
    OpInfo("dot", samples=_pairs(((5,), (5,)), ((5,), (5,)), ((0,), (0,)), noncontig=(1,)),
           dtypes=NUM_INT,
           errors=_err((((3,), (4,)), (F, F), {}, RuntimeError),
                       (((3,), (3,)), (F, D), {}, RuntimeError),
                       (((3, 1), (3,)), (F, F), {}, RuntimeError),
                       (((3,), (3,)), ("bool", "bool"), {}, NotImplementedError)), **TOL),
    OpInfo("vdot", samples=_pairs(((5,), (5,)), ((5,), (5,)), noncontig=(1,)), dtypes=NUM_INT,
           errors=_err((((3,), (4,)), (F, F), {}, RuntimeError),
                       (((3,), (3,)), (F, D), {}, RuntimeError)), **TOL),
    OpInfo("inner", samples=_pairs(((3, 4), (5, 4)), ((4,), (4,)), ((2, 3, 4), (4,)),
                                   ((), (3, 2)), ((2, 4), (3, 2, 4)), noncontig=(0,)),
           dtypes=NUM_INT,
           errors=_err((((2, 3), (4, 4)), (F, F), {}, RuntimeError),
                       (((2, 3), (4, 3)), (F, D), {}, RuntimeError)), **TOL),
    OpInfo("outer", samples=_pairs(((3,), (4,)), ((0,), (2,)), noncontig=(0,)), dtypes=NUM_INT,
           errors=_err((((2, 2), (3,)), (F, F), {}, RuntimeError))),
    OpInfo("ger", samples=_pairs(((3,), (4,))), dtypes=FLOATS),
    OpInfo("addmm", samples=_addmm_samples("addmm"), dtypes=NUM_INT,
           errors=_addmm_errors("addmm"), **TOL),
    OpInfo("addmv", samples=_addmm_samples("addmv"), dtypes=NUM_INT,
           errors=_addmm_errors("addmv"), **TOL),
    OpInfo("addr", samples=_addmm_samples("addr"), dtypes=NUM_INT,
           errors=_addmm_errors("addr"), **TOL),
    OpInfo("baddbmm", samples=_addmm_samples("baddbmm"), dtypes=NUM_INT,
           errors=_addmm_errors("baddbmm"), **TOL),
    OpInfo("addbmm", samples=_addmm_samples("addbmm"), dtypes=NUM_INT,
           errors=_addmm_errors("addbmm"), **TOL),
    OpInfo("Tensor.addmm_", fn=lambda lib, x, a, b, **kw: x.clone().addmm_(a, b, **kw),
           samples=_addmm_samples("addmm"), dtypes=FLOATS, **TOL),
    OpInfo("Tensor.baddbmm_", fn=lambda lib, x, a, b, **kw: x.clone().baddbmm_(a, b, **kw),
           samples=_addmm_samples("baddbmm"), dtypes=FLOATS, **TOL),
    OpInfo("addmm_out", fn=lambda lib, x, a, b, **kw: lib.addmm(x, a, b, out=lib.empty(
        0, dtype=x.dtype), **kw), samples=_addmm_samples("addmm"), dtypes=FLOATS, grad=False,
        **TOL),
    OpInfo("einsum", samples=_einsum_samples, dtypes=NUM_INT, errors=_einsum_errors, **TOL),
    OpInfo("einsum_sublist", fn=_einsum_sublist,
           samples=_pairs(((2, 3), (3, 4)), ((2, 3), (5, 3, 4))), dtypes=NUM, **TOL),
    OpInfo("einsum_list", fn=_einsum_list, samples=_pairs(((2, 3), (3, 4))), dtypes=FLOATS),
    OpInfo("tensordot", samples=_tensordot_samples, dtypes=NUM_INT,
           errors=_err((((2, 3), (4, 4)), (F, F), {"dims": 1}, RuntimeError),
                       (((2, 3), (3, 4)), (F, D), {"dims": 1}, RuntimeError)), **TOL),
    OpInfo("kron", samples=_kron_samples, dtypes=NUM_INT),
    OpInfo("cross", samples=_cross_samples, dtypes=NUM_INT,
           errors=_err((((2, 3), (2, 3)), (F, D), {"dim": 1}, RuntimeError),
                       (((2, 4), (2, 4)), (F, F), {}, RuntimeError),
                       (((2, 3), (3,)), (F, F), {}, RuntimeError),
                       (((3, 2), (3, 2)), (F, F), {"dim": 1}, RuntimeError))),
    OpInfo("cross_default_dim", fn=_quiet(lambda lib, a, b: lib.cross(a, b)),
           samples=_pairs(((4, 3), (4, 3)), ((3, 3), (3, 3))), dtypes=FLOATS),
    OpInfo("cdist", samples=_cdist_samples, dtypes=FLOATS, atol=1e-4, rtol=1e-4,
           grad_atol=1e-6, grad_rtol=1e-6,
           errors=_err((((2, 3), (4, 2)), (F, F), {}, RuntimeError),
                       (((2, 3), (4, 3)), (L, L), {}, RuntimeError),
                       (((2, 3), (4, 3)), (F, D), {}, RuntimeError),
                       (((2, 3), (4, 3)), (F, F), {"p": -1.0}, RuntimeError),
                       (((3,), (4, 3)), (F, F), {}, RuntimeError),
                       (((2, 3), (4, 3)), ("complex64", "complex64"), {}, RuntimeError))),
    OpInfo("chain_matmul", fn=_quiet(lambda lib, *a: lib.chain_matmul(*a)), samples=lambda dtype, rng: iter([SampleInput(
        (make((2, 3), dtype, rng), make((3, 4), dtype, rng), make((4, 2), dtype, rng)),
        name="three")]), dtypes=FLOATS, **TOL),
]
