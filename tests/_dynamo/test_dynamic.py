"""Automatic dynamic shapes and Python scalars that change (issue 18).

The first compile is static; when a size changes, the changed dimensions recompile once
as symbolic and later sizes reuse that graph; sizes 0 and 1 stay specialised;
``dynamic=True`` is symbolic from the first call, ``dynamic=False`` never;
``mark_dynamic`` / ``maybe_mark_dynamic`` / ``mark_static`` set it per tensor.  A Python
number that changes between calls (a learning rate, a step count) becomes a graph input
after one recompile.  Compile counts come from counting backends in ember and torch (the
oracle); every result equals eager.
"""
import pytest

import ember
from ember._dynamo.symbolic import SymInt
from dyn_helpers import compiled, same, torch_compiled


def _counts(fn, sizes, make, torch_make=None, **kw):
    """Compile counts of ``fn`` over the calls ``make(lib, size)``, ember and torch."""
    cf, cnt = compiled(fn, **kw)
    for s in sizes:
        args = make(ember, s)
        same(cf(*args), fn(*args), rtol=1e-5, atol=1e-6)
    theirs = None
    if torch_make is not None:
        import torch
        tf, tcnt = torch_compiled(fn, **kw)
        for s in sizes:
            tf(*torch_make(torch, s))
        theirs = tcnt.frame_count
    return cnt.frame_count, theirs, cnt


def _pointwise(x):
    return (x * 2).sin() + x


def _vec(lib, n):
    return (lib.linspace(0.0, 1.0, n),)


def _batch(lib, n):
    return (lib.ones(n, 4),)


def test_static_first_then_one_symbolic_recompile_then_reuse():
    ours, theirs, _ = _counts(_pointwise, [3, 4, 5, 6, 9, 4], _vec, _vec)
    assert ours == theirs == 2


def test_the_recompiled_graph_is_symbolic():
    from ember._dynamo.testing import CompileCounterWithBackend
    rec = CompileCounterWithBackend("eager")
    cf = ember.compile(_pointwise, backend=rec)
    cf(ember.ones(3))
    cf(ember.ones(4))
    first, second = rec.graphs
    shape0 = [n for n in first.graph.nodes if n.op == "placeholder"][0].meta["val"].shape
    shape1 = [n for n in second.graph.nodes if n.op == "placeholder"][0].meta["val"].shape
    assert [int(d) for d in shape0] == [3] and not _symbolic(shape0[0])
    assert _symbolic(shape1[0]) and shape1[0].expr == "s0"


def _symbolic(d):
    return isinstance(d, SymInt) and isinstance(d.expr, str)


def test_sizes_zero_and_one_stay_specialised():
    ours, theirs, _ = _counts(_pointwise, [5, 6, 1, 0, 1, 0, 7], _vec, _vec)
    assert ours == theirs == 4  # 5 static, 6 symbolic, 1 and 0 each their own


def test_batch_dimension_varies_others_stay_static():
    def f(x):
        return (x @ ember.ones(4, 3)).relu().sum(1)

    def g(x):
        return (x * 3).sum(1)

    ours, theirs, _ = _counts(g, [2, 3, 8, 16], _batch, _batch)
    assert ours == theirs == 2
    ours, _, _ = _counts(f, [2, 3, 8, 16], _batch)
    assert ours == 2


def test_equal_sizes_share_a_symbol():
    def f(x, y):
        return x + y

    def make(lib, n):
        return lib.ones(n), lib.ones(n)

    ours, theirs, _ = _counts(f, [3, 4, 5], make, make)
    assert ours == theirs == 2


def test_dynamic_true_is_symbolic_from_the_first_call():
    ours, theirs, _ = _counts(_pointwise, [3, 4, 5, 6], _vec, _vec, dynamic=True)
    assert ours == theirs == 1


@pytest.mark.parametrize("sizes, graphs", [([1, 2, 3, 4], 2), ([2, 1, 3, 0, 5], 3)])
def test_dynamic_true_still_specialises_zero_and_one(sizes, graphs):
    ours, theirs, _ = _counts(_pointwise, sizes, _vec, _vec, dynamic=True)
    assert ours == theirs == graphs


def test_dynamic_false_never_generalises():
    ours, theirs, _ = _counts(_pointwise, [3, 4, 5, 3], _vec, _vec, dynamic=False)
    assert ours == theirs == 3


def test_mark_dynamic_compiles_symbolic_from_the_first_call():
    import torch

    def make(lib, n):
        t = lib.ones(n, 2)
        (ember._dynamo if lib is ember else torch._dynamo).mark_dynamic(t, 0)
        return (t,)

    ours, theirs, _ = _counts(lambda x: x.sum(1) * 2, [3, 4, 5], make, make)
    assert ours == theirs == 1


def test_mark_dynamic_with_a_range():
    t = ember.ones(4, 2)
    ember._dynamo.mark_dynamic(t, 0, min=2, max=64)
    cf, cnt = compiled(lambda x: x * 2)
    same(cf(t), t * 2)
    u = ember.ones(9, 2)
    ember._dynamo.mark_dynamic(u, 0, min=2, max=64)
    same(cf(u), u * 2)
    assert cnt.frame_count == 1


