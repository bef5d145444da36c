"""OpInfos of the nn operators (``torch.nn.functional``): convolutions, pooling,
activations, normalizations, losses, embedding, linear, unfold/fold and pad.

Samples keep spatial sizes small (finite differences and the vmap loop run on them) but
cover strides, padding, dilation, groups, ceil_mode, unbatched inputs and batch-less
reductions; the integer arguments (targets, indices) are the ones the vmap test permutes.
"""
import numpy as np

from .core import OpInfo, SampleInput, make

F32 = "float32"
TOL = dict(atol=1e-5, rtol=1e-4)  # float32 sums of a few dozen products


def _fn(name):
    return f"nn.functional.{name}"


def _err(*cases):
    """errors(rng): each case is (shapes, kwargs, exception), float32 arguments."""
    def gen(rng):
        for shapes, kw, exc in cases:
            yield SampleInput(tuple(make(s, F32, rng) for s in shapes), kw), exc
    return gen


# ---- convolutions ----------------------------------------------------------------------------

# 3-d samples are smaller per dimension than the 1-d/2-d ones (same cases, a quarter to a third
# of the elements): finite differences and double backward run over every element


def _conv(n):
    def gen(dtype, rng):
        sp = (6, 5, 4)[:n] if n < 3 else (5, 4, 3)
        k = (3, 2, 2)[:n]
        yield SampleInput((make((2, 4) + sp, dtype, rng), make((6, 2) + k, dtype, rng),
                           make((6,), dtype, rng)), {"stride": 2, "padding": 1, "groups": 2},
                          name="groups-stride-pad")
        yield SampleInput((make((1, 2) + sp, dtype, rng), make((3, 2) + k, dtype, rng)),
                          {"dilation": 2, "padding": "same"}, name="dilation-same")
        yield SampleInput((make((2,) + sp, dtype, rng), make((3, 2) + k, dtype, rng)),
                          name="unbatched")
        yield SampleInput((make((2, 3) + sp, dtype, rng, noncontig=True),
                           make((4, 3) + k, dtype, rng)), {"padding": "valid"}, name="noncontig")
    return gen


def _conv_t(n):
    def gen(dtype, rng):
        sp = (4, 3, 3)[:n] if n < 3 else (3, 2, 2)
        k = (3, 2, 2)[:n]
        yield SampleInput((make((2, 4) + sp, dtype, rng), make((4, 3) + k, dtype, rng),
                           make((6,), dtype, rng)),
                          {"stride": 2, "padding": 1, "output_padding": 1, "groups": 2},
                          name="groups-stride-outpad")
        yield SampleInput((make((1, 2) + sp, dtype, rng), make((2, 3) + k, dtype, rng)),
                          {"dilation": 2}, name="dilation")
        yield SampleInput((make((2,) + sp, dtype, rng), make((2, 2) + k, dtype, rng)),
                          name="unbatched")
    return gen


def _convolution(dtype, rng):
    """ATen's convolution, every argument given (geometry as tuples: a list argument is a
    list of tensors to the database): plain 1-d/2-d, transposed 2-d/3-d."""
    yield SampleInput((make((2, 4, 7), dtype, rng), make((6, 2, 3), dtype, rng),
                       make((6,), dtype, rng), (2,), (1,), (1,), False, (0,), 2), name="1d-groups")
    yield SampleInput((make((1, 2, 6, 5), dtype, rng), make((3, 2, 2, 3), dtype, rng), None,
                       (1, 2), (0, 1), (2, 1), False, (0, 0), 1), name="2d-dilation")
    yield SampleInput((make((2, 4, 3, 4), dtype, rng), make((4, 3, 3, 2), dtype, rng),
                       make((6,), dtype, rng), (2, 2), (1, 0), (1, 1), True, (1, 0), 2),
                      name="transposed-2d")
    yield SampleInput((make((1, 2, 3, 2, 3), dtype, rng), make((2, 2, 2, 2, 2), dtype, rng),
                       None, (1, 2, 1), (0, 0, 1), (1, 1, 1), True, (0, 1, 0), 1),
                      name="transposed-3d")


