"""Names whose signatures now follow torch's (parameter names, order, defaults): each new
parameter does what torch's does, checked against torch."""
import re
import warnings

import numpy as np
import pytest

import ember

import torch


def _strip(src, lib):
    return src.replace(lib + ".", "LIB.").replace(lib, "LIB")


def test_tensor_split_takes_split_size():
    x = ember.arange(10)
    assert [t.tolist() for t in x.split(split_size=3)] == \
        [t.tolist() for t in torch.arange(10).split(split_size=3)]
    assert [t.shape[0] for t in x.split([2, 8], 0)] == [2, 8]
    for lib in (torch, ember):
        with pytest.raises(TypeError):
            lib.arange(4).split(split_size_or_sections=2)


def test_grad_scaler_defaults_to_cuda_and_disables_itself_on_cpu():
    for lib in (torch, ember):
        with pytest.warns(UserWarning, match="CUDA is not available.  Disabling."):
            s = lib.amp.GradScaler()
        assert not s.is_enabled()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert lib.GradScaler("cpu").is_enabled()
    assert ember.GradScaler is ember.amp.GradScaler


def test_dtype_abbr():
    for name in ("float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64",
                 "uint8", "uint16", "uint32", "uint64", "bool", "complex64", "complex128",
                 "float8_e4m3fn", "float8_e5m2", "qint8", "quint8", "qint32"):
        assert getattr(ember, name).abbr == getattr(torch, name).abbr, name


class _M:
    @staticmethod
    def build(lib):
        class M(lib.nn.Module):
            def forward(self, x, y):
                return (x + y).relu().sum(0) * 2

        return lib.fx.symbolic_trace(M())


def _with_vals(gm, lib):
    x = lib.ones(2, 3)
    for n in gm.graph.nodes:
        if n.op != "output":
            n.meta["val"] = x if n.name != "sum_1" and n.name != "mul" else lib.ones(3)
    return gm


@pytest.mark.parametrize("kw", [dict(), dict(include_stride=True), dict(include_device=True),
                                dict(include_stride=True, include_device=True, colored=True),
                                dict(expanded_def=True), dict(additional_meta=["tag"])])
def test_print_readable_and_python_code_options(kw):
    gms = {lib: _with_vals(_M.build(lib), lib) for lib in (torch, ember)}
    for lib, gm in gms.items():
        for n in gm.graph.nodes:
            if n.name == "relu":
                n.meta["tag"] = "hot"
    t = _strip(gms[torch].print_readable(False, **kw), "torch")
    e = _strip(gms[ember].print_readable(False, **kw), "ember")
    assert e == t
    code_kw = {k: v for k, v in kw.items()}
    t = gms[torch].graph.python_code("self", verbose=True, **code_kw).src
    e = gms[ember].graph.python_code("self", verbose=True, **code_kw).src
    assert _strip(e, "ember") == _strip(t, "torch")


def test_python_code_record_func_brackets_each_call():
    gm = _M.build(ember)
    src = gm.graph.python_code("self", record_func=True).src
    lines = [ln.strip() for ln in src.splitlines() if ln.strip()]
    assert lines[1].startswith("_rf = ") and "ENTER_GRAPH_PLACEHOLDER_KEY" in lines[1]
    assert any(ln.startswith("_rf_relu = ") and "'## 3 ##'" in ln for ln in lines)
    assert lines[-2] == "_rf.__exit__(None, None, None)" and lines[-1].startswith("return")
    t = torch.fx.symbolic_trace(type("M", (torch.nn.Module,), {
        "forward": lambda self, x, y: (x + y).relu().sum(0) * 2})())
    t_src = t.graph.python_code("self", record_func=True).src
    # the same node indices are marked
    assert re.findall(r"## (\d+) ##", src) == re.findall(r"## (\d+) ##", t_src)
    code = gm.graph.python_code("self", record_func=True)
    ns = dict(code.globals)
    exec(compile(code.src, "<gen>", "exec"), ns)
    from ember.profiler import profile
    with profile() as prof:
        out = ns["forward"](gm, ember.ones(2, 3), ember.ones(2, 3))
    np.testing.assert_allclose(out.numpy(), [8.0, 8.0, 8.0])
    names = {e.name for e in prof.events()}
    assert "## 3 ##" in names


def test_graph_call_function_name_and_find_nodes_sort():
    for lib in (torch, ember):
        g = lib.fx.Graph()
        x = g.placeholder("x")
        a = g.call_function(lib.relu, (x,), name="act")
        b = g.call_function(lib.relu, (a,), name="act")
        g.output(b)
        assert (a.name, b.name) == ("act", "act_1")
        assert g.find_nodes(op="call_function", target=lib.relu) == [a, b]
        assert g.find_nodes(op="call_function", target=lib.relu, sort=False) == [a, b]