def test_maybe_mark_dynamic():
    def make(lib, n):
        t = lib.ones(n)
        if lib is ember:
            ember._dynamo.maybe_mark_dynamic(t, 0)
        else:
            lib._dynamo.maybe_mark_dynamic(t, 0)
        return (t,)

    ours, theirs, _ = _counts(_pointwise, [3, 4, 5], make, make)
    assert ours == theirs == 1


def test_mark_static_keeps_a_dimension_static():
    import torch

    def make(lib, n):
        t = lib.ones(n)
        if n == 6:
            (ember._dynamo if lib is ember else torch._dynamo).mark_static(t, 0)
        return (t,)

    ours, theirs, _ = _counts(_pointwise, [5, 6, 7, 8], make, make)
    assert ours == theirs == 3  # 5 static; 6 marked static; 7 symbolic, 8 reuses


def test_mark_dynamic_argument_checks():
    with pytest.raises(TypeError):
        ember._dynamo.mark_dynamic([1, 2], 0)
    with pytest.raises(IndexError):
        ember._dynamo.mark_dynamic(ember.ones(2), 1)
    t = ember.ones(2, 3)
    ember._dynamo.mark_dynamic(t, [0, -1])
    assert t._dynamo_dynamic_indices == {0, 1}


# ---- Python scalars that change -------------------------------------------------------------
def _sgd_step(p, g, lr):
    return p - lr * g


def test_learning_rate_becomes_an_input_after_one_recompile():
    def make(lib, lr):
        return lib.ones(3), lib.full((3,), 2.0), lr

    ours, theirs, _ = _counts(_sgd_step, [0.1, 0.05, 0.025, 0.0125, 0.1], make, make)
    assert ours == theirs == 2


def test_step_count_becomes_an_input_after_one_recompile():
    def f(x, step):
        return x * (1 - 0.9 ** step) + step

    def make(lib, step):
        return lib.ones(2), step

    ours, theirs, _ = _counts(f, [2, 3, 4, 5, 6], make, make)
    assert ours == theirs == 2


def test_int_argument_used_as_a_size():
    def f(x, n):
        return x.reshape(n, -1).sum(0)

    def make(lib, n):
        return lib.arange(12.0), n

    ours, theirs, _ = _counts(f, [2, 3, 4, 6, 12], make, make)
    assert ours == theirs == 2


def test_scalar_read_from_an_object_changes():
    class Opt:
        lr = 0.5

    opt = Opt()
    cf, cnt = compiled(lambda p: p * opt.lr)
    for lr in (0.5, 0.25, 0.125, 0.0625):
        opt.lr = lr
        same(cf(ember.ones(2)), ember.full((2,), lr))
    assert cnt.frame_count == 2


def test_sizes_and_scalars_vary_together():
    def f(x, scale):
        return (x * scale).sum(0)

    def make(lib, n):
        return lib.ones(n, 3), float(n) / 10

    ours, theirs, _ = _counts(f, [2, 3, 4, 5, 6], make, make)
    assert ours == theirs == 2


@pytest.mark.parametrize("fn", [
    lambda x: x.view(-1, 4) * 2,
    lambda x: x.flatten() + 1,
    lambda x: ember.zeros_like(x) + x,
], ids=["view_minus_one", "flatten", "zeros_like"])
def test_derived_sizes_reuse_the_symbolic_graph(fn):
    cf, cnt = compiled(fn)
    for n in (2, 3, 4, 5):
        x = ember.ones(n, 4)
        same(cf(x), fn(x))
    assert cnt.frame_count == 2


@pytest.mark.parametrize("fn", [
    lambda x: ember.zeros(x.shape[0], 4) + x,
    lambda x: ember.arange(x.shape[0]) + 1,
], ids=["zeros_of_size", "arange_of_size"])
def test_factory_sizes_reuse_the_symbolic_graph(fn):
    cf, cnt = compiled(fn)
    for n in (2, 3, 4, 5):
        x = ember.ones(n, 4)
        same(cf(x), fn(x))
    assert cnt.frame_count == 2


def test_assume_static_by_default_false_is_symbolic_from_the_first_call():
    from ember._dynamo import config
    cf, cnt = compiled(_pointwise)
    with config.patch(assume_static_by_default=False):
        for n in (3, 4, 5):
            same(cf(ember.ones(n)), _pointwise(ember.ones(n)))
    assert cnt.frame_count == 1
    static, scnt = compiled(_pointwise, dynamic=False)
    with config.patch(assume_static_by_default=False):
        for n in (3, 4):
            static(ember.ones(n))
    assert scnt.frame_count == 2  # the function's own dynamic=False wins


# ---- one symbolic graph serves every later size, across kinds of ops ------------------------------
def _seq(n, *shape):
    """A deterministic tensor of shape (n, *shape) with varied values."""
    numel = n
    for s in shape:
        numel *= s
    return ember.arange(float(numel)).sin().view(n, *shape)


