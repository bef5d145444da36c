"""Long pointwise chains: expression nodes keep their hashes (compile time linear in the
chain's length, issue 11) and chains deeper than ``config.max_inline_depth`` are cut into
kernels instead of falling back to eager on Python's recursion limit."""
import numpy as np

import ember
from ember._inductor import config, ir

from .helpers import check, rand


def _chain(n_ops):
    def chain(x):
        for i in range(n_ops // 4):
            x = x * 1.01
            x = x + 0.5
            x = x.sin()
            x = x.relu()
        return x
    return chain


def _deep(n, leaf):
    e = leaf
    for i in range(n):
        e = ir.Apply("add" if i % 2 else "mul", (e, ir.Const(1.0 + i % 3, "float32")), "float32")
        hash(e)  # as the passes do: every node is a dict key when it is made
    return e


def test_hash_of_a_deep_expression_is_kept_per_node():
    leaf = ir.Load("b_x", ir.Affine((1,), 0), "float32", "float32")
    a = _deep(5000, leaf)
    b = _deep(5000, leaf)
    # a recomputed hash would recurse 5000 levels here (RecursionError)
    assert hash(a) == hash(b)
    assert a.args[0] is not b.args[0]
    assert {a: 1}[a] == 1


def test_expressions_compare_by_value():
    x = ir.Load("b_x", ir.Affine((1, 0), 0), "float32", "float32")
    y = ir.Load("b_x", ir.Affine((1, 0), 0), "float32", "float32")
    assert x == y and hash(x) == hash(y) and x is not y
    assert ir.Apply("exp", (x,), "float32") == ir.Apply("exp", (y,), "float32")
    assert ir.Apply("exp", (x,), "float32") != ir.Apply("log", (y,), "float32")
    assert ir.Const(1.0, "float32") != ir.Const(1.0, "float64")
    assert ir.Load("b_x", ir.Affine((1, 0), 0), "float32", "float32") != \
        ir.Load("b_x", ir.Affine((0, 1), 0), "float32", "float32")
    assert ir.Cast(x, "float64") != ir.Apply("exp", (x,), "float32")


def test_a_chain_deeper_than_the_inline_limit_is_cut_into_kernels():
    n_ops = 4 * config.max_inline_depth  # one kernel would recurse too deep to lower
    c = check(_chain(n_ops), rand(16))
    assert c.backend in ("c", "numpy")
    assert c.kernel_count >= n_ops // config.max_inline_depth


def test_a_long_chain_within_the_limit_is_one_kernel():
    check(_chain(config.max_inline_depth - 8), rand(3, 5), kernels=1)


def test_long_chain_under_compile_equals_eager():
    fn = _chain(600)
    ember._dynamo.reset()
    cf = ember.compile(fn, backend="inductor")
    x = rand(4, 8, dtype=ember.float64)
    np.testing.assert_allclose(cf(x).numpy(), fn(x).numpy(), rtol=1e-12, atol=1e-12)


def _residual_stream(x, w, *biases):
    # per layer: a row reduction of the stream, a product (an extern step between kernels),
    # and the stream read again by the next layer: x_k has several readers
    for b in biases:
        h = x - x.mean(-1, keepdim=True)
        x = x + (h @ w + b).tanh()
    return x


def _max_kernel_pointers(source):
    import re
    return max(m.group(1).count("*") for m in re.finditer(r"void kernel\d+\(([^)]*)\)", source))


def test_a_residual_stream_is_stored_not_recomputed_from_every_layer():
    biases = [rand(16, seed=i + 2) for i in range(12)]
    c = check(_residual_stream, rand(8, 16), rand(16, 16, seed=1), *biases)
    assert c.backend == "c"  # the C compiler is there (the test counts kernel signatures)
    # each layer's kernel loads a bounded number of buffers (the stream, its statistics, a
    # product, a bias, ...), not all twelve earlier layers' products and biases
    assert _max_kernel_pointers(c.source) <= config.max_inline_reads + 3, c.source
    old = config.max_inline_reads
    try:
        config.max_inline_reads = 10 ** 6  # the unbounded recomputation, for contrast
        unbounded = check(_residual_stream, rand(8, 16), rand(16, 16, seed=1), *biases)
    finally:
        config.max_inline_reads = old
    assert _max_kernel_pointers(unbounded.source) > config.max_inline_reads + 3
