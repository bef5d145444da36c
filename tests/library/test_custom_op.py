"""ember.library.custom_op: eager values, one node under ember.compile, autograd, mutation,
schemas, and the errors torch raises.  torch is the oracle where it has the same API."""
import numpy as np
import pytest
import torch

import ember
from ember._core.op import REGISTRY


def _capture(fn, *inputs):
    gms = []

    def backend(gm, example_inputs):
        gms.append(gm)
        return gm.forward
    out = ember.compile(fn, backend=backend, fullgraph=True)(*inputs)
    return out, gms


def _targets(gm):
    return [n.target for n in gm.graph.nodes if n.op == "call_function"]


@ember.library.custom_op("emtest::scaled_relu", mutates_args=())
def scaled_relu(x: ember.Tensor, scale: float = 2.0) -> ember.Tensor:
    scaled_relu.calls += 1
    return ember.relu(x) * scale


scaled_relu.calls = 0


@scaled_relu.register_fake
def _(x, scale=2.0):
    return ember.empty_like(x)


@torch.library.custom_op("emtest::scaled_relu", mutates_args=())
def t_scaled_relu(x: torch.Tensor, scale: float = 2.0) -> torch.Tensor:
    return torch.relu(x) * scale


def test_eager_value_and_namespace_handle():
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    want = t_scaled_relu(torch.tensor(x), 3.0).numpy()
    np.testing.assert_allclose(scaled_relu(ember.tensor(x), 3.0).numpy(), want)
    np.testing.assert_allclose(ember.ops.emtest.scaled_relu(ember.tensor(x), 3.0).numpy(), want)
    np.testing.assert_allclose(ember.ops.emtest.scaled_relu.default(ember.tensor(x), scale=3.0)
                               .numpy(), want)
    assert ember.ops.emtest.scaled_relu.overloads() == ["default"]
    assert str(ember.ops.emtest.scaled_relu.default) == str(torch.ops.emtest.scaled_relu.default)
    assert repr(scaled_relu) == repr(t_scaled_relu) == "<CustomOpDef(emtest::scaled_relu)>"
    assert scaled_relu._opoverload is ember.ops.emtest.scaled_relu.default
    assert str(scaled_relu._opoverload) == str(t_scaled_relu._opoverload)


def test_schema_inferred_like_torch():
    ours = ember.ops.emtest.scaled_relu.default._schema
    theirs = torch.ops.emtest.scaled_relu.default._schema
    assert ours.name == theirs.name == "emtest::scaled_relu"
    assert [a.name for a in ours.arguments] == [a.name for a in theirs.arguments]
    assert ours.arguments[1].default_value == theirs.arguments[1].default_value == 2.0
    assert ours.is_mutable is theirs.is_mutable is False


def test_compile_records_one_node_and_equals_eager():
    x = ember.randn(5, 3)

    def f(x):
        return ember.cos(ember.ops.emtest.scaled_relu(ember.sin(x), 0.5))
    want = f(x)
    got, gms = _capture(f, x)
    assert len(gms) == 1
    targets = _targets(gms[0])
    op = REGISTRY["emtest::scaled_relu"]
    assert targets.count(op) == 1
    assert "emtest::scaled_relu" in str(gms[0].graph)
    # the graph records the op, not the ops inside the user's function
    assert REGISTRY["relu"] not in targets and REGISTRY["mul"] not in targets
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    node = next(n for n in gms[0].graph.nodes if n.target is op)
    assert node.kwargs == {"scale": 0.5}
    assert tuple(node.meta["val"].shape) == (5, 3)


def test_compiled_graph_runs_the_user_function():
    x = ember.randn(4)
    before = scaled_relu.calls
    gms = _capture(lambda x: scaled_relu(x) + 1, x)[1]
    ran = scaled_relu.calls - before
    assert ran >= 1  # the graph ran the function for the compiled call
    out = gms[0](x)
    np.testing.assert_allclose(out[0].numpy(), (ember.relu(x) * 2 + 1).numpy(), rtol=1e-6)
    assert scaled_relu.calls - before == ran + 1


def test_fake_gives_shape_without_running_function():
    @ember.library.custom_op("emtest::row_sums", mutates_args=())
    def row_sums(x: ember.Tensor) -> ember.Tensor:
        return x.sum(1)

    @row_sums.register_fake
    def _(x):
        return x.new_empty(x.shape[0])
    op = REGISTRY["emtest::row_sums"]
    from ember._core.meta import TensorMeta
    assert op.shape(TensorMeta((7, 3), ember.float32)) == ((7,), ember.float32)