def _cases():
    import ember.nn.functional as F
    bn, emb, ln = ember.nn.BatchNorm1d(3), ember.nn.Embedding(10, 4), ember.nn.LayerNorm(4)
    return [
        ("inplace_slice", lambda x: (x[1:].mul_(2), x.sum(0))[1], lambda n: (_seq(n, 3),)),
        ("view_chain", lambda x: (x.view(-1, 3).t().contiguous() * 2).view(3, -1).sum(1),
         lambda n: (_seq(n, 3),)),
        ("expand", lambda x, y: x.unsqueeze(1).expand(-1, y.shape[0]) * y,
         lambda n: (_seq(n), _seq(n + 1))),
        ("index_tensor", lambda x, i: x[i] * 2,
         lambda n: (_seq(n), ember.tensor([0, n - 1]))),
        ("gather", lambda x, i: ember.gather(x, 1, i),
         lambda n: (_seq(n, 3), ember.zeros(n, 2, dtype=ember.int64))),
        ("matmul", lambda a, b: a @ b, lambda n: (_seq(n, 4), _seq(4, n))),
        ("conv2d", lambda x, w: F.conv2d(x, w, padding=1),
         lambda n: (_seq(2, 3, n + 2, n + 2), _seq(4, 3, 3, 3))),
        ("max_pool2d", lambda x: F.max_pool2d(x, 2), lambda n: (_seq(1, 1, 2 * n, 2 * n),)),
        ("batch_norm", lambda x: bn(x), lambda n: (_seq(n, 3),)),
        ("embedding", lambda i: emb(i).sum(1), lambda n: (ember.arange(n) % 10,)),
        ("layer_norm", lambda x: ln(x), lambda n: (_seq(n, 4),)),
        ("mean_keepdim", lambda x: x - x.mean(0, keepdim=True), lambda n: (_seq(n, 2),)),
        ("arange_of_size", lambda x: x + ember.arange(x.shape[-1]), lambda n: (_seq(2, n),)),
        ("new_zeros", lambda x: x.new_zeros(x.shape[0], 2) + x[:, :2], lambda n: (_seq(n, 3),)),
        ("repeat", lambda x: x.repeat(2, 1), lambda n: (_seq(n, 3),)),
        ("pad", lambda x: F.pad(x, (1, 1)), lambda n: (_seq(n, 3),)),
        ("causal_attention",
         lambda q: F.scaled_dot_product_attention(q, q, q, is_causal=True),
         lambda n: (_seq(1, 2, n, 4),)),
        ("tril_mask_softmax",
         lambda x: x.masked_fill(ember.ones(x.shape[-1], x.shape[-1]).tril() == 0,
                                 float("-inf")).softmax(-1),
         lambda n: (_seq(2, n, n),)),
        ("cumsum_flip", lambda x: x.cumsum(0).flip(0), lambda n: (_seq(n),)),
        ("where", lambda x: ember.where(x > 0, x, -x), lambda n: (_seq(n),)),
        ("topk", lambda x: x.topk(2).values, lambda n: (_seq(n),)),
        ("sort", lambda x: x.sort(descending=True).values * 2, lambda n: (_seq(n),)),
    ]


@pytest.mark.parametrize("name, fn, make", _cases(), ids=[c[0] for c in _cases()])
def test_one_symbolic_graph_serves_later_sizes(name, fn, make):
    cf, cnt = compiled(fn)
    for n in (2, 3, 5, 8):
        args, eager_args = make(n), make(n)
        same(cf(*args), fn(*eager_args), rtol=1e-5, atol=1e-5)
        for a, b in zip(args, eager_args):
            same(a, b)
    assert cnt.frame_count == 2


def _attention_block(lib):
    nn, F = lib.nn, lib.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln = nn.LayerNorm(8)
            self.qkv = nn.Linear(8, 24)
            self.proj = nn.Linear(8, 8)
            self.mlp = nn.Sequential(nn.Linear(8, 32), nn.GELU(), nn.Linear(32, 8))

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = self.qkv(self.ln(x)).split(C, dim=2)
            q, k, v = (t.view(B, T, 2, C // 2).transpose(1, 2) for t in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).contiguous().view(B, T, C))
            return x + self.mlp(x)

    lib.manual_seed(0)
    return Block()


def test_attention_block_over_sequence_lengths_matches_torch():
    import numpy as np
    import torch
    ours, theirs = _attention_block(ember), _attention_block(torch)
    theirs.load_state_dict({k: torch.from_numpy(v.numpy().copy())
                            for k, v in ours.state_dict().items()})
    om, cnt = compiled(ours)
    tm, tcnt = torch_compiled(theirs)
    for T in (3, 5, 7, 16, 2):
        x = np.random.RandomState(T).randn(2, T, 8).astype(np.float32)
        same(om(ember.from_numpy(x)), tm(torch.from_numpy(x)), rtol=1e-5, atol=1e-5)
    assert cnt.frame_count == tcnt.frame_count == 2
