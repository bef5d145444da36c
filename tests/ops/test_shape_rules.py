"""Every operator's shape/dtype rule (``Op.shape``), checked against what its kernel returns.

(a) every registered operator has a rule; (b) the whole op database runs under the
checking mode (out-of-place, in-place, ``out=`` and backward) and each rule agrees
with the real outputs, as do nn/random/backward operators the database does not
reach; (c) rules evaluate on symbolic sizes, so they need no data.
"""
import math
import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember._core import meta
from ember._core.meta import DataDependentShape, ShapeCheckMode, TensorMeta
from ember.ops import REGISTRY
from opdb.all import OPS
from opdb.core import to_lib

SEED = 1234


def _is_embers(op):
    # other tests register throwaway operators of their own
    return (getattr(op.kernel, "__module__", None) or "ember").split(".")[0] == "ember"


def test_every_op_has_a_rule():
    missing = sorted(n for n, o in REGISTRY.items() if o.shape is None and _is_embers(o))
    assert not missing, f"operators without a shape rule: {missing}"


# ---- (b) rules against kernels --------------------------------------------------------------

class RecordingCheck(ShapeCheckMode):
    """The checking mode, also recording which operators it checked."""

    def __init__(self):
        self.seen = set()

    def __ember_dispatch__(self, op, args, kwargs):
        self.seen.add(getattr(op, "base", op).name)
        return super().__ember_dispatch__(op, args, kwargs)


def _same_outcome(mode, fn):
    """Run ``fn`` under ``mode``; an error must be one ``fn`` also raises without the mode
    (the check may not change behaviour), and rule mismatches (AssertionError) propagate."""
    try:
        with mode:
            return fn()
    except AssertionError:
        raise
    except Exception as e:
        with pytest.raises(type(e)):
            fn()
        return None


def _variants(op, s, out):
    """The in-place and out= forms of one sample, where the operator has them."""
    if not isinstance(op.fn, str) or not s.args or not isinstance(s.args[0], np.ndarray):
        return
    meth = getattr(ember.Tensor, op.fn.split(".")[-1] + "_", None)
    if meth is not None:
        yield lambda: meth(*to_lib(ember, s.args), **to_lib(ember, s.kwargs))
    if isinstance(out, ember.Tensor) and not op.fn.startswith("Tensor."):
        def with_out():
            o = ember.empty(0, dtype=out.dtype)
            return op.call(ember, to_lib(ember, s.args), dict(to_lib(ember, s.kwargs), out=o))
        yield with_out


def _backward(op, s):
    def run():
        args = [to_lib(ember, a, requires_grad=isinstance(a, np.ndarray) and a.dtype.kind == "f")
                for a in s.args]
        out = op.call(ember, args, to_lib(ember, s.kwargs))
        outs = out if isinstance(out, (tuple, list)) else (out,)
        loss = [o.sum() for o in outs if isinstance(o, ember.Tensor) and o.requires_grad]
        if loss:
            sum(loss[1:], loss[0]).backward()
    return run


def run_op_checked(op, dtype, mode):
    rng = np.random.default_rng(SEED)
    for s in op.samples(dtype, rng):
        out = _same_outcome(mode, lambda: op.call(ember, to_lib(ember, s.args),
                                                  to_lib(ember, s.kwargs)))
        if out is None:
            continue
        for form in _variants(op, s, out):
            _same_outcome(mode, form)
        if op.grad and dtype == "float64":
            _same_outcome(mode, _backward(op, s))


@pytest.mark.parametrize("op", [pytest.param(op, id=op.name) for op in OPS])
def test_rules_match_kernels(op):
    mode = RecordingCheck()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for dt in op.dtypes:
            run_op_checked(op, dt, mode)