def test_register_autograd_matches_finite_differences():
    @ember.library.custom_op("emtest::cube", mutates_args=())
    def cube(x: ember.Tensor) -> ember.Tensor:
        return x * x * x

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 3 * x * x
    cube.register_autograd(backward, setup_context=setup_context)
    x = ember.randn(4, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(cube, (x,))
    y = cube(x)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 3 * x.detach().numpy() ** 2)


def test_register_autograd_with_two_tensor_inputs_and_a_scalar_torch_oracle():
    @ember.library.custom_op("emtest::axpy", mutates_args=())
    def axpy(a: float, x: ember.Tensor, y: ember.Tensor) -> ember.Tensor:
        return a * x + y

    @torch.library.custom_op("emtest::axpy", mutates_args=())
    def t_axpy(a: float, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return a * x + y

    def bwd(ctx, g):
        return None, g * ctx.a, g

    def setup(ctx, inputs, output):
        ctx.a = inputs[0]
    ember.library.register_autograd("emtest::axpy", bwd, setup_context=setup)
    torch.library.register_autograd("emtest::axpy", bwd, setup_context=setup)
    xv, yv = np.arange(3.0), np.ones(3)
    ex, ey = ember.tensor(xv, requires_grad=True), ember.tensor(yv, requires_grad=True)
    tx, ty = torch.tensor(xv, requires_grad=True), torch.tensor(yv, requires_grad=True)
    (axpy(2.5, ex, ey) ** 2).sum().backward()
    (t_axpy(2.5, tx, ty) ** 2).sum().backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy())
    np.testing.assert_allclose(ey.grad.numpy(), ty.grad.numpy())
    assert ember.autograd.gradcheck(lambda x, y: axpy(0.5, x, y),
                                    (ex.detach().requires_grad_(), ey.detach().requires_grad_()))


def test_backward_without_formula_raises_like_torch():
    @ember.library.custom_op("emtest::noformula", mutates_args=())
    def noformula(x: ember.Tensor) -> ember.Tensor:
        return x.clone()

    @torch.library.custom_op("emtest::noformula", mutates_args=())
    def t_noformula(x: torch.Tensor) -> torch.Tensor:
        return x.clone()
    with pytest.raises(RuntimeError) as want:
        t_noformula(torch.ones(2, requires_grad=True)).sum().backward()
    with pytest.raises(RuntimeError) as got:
        noformula(ember.ones(2, requires_grad=True)).sum().backward()
    assert str(got.value) == str(want.value)


def test_mutates_args_writes_in_place_eager_and_compiled():
    @ember.library.custom_op("emtest::add_into", mutates_args={"out"})
    def add_into(x: ember.Tensor, out: ember.Tensor) -> None:
        out.add_(x)
    assert ember.ops.emtest.add_into.default._schema.is_mutable
    assert str(ember.ops.emtest.add_into.default._schema) == \
        "emtest::add_into(Tensor x, Tensor(a0!) out) -> ()"
    x, acc = ember.ones(3), ember.zeros(3)
    assert add_into(x, acc) is None
    add_into(x, acc)
    np.testing.assert_array_equal(acc.numpy(), [2, 2, 2])

    acc2 = ember.zeros(3)

    def step(x, acc):
        add_into(x * 2, acc)
        return acc + 0
    got, gms = _capture(step, x, acc2)
    np.testing.assert_array_equal(acc2.numpy(), [2, 2, 2])
    np.testing.assert_array_equal(got.numpy(), [2, 2, 2])
    assert _targets(gms[0]).count(REGISTRY["emtest::add_into"]) == 1


def test_tuple_and_list_inputs_and_outputs():
    @ember.library.custom_op("emtest::split_sum", mutates_args=())
    def split_sum(xs: list[ember.Tensor], k: int) -> tuple[ember.Tensor, ember.Tensor]:
        s = xs[0]
        for t in xs[1:]:
            s = s + t
        return s, s * k
    a, b, c = ember.ones(2), ember.full((2,), 2.0), ember.full((2,), 3.0)
    s, sk = split_sum([a, b, c], 3)
    np.testing.assert_array_equal(s.numpy(), [6, 6])
    np.testing.assert_array_equal(sk.numpy(), [18, 18])
    assert str(ember.ops.emtest.split_sum.default._schema) == \
        "emtest::split_sum(Tensor[] xs, SymInt k) -> (Tensor, Tensor)"
    (got, got_k), gms = _capture(lambda a, b: split_sum([a, b], 2), a, b)
    np.testing.assert_array_equal(got_k.numpy(), [6, 6])


