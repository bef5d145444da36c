"""nn functions through the whole pipeline (decompositions, externs, eager fallbacks mixed
with generated kernels) equal eager."""
import numpy as np
import pytest

import ember
import ember.nn.functional as F

from .helpers import check, rand

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