CONV_ERRORS = _err((((1, 3, 5, 5), (2, 4, 3, 3)), {}, RuntimeError),
                   (((1, 4, 5, 5), (2, 4, 3, 3)), {"stride": 0}, RuntimeError),
                   (((1, 4, 2, 2), (2, 4, 3, 3)), {}, RuntimeError),
                   (((1, 4, 5, 5), (3, 2, 3, 3)), {"groups": 2}, RuntimeError))


# ---- pooling -----------------------------------------------------------------------------------

def _pool(n, **kw_cases):
    def gen(dtype, rng):
        sp = (7, 6, 5)[:n] if n < 3 else (5, 4, 3)
        for name, kw in kw_cases.items():
            yield SampleInput((make((2, 3) + sp, dtype, rng),), kw, name=name)
        yield SampleInput((make((3,) + sp, dtype, rng),), dict(next(iter(kw_cases.values()))),
                          name="unbatched")
    return gen


MAX_KW = {"k2": {"kernel_size": 2},
          "k3-s2-p1-ceil": {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True},
          "k2-dil2": {"kernel_size": 2, "dilation": 2}}
AVG_KW = {"k2": {"kernel_size": 2},
          "k3-s2-p1-ceil": {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True},
          "exclude-pad": {"kernel_size": 3, "padding": 1, "count_include_pad": False}}


def _adaptive(n, sizes):
    def gen(dtype, rng):
        sp = (7, 6, 5)[:n] if n < 3 else (5, 4, 3)
        for o in sizes:
            yield SampleInput((make((2, 3) + sp, dtype, rng),), {"output_size": o},
                              name=f"out-{o}")
    return gen


def _unpool(n):
    def fn(lib, x, **kw):
        F = lib.nn.functional
        out, idx = getattr(F, f"max_pool{n}d")(x, 2, return_indices=True)
        return getattr(F, f"max_unpool{n}d")(out, idx, 2, **kw)

    def gen(dtype, rng):
        sp = (6, 4, 4)[:n] if n < 3 else (4, 2, 2)
        yield SampleInput((make((2, 3) + sp, dtype, rng),), name="k2")
        yield SampleInput((make((2, 3) + tuple(s + 1 for s in sp), dtype, rng),),
                          {"output_size": tuple(s + 1 for s in sp)}, name="output_size")
    return fn, gen


POOL_ERRORS = _err((((1, 3, 4, 4),), {"kernel_size": 0}, RuntimeError),
                   (((1, 3, 4, 4),), {"kernel_size": 3, "padding": 2}, RuntimeError),
                   (((1, 3, 2, 2),), {"kernel_size": 3}, RuntimeError))


# ---- activations -----------------------------------------------------------------------------

def _act(**kw):
    def gen(dtype, rng):
        yield SampleInput((make((2, 3, 4), dtype, rng),), dict(kw), name="3d")
        yield SampleInput((make((5,), dtype, rng, noncontig=True),), dict(kw), name="noncontig")
        yield SampleInput((make((), dtype, rng),), dict(kw), name="0d")
        yield SampleInput((make((0, 3), dtype, rng),), dict(kw), name="empty")
    return gen


# ---- normalization -----------------------------------------------------------------------------

def _layer_norm(dtype, rng):
    yield SampleInput((make((2, 3, 4), dtype, rng), (4,), make((4,), dtype, rng),
                       make((4,), dtype, rng)), name="affine")
    yield SampleInput((make((2, 3, 4), dtype, rng), (3, 4)), {"eps": 1e-3}, name="2-dims")
    yield SampleInput((make((5,), dtype, rng), (5,), make((5,), dtype, rng)), name="1d")


def _group_norm(dtype, rng):
    yield SampleInput((make((2, 6, 3), dtype, rng), 3, make((6,), dtype, rng),
                       make((6,), dtype, rng)), name="affine")
    yield SampleInput((make((3, 4, 2, 2), dtype, rng), 2), name="4d")


