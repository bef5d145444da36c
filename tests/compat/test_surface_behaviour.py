"""Behaviour of the names added for the API surface, against torch: typed tensor classes,
``autograd.Variable``, layouts, module attribute re-assignment, BCE at the boundaries."""
import pickle

import numpy as np
import pytest
import torch

import ember


# ---- typed tensor classes ------------------------------------------------------------------
TYPED = ["FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor",
         "IntTensor", "ShortTensor", "CharTensor", "ByteTensor", "BoolTensor"]


@pytest.mark.parametrize("name", TYPED)
def test_typed_tensor_constructors_match_torch(name):
    E, T = getattr(ember, name), getattr(torch, name)
    assert E.dtype.name == str(T.dtype).split(".")[1]
    for data in ([1.7, 2.0, 3.2], [[1, 0], [0, 3]], np.arange(4, dtype=np.int32)):
        e, t = E(data), T(data)
        assert e.dtype.name == str(t.dtype).split(".")[1]
        np.testing.assert_array_equal(e.float().numpy(), t.float().numpy())
    assert tuple(E(2, 3).shape) == tuple(T(2, 3).shape) == (2, 3)
    assert tuple(E(ember.Size([4])).shape) == (4,)
    assert tuple(E().shape) == tuple(T().shape) == (0,)


def test_typed_tensor_isinstance_and_type_strings():
    x = ember.randn(3)
    assert isinstance(x, ember.FloatTensor) and not isinstance(x, ember.LongTensor)
    assert isinstance(x.long(), ember.LongTensor) and isinstance(x.double(), ember.DoubleTensor)
    assert not isinstance(np.zeros(3), ember.FloatTensor)
    t = torch.randn(3)
    assert x.type() == t.type() == "torch.FloatTensor"
    assert x.type(ember.DoubleTensor).dtype is ember.float64
    assert str(t.type(torch.DoubleTensor).dtype) == "torch.float64"
    assert x.type("torch.IntTensor").dtype is ember.int32
    assert ember.LongTensor([1, 2]).type() == torch.LongTensor([1, 2]).type()


def test_typed_tensor_errors_match_torch():
    with pytest.raises(TypeError):
        torch.FloatTensor(torch.arange(3))
    with pytest.raises(TypeError):
        ember.FloatTensor(ember.arange(3))
    with pytest.raises(TypeError):
        torch.FloatTensor("a")
    with pytest.raises(TypeError, match="invalid data type 'str'"):
        ember.FloatTensor("a")
    with pytest.raises(TypeError):
        ember.FloatTensor(2, dtype=ember.float64)
    # a tensor of the same type is aliased
    x = ember.randn(3)
    y = ember.FloatTensor(x)
    y[0] = 5.0
    assert x[0].item() == 5.0


# ---- Variable ------------------------------------------------------------------------------
def test_variable_is_a_detached_alias_like_torch():
    from ember.autograd import Variable
    x = ember.randn(3, requires_grad=True)
    y = x * 2
    v = Variable(y)
    tv = torch.autograd.Variable(torch.randn(3, requires_grad=True) * 2)
    assert v.grad_fn is None and tv.grad_fn is None
    assert v.requires_grad is tv.requires_grad is False
    w = Variable(ember.ones(2), requires_grad=True)
    assert w.requires_grad and w.is_leaf
    (w * 3).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [3.0, 3.0])
    assert isinstance(x, Variable) and isinstance(torch.zeros(1), torch.autograd.Variable)
    assert tuple(Variable().shape) == tuple(torch.autograd.Variable().shape) == (0,)
    with pytest.raises(TypeError, match="has to be a tensor"):
        Variable([1, 2])
    with pytest.raises(TypeError, match="has to be a tensor"):
        torch.autograd.Variable([1, 2])
    # shares storage with its source
    src = ember.zeros(2)
    Variable(src)[1] = 4.0
    assert src[1].item() == 4.0