def _nn_and_random_programs():
    """Calls reaching the operators the op database does not: nn primitives, samplers,
    backward helpers (each run forward and backward)."""
    ember.manual_seed(0)
    r = ember.randn
    x = r(2, 3, 8, 8, requires_grad=True)
    y = F.conv2d(x, r(4, 3, 3, 3), r(4), padding=1)
    y = F.max_pool2d(y, 2) + F.avg_pool2d(y, 2) + F.adaptive_max_pool2d(y, 4)
    y = F.pad(y, (1, 2, 0, 1), mode="reflect")
    feats = F.unfold(x, 3).sum() + F.fold(r(2, 12, 9), (4, 4), 2).sum()
    h = y.flatten(1)
    for f in (F.relu, F.gelu, F.silu, F.mish, F.softplus, F.logsigmoid, F.hardsigmoid,
              F.hardswish, F.elu, F.leaky_relu, F.hardtanh, F.softshrink, F.hardshrink):
        h = f(h)
    h = F.threshold(h, 0.1, 0.0) + F.rrelu(h, training=True)
    h = F.dropout(F.layer_norm(h, h.shape[1:]), 0.3) + F.dropout2d(y, 0.5).flatten(1)
    h = F.linear(h, r(5, h.shape[1]), r(5))
    loss = F.cross_entropy(h, ember.tensor([1, 4])) + F.nll_loss(F.log_softmax(h, 1),
                                                                 ember.tensor([0, 2]))
    emb = F.embedding(ember.tensor([[0, 2], [1, 1]]), r(3, 4, requires_grad=True))
    q = r(2, 2, 5, 4, requires_grad=True)
    att = F.scaled_dot_product_attention(q, q, q)
    lp = r(6, 2, 5, requires_grad=True).log_softmax(2)
    ctc = F.ctc_loss(lp, ember.tensor([[1, 2], [3, 3]]), (6, 6), (2, 2))
    lstm, gru = ember.nn.LSTM(4, 3), ember.nn.GRU(4, 3)
    cells = ember.nn.LSTMCell(4, 3)(emb[0])[0].sum() + ember.nn.GRUCell(4, 3)(emb[0]).sum()
    seq = lstm(emb)[0].sum() + gru(emb)[0].sum() + cells
    v = r(4, 6, requires_grad=True) * 1
    v[1:3].mul_(2)  # an in-place write through a view: the _view_scatter node
    v = v.unfold(1, 2, 2).sum() + v[1:, ::2].sum() + v.gather(1, ember.tensor([[0], [1], [2],
                                                                            [3]])).sum()
    nuc = ember.norm(r(3, 3, requires_grad=True), "nuc") + r(5, requires_grad=True).sort()[0].sum()
    total = loss + emb.sum() + att.sum() + ctc + seq + v + nuc + feats + y.sum()
    total.backward()
    with ember.no_grad():
        F.cross_entropy(r(2, 5, requires_grad=True), ember.tensor([1, 4]))
    F.one_hot(ember.tensor([0, 3]), 5)
    p = ember.rand(2, 4)
    samples = [ember.rand(3), ember.randn(3), ember.randint(0, 5, (3,)), ember.randperm(5),
               ember.bernoulli(p), ember.poisson(p), ember.multinomial(p, 2),
               ember.normal(ember.zeros(3), 1.0), ember.empty(4).exponential_(),
               ember.empty(4).geometric_(0.3), ember.empty(4).log_normal_(),
               ember.empty(4).cauchy_(), ember.empty(4).bernoulli_(0.3),
               ember.empty(4).random_(0, 9), ember.empty(4).uniform_(), ember.empty(4).normal_()]
    return samples