def test_node_format_node_include_tensor_metadata():
    out = {}
    for lib in (torch, ember):
        g = lib.fx.Graph()
        x = g.placeholder("x")
        a = g.call_function(lib.neg, (x,))
        g.output(a)
        a.meta["val"] = lib.ones(2, 3, dtype=lib.float16).t()
        out[lib] = (a.format_node(include_tensor_metadata=True), a.format_node())
    assert out[ember][0].replace("ember", "torch") == out[torch][0]
    assert 'Tensor "f16[3, 2][1, 3]cpu"' in out[ember][0]
    assert out[ember][1].replace("ember", "torch") == out[torch][1]


def test_node_is_impure_impure_random():
    for lib in (torch, ember):
        g = lib.fx.Graph()
        x = g.placeholder("x")
        r = g.call_function(lib.rand, (3,))
        d = g.call_function(lib.nn.functional.dropout, (x,))
        a = g.call_function(lib.add, (x, x))
        g.output(x)
        assert (r.is_impure(), r.is_impure(False)) == (True, True)
        assert (d.is_impure(), a.is_impure(), a.is_impure(impure_random=False)) == \
            (False, False, False)
        assert g.eliminate_dead_code()
        assert [n.name for n in g.nodes] == ["x", "rand", "output"]
    # an operator-level random op (a captured graph's) is impure only with impure_random
    from ember._core.op import REGISTRY
    g = ember.fx.Graph()
    x = g.placeholder("x")
    m = g.call_function(REGISTRY["bernoulli"], (x,))
    g.output(x)
    assert m.is_impure() and not m.is_impure(impure_random=False)


def test_replace_all_uses_with_default_and_callback():
    for lib in (torch, ember):
        g = lib.fx.Graph()
        x, y = g.placeholder("x"), g.placeholder("y")
        a = g.call_function(lib.relu, (x,))
        b = g.call_function(lib.neg, (x,))
        g.output((a, b))
        assert x.replace_all_uses_with(y, lambda u: u is a) == [a]
        assert b.args == (x,)
        assert x.replace_all_uses_with(y) == [b]
        assert a.args == (y,) and b.args == (y,)


def test_python_code_globals_keyword():
    from ember.fx.graph import PythonCode
    pc = PythonCode(src="def f(): pass", globals={"a": 1}, _lineno_map={3: "x"})
    assert pc.globals == {"a": 1} and pc._lineno_map == {3: "x"} and pc._prologue_start == 0
    gm = _M.build(ember)
    pc = gm.graph.python_code("self")
    assert "ember" in pc.globals or pc.globals == {} or isinstance(pc.globals, dict)
    lines = pc.src.splitlines()
    for lineno, name in pc._lineno_map.items():
        assert lines[lineno - 1].strip().startswith(name) or name == "output"


def test_global_forward_hook_with_kwargs_and_always_call():
    seen = {torch: [], ember: []}
    for lib in (torch, ember):
        h1 = lib.nn.modules.module.register_module_forward_hook(
            lambda m, a, k, o, lib=lib: seen[lib].append(("kw", dict(k), float(o.sum()))),
            with_kwargs=True)

        def always(m, a, o, lib=lib):
            seen[lib].append(("always", o is None))
        h2 = lib.nn.modules.module.register_module_forward_hook(always, always_call=True)

        class Scale(lib.nn.Module):
            def forward(self, x, *, factor=1.0):
                if factor < 0:
                    raise ValueError("negative")
                return x * factor
        try:
            Scale()(lib.ones(2), factor=3.0)
            with pytest.raises(ValueError):
                Scale()(lib.ones(2), factor=-1.0)
        finally:
            h1.remove()
            h2.remove()
        Scale()(lib.ones(2))
    assert seen[ember] == seen[torch] == [("kw", {"factor": 3.0}, 6.0), ("always", False),
                                          ("always", True)]


def test_stateless_functional_call_parameters_and_buffers():
    m = ember.nn.Linear(2, 1)
    w = {"weight": ember.ones(1, 2), "bias": ember.zeros(1)}
    with pytest.warns(FutureWarning):
        out = ember.nn.utils.stateless.functional_call(m, parameters_and_buffers=w,
                                                      args=(ember.ones(1, 2),))
    np.testing.assert_allclose(out.detach().numpy(), [[2.0]])


def test_fork_rng_device_type_none_restores_state():
    ember.manual_seed(3)
    with ember.random.fork_rng():
        ember.rand(5)
    with ember.random.fork_rng(device_type=None, devices=[]):
        ember.rand(5)
    a = ember.rand(3)
    ember.manual_seed(3)
    np.testing.assert_array_equal(a.numpy(), ember.rand(3).numpy())


def test_random_split_defaults_to_the_default_generator():
    ember.manual_seed(7)
    a = [list(s.indices) for s in ember.utils.data.random_split(range(10), [3, 7])]
    ember.manual_seed(7)
    b = [list(s.indices) for s in ember.utils.data.random_split(range(10), [3, 7])]
    assert a == b and sorted(a[0] + a[1]) == list(range(10))
    import inspect
    assert inspect.signature(ember.utils.data.random_split).parameters["generator"].default \
        is ember.default_generator
