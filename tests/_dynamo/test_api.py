"""The API surface of ember.compile, with torch's names (issue 18).

``ember.compile`` as call and decorator on functions, methods and modules
(`OptimizedModule`: ``_orig_mod``, state_dict keys as torch's, parameters, train/eval);
``Module.compile()``; ``disable=True``; mode/options checks; backends (callables, names,
``list_backends``, errors); ``ember._dynamo.explain``, ``reset``, ``config``,
``graph_break``; the ``ember.compiler`` namespace; ``ember._dynamo.testing``; and the
names under ``ember.compat`` (``torch.compile``, ``torch._dynamo``, ``torch.compiler``).
"""
import functools
import os
import subprocess
import sys

import pytest

import ember
import ember.nn as nn
from ember._dynamo import config
from ember._dynamo.eval_frame import OptimizedModule
from ember._dynamo.exc import BackendCompilerFailed, InvalidBackend
from ember._dynamo.testing import CompileCounter, CompileCounterWithBackend
from dyn_helpers import compiled, same

HERE = os.path.abspath(__file__)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))


def _line(marker):
    with open(HERE, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if line.rstrip().endswith(f"# {marker}"):
                return n
    raise LookupError(marker)


# ---- compile on functions and methods ----------------------------------------------------------
def test_compile_as_call_and_as_decorators():
    cnt = CompileCounter()

    def f(x, *, k=1):
        """doc of f"""
        return x * k

    cf = ember.compile(f, backend=cnt)
    assert cf(ember.ones(2), k=3).tolist() == [3.0, 3.0]
    assert cf.__name__ == "f" and cf.__doc__ == "doc of f"
    assert cf._torchdynamo_orig_callable is f

    @ember.compile(backend=cnt, dynamic=False)
    def g(x):
        return x + 1

    assert g(ember.zeros(2)).tolist() == [1.0, 1.0]

    @ember.compile
    def h(x):
        return x - 1

    assert h(ember.zeros(2)).tolist() == [-1.0, -1.0]
    assert cnt.frame_count == 2


def test_backend_none_is_the_default_and_name_names_the_function(capsys):
    from ember._dynamo import logs
    cf = ember.compile(lambda x: x + 1, backend=None, name="train_step")
    assert cf.cache.backend_name == "inductor" and cf.cache.name == "train_step"
    logs.set_logs(recompiles=True)
    try:
        cf(ember.ones(1))
        cf(ember.ones(1, dtype=ember.float64))
    finally:
        logs.set_logs()
    assert "Recompiling function train_step:" in capsys.readouterr().err
    m = nn.Linear(1, 1)
    m.compile(backend=None, name="linear")
    assert m._compiled_call_impl.cache.name == "linear"


def test_compile_decorates_methods():
    cnt = CompileCounter()

    class Accumulator:
        def __init__(self):
            self.total = ember.zeros(2)
            self.calls = 0

        @ember.compile(backend=cnt)
        def add(self, x):
            self.calls += 1
            self.total = self.total + x
            return self.total * 2

    a, b = Accumulator(), Accumulator()
    a.add(ember.ones(2))
    r = a.add(ember.ones(2))
    b.add(ember.full((2,), 5.0))
    assert r.tolist() == [4.0, 4.0] and a.calls == 2
    assert b.total.tolist() == [5.0, 5.0]
    assert cnt.frame_count == 1


def test_disable_true_returns_the_object_itself():
    def f(x):
        return x

    m = nn.Linear(2, 2)
    assert ember.compile(f, disable=True) is f
    assert ember.compile(m, disable=True) is m
    assert ember.compile(disable=True)(f) is f


def test_mode_and_options_checks_match_torch():
    import torch
    f = lambda x: x  # noqa: E731
    cases = [dict(mode="bogus"), dict(mode="default", options={}),
             dict(options={"no_such_option": 1})]
    for kw in cases:
        with pytest.raises(RuntimeError) as ours:
            ember.compile(f, **kw)
        with pytest.raises(RuntimeError) as theirs:
            torch.compile(f, **kw)
        assert str(ours.value).split(",")[0].split(" should")[0] == \
            str(theirs.value).split(",")[0].split(" should")[0]
    for mode in ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"):
        cf = ember.compile(lambda x: x + 1, mode=mode, backend="eager")
        assert cf(ember.ones(1)).item() == 2.0
    cf = ember.compile(lambda x: x + 1, options={"cc": None})
    assert cf(ember.ones(1)).item() == 2.0


def test_unknown_backend():
    import torch
    with pytest.raises(InvalidBackend, match="nope"):
        ember.compile(lambda x: x, backend="nope")
    with pytest.raises(Exception) as theirs:
        torch.compile(lambda x: x, backend="nope")
    assert type(theirs.value).__name__ == InvalidBackend.__name__


# ---- modules -------------------------------------------------------------------------------------
def _two_layer(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.BatchNorm1d(4), lib.nn.Linear(4, 2))


def test_optimized_module_mirrors_torch():
    import torch
    m = _two_layer(ember)
    om = ember.compile(m, backend="eager")
    tm = _two_layer(torch)
    tom = torch.compile(tm, backend="eager")
    assert isinstance(om, OptimizedModule) and isinstance(om, nn.Module)
    assert om._orig_mod is m
    assert list(om.state_dict()) == list(tom.state_dict())
    assert [n for n, _ in om.named_parameters()] == [n for n, _ in tom.named_parameters()]
    assert all(a is b for a, b in zip(om.parameters(), m.parameters()))
    assert [n for n, _ in om.named_buffers()] == [n for n, _ in tom.named_buffers()]
    assert len(om) == len(m) == 3
    assert om._orig_mod[0] is m[0]  # om[0] is a TypeError in torch too
    assert "_orig_mod" in repr(om)
    x = ember.randn(5, 3)
    same(om(x), tom(torch.from_numpy(x.numpy())), rtol=1e-5, atol=1e-6)


def test_optimized_module_train_eval_and_attributes_go_to_the_original():
    m = _two_layer(ember)
    om, cnt = compiled(m)
    om.eval()
    assert not m.training and not m[1].training and not om.training
    m.train()
    assert om.training
    om.extra = 5
    assert m.extra == 5
    om.new_scale = nn.Parameter(ember.ones(1))
    assert "new_scale" in dict(m.named_parameters())
    x = ember.randn(4, 3)
    om(x)
    om.eval()
    om(x)
    assert cnt.frame_count == 2


def test_optimized_module_state_dict_round_trip():
    m = _two_layer(ember)
    om = ember.compile(m, backend="eager")
    sd = om.state_dict()
    assert all(k.startswith("_orig_mod.") for k in sd)
    other = ember.compile(_two_layer(ember), backend="eager")
    with ember.no_grad():
        for p in other.parameters():
            p.fill_(0.0)
    other.load_state_dict(sd)
    x = ember.randn(4, 3)
    om.eval()
    other.eval()
    same(other(x), om(x))
    plain = _two_layer(ember)
    plain.load_state_dict(m.state_dict())  # the original's keys have no prefix


def test_hooks_on_the_original_and_on_the_wrapper_run():
    m = nn.Linear(2, 2)
    om = ember.compile(m, backend="eager")
    seen = []
    m.register_forward_hook(lambda mod, args, out: seen.append("inner"))
    om.register_forward_hook(lambda mod, args, out: seen.append("outer"))
    om(ember.ones(1, 2))
    assert seen == ["inner", "outer"]


def test_module_compile_in_place():
    import torch
    m = _two_layer(ember)
    cnt = CompileCounter()
    assert m.compile(backend=cnt) is None
    x = ember.randn(4, 3)
    ref = _two_layer(ember)
    same(m(x), ref(x), rtol=1e-5, atol=1e-6)
    m(x)
    assert cnt.frame_count == 1
    tm = _two_layer(torch)
    tm.compile(backend="eager")
    assert list(m.state_dict()) == list(tm.state_dict())  # no prefix: the module itself
    m2 = nn.Linear(2, 2)
    cnt2 = CompileCounter()
    m2.compile(backend=cnt2, disable=True)
    m2(ember.ones(1, 2))
    assert cnt2.frame_count == 0
    with pytest.raises(RuntimeError, match="mode"):
        nn.Linear(2, 2).compile(mode="bogus")


def test_compiled_modules_deep_copy_and_pickle_with_a_fresh_cache():
    import copy
    import io
    m = _two_layer(ember)
    cnt = CompileCounter()
    om = ember.compile(m, backend=cnt)
    x = ember.randn(4, 3)
    om.eval()
    ref = om(x)
    twin = copy.deepcopy(om)
    assert isinstance(twin, OptimizedModule) and twin._orig_mod is not m
    same(twin(x), ref)
    assert twin._compiled_call.cache is not om._compiled_call.cache
    buf = io.BytesIO()
    inplace = _two_layer(ember).eval()
    inplace.compile(backend="eager")
    ember.save({"om": ember.compile(m, backend="eager"), "inplace": inplace}, buf)
    buf.seek(0)
    loaded = ember.load(buf, weights_only=False)
    same(loaded["om"](x), ref)
    same(loaded["inplace"](x), inplace(x))
    assert loaded["inplace"]._compiled_call_impl.module is loaded["inplace"]


# ---- backends --------------------------------------------------------------------------------------
def test_backend_receives_graph_module_and_real_example_inputs():
    from ember.fx import GraphModule
    got = {}

    def backend(gm, example_inputs):
        got["gm"], got["inputs"] = gm, list(example_inputs)
        return CompileCounter()(gm, example_inputs)

    x = ember.arange(3.0)
    ember.compile(lambda t: t.exp() + 1, backend=backend)(x)
    assert isinstance(got["gm"], GraphModule)
    assert len(got["inputs"]) == 1 and got["inputs"][0].tolist() == [0.0, 1.0, 2.0]
    targets = [getattr(n.target, "name", None) for n in got["gm"].graph.nodes
               if n.op == "call_function"]
    assert targets == ["exp", "add"]


def test_backend_errors_are_wrapped():
    def broken(gm, example_inputs):
        raise ValueError("cannot compile this")

    cf = ember.compile(lambda x: x + 1, backend=broken)
    with pytest.raises(BackendCompilerFailed, match="cannot compile this"):
        cf(ember.ones(2))


def test_list_and_register_backends():
    names = ember._dynamo.list_backends()
    assert {"eager", "aot_eager", "inductor"} <= set(names)
    assert names == ember.compiler.list_backends()
    calls = []

    @ember._dynamo.register_backend(name="test_api_recording")
    def recording(gm, example_inputs):
        calls.append(gm)
        return CompileCounter()(gm, example_inputs)

    assert "test_api_recording" in ember._dynamo.list_backends()
    cf = ember.compile(lambda x: x * 4, backend="test_api_recording")
    assert cf(ember.ones(1)).item() == 4.0 and len(calls) == 1


def test_compile_counter_with_backend():
    rec = CompileCounterWithBackend("aot_eager")
    cf = ember.compile(lambda x: (x * 2).sum(), backend=rec)
    w = ember.ones(3, requires_grad=True)
    cf(w).backward()
    assert rec.frame_count == 1 and rec.op_count >= 2 and len(rec.graphs) == 1
    assert w.grad.tolist() == [2.0, 2.0, 2.0]


def test_optimize_is_the_older_spelling():
    cnt = CompileCounter()
    cf = ember._dynamo.optimize(cnt)(lambda x: x + 2)
    assert cf(ember.ones(1)).item() == 3.0 and cnt.frame_count == 1
    strict = ember._dynamo.optimize("eager", nopython=True)(lambda x: x + float(x.sum()))
    with pytest.raises(ember._dynamo.Unsupported):
        strict(ember.ones(1))


# ---- explain, reset, config ----------------------------------------------------------------------------
def _explained(x):
    y = x.sin().cos()
    if y.sum() > 0:  # EXPLAIN-BREAK
        y = y * 2
    ember._dynamo.graph_break()  # EXPLAIN-EXPLICIT
    return y.exp()


def test_explain_counts_graphs_breaks_and_ops():
    out = ember._dynamo.explain(_explained)(ember.ones(3))
    assert out.graph_count == 3
    assert out.graph_break_count == 2
    assert len(out.break_reasons) == 2
    assert out.break_reasons[0].user_stack[-1] == f"{HERE}:{_line('EXPLAIN-BREAK')}"
    assert out.break_reasons[1].user_stack[-1] == f"{HERE}:{_line('EXPLAIN-EXPLICIT')}"
    assert "graph_break" in out.break_reasons[1].reason
    assert [[op.name for op in ops] for ops in out.ops_per_graph] == \
        [["sin", "cos", "sum", "gt"], ["mul"], ["exp"]]
    assert out.op_count == 6
    assert out.out_guards and "l_x" in out.out_guards[0]
    text = str(out)
    assert "Graph Count: 3" in text and "Graph Break Count: 2" in text


def test_explain_modules_and_compiled_functions_and_without_breaks():
    m = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    out = ember._dynamo.explain(m)(ember.ones(1, 2))
    assert out.graph_count == 1 and out.graph_break_count == 0
    cf = ember.compile(lambda x: x + 1, backend="eager")
    out = ember._dynamo.explain(cf, ember.ones(2))
    assert out.graph_count == 1 and [op.name for op in out.ops_per_graph[0]] == ["add"]


def test_reset_forgets_compiled_graphs():
    cf, cnt = compiled(lambda x: x * 3)
    cf(ember.ones(2))
    cf(ember.ones(2))
    assert cnt.frame_count == 1
    ember._dynamo.reset()
    cf(ember.ones(2))
    assert cnt.frame_count == 2
    ember.compiler.reset()
    cf(ember.ones(2))
    assert cnt.frame_count == 3


def test_config_names_and_patch():
    import torch._dynamo.config as tconfig
    for name in ("automatic_dynamic_shapes", "assume_static_by_default", "cache_size_limit",
                 "capture_scalar_outputs", "specialize_int", "suppress_errors", "verbose"):
        assert hasattr(config, name) and hasattr(tconfig, name), name
    before = config.cache_size_limit
    with config.patch(cache_size_limit=1):
        assert config.cache_size_limit == 1
    assert config.cache_size_limit == before

    @config.patch("automatic_dynamic_shapes", False)
    def static_only():
        return config.automatic_dynamic_shapes

    assert static_only() is False and config.automatic_dynamic_shapes is True
    with pytest.raises(AttributeError):
        config.patch(no_such_setting=1)
    with config.patch(recompile_limit=5):  # torch's newer name
        assert config.cache_size_limit == config.recompile_limit == 5
    assert config.recompile_limit == before


def test_graph_break_outside_compiled_code_does_nothing():
    ember._dynamo.graph_break()
    cf, cnt = compiled(lambda x: (x + 1, ember._dynamo.graph_break(), x * 2)[::2])
    a, b = cf(ember.ones(1))
    assert (a.item(), b.item()) == (2.0, 2.0) and cnt.frame_count == 2


# ---- ember.compiler -----------------------------------------------------------------------------
def test_compiler_namespace():
    import torch.compiler as tc
    for name in ("compile", "reset", "allow_in_graph", "assume_constant_result", "disable",
                 "is_compiling", "is_dynamo_compiling", "is_exporting", "list_backends",
                 "set_stance", "cudagraph_mark_step_begin"):
        assert hasattr(ember.compiler, name) and hasattr(tc, name), name
    assert ember.compiler.compile is ember.compile
    seen = []
    cf = ember.compile(lambda x: seen.append(ember.compiler.is_compiling()) or x + 1,
                       backend="eager")
    cf(ember.ones(1))
    assert seen == [True] and not ember.compiler.is_compiling()
    assert not ember.compiler.is_exporting()
    ember.compiler.cudagraph_mark_step_begin()


def test_allow_in_graph_and_assume_constant_result_keep_the_meaning():
    calls = []

    @ember.compiler.allow_in_graph
    def scaled(t):
        return t * 5

    @ember.compiler.assume_constant_result
    def factor():
        calls.append(1)
        return 2.0

    cf, cnt = compiled(lambda x: scaled(x) * factor())
    for _ in range(2):
        assert cf(ember.ones(1)).item() == 10.0
    assert len(calls) == 2 and cnt.frame_count == 1


def test_compiler_disable_as_decorator_with_reason():
    @ember.compiler.disable(reason="talks to a C library")
    def outside(t):
        return t + float(ember.compiler.is_compiling())

    cf, cnt = compiled(lambda x: outside(x * 2) * 3)
    assert cf(ember.ones(1)).item() == 6.0
    out = ember._dynamo.explain(lambda x: outside(x * 2) * 3)(ember.ones(1))
    assert out.graph_break_count == 1 and "talks to a C library" in out.break_reasons[0].reason


def test_set_stance_force_eager():
    cf, cnt = compiled(lambda x: x + 1)
    with ember.compiler.set_stance("force_eager"):
        assert cf(ember.ones(1)).item() == 2.0
    assert cnt.frame_count == 0
    cf(ember.ones(1))
    assert cnt.frame_count == 1

    @ember.compiler.set_stance("force_eager")
    def run_eagerly(x):
        return cf(x * 2)

    ember._dynamo.reset()
    assert run_eagerly(ember.ones(1)).item() == 3.0 and cnt.frame_count == 1
    ember.compiler.set_stance("force_eager")
    try:
        cf(ember.ones(1))
        assert cnt.frame_count == 1
    finally:
        ember.compiler.set_stance("default")
    with pytest.raises(ValueError, match="the stances are"):
        ember.compiler.set_stance("no_such_stance")
    with pytest.raises(RuntimeError, match="force_backend"):
        ember.compiler.set_stance("force_eager", force_backend="eager")


def test_set_stance_force_backend_and_then_compile():
    """force_backend: graphs compiled under it use that backend; eager_then_compile runs
    the first call eagerly (is_compiling() False), aot_eager_then_compile through
    aot_eager, and both compile from the second call (torch's stances)."""
    used = CompileCounter()
    cf = ember.compile(lambda x: x * 2, backend="eager")
    with ember.compiler.set_stance("default", force_backend=used):
        assert cf(ember.ones(2)).tolist() == [2.0, 2.0]
    assert used.frame_count == 1
    with pytest.raises(Exception, match="nope"):
        ember.compiler.set_stance("default", force_backend="nope")

    def f(x):
        return x + 1 if ember.compiler.is_compiling() else x - 1
    for stance in ("eager_then_compile", "aot_eager_then_compile"):
        cnt = CompileCounter()
        g = ember.compile(f, backend=cnt)
        with ember.compiler.set_stance(stance):
            first, second = g(ember.zeros(1)), g(ember.zeros(1))
        assert second.item() == 1.0 and cnt.frame_count == 1
        assert first.item() == (-1.0 if stance == "eager_then_compile" else 1.0)


def test_set_stance_on_recompile():
    """fail_on_recompile raises where a graph would be compiled again; eager_on_recompile
    runs those calls eagerly and keeps using the graphs compiled already (as torch)."""
    cnt = CompileCounter()
    cf = ember.compile(lambda x: x + 1, backend=cnt)
    cf(ember.ones(3))
    with ember.compiler.set_stance("fail_on_recompile"):
        assert cf(ember.ones(3)).tolist() == [2.0, 2.0, 2.0]
        with pytest.raises(RuntimeError, match="fail_on_recompile"):
            cf(ember.ones(2, 2))
    with ember.compiler.set_stance("eager_on_recompile"):
        out = cf(ember.ones(2, 2, dtype=ember.float64))
        assert out.dtype == ember.float64 and out.tolist() == [[2.0, 2.0], [2.0, 2.0]]
        assert cf(ember.ones(3)).tolist() == [2.0, 2.0, 2.0]
    assert cnt.frame_count == 1


# ---- ember.compat ----------------------------------------------------------------------------------
_COMPAT = r"""
import ember.compat
ember.compat.install()
import torch
import torch._dynamo
import torch._dynamo.config
from torch._dynamo.testing import CompileCounter
import torch.compiler
import torch._logging
cnt = CompileCounter()
@torch.compile(backend=cnt)
def f(x):
    assert torch.compiler.is_compiling() and torch._dynamo.is_compiling()
    return x * 2
assert f(torch.ones(2)).tolist() == [2.0, 2.0]
assert cnt.frame_count == 1
torch._logging.set_logs(recompiles=True)
f(torch.ones(2, dtype=torch.float64))
torch._dynamo.reset()
torch._dynamo.config.cache_size_limit = 4
m = torch.compile(torch.nn.Linear(2, 1), backend="eager")
assert list(m.state_dict()) == ["_orig_mod.weight", "_orig_mod.bias"]
print("explain", torch._dynamo.explain(lambda x: x.sin())(torch.ones(1)).graph_count)
print("ok")
"""


def test_names_under_compat():
    env = dict(os.environ, PYTHONPATH=ROOT)
    env.pop("EMBER_LOGS", None)
    env.pop("TORCH_LOGS", None)
    out = subprocess.run([sys.executable, "-c", _COMPAT], env=env, cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["explain", "1", "ok"]
    assert "[__recompiles]" in out.stderr and "dtype" in out.stderr


_ = functools


def test_disable_on_a_module_as_torch():
    import copy
    import torch

    class Outer(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(2, 2)
            self.b = ember.compiler.disable(nn.ReLU())

        def forward(self, x):
            return self.b(self.a(x)) * 2

    o = Outer()
    assert isinstance(o.b, OptimizedModule)
    cf, cnt = compiled(o)
    x = ember.randn(3, 2)
    same(cf(x), o(x))
    assert cnt.frame_count == 2  # linear | relu eagerly | mul
    assert ember._dynamo.explain(o)(x).graph_break_count == 1
    tb = torch.compiler.disable(torch.nn.ReLU())
    assert type(tb).__name__ == "OptimizedModule"
    assert list(ember.compiler.disable(nn.Linear(2, 2)).state_dict()) == \
        list(torch.compiler.disable(torch.nn.Linear(2, 2)).state_dict())
    twin = copy.deepcopy(o.b)
    assert isinstance(twin, OptimizedModule)
    same(twin(x), o.b(x))
