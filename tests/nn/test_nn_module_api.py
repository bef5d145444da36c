"""Module API details against torch: container reprs, top-level functional names, threads."""
import torch

import ember


def test_modulelist_repr_groups_repeated_children_like_torch():
    def build(lib):
        nn = lib.nn
        return nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 2)])
    assert repr(build(ember)) == repr(build(torch))
    assert repr(ember.nn.ModuleList()) == repr(torch.nn.ModuleList())


def test_uninitialized_parameter_accepts_dtype():
    p = ember.nn.UninitializedParameter(dtype=ember.float64)
    p.materialize((2, 3))
    assert type(p) is ember.nn.Parameter and p.dtype is ember.float64 and p.shape == (2, 3)


def test_top_level_functional_names_exist_where_torch_has_them():
    for name in ("relu", "selu", "celu", "prelu", "conv2d", "layer_norm", "embedding",
                 "cosine_similarity", "pixel_shuffle", "max_pool2d", "threshold"):
        assert hasattr(torch, name)
        assert getattr(ember, name) is getattr(ember.nn.functional, name)
    x = ember.tensor([-1.0, 2.0])
    assert ember.relu(x).tolist() == [0.0, 2.0]


def test_set_num_threads_round_trip():
    before = ember.get_num_threads()
    ember.set_num_threads(1)
    assert ember.get_num_threads() == 1
    ember.set_num_threads(before)
    assert ember.get_num_threads() == before


def test_creation_functions_accept_size_keyword():
    assert ember.zeros(size=(2, 3)).shape == torch.zeros(size=(2, 3)).shape
    assert ember.rand(size=(4,)).shape == (4,)
    assert ember.empty(size=[1, 2]).shape == (1, 2)