def test_rules_match_kernels_beyond_the_op_database():
    mode = RecordingCheck()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with mode:
            _nn_and_random_programs()
    expected = {"im2col", "col2im", "conv2d", "convolution_backward", "max_pool",
                "max_pool_backward", "avg_pool", "adaptive_max_pool", "pad", "pad_backward", "relu", "gelu", "silu", "mish",
                "softplus", "log_sigmoid", "hardsigmoid", "hardswish", "elu", "leaky_relu",
                "hardtanh", "softshrink", "hardshrink", "threshold", "threshold_backward",
                "rrelu_with_noise", "native_dropout", "_dropout_mask", "_normalize", "linear",
                "cross_entropy_loss", "_cross_entropy_backward", "nll_loss", "embedding",
                "_flash_attention", "_ctc_loss", "_ctc_loss_backward", "_lstm_cell",
                "_gru_cell", "_lstm_layer", "_lstm_layer_backward", "_gru_layer",
                "_gru_layer_backward", "_view_scatter", "_unfold_backward", "_index_view_backward",
                "_scatter_along", "nuclear_norm", "_nuc_basis", "one_hot", "uniform", "normal",
                "random", "randperm", "bernoulli", "bernoulli_scalar", "poisson",
                "multinomial", "normal_tensor", "exponential", "geometric", "log_normal",
                "cauchy"}
    assert not expected - mode.seen, f"not reached: {sorted(expected - mode.seen)}"


def test_data_dependent_rules_say_so():
    x = TensorMeta((4,), ember.int64)
    for op, args, params in ((REGISTRY["nonzero"], (x,), {}),
                             (REGISTRY["masked_select"], (x, TensorMeta((4,), ember.bool)), {}),
                             (REGISTRY["bincount"], (x, None), {"minlength": 0}),
                             (REGISTRY["unique"], (x,), {"sorted": True}),
                             (REGISTRY["index"], (x, TensorMeta((4,), ember.bool)), {})):
        with pytest.raises(DataDependentShape):
            op.shape(*args, **params)


def test_a_wrong_rule_is_reported():
    op = REGISTRY["exp"]
    rule = op.shape
    op.shape = lambda x: (x.shape, ember.float64)
    try:
        with pytest.raises(AssertionError, match="shape rule of exp"):
            with ShapeCheckMode():
                ember.exp(ember.ones(2))
        with pytest.raises(AssertionError, match="shape rule of exp"):
            with ShapeCheckMode():
                ember.ones(2).exp_()
    finally:
        op.shape = rule


def test_check_shapes_switch():
    was = meta.check_shapes(False)  # EMBER_CHECK_SHAPES=1 may have switched it on
    assert meta.check_shapes(True) is False
    try:
        assert meta.check_shapes(True) is True  # idempotent
        assert ember.ones(2, 3).sum(0).shape == (3,)
        rule = REGISTRY["sum"].shape
        REGISTRY["sum"].shape = lambda x, **p: ((7,), x.dtype)
        try:
            with pytest.raises(AssertionError):
                ember.ones(2, 3).sum(0)
        finally:
            REGISTRY["sum"].shape = rule
    finally:
        assert meta.check_shapes(False) is True
    assert ShapeCheckMode not in {type(m) for m in ember._core.state.STATE.modes}
    meta.check_shapes(was)


# ---- (c) rules on symbolic sizes ------------------------------------------------------------

class Sym:
    """A symbolic size: an integer polynomial in named sizes (B*N + 3, ...).

    Sums and products simplify, division by a term that divides every monomial is exact,
    and ``==`` compares normal forms, so it answers True/False like an int would."""

    def __init__(self, terms):
        self.terms = {m: c for m, c in terms.items() if c}

    @staticmethod
    def of(v):
        if isinstance(v, Sym):
            return v
        return Sym({(): v})

    def __add__(self, o):
        t = dict(self.terms)
        for m, c in Sym.of(o).terms.items():
            t[m] = t.get(m, 0) + c
        return Sym(t)

    __radd__ = __add__

    def __neg__(self):
        return Sym({m: -c for m, c in self.terms.items()})

    def __sub__(self, o):
        return self + -Sym.of(o)

    def __rsub__(self, o):
        return Sym.of(o) - self

    def __mul__(self, o):
        t = {}
        for m1, c1 in self.terms.items():
            for m2, c2 in Sym.of(o).terms.items():
                m = tuple(sorted(m1 + m2))
                t[m] = t.get(m, 0) + c1 * c2
        return Sym(t)

    __rmul__ = __mul__

    def __floordiv__(self, o):
        (m2, c2), = Sym.of(o).terms.items()  # division by one monomial only
        t = {}
        for m, c in self.terms.items():
            rest = list(m)
            for name in m2:
                rest.remove(name)  # ValueError: not exactly divisible
            assert c % c2 == 0
            t[tuple(rest)] = c // c2
        return Sym(t)

    def __eq__(self, o):
        return isinstance(o, (Sym, int)) and self.terms == Sym.of(o).terms

    def __hash__(self):
        return hash(tuple(sorted(self.terms.items())))

    def __repr__(self):
        return " + ".join(f"{c}*{'*'.join(m)}" if m else str(c) for m, c in self.terms.items())