def test_register_kernel_per_device_and_library_define():
    lib = ember.library.Library("emtest2", "DEF")
    assert lib.define("twice(Tensor x) -> Tensor") == "twice"
    with pytest.raises(NotImplementedError, match="no implementation"):
        ember.ops.emtest2.twice(ember.ones(2))
    lib.impl("twice", lambda x: x * 2, "CPU")
    np.testing.assert_array_equal(ember.ops.emtest2.twice(ember.ones(2)).numpy(), [2, 2])
    ember.library.define("emtest2::thrice", "(Tensor x) -> Tensor")

    @ember.library.impl("emtest2::thrice", "cpu")
    def _(x):
        return x * 3
    np.testing.assert_array_equal(ember.ops.emtest2.thrice(ember.ones(1)).numpy(), [3])


def test_impl_abstract_warns_like_torch():
    ember.library.define("emtest2::ident", "(Tensor x) -> Tensor")
    torch.library.define("emtest2::ident", "(Tensor x) -> Tensor")
    with pytest.warns(FutureWarning) as want:
        torch.library.impl_abstract("emtest2::ident", lambda x: torch.empty_like(x))
    with pytest.warns(FutureWarning) as got:
        ember.library.impl_abstract("emtest2::ident", lambda x: ember.empty_like(x))
    assert str(got[0].message) == str(want[0].message)


def test_errors_match_torch():
    for lib in (torch, ember):
        with pytest.raises(ValueError, match="type annotation"):
            lib.library.custom_op("emtest::noann", mutates_args=())(lambda x: x)
    with pytest.raises(ValueError, match="namespace"):
        ember.library.custom_op("nonamespace", mutates_args=())(scaled_relu._init_fn)
    with pytest.raises(AttributeError) as want:
        torch.ops.emtest.scaled_relu.nope
    with pytest.raises(AttributeError) as got:
        ember.ops.emtest.scaled_relu.nope
    assert str(got.value) == str(want.value).replace("torch", "ember")


def test_infer_schema_like_torch():
    def f(x, ys, o, k, d, b=False):
        pass
    f_t = type(f)(f.__code__, {}, "f")
    f.__annotations__ = {"x": ember.Tensor, "ys": list[ember.Tensor], "o": ember.Tensor | None,
                         "k": list[int], "d": ember.dtype, "b": bool,
                         "return": tuple[ember.Tensor, ember.Tensor]}
    f_t.__defaults__ = (False,)
    f_t.__annotations__ = {"x": torch.Tensor, "ys": list[torch.Tensor], "o": torch.Tensor | None,
                           "k": list[int], "d": torch.dtype, "b": bool,
                           "return": tuple[torch.Tensor, torch.Tensor]}
    for mut in ({"x"}, (), "unknown"):
        assert ember.library.infer_schema(f, mutates_args=mut) == \
            torch.library.infer_schema(f_t, mutates_args=mut)


def test_get_ctx_new_dynamic_size_marks_data_dependent():
    @ember.library.custom_op("emtest::positives", mutates_args=())
    def positives(x: ember.Tensor) -> ember.Tensor:
        return x[x > 0]

    @positives.register_fake
    def _(x):
        n = ember.library.get_ctx().new_dynamic_size()
        return x.new_empty(n)
    from ember._core.meta import DataDependentShape, TensorMeta
    with pytest.raises(DataDependentShape):
        REGISTRY["emtest::positives"].shape(TensorMeta((4,), ember.float32))
    np.testing.assert_array_equal(positives(ember.tensor([1.0, -1.0, 2.0])).numpy(), [1, 2])
    with pytest.raises(RuntimeError, match="outside of a fake"):
        ember.library.get_ctx()


def test_register_vmap_rule_is_used_with_torchs_in_dims():
    @ember.library.custom_op("emtest::vsin", mutates_args=())
    def vsin(x: ember.Tensor, k: int) -> ember.Tensor:
        return ember.sin(x) * k

    @torch.library.custom_op("emtest::vsin", mutates_args=())
    def t_vsin(x: torch.Tensor, k: int) -> torch.Tensor:
        return torch.sin(x) * k
    seen = {}

    def rule(lib_op, info, in_dims, x, k):
        seen.setdefault(lib_op, []).append((info.batch_size, in_dims))
        return lib_op(x, k), in_dims[0]
    ember.library.register_vmap("emtest::vsin", lambda *a: rule(vsin, *a))
    torch.library.register_vmap("emtest::vsin", lambda *a: rule(t_vsin, *a))
    a = np.random.default_rng(1).standard_normal((4, 3)).astype(np.float32)
    got = ember.vmap(vsin, in_dims=(1, None))(ember.tensor(a), 2)
    want = torch.vmap(t_vsin, in_dims=(1, None))(torch.tensor(a), 2)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    assert seen[vsin] == seen[t_vsin] == [(3, (1, None))]