def _batch_norm(dtype, rng):
    yield SampleInput((make((4, 3, 2), dtype, rng), None, None, make((3,), dtype, rng),
                       make((3,), dtype, rng)), {"training": True}, name="train-affine")
    yield SampleInput((make((5, 2), dtype, rng), None, None), {"training": True, "eps": 1e-3},
                      name="train-2d")
    # training with running statistics: they are updated in place (not differentiated)
    yield SampleInput((make((4, 3, 2), dtype, rng), make((3,), dtype, rng),
                       make((3,), dtype, rng, low=0.5, high=2), make((3,), dtype, rng),
                       make((3,), dtype, rng)), {"training": True, "momentum": 0.2},
                      name="train-running", grad_args=(0, 3, 4))
    # the running statistics are buffers, never differentiated
    yield SampleInput((make((4, 3, 2), dtype, rng), make((3,), dtype, rng),
                       make((3,), dtype, rng, low=0.5, high=2)), name="eval", grad_args=(0,))


def _instance_norm(dtype, rng):
    yield SampleInput((make((2, 3, 5), dtype, rng),), name="plain")
    yield SampleInput((make((2, 3, 2, 3), dtype, rng), None, None, make((3,), dtype, rng),
                       make((3,), dtype, rng)), name="affine")


def _rms_norm(dtype, rng):
    yield SampleInput((make((2, 3, 4), dtype, rng), (4,), make((4,), dtype, rng)), name="w")
    yield SampleInput((make((2, 3, 4), dtype, rng), (3, 4)), {"eps": 1e-4}, name="2-dims")


def NORM_ERRORS(rng):
    x = make((2, 3, 4), F32, rng)
    yield SampleInput((x, (3,))), RuntimeError
    yield SampleInput((x, (4,), make((3,), F32, rng))), RuntimeError


# ---- losses --------------------------------------------------------------------------------

def _targets(rng, shape, C, ignore=None):
    t = np.asarray(rng.integers(0, C, size=shape), dtype=np.int64)
    if ignore is not None and t.size:
        t.reshape(-1)[0] = ignore
    return t


def _cross_entropy(dtype, rng):
    yield SampleInput((make((4, 5), dtype, rng), _targets(rng, (4,), 5)), name="mean")
    yield SampleInput((make((4, 5), dtype, rng), _targets(rng, (4,), 5, ignore=-100),
                       make((5,), dtype, rng, low=0.5, high=2)), {"reduction": "sum"},
                      name="sum-weight-ignore")
    yield SampleInput((make((3, 4, 2), dtype, rng), _targets(rng, (3, 2), 4, ignore=1),
                       make((4,), dtype, rng, low=0.5, high=2)),
                      {"ignore_index": 1, "label_smoothing": 0.3}, name="mean-weight-smoothing")
    yield SampleInput((make((3, 4, 2), dtype, rng), _targets(rng, (3, 2), 4)),
                      {"reduction": "none", "label_smoothing": 0.2}, name="none-smoothing-2d")
    yield SampleInput((make((5,), dtype, rng), _targets(rng, (), 5)), name="unbatched")


def _nll_loss(dtype, rng):
    yield SampleInput((make((4, 5), dtype, rng), _targets(rng, (4,), 5)), name="mean")
    yield SampleInput((make((3, 4, 2), dtype, rng), _targets(rng, (3, 2), 4, ignore=1)),
                      {"reduction": "none", "ignore_index": 1}, name="none-2d")
    yield SampleInput((make((4, 5), dtype, rng), _targets(rng, (4,), 5),
                       make((5,), dtype, rng, low=0.5, high=2)), name="weight")


def LOSS_ERRORS(rng):
    yield SampleInput((make((4, 5), F32, rng), np.array([0, 1, 5, 2]))), IndexError
    yield SampleInput((make((4, 5), F32, rng), np.array([0, 1, 2]))), ValueError
    yield SampleInput((make((4, 5), F32, rng), np.array([0, 1, 2, 3], dtype=np.int32))), \
        RuntimeError


# ---- embedding, linear, unfold/fold, pad -----------------------------------------------------