# ---- layouts and memory formats ------------------------------------------------------------
def test_layout_and_memory_format_objects():
    for name in ("strided", "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc"):
        assert isinstance(getattr(ember, name), ember.layout)
        assert repr(getattr(ember, name)) == "ember." + name
        assert pickle.loads(pickle.dumps(getattr(ember, name))) is getattr(ember, name)
    for name in ("contiguous_format", "preserve_format", "channels_last", "channels_last_3d"):
        assert isinstance(getattr(ember, name), ember.memory_format)
        assert repr(getattr(torch, name)) == "torch." + name
    assert ember.zeros(2).layout is ember.strided
    assert torch.zeros(2).layout is torch.strided


# ---- nn.Module: re-assigning a child keeps its place ---------------------------------------
@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_reassigning_a_child_module_keeps_its_position(lib):
    m = lib.nn.Sequential()
    m.conv1 = lib.nn.Linear(2, 2)
    m.bn = lib.nn.ReLU()
    m.fc = lib.nn.Linear(2, 1)
    m.conv1 = lib.nn.Linear(2, 3)
    assert [n for n, _ in m.named_children()] == ["conv1", "bn", "fc"]
    assert list(m.children())[0].out_features == 3
    m.w = lib.nn.Parameter(lib.zeros(1))
    m.v = lib.nn.Parameter(lib.zeros(1))
    m.w = lib.nn.Parameter(lib.ones(1))
    assert [n for n, _ in m.named_parameters(recurse=False)] == ["w", "v"]


# ---- binary_cross_entropy at probabilities 0 and 1 -----------------------------------------
def test_binary_cross_entropy_is_finite_at_the_boundaries_like_torch():
    x = [1.0, 0.0, 0.5, 1.0, 0.0, 0.25]
    y = [0.0, 1.0, 1.0, 1.0, 0.0, 0.5]
    grads = []
    for lib in (torch, ember):
        xi = lib.tensor(x, requires_grad=True)
        yi = lib.tensor(y, requires_grad=True)
        loss = lib.nn.functional.binary_cross_entropy(xi, yi, reduction="none")
        loss.sum().backward()
        grads.append((loss.detach().numpy(), xi.grad.numpy(), yi.grad.numpy()))
    for t, e in zip(*grads):
        np.testing.assert_allclose(e, t, rtol=1e-6)


# ---- top-level in-place forms, *_copy forms, constants, small predicates -------------------
INPLACE_UNARY = ["abs_", "ceil_", "cos_", "exp_", "floor_", "neg_", "negative_", "round_",
                 "sigmoid_", "sin_", "tanh_", "trunc_", "frac_", "zero_", "expm1_", "erf_"]


@pytest.mark.parametrize("name", INPLACE_UNARY)
def test_top_level_inplace_forms_match_torch(name):
    a = np.array([0.3, -1.7, 2.5], dtype=np.float32)
    t, e = torch.tensor(a), ember.tensor(a)
    rt, re_ = getattr(torch, name)(t), getattr(ember, name)(e)
    assert re_ is e and rt is t
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6)


def test_top_level_inplace_forms_with_arguments():
    for lib in (torch, ember):
        x = lib.tensor([-2.0, 0.5, 3.0])
        lib.clamp_(x, -1, 1)
        assert x.tolist() == [-1.0, 0.5, 1.0]
        lib.fill_(x, 2.0)
        assert x.tolist() == [2.0, 2.0, 2.0]


COPIES = [("t_copy", (), (2, 3)), ("transpose_copy", (0, 1), (2, 3)),
          ("permute_copy", ((1, 0),), (2, 3)), ("unsqueeze_copy", (1,), (2, 3)),
          ("squeeze_copy", (), (1, 3)), ("select_copy", (0, 1), (2, 3)),
          ("narrow_copy", (1, 0, 2), (2, 3)), ("diagonal_copy", (), (3, 3)),
          ("expand_copy", ((4, 2, 3),), (2, 3)), ("view_copy", ((3, 2),), (2, 3)),
          ("detach_copy", (), (2, 3)), ("alias_copy", (), (2, 3)),
          ("unfold_copy", (1, 2, 1), (2, 3)), ("as_strided_copy", ((2, 2), (1, 2)), (2, 3))]