def test_register_autocast_casts_floating_inputs():
    @ember.library.custom_op("emtest::double_it", mutates_args=())
    def double_it(x: ember.Tensor, i: ember.Tensor) -> ember.Tensor:
        return x * 2 + i
    ember.library.register_autocast("emtest::double_it", "cpu", ember.bfloat16)
    x, i = ember.ones(3), ember.arange(3)
    assert double_it(x, i).dtype == ember.float32
    with ember.autocast("cpu"):
        out = double_it(x, i)
    assert out.dtype == ember.bfloat16
    np.testing.assert_array_equal(out.float().numpy(), [2, 3, 4])


def test_fallthrough_kernel_keeps_the_implementation():
    lib = ember.library.Library("emtest3", "DEF")
    lib.define("neg_it(Tensor x) -> Tensor")
    lib.impl("neg_it", lambda x: -x, "CompositeExplicitAutograd")
    lib.impl("neg_it", ember.library.fallthrough_kernel, "CPU")
    np.testing.assert_array_equal(ember.ops.emtest3.neg_it(ember.ones(2)).numpy(), [-1, -1])
    with pytest.raises(NotImplementedError, match="should never be called"):
        ember.library.fallthrough_kernel()


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_compiled_training_with_growing_sizes_matches_eager(backend):
    @ember.library.custom_op(f"emtest::cube_{backend}", mutates_args=())
    def cube(x: ember.Tensor) -> ember.Tensor:
        return x * x * x

    @cube.register_fake
    def _(x):
        return ember.empty_like(x)
    cube.register_autograd(lambda ctx, g: g * 3 * ctx.saved_tensors[0] ** 2,
                           setup_context=lambda ctx, inputs, out: ctx.save_for_backward(inputs[0]))

    def f(x):
        return (cube(x.sin()) * 2).sum()
    cf = ember.compile(f, backend=backend)
    for n in (3, 5, 7):
        x = ember.randn(n, requires_grad=True)
        y = cf(x)
        y.backward()
        x2 = x.detach().requires_grad_()
        want = f(x2)
        want.backward()
        np.testing.assert_allclose(y.item(), want.item(), rtol=1e-5)
        np.testing.assert_allclose(x.grad.numpy(), x2.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_symbolic_sizes_survive_the_shape_rule():
    gms = []

    def backend(gm, example_inputs):
        gms.append(gm)
        return gm.forward
    cf = ember.compile(lambda x: scaled_relu(x) + 1, backend=backend)
    for n in (3, 5, 7):
        cf(ember.randn(n, 2))
    node = next(n for n in gms[-1].graph.nodes if n.target is REGISTRY["emtest::scaled_relu"])
    assert [getattr(s, "expr", s) for s in node.meta["val"].shape] == ["s0", 2]


_LIBS = []


def test_composite_implicit_autograd_is_traced_through_like_torch():
    for m in (ember, torch):
        lib = m.library.Library("emtest4", "FRAGMENT")
        lib.define("softplus2(Tensor x) -> Tensor")
        lib.impl("softplus2", lambda x, m=m: m.log1p(m.exp(2 * x)), "CompositeImplicitAutograd")
        _LIBS.append(lib)  # torch unregisters a Library when it is collected
    a = np.linspace(-2, 2, 5)
    e, t = ember.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    ember.ops.emtest4.softplus2(e).sum().backward()  # no register_autograd: its ops' grads
    torch.ops.emtest4.softplus2(t).sum().backward()
    np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-12)


def test_builtin_operators_are_not_registered_over():
    with pytest.raises(ValueError, match="aten"):
        ember.library.Library("aten", "DEF")
    with pytest.raises(NotImplementedError, match="built-in"):
        ember.library.register_fake("aten::add.Tensor", lambda x, y: x)
    with pytest.raises(RuntimeError, match="does not exist"):
        ember.library.register_fake("emtest::never_defined", lambda x: x)