def _bce(dtype, rng):
    p = make((3, 4), dtype, rng, low=0.05, high=0.95)
    t = make((3, 4), dtype, rng, low=0, high=1)
    yield SampleInput((p, t), name="mean", grad_args=(0,))
    yield SampleInput((p, t, make((4,), dtype, rng, low=0.5, high=2)), {"reduction": "sum"},
                      name="weight-sum", grad_args=(0,))
    yield SampleInput((make((5,), dtype, rng, low=0.05, high=0.95),
                       (rng.random(5) > 0.5).astype(dtype)), {"reduction": "none"},
                      name="hard-targets-none", grad_args=(0,))
    yield SampleInput((make((2, 3), dtype, rng, low=0.05, high=0.95),
                       make((3, 2), dtype, rng, low=0, high=1)), name="shape-mismatch")


def _mse(dtype, rng):
    yield SampleInput((make((3, 4), dtype, rng), make((3, 4), dtype, rng)), name="mean")
    yield SampleInput((make((2, 3, 2), dtype, rng), make((2, 3, 2), dtype, rng)),
                      {"reduction": "sum"}, name="sum")
    yield SampleInput((make((4, 3), dtype, rng, noncontig=True), make((4, 3), dtype, rng)),
                      {"reduction": "none"}, name="noncontig-none")


def _one_hot(dtype, rng):
    yield SampleInput((rng.integers(0, 5, (3, 4)),), name="inferred-classes")
    yield SampleInput((rng.integers(0, 3, (6,)), 5), name="num_classes")
    yield SampleInput((np.array(2), 4), name="0d")
    yield SampleInput((np.zeros((0,), np.int64), 3), name="empty")


def _embedding(dtype, rng):
    yield SampleInput((_targets(rng, (2, 3), 6), make((6, 4), dtype, rng)), name="2d")
    yield SampleInput((_targets(rng, (5,), 6, ignore=2), make((6, 4), dtype, rng)),
                      {"padding_idx": 2}, name="padding_idx")
    yield SampleInput((_targets(rng, (4,), 6), make((6, 3), dtype, rng)),
                      {"scale_grad_by_freq": True}, name="scale_grad")


def _embedding_fn(lib, idx, w, **kw):
    return lib.nn.functional.embedding(idx, w, **kw)


def _linear(dtype, rng):
    yield SampleInput((make((3, 4), dtype, rng), make((5, 4), dtype, rng),
                       make((5,), dtype, rng)), name="bias")
    yield SampleInput((make((2, 3, 4), dtype, rng, noncontig=True), make((5, 4), dtype, rng)),
                      name="3d-noncontig")
    yield SampleInput((make((4,), dtype, rng), make((2, 4), dtype, rng)), name="vector")


def _unfold(dtype, rng):
    yield SampleInput((make((2, 3, 5, 4), dtype, rng), (2, 3)),
                      {"dilation": (2, 1), "padding": 1, "stride": (1, 2)}, name="geometry")
    yield SampleInput((make((3, 4, 4), dtype, rng), 2), name="unbatched")


def _fold(dtype, rng):
    yield SampleInput((make((2, 12, 12), dtype, rng), (4, 5), 2), name="k2")
    yield SampleInput((make((8, 4), dtype, rng), (3, 3), 2), {"stride": 1, "padding": 0},
                      name="unbatched")


def _pad(mode):
    def gen(dtype, rng):
        yield SampleInput((make((2, 3, 5), dtype, rng), (1, 2)), {"mode": mode}, name="1d")
        yield SampleInput((make((1, 2, 4, 5), dtype, rng), (2, 1, 1, 3)), {"mode": mode},
                          name="2d")
        if mode == "constant":
            yield SampleInput((make((3, 5), dtype, rng), (-1, 2)), {"value": 1.5},
                              name="negative-value")
    return gen