@pytest.mark.parametrize("name,args,shape", COPIES, ids=[c[0] for c in COPIES])
def test_copy_forms_match_torch_and_do_not_alias(name, args, shape):
    a = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    t, e = torch.tensor(a, requires_grad=True), ember.tensor(a, requires_grad=True)
    rt, re_ = getattr(torch, name)(t, *args), getattr(ember, name)(e, *args)
    np.testing.assert_array_equal(re_.detach().numpy(), rt.detach().numpy())
    if name != "detach_copy":
        (rt * rt).sum().backward()
        (re_ * re_).sum().backward()
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy())
    with ember.no_grad():
        re_.add_(1)
    np.testing.assert_array_equal(e.detach().numpy(), a)


def test_split_forms_match_torch():
    a = np.arange(10.0, dtype=np.float32)
    for name in ("split_with_sizes", "split_with_sizes_copy"):
        rt = getattr(torch, name)(torch.tensor(a), [3, 7])
        re_ = getattr(ember, name)(ember.tensor(a), [3, 7])
        assert [x.tolist() for x in re_] == [x.tolist() for x in rt]
    for lib in (torch, ember):
        with pytest.raises(RuntimeError, match="split_sizes"):
            lib.split_with_sizes(lib.tensor(a), [3, 3])
    assert [x.tolist() for x in ember.unbind_copy(ember.eye(2))] == \
        [x.tolist() for x in torch.unbind_copy(torch.eye(2))]


def test_constants_and_predicates():
    for n in ("pi", "e", "inf", "nan", "newaxis"):
        assert repr(getattr(ember, n)) == repr(getattr(torch, n))
    for lib in (torch, ember):
        assert lib.is_nonzero(lib.tensor([1.5])) and not lib.is_nonzero(lib.tensor(0))
        with pytest.raises(RuntimeError, match="more than one value"):
            lib.is_nonzero(lib.tensor([1, 2]))
        with pytest.raises(RuntimeError, match="no values"):
            lib.is_nonzero(lib.tensor([]))
        assert lib.is_same_size(lib.zeros(2, 3), lib.ones(2, 3))
        assert not lib.is_signed(lib.zeros(2, dtype=lib.uint8))
        assert lib.get_device(lib.zeros(1)) == -1
        assert lib.fill(lib.zeros(2), 3.0).tolist() == [3.0, 3.0]
        assert lib.rsub(lib.tensor([1.0, 2.0]), 5.0, alpha=2).tolist() == [3.0, 1.0]
        assert not lib.detach(lib.zeros(2, requires_grad=True)).requires_grad


def test_nextafter_ldexp_frexp_mvlgamma_match_torch():
    a = np.array([1.0, -2.0, 0.0, 3.5], dtype=np.float32)
    b = np.array([2.0, -3.0, 1.0, 0.0], dtype=np.float32)
    np.testing.assert_array_equal(ember.nextafter(ember.tensor(a), ember.tensor(b)).numpy(),
                                  torch.nextafter(torch.tensor(a), torch.tensor(b)).numpy())
    np.testing.assert_array_equal(
        ember.ldexp(ember.tensor(a), ember.tensor([1, 2, 3, -1])).numpy(),
        torch.ldexp(torch.tensor(a), torch.tensor([1, 2, 3, -1])).numpy())
    mt, et = torch.frexp(torch.tensor(a))
    me, ee = ember.frexp(ember.tensor(a))
    np.testing.assert_array_equal(me.numpy(), mt.numpy())
    np.testing.assert_array_equal(ee.numpy(), et.numpy())
    assert ee.dtype is ember.int32 and str(et.dtype) == "torch.int32"
    x = np.array([1.6, 2.5, 4.0], dtype=np.float64)
    np.testing.assert_allclose(ember.mvlgamma(ember.tensor(x), 3).numpy(),
                               torch.mvlgamma(torch.tensor(x), 3).numpy(), rtol=1e-12)
    for lib in (torch, ember):
        assert lib.mvlgamma(lib.tensor([0.5], dtype=lib.float64), 3).tolist() == [float("inf")]
        with pytest.raises(NotImplementedError, match="'Long'"):
            lib.nextafter(lib.tensor([1]), lib.tensor([2]))
        with pytest.raises(RuntimeError):
            lib.frexp(lib.tensor([1, 2]))