B, N, K = (Sym({(n,): 1}) for n in "BNK")
f32, i64 = ember.float32, ember.int64


def rule(name, *args, **params):
    return REGISTRY[name].shape(*args, **params)


def test_elementwise_broadcast_on_symbols():
    a, b = TensorMeta((B, 1, N), ember.int32), TensorMeta((K, 1), f32)
    assert rule("add", a, b) == ((B, K, N), f32)
    assert rule("div", a, TensorMeta((), i64)) == ((B, 1, N), f32)  # int / int -> float
    assert rule("mul", a, 2.5) == ((B, 1, N), f32)  # a weak scalar decides the category
    assert rule("lt", a, b) == ((B, K, N), ember.bool)
    assert rule("exp", a) == ((B, 1, N), f32)
    assert rule("where", TensorMeta((N,), ember.bool), a, 0.0) == ((B, 1, N), f32)


def test_matmul_and_linear_on_symbols():
    assert rule("matmul", TensorMeta((B, N, K), f32), TensorMeta((K, 7), f32)) == ((B, N, 7), f32)
    assert rule("matmul", TensorMeta((K,), f32), TensorMeta((B, K, N), f32)) == ((B, N), f32)
    assert rule("linear", TensorMeta((B, K), f32), TensorMeta((N, K), f32), None) == ((B, N), f32)


def test_reductions_on_symbols():
    x = TensorMeta((B, N, 4), ember.int16)
    assert rule("sum", x, dims=(1,), keepdim=False) == ((B, 4), i64)
    assert rule("sum", x, dims=(0, 2), keepdim=True) == ((1, N, 1), i64)
    assert rule("amax", x, dims=(2,), keepdim=False) == ((B, N), ember.int16)
    assert rule("argmax", x, dim=None, keepdim=False) == ((), i64)
    assert rule("max_dim", x, dim=-2, keepdim=True) == (((B, 1, 4), ember.int16),
                                                       ((B, 1, 4), i64))
    assert rule("var", TensorMeta((B, N), ember.complex64), dims=(1,), correction=1,
                keepdim=False) == ((B,), f32)


def test_views_on_symbols():
    x = TensorMeta((B, N, 6), f32)
    assert rule("view", x, shape=(B, -1)) == ((B, N * 6), f32)
    assert rule("view", x, shape=(-1, 3, 2)) == ((B * N, 3, 2), f32)
    assert rule("permute", x, dims=(2, 0, 1)) == ((6, B, N), f32)
    assert rule("slice", x, key=((None, None, None), (1, None, 1))) == ((B, N - 1, 6), f32)
    assert rule("select", x, key=((None, None, None), 0)) == ((B, 6), f32)


def test_cat_and_stack_on_symbols():
    a, b = TensorMeta((B, N), f32), TensorMeta((B, K), ember.float64)
    assert rule("cat", a, b, dim=1, sizes=(N, K)) == ((B, N + K), ember.float64)
    assert rule("stack", a, a, a, dim=1) == ((B, 3, N), f32)


def test_rules_need_no_data():
    # a rule only sees metadata: running one on metas of huge tensors allocates nothing
    big = TensorMeta((10 ** 9, 10 ** 9), f32)
    assert rule("matmul", big, big) == ((10 ** 9, 10 ** 9), f32)
    assert meta.run_rule(REGISTRY["sum"], (big,), {"dims": (0,), "keepdim": False}) == \
        (((10 ** 9,), f32),)
    assert math.prod(rule("view", big, shape=(-1,))[0]) == 10 ** 18