OPS = [
    *[OpInfo(f"nn.functional.conv{n}d", samples=_conv(n), errors=CONV_ERRORS if n == 2 else None,
             **TOL) for n in (1, 2, 3)],
    *[OpInfo(f"nn.functional.conv_transpose{n}d", samples=_conv_t(n), **TOL)
      for n in (1, 2, 3)],
    OpInfo("convolution", samples=_convolution, **TOL),
    *[OpInfo(f"nn.functional.max_pool{n}d", samples=_pool(n, **MAX_KW),
             errors=POOL_ERRORS if n == 2 else None) for n in (1, 2, 3)],
    *[OpInfo(f"nn.functional.max_pool{n}d_with_indices", samples=_pool(n, **MAX_KW))
      for n in (1, 2, 3)],
    *[OpInfo(f"nn.functional.avg_pool{n}d", samples=_pool(n, **AVG_KW)) for n in (1, 2, 3)],
    *[OpInfo(f"nn.functional.adaptive_avg_pool{n}d", samples=_adaptive(n, (3, 1)))
      for n in (1, 2, 3)],
    *[OpInfo(f"nn.functional.adaptive_max_pool{n}d_with_indices",
             samples=_adaptive(n, (3, 2))) for n in (1, 2, 3)],
    OpInfo("nn.functional.lp_pool2d", fn=lambda lib, x, **kw: lib.nn.functional.lp_pool2d(
        x.abs() + 0.5, 2, **kw), samples=_pool(2, k2={"kernel_size": 2},
                                               s1={"kernel_size": 3, "stride": 1})),
    *[OpInfo(f"nn.functional.max_unpool{n}d", fn=_unpool(n)[0], samples=_unpool(n)[1])
      for n in (1, 2, 3)],
    OpInfo("nn.functional.relu", samples=_act()),
    OpInfo("nn.functional.gelu", samples=_act()),
    OpInfo("nn.functional.gelu_tanh", fn=lambda lib, x: lib.nn.functional.gelu(
        x, approximate="tanh"), samples=_act()),
    OpInfo("nn.functional.silu", samples=_act()),
    OpInfo("nn.functional.elu", samples=_act(alpha=0.7)),
    OpInfo("nn.functional.celu", samples=_act(alpha=1.3)),
    OpInfo("nn.functional.selu", samples=_act()),
    OpInfo("nn.functional.leaky_relu", samples=_act(negative_slope=0.2)),
    OpInfo("nn.functional.hardtanh", samples=_act(min_val=-0.5, max_val=1.5)),
    OpInfo("nn.functional.softplus", samples=_act(beta=2.0, threshold=3.0)),
    OpInfo("nn.functional.mish", samples=_act()),
    OpInfo("nn.functional.logsigmoid", samples=_act()),
    OpInfo("nn.functional.hardsigmoid", samples=_act()),
    OpInfo("nn.functional.hardswish", samples=_act()),
    OpInfo("nn.functional.softshrink", samples=_act(lambd=0.7)),
    OpInfo("nn.functional.hardshrink", samples=_act(lambd=0.7)),
    OpInfo("nn.functional.threshold", samples=_act(threshold=0.3, value=-2.0)),
    OpInfo("nn.functional.layer_norm", samples=_layer_norm, errors=NORM_ERRORS, **TOL),
    OpInfo("nn.functional.group_norm", samples=_group_norm, **TOL),
    OpInfo("nn.functional.batch_norm", samples=_batch_norm, **TOL),
    OpInfo("nn.functional.instance_norm", samples=_instance_norm, **TOL),
    OpInfo("nn.functional.rms_norm", samples=_rms_norm, **TOL),
    OpInfo("nn.functional.cross_entropy", samples=_cross_entropy, errors=LOSS_ERRORS, **TOL),
    OpInfo("nn.functional.nll_loss", samples=_nll_loss, **TOL),
    OpInfo("nn.functional.embedding", fn=_embedding_fn, samples=_embedding),
    OpInfo("nn.functional.linear", samples=_linear, **TOL),
    OpInfo("nn.functional.unfold", samples=_unfold),
    OpInfo("nn.functional.fold", samples=_fold),
    OpInfo("nn.functional.binary_cross_entropy", samples=_bce, **TOL),
    OpInfo("nn.functional.mse_loss", samples=_mse, **TOL),
    OpInfo("nn.functional.one_hot", samples=_one_hot, dtypes=("int64",), grad=False),
    *[OpInfo(f"nn.functional.pad_{m}", fn=_fn("pad"), samples=_pad(m))
      for m in ("constant", "reflect", "replicate", "circular")],
]