# ---- backends modules, cuda.amp, testing.assert_allclose, version ----------------------------
def test_backends_are_importable_modules_with_torchs_flags():
    import importlib
    import types
    for name in ("cudnn", "cuda", "mps", "mkldnn", "mkl", "openmp", "opt_einsum", "cpu"):
        mod = importlib.import_module(f"ember.backends.{name}")
        assert isinstance(mod, types.ModuleType)
    import ember.backends.cudnn as cudnn
    for flag in ("enabled", "deterministic", "benchmark", "allow_tf32"):
        assert getattr(cudnn, flag) == getattr(torch.backends.cudnn, flag)
    assert ember.backends.cuda.matmul.allow_tf32 == torch.backends.cuda.matmul.allow_tf32
    assert ember.backends.mps.is_available() == torch.backends.mps.is_available()
    assert ember.backends.cpu.get_cpu_capability() in ("DEFAULT", "AVX2", "AVX512")
    ember.backends.cuda.enable_flash_sdp(False)
    assert not ember.backends.cuda.flash_sdp_enabled()
    ember.backends.cuda.enable_flash_sdp(True)


def test_cuda_amp_spellings_warn_and_disable_without_cuda_like_torch():
    for lib in (torch, ember):
        with pytest.warns(FutureWarning, match="deprecated"):
            with pytest.warns(UserWarning, match="CUDA is not available"):
                s = lib.cuda.amp.GradScaler()
        assert not s.is_enabled()
        with pytest.warns(FutureWarning):
            with pytest.warns(UserWarning, match="Disabling autocast"):
                with lib.cuda.amp.autocast():
                    y = lib.ones(2) @ lib.ones(2)
        assert y.dtype == lib.float32
        assert lib.cuda.amp.amp_definitely_not_available()
        # a disabled scaler passes losses and steps through unchanged
        loss = lib.tensor(3.0)
        assert s.scale(loss) is loss


def test_testing_assert_allclose_like_torch():
    for lib in (torch, ember):
        with pytest.warns(FutureWarning):
            lib.testing.assert_allclose(lib.tensor([1.0, 2.0]), [1.0, 2.0 + 1e-7])
        with pytest.warns(FutureWarning):
            with pytest.raises(AssertionError):
                lib.testing.assert_allclose(lib.tensor([1.0, 2.0]), [1.0, 2.1])
        with pytest.warns(FutureWarning):
            lib.testing.assert_allclose(lib.tensor([1, 2]), lib.tensor([1.0, 2.0]))


def test_version_is_torch_compatible():
    from packaging.version import Version
    v = Version(ember.__version__)
    assert v.local == "ember" and v.release == Version(torch.__version__).release
    assert ember.version.__version__ == ember.__version__
    assert ember.version.cuda is None and ember.version.hip is None
    assert Version(ember.__version__) >= Version("2.0")


# ---- scatter variants, fill_diagonal_, resize_ ---------------------------------------------
SCATTERS = [("select_scatter", (3, 4), (4,), (0, 1)),
            ("slice_scatter", (4, 4), (4, 2), (1, 1, 4, 2)),
            ("slice_scatter", (4, 3), (4, 3), ()),
            ("diagonal_scatter", (3, 4), (3,), (1,)),
            ("diagonal_scatter", (4, 3), (2,), (-2,)),
            ("as_strided_scatter", (3, 3), (2, 2), ((2, 2), (1, 2), 1))]


@pytest.mark.parametrize("name,shape,src_shape,args", SCATTERS,
                         ids=[f"{s[0]}{i}" for i, s in enumerate(SCATTERS)])
