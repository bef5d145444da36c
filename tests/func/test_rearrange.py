"""torch.func.rearrange: einops patterns (splits, merges, permutations, unit axes, ellipsis,
lists of tensors) give torch's values; bad patterns raise torch's error kinds."""
import numpy as np
import pytest
import torch
from torch.func import rearrange as t_rearrange

import ember
from ember.func import rearrange as e_rearrange

X = np.arange(2 * 3 * 4 * 5).reshape(2, 3, 4, 5).astype(np.float32)

CASES = [
    ("b c h w -> b h w c", {}),
    ("b c (h w) x -> b h w c x", {"h": 2}),
    ("b c (h w) x -> b h w c x", {"w": 2}),
    ("b c h w -> (b c) (h w)", {}),
    ("b c h w -> b (w h c)", {}),
    ("b ... -> (b ...)", {}),
    ("b c ... -> c b ...", {}),
    ("... w -> w ...", {}),
    ("b c h w -> b () c 1 h w", {}),
    ("b c h w -> (h b) c w", {}),
    ("b c (h1 h2) (w1 w2) -> b (c h2 w2) h1 w1", {"h2": 2, "w2": 5}),
]


@pytest.mark.parametrize("pattern,lengths", CASES)
def test_values(pattern, lengths):
    t = t_rearrange(torch.tensor(X), pattern, **lengths)
    e = e_rearrange(ember.tensor(X), pattern, **lengths)
    assert tuple(e.shape) == tuple(t.shape)
    np.testing.assert_array_equal(e.numpy(), t.numpy())


def test_list_of_tensors_and_grad():
    parts = [X[0], X[1]]
    t = t_rearrange([torch.tensor(p) for p in parts], "n c h w -> c (n h) w")
    e = e_rearrange([ember.tensor(p) for p in parts], "n c h w -> c (n h) w")
    np.testing.assert_array_equal(e.numpy(), t.numpy())
    x = ember.tensor(X, requires_grad=True)
    (e_rearrange(x, "b c h w -> (w h) (c b)") * 2).sum().backward()
    assert x.grad.tolist() == np.full(X.shape, 2.0).tolist()


@pytest.mark.parametrize("pattern,lengths", [
    ("b c h w -> b c h", {}),
    ("b c h -> b c h", {}),
    ("b c (h w) x -> b h w c x", {}),
    ("b c (h w) x -> b h w c x", {"h": 3}),
    ("b b h w -> b h w", {}),
])
def test_errors(pattern, lengths):
    with pytest.raises(Exception) as te:
        t_rearrange(torch.tensor(X), pattern, **lengths)
    with pytest.raises(Exception) as ee:
        e_rearrange(ember.tensor(X), pattern, **lengths)
    assert type(ee.value).__name__ == type(te.value).__name__
