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


# ---- Module core behaviour, side by side with torch ----------------------------------------
import copy  # noqa: E402
import pickle  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402


def _net(lib):
    nn = lib.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 4)
            self.seq = nn.Sequential(nn.ReLU(), nn.Linear(4, 2))
            self.shared = self.fc  # the same module twice
            self.scale = nn.Parameter(lib.ones(2))
            self.register_buffer("running", lib.zeros(2))
            self.register_buffer("scratch", lib.zeros(1), persistent=False)

        def forward(self, x):
            return self.seq(self.fc(x)) * self.scale + self.running
    return Net()


def _copy_weights(src_torch, dst_ember):
    dst_ember.load_state_dict({k: ember.tensor(v.detach().numpy())
                               for k, v in src_torch.state_dict().items()})


def test_registration_and_traversal_match_torch():
    e, t = _net(ember), _net(torch)
    assert [n for n, _ in e.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert [n for n, _ in e.named_buffers()] == [n for n, _ in t.named_buffers()]
    assert [n for n, _ in e.named_modules()] == [n for n, _ in t.named_modules()]
    assert [n for n, _ in e.named_modules(remove_duplicate=False)] == \
        [n for n, _ in t.named_modules(remove_duplicate=False)]
    assert [n for n, _ in e.named_parameters(prefix="net", recurse=False)] == \
        [n for n, _ in t.named_parameters(prefix="net", recurse=False)]
    assert [n for n, _ in e.named_children()] == [n for n, _ in t.named_children()]
    assert list(e.state_dict()) == list(t.state_dict())
    assert e.get_submodule("seq.1") is e.seq[1]
    assert e.get_parameter("seq.1.weight") is e.seq[1].weight
    with pytest.raises(AttributeError):
        e.get_submodule("seq.7")
    assert repr(e).replace("ember", "torch") == repr(t)


def test_forward_and_gradients_match_torch_after_state_dict_copy():
    e, t = _net(ember), _net(torch)
    _copy_weights(t, e)
    x = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    ye, yt = e(ember.tensor(x)), t(torch.tensor(x))
    np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), rtol=1e-5, atol=1e-6)
    ye.sum().backward()
    yt.sum().backward()
    for (n, pe), (_, pt) in zip(e.named_parameters(), t.named_parameters()):
        np.testing.assert_allclose(pe.grad.numpy(), pt.grad.numpy(), rtol=1e-5, atol=1e-6,
                                   err_msg=n)


def test_load_state_dict_strictness_and_messages():
    e, t = _net(ember), _net(torch)
    sd_e = e.state_dict()
    sd_t = t.state_dict()
    for sd in (sd_e, sd_t):
        sd.pop("running")
        sd["extra"] = sd["scale"] * 0
    for mod, sd in ((e, sd_e), (t, sd_t)):
        with pytest.raises(RuntimeError) as info:
            mod.load_state_dict(sd)
        assert 'Missing key(s) in state_dict: "running"' in str(info.value)
        assert 'Unexpected key(s) in state_dict: "extra"' in str(info.value)
    re_, rt = e.load_state_dict(sd_e, strict=False), t.load_state_dict(sd_t, strict=False)
    assert re_.missing_keys == rt.missing_keys and re_.unexpected_keys == rt.unexpected_keys
    bad = {k: v for k, v in e.state_dict().items()}
    bad["fc.weight"] = ember.zeros(5, 3)
    with pytest.raises(RuntimeError, match="size mismatch for fc.weight"):
        e.load_state_dict(bad)


def test_load_state_dict_assign_and_post_hook():
    e = _net(ember)
    new = {k: v.clone() + 1 for k, v in e.state_dict().items()}
    seen = []
    e.register_load_state_dict_post_hook(lambda m, keys: seen.append(tuple(keys.missing_keys)))
    e.load_state_dict(new, assign=True)
    assert e.fc.weight is not None and isinstance(e.fc.weight, ember.nn.Parameter)
    np.testing.assert_allclose(e.fc.weight.detach().numpy(), new["fc.weight"].numpy())
    assert seen and seen[0] == ()


def test_hooks_match_torch():
    def run(lib):
        m = lib.nn.Linear(3, 2)
        log = []
        m.register_forward_pre_hook(lambda mod, args: (args[0] * 2,))
        m.register_forward_hook(lambda mod, args, out: out + 1)
        m.register_forward_pre_hook(lambda mod, args, kwargs: log.append(sorted(kwargs)) or None,
                                    with_kwargs=True)
        grads = []
        m.register_full_backward_hook(lambda mod, gi, go: grads.append(
            (gi[0].detach().numpy().copy(), go[0].detach().numpy().copy())))
        return m, log, grads
    me, le, ge = run(ember)
    mt, lt, gt = run(torch)
    _copy_weights(mt, me)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    xe = ember.tensor(x, requires_grad=True)
    xt = torch.tensor(x, requires_grad=True)
    oe, ot = me(xe), mt(xt)
    np.testing.assert_allclose(oe.detach().numpy(), ot.detach().numpy(), rtol=1e-5, atol=1e-6)
    oe.sum().backward()
    ot.sum().backward()
    assert le == lt == [[]]
    np.testing.assert_allclose(ge[0][0], gt[0][0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ge[0][1], gt[0][1], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_train_eval_zero_grad_requires_grad_and_apply():
    e = _net(ember)
    e.eval()
    assert not any(m.training for m in e.modules())
    e.train()
    e(ember.ones(1, 3)).sum().backward()
    e.zero_grad()
    assert all(p.grad is None for p in e.parameters())
    e(ember.ones(1, 3)).sum().backward()
    e.zero_grad(set_to_none=False)
    assert all(float(p.grad.abs().sum()) == 0 for p in e.parameters())
    e.requires_grad_(False)
    assert not any(p.requires_grad for p in e.parameters())
    names = []
    e.apply(lambda m: names.append(type(m).__name__))
    assert names[-1] == "Net" and names.count("Linear") == 2


def test_to_dtype_casts_floating_state_and_keeps_parameter_identity():
    e = _net(ember)
    w = e.fc.weight
    e.double()
    assert e.fc.weight is w and w.dtype is ember.float64 and e.running.dtype is ember.float64
    e.to(ember.float32)
    assert w.dtype is ember.float32
    with pytest.raises(TypeError, match="floating point or complex"):
        e.to(ember.int64)


def test_deepcopy_and_pickle_round_trip():
    e = _net(ember)
    c = copy.deepcopy(e)
    assert c.fc is c.shared and c.fc.weight is not e.fc.weight
    np.testing.assert_array_equal(c.fc.weight.detach().numpy(), e.fc.weight.detach().numpy())
    m = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.BatchNorm1d(4))
    p = pickle.loads(pickle.dumps(m))
    x = ember.ones(2, 3)
    m.eval()
    p.eval()
    np.testing.assert_allclose(p(x).detach().numpy(), m(x).detach().numpy())
    assert isinstance(p[0].weight, ember.nn.Parameter) and p[0].weight.requires_grad
    assert list(p.state_dict()) == list(m.state_dict())


def test_registration_errors_match_torch():
    for lib in (ember, torch):
        m = lib.nn.Module()
        with pytest.raises(KeyError):
            m.register_buffer("a.b", lib.zeros(1))
        with pytest.raises(TypeError):
            m.register_parameter("w", lib.zeros(1))  # a plain tensor is not a Parameter
        m.w = lib.nn.Parameter(lib.zeros(1))
        with pytest.raises(TypeError):
            m.w = lib.zeros(1)
        with pytest.raises(AttributeError):
            m.missing