def test_scatter_variants_match_torch_values_and_gradients(name, shape, src_shape, args):
    rs = np.random.RandomState(0)
    a = rs.randn(*shape).astype(np.float32)
    b = rs.randn(*src_shape).astype(np.float32)
    w = rs.randn(*shape).astype(np.float32)
    res = []
    for lib in (torch, ember):
        x, s = lib.tensor(a, requires_grad=True), lib.tensor(b, requires_grad=True)
        out = getattr(lib, name)(x, s, *args)
        (out * lib.tensor(w)).sum().backward()
        res.append((out.detach().numpy(), x.grad.numpy(), s.grad.numpy()))
        meth = getattr(lib.tensor(a), name)(lib.tensor(b), *args)
        np.testing.assert_array_equal(meth.numpy(), out.detach().numpy())
    if name == "as_strided_scatter":
        # torch 2.13's input gradient here is the output gradient at the overwritten
        # elements; the input's true derivative is zero there and 1 elsewhere
        mask = np.ones(shape, np.float32)
        mask.reshape(-1)[[1, 2, 3, 4]] = 0
        np.testing.assert_allclose(res[1][1], w * mask, rtol=1e-6)
        res = [(r[0], r[2]) for r in res]
    for t, e in zip(*res):
        np.testing.assert_allclose(e, t, rtol=1e-6)


def test_scatter_variants_reject_a_wrong_src_shape():
    for lib in (torch, ember):
        with pytest.raises(RuntimeError, match="src"):
            lib.select_scatter(lib.zeros(3, 4), lib.zeros(3), 0, 1)


@pytest.mark.parametrize("shape,wrap", [((5, 3), True), ((5, 3), False), ((3, 5), True),
                                        ((3, 3, 3), False), ((7, 2), True)])
def test_fill_diagonal_matches_torch(shape, wrap):
    t, e = torch.zeros(shape), ember.zeros(shape)
    assert t.fill_diagonal_(2.5, wrap=wrap) is t
    assert e.fill_diagonal_(2.5, wrap=wrap) is e
    np.testing.assert_array_equal(e.numpy(), t.numpy())


def test_fill_diagonal_errors_match_torch():
    for lib in (torch, ember):
        with pytest.raises(RuntimeError, match="equal length"):
            lib.zeros(2, 3, 3).fill_diagonal_(1)
        with pytest.raises(RuntimeError):
            lib.zeros(3).fill_diagonal_(1)


def test_resize_keeps_elements_in_order_like_torch():
    for lib in (torch, ember):
        z = lib.arange(6.0)
        assert z.resize_(2, 2) is z
        assert z.tolist() == [[0.0, 1.0], [2.0, 3.0]]
        z.resize_(3, 2)
        assert tuple(z.shape) == (3, 2) and z[:2].tolist() == [[0.0, 1.0], [2.0, 3.0]]
        y = lib.zeros(4)
        y.resize_as_(lib.zeros(2, 2))
        assert tuple(y.shape) == (2, 2)
        with pytest.raises(RuntimeError, match="require grad"):
            lib.zeros(2, requires_grad=True).resize_(4)


# ---- Tensor flags and small methods; nn.modules path modules --------------------------------
def test_tensor_device_flags_and_small_methods_match_torch():
    t, e = torch.zeros(2, 3), ember.zeros(2, 3)
    for flag in ("is_xpu", "is_mps", "is_ipu", "is_mtia", "is_maia", "is_vulkan", "is_xla",
                 "is_mkldnn", "is_nested", "is_sparse_csr", "is_meta", "is_cuda"):
        assert getattr(e, flag) is getattr(t, flag) is False
    assert e.dim_order() == t.dim_order() == (0, 1)
    assert e.t().dim_order() == t.t().dim_order() == (1, 0)
    assert e.const_data_ptr() == e.data_ptr()
    assert e.is_nonzero is not None and ember.ones(1).is_nonzero()
    assert [x.tolist() for x in ember.arange(5).split_with_sizes([2, 3])] == \
        [x.tolist() for x in torch.arange(5).split_with_sizes([2, 3])]
    a, b = torch.zeros(2, 3), ember.zeros(2, 3)
    a.swapdims_(0, 1)
    b.swapdims_(0, 1)
    assert tuple(a.shape) == tuple(b.shape) == (3, 2)


