"""nn functions through the whole pipeline (decompositions, externs, eager fallbacks mixed
with generated kernels) equal eager."""
import math

import numpy as np
import pytest

import ember
import ember.nn.functional as F

from .helpers import check, compile_fn, rand

_x = rand(4, 5)
_x4 = rand(2, 3, 6, 6)
_tgt = ember.from_numpy(np.array([1, 0, 4, 2]))

CASES = {
    "cross_entropy": (lambda x, t: F.cross_entropy(x, t), (_x, _tgt)),
    "nll_log_softmax": (lambda x, t: F.nll_loss(F.log_softmax(x, -1), t), (_x, _tgt)),
    "mse": (lambda a, b: F.mse_loss(a, b), (_x, rand(4, 5, seed=3))),
    "conv2d": (lambda a, w, b: F.conv2d(a, w, b), (_x4, rand(4, 3, 3, 3, seed=1), rand(4, seed=2))),
    "max_pool2d": (lambda a: F.max_pool2d(a, 2), (_x4,)),
    "avg_pool2d": (lambda a: F.avg_pool2d(a, 2), (_x4,)),
    "embedding": (lambda i, w: F.embedding(i, w), (_tgt, rand(5, 3))),
    "sdpa_causal": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                    (rand(2, 3, 4, 5), rand(2, 3, 4, 5, seed=1), rand(2, 3, 4, 5, seed=2))),
    "batch_norm": (lambda a, w, b: F.batch_norm(a, None, None, w, b, training=True),
                   (_x4, rand(3), rand(3, seed=1))),
    "group_norm": (lambda a: F.group_norm(a, 3), (_x4,)),
    "activations": (lambda a: (F.silu(a), F.mish(a), F.softplus(a), F.elu(a), F.hardswish(a),
                               F.leaky_relu(a, 0.1)), (_x,)),
    "pad": (lambda a: F.pad(a, (1, 2)), (_x,)),
    "clamp_pow": (lambda a: (a.clamp(-0.5, 0.5), a.clamp(min=0), a.pow(2), a.pow(3),
                             a.abs().rsqrt(), a.reciprocal(), a.abs().log1p()), (_x,)),
    "logsumexp_norm": (lambda a: (a.logsumexp(-1), a.norm(), a.norm(dim=1)), (_x,)),
    "argmax": (lambda a: a.argmax(-1), (_x,)),
    "bmm_relu": (lambda a, b: (a @ b).relu(), (rand(2, 3, 4), rand(2, 4, 5, seed=1))),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_nn_function(name):
    fn, inputs = CASES[name]
    check(fn, *inputs)


_INF_ROWS = [[math.inf, 1.0, 2.0], [math.inf, math.inf, 1.0], [-math.inf] * 3,
             [-math.inf, 1.0, 2.0], [math.nan, 1.0, 2.0], [0.5, -1.0, 3.0]]


@pytest.mark.parametrize("cc", ["auto", None], ids=["c", "numpy"])
@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
def test_softmax_nonfinite_rows_match_torch(fn, cc):
    """A row holding +inf gives NaN everywhere, as torch's kernel does (x - max unguarded);
    a row of only -inf too; -inf entries of a finite row stay exact."""
    import torch
    x = ember.tensor(_INF_ROWS)
    for dim in (1, 0):
        compiled, _ = compile_fn(lambda a: getattr(ember, fn)(a, dim), x, options={"cc": cc})
        assert compiled.reason is None, compiled.reason
        want = getattr(torch, fn)(torch.tensor(_INF_ROWS), dim).numpy()
        np.testing.assert_allclose(compiled(x)[0].numpy(), want, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(getattr(ember, fn)(x, dim).numpy(), want, rtol=1e-6, atol=1e-6)


def test_cross_entropy_inf_logit_is_nan_as_torch():
    import torch
    x, t = ember.tensor(_INF_ROWS[:2]), ember.tensor([1, 2])
    compiled, _ = compile_fn(lambda a, b: F.cross_entropy(a, b, reduction="none"), x, t)
    want = torch.nn.functional.cross_entropy(torch.tensor(_INF_ROWS[:2]), torch.tensor([1, 2]),
                                             reduction="none").numpy()
    np.testing.assert_array_equal(np.isnan(compiled(x, t)[0].numpy()), np.isnan(want))


def test_convolution_stays_one_extern_call():
    # convolution runs its eager kernel (im2col + BLAS inside it): no window gather in C
    from ember._inductor import ir
    x, w, b = rand(2, 3, 9, 9), rand(4, 3, 3, 3, seed=1), rand(4, seed=2)
    c = check(lambda x, w, b: F.conv2d(x, w, b, padding=1).relu(), x, w, b)
    eager = [st.node.target.name for st in c.schedule.steps if isinstance(st, ir.EagerStep)]
    assert eager == ["convolution"] and "im2col" not in c.source


def test_conv_training_step_compiled_equals_eager():
    import copy
    ember.manual_seed(0)
    nn = ember.nn
    model = nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(4, 3, 3), nn.ReLU(), nn.Flatten(), nn.Linear(3 * 2 * 2, 5))
    twin = copy.deepcopy(model)
    x, y = rand(3, 2, 8, 8, seed=4), ember.from_numpy(np.array([0, 4, 2]))
    compiled = ember.compile(model, backend="inductor")
    for m, f in ((model, compiled), (twin, twin)):
        F.cross_entropy(f(x), y).backward()
    for p, q in zip(model.parameters(), twin.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-6)
