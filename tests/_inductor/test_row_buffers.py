"""Row buffers: an expensive value one inner loop of a row computes and a later one reads
(softmax's exp(x - max)) is kept per row, in the row of an output the last loop stores
when one qualifies, else in a buffer each thread allocates once."""
import numpy as np
import pytest

import ember

from .helpers import check, rand


def _softmax_parts(x):
    e = (x - x.amax(-1, keepdim=True)).exp()
    return e / e.sum(-1, keepdim=True)


@pytest.mark.parametrize("min_work", [1 << 30, 0], ids=["serial", "parallel"])
def test_softmax_row_lives_in_its_output(min_work):
    x = rand(64, 300)
    c = check(lambda x: ember.softmax(x, -1), x, kernels=1,
              options={"parallel_min_work": min_work})
    assert "malloc" not in c.source and "*row0 = b_" in c.source, c.source


@pytest.mark.parametrize("min_work", [1 << 30, 0], ids=["serial", "parallel"])
def test_row_buffer_shared_by_two_stores(min_work):
    # both outputs read exp(x - max): the first one's row holds it
    x = rand(33, 257, seed=1)
    check(lambda x: (_softmax_parts(x), _softmax_parts(x) * 3 - 1), x,
          options={"parallel_min_work": min_work})


@pytest.mark.parametrize("min_work", [1 << 30, 0], ids=["serial", "parallel"])
def test_store_that_does_not_read_the_row_keeps_its_memory(min_work):
    # x * 2 is stored in the same last loop before the softmax: its row must not hold exp
    x = rand(17, 129, seed=2)
    check(lambda x: (x * 2, _softmax_parts(x)), x, options={"parallel_min_work": min_work})


@pytest.mark.parametrize("min_work", [1 << 30, 0], ids=["serial", "parallel"])
def test_row_buffer_without_an_output_row_is_allocated_per_thread(min_work):
    # the row statistics read exp(x) in two loops; no stored row reads it
    x = rand(40, 200, seed=3)
    c = check(lambda x: (x.exp().sum(-1) * x.exp().amax(-1),), x,
              options={"parallel_min_work": min_work})
    src = c.source.split("void kernel0", 1)[1]
    # one allocation per thread (before the row loop), freed once, in both code paths
    assert src.count("malloc") == 2 and src.count("free(row0)") == 2, src
    assert "malloc" in src.split("for (int64_t i0", 1)[0], src


def test_row_buffer_of_a_half_output_is_separate():
    # a bfloat16 output row cannot hold the float32 exp
    x = rand(16, 64, seed=4).to(ember.bfloat16)
    c = check(lambda x: ember.softmax(x.float(), -1).to(ember.bfloat16), x)
    assert "float *row0 = (float *)malloc" in c.source, c.source
    np.testing.assert_array_less(-1e-6, c(x)[0].float().numpy())