def test_as_subclass_keeps_data_and_history():
    class Mine(ember.Tensor):
        pass
    x = ember.ones(2, requires_grad=True)
    y = (x * 3).as_subclass(Mine)
    assert type(y) is Mine and y.tolist() == [3.0, 3.0] and y.grad_fn is not None
    with pytest.raises(TypeError):
        x.as_subclass(int)


def test_nn_modules_path_modules():
    import ember.nn.modules.activation as act
    import ember.nn.modules.batchnorm as bn
    import ember.nn.modules.channelshuffle as cs
    import ember.nn.modules.instancenorm as inorm
    import ember.nn.modules.linear as lin
    assert act.MultiheadAttention is ember.nn.MultiheadAttention
    assert bn.BatchNorm2d is ember.nn.BatchNorm2d and inorm.InstanceNorm1d is \
        ember.nn.InstanceNorm1d and cs.ChannelShuffle is ember.nn.ChannelShuffle
    assert issubclass(lin.NonDynamicallyQuantizableLinear, ember.nn.Linear)
    assert torch.nn.modules.activation.MultiheadAttention is torch.nn.MultiheadAttention


# ---- default device -------------------------------------------------------------------------
# (the fake_device fixture: tests/compat/conftest.py)


def test_default_device_and_device_context_manager(fake_device):
    assert str(ember.get_default_device()) == str(torch.get_default_device()) == "cpu"
    with ember.device(fake_device) as d:
        assert d.type == fake_device
        assert str(ember.get_default_device()) == fake_device
        for t in (ember.zeros(2), ember.ones(1), ember.tensor([1.0]), ember.randn(2),
                  ember.rand(2), ember.randint(0, 3, (2,)), ember.randperm(3),
                  ember.arange(3), ember.full((2,), 1.0), ember.empty(2)):
            assert t.device.type == fake_device
        with ember.device("cpu"):
            assert ember.zeros(1).device.type == "cpu"
        assert ember.zeros(1, device="cpu").device.type == "cpu"
    assert ember.zeros(2).device.type == "cpu"
    ember.set_default_device(fake_device)
    assert ember.ones(2).device.type == fake_device
    ember.set_default_device(None)
    assert ember.ones(2).device.type == "cpu"
    # torch behaves the same way on the CPU
    with torch.device("cpu"):
        assert torch.zeros(1).device.type == "cpu"
    with pytest.raises(RuntimeError):
        ember.set_default_device("nosuchdevice")


# ---- fx: recorded arguments, GraphAppendingTracer -------------------------------------------
def _calls(gm):
    return [(n.op, getattr(n.target, "__name__", n.target), len(n.args), dict(n.kwargs))
            for n in gm.graph.nodes if n.op.startswith("call")]


def test_traced_calls_record_only_the_arguments_the_user_passed():
    import torch.fx

    import ember.fx

    def make(lib):
        def f(x, y):
            return lib.add(x, y) + lib.add(x, y, alpha=2) + lib.sum(x, 1, keepdim=True) + \
                lib.clamp(x, min=0)
        return f
    assert _calls(ember.fx.symbolic_trace(make(ember))) == \
        _calls(torch.fx.symbolic_trace(make(torch)))


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_graph_appending_tracer_builds_a_graph(lib):
    import importlib
    fx = importlib.import_module(lib.__name__ + ".fx")
    from_proxy = importlib.import_module(lib.__name__ + ".fx.proxy")
    graph = fx.Graph()
    x = graph.placeholder("x")
    p = fx.Proxy(x, from_proxy.GraphAppendingTracer(graph))
    y = lib.relu(p) * 2
    graph.output(y.node)
    gm = fx.GraphModule(lib.nn.Module(), graph)
    assert gm(lib.tensor([-1.0, 3.0])).tolist() == [0.0, 6.0]


# ---- storages -------------------------------------------------------------------------------
@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_storages_are_shared_between_views_like_torch(lib, monkeypatch):
    # torch warns about TypedStorage once per process: forget an earlier test's warning
    monkeypatch.delattr(torch.storage._warn_typed_storage_removal, "has_warned", raising=False)
    x = lib.arange(6.0)
    s = x.untyped_storage()
    assert s.nbytes() == s.size() == len(s) == 24 and s.element_size() == 1
    assert s.data_ptr() == x.data_ptr()
    for v in (x[2:], x.view(2, 3).t(), x.detach()):
        assert v.untyped_storage().data_ptr() == s.data_ptr()
        assert v.untyped_storage().nbytes() == 24
    assert str(s.device) == "cpu" and not s.is_shared()
    assert s[0] == 0 and isinstance(s[0], int)
    with pytest.warns(UserWarning, match="TypedStorage is deprecated"):
        t = x[1:].storage()
    assert t.size() == len(t) == 6 and t.element_size() == 4 and t.nbytes() == 24
    assert str(t.dtype).split(".")[1] == "float32"
    assert t[1] == 1.0 and t.tolist()[:3] == [0.0, 1.0, 2.0]
    assert t.data_ptr() == x.data_ptr()
    t[0] = 9.0
    assert x[0].item() == 9.0
    assert lib.is_storage(t) and lib.is_storage(s) and not lib.is_storage(x)
    u = lib.UntypedStorage(8)
    assert u.nbytes() == 8 and len(u.tolist()) == 8  # torch leaves the bytes uninitialised


# ---- lazy transposed convolutions ----------------------------------------------------------
@pytest.mark.parametrize("n", [1, 2, 3])
def test_lazy_conv_transpose_infers_in_channels_like_torch(n):
    shape = (2, 3) + (5,) * n
    outs = []
    for lib in (torch, ember):
        lib.manual_seed(0)
        m = getattr(lib.nn, f"LazyConvTranspose{n}d")(4, 3, stride=2, groups=1)
        x = lib.ones(shape)
        y = m(x)
        assert type(m) is getattr(lib.nn, f"ConvTranspose{n}d")
        assert m.in_channels == 3 and tuple(m.weight.shape) == (3, 4) + (3,) * n
        # same weights -> same output
        w = np.linspace(-1, 1, m.weight.numel(), dtype=np.float32).reshape(m.weight.shape)
        with lib.no_grad():
            m.weight.copy_(lib.tensor(w))
            m.bias.zero_()
        outs.append(m(x).detach().numpy())
        assert y.shape == m(x).shape
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-5, atol=1e-5)


# ---- Module: extra state, modules(remove_duplicate), Container -----------------------------
@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_module_extra_state_round_trips_like_torch(lib):
    class WithExtra(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lib.nn.Linear(2, 2)
            self.counter = 3

        def get_extra_state(self):
            return {"counter": self.counter}

        def set_extra_state(self, state):
            self.counter = state["counter"]

    outer = lib.nn.Sequential(WithExtra())
    sd = outer.state_dict()
    assert "0._extra_state" in sd and sd["0._extra_state"] == {"counter": 3}
    fresh = lib.nn.Sequential(WithExtra())
    fresh[0].counter = 0
    r = fresh.load_state_dict(sd)
    assert fresh[0].counter == 3 and not r.missing_keys and not r.unexpected_keys
    del sd["0._extra_state"]
    r = fresh.load_state_dict(sd, strict=False)
    with pytest.raises(RuntimeError, match="_extra_state"):
        fresh.load_state_dict(sd)
    with pytest.raises(RuntimeError, match="should never be called"):
        lib.nn.Module().get_extra_state()
    assert lib.nn.Module.dump_patches is False


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_modules_remove_duplicate_and_container(lib):
    shared = lib.nn.Linear(1, 1)
    m = lib.nn.Sequential(shared, shared)
    assert len(list(m.modules())) == 2
    assert len(list(m.modules(remove_duplicate=False))) == 3
    with pytest.warns(FutureWarning, match="Container"):
        c = lib.nn.Container(a=lib.nn.Linear(1, 1))
    assert [n for n, _ in c.named_children()] == ["a"]
