"""ember.compile's guards and what it says about them (issue 18).

A new input dtype, rank, requires_grad, grad mode or module training flag compiles
again; the same again hits the cache (recompile counts equal torch.compile's, counted with
a counting backend on both sides).  ``EMBER_LOGS`` / `set_logs`: ``recompiles`` prints one
line per recompile naming the input and what changed, ``graph_breaks`` one line per break
with the user's file:line, ``output_code`` what the backend made.  At
``config.cache_size_limit`` ember warns once and keeps compiling (no fall back to eager).
"""
import os
import subprocess
import sys
import warnings

import pytest

import ember
import ember.nn as nn
from ember._dynamo import config, logs
from dyn_helpers import compiled, same, torch_compiled

HERE = os.path.abspath(__file__)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))


@pytest.fixture(autouse=True)
def _quiet_logs(monkeypatch):
    monkeypatch.delenv("EMBER_LOGS", raising=False)
    monkeypatch.delenv("TORCH_LOGS", raising=False)
    logs.set_logs()
    yield
    logs.set_logs()


def _sin_plus(x):
    return x.sin() + 1


def _count(fn, calls, make, torch_make=None):
    """Compile counts of ``fn`` over ``calls`` (arguments for ``make``), ember and torch."""
    cf, cnt = compiled(fn)
    for c in calls:
        args = make(ember, *c)
        same(cf(*args), fn(*args))
    if torch_make is None:
        return cnt.frame_count, None
    import torch
    tf, tcnt = torch_compiled(fn)
    for c in calls:
        tf(*torch_make(torch, *c))
    return cnt.frame_count, tcnt.frame_count


def _tensor(lib, shape, dtype="float32", rg=False):
    return lib.ones(*shape, dtype=getattr(lib, dtype), requires_grad=rg)


@pytest.mark.parametrize("name, calls, expected", [
    ("dtype", [((3,), "float32"), ((3,), "float32"), ((3,), "float64"), ((3,), "float64"),
               ((3,), "float32")], 2),
    ("rank", [((3,),), ((3,),), ((3, 3),), ((3, 3),), ((3,),)], 2),
    ("requires_grad", [((3,), "float32", False), ((3,), "float32", True),
                       ((3,), "float32", True), ((3,), "float32", False)], 2),
])
def test_input_property_recompiles_once_then_hits(name, calls, expected):
    ours, theirs = _count(_sin_plus, calls, lambda lib, *c: (_tensor(lib, *c),),
                          lambda lib, *c: (_tensor(lib, *c),))
    assert ours == expected
    assert theirs == expected


def test_grad_mode_recompiles_once_then_hits():
    import torch

    def f(w):
        return (w * w).sum()

    for lib, (cf, cnt) in ((ember, compiled(f)), (torch, torch_compiled(f))):
        w = lib.ones(3, requires_grad=True)
        assert cf(w).requires_grad
        with lib.no_grad():
            assert not cf(w).requires_grad
            cf(w)
        r = cf(w)
        r.backward()
        assert w.grad.tolist() == [2.0, 2.0, 2.0]
        assert cnt.frame_count == 2, lib


def test_module_training_flag_recompiles_once_then_hits():
    import torch

    def run(lib, compile_fn):
        lib.manual_seed(0)
        m = lib.nn.Sequential(lib.nn.Linear(4, 4), lib.nn.BatchNorm1d(4))
        om, cnt = compile_fn(m)
        x = lib.randn(6, 4)
        outs = [om(x)]
        om.eval()
        outs += [om(x), om(x)]
        om.train()
        outs.append(om(x))
        return cnt.frame_count, outs

    ours, ours_out = run(ember, compiled)
    theirs, theirs_out = run(torch, torch_compiled)
    assert ours == theirs == 2
    for a, b in zip(ours_out, theirs_out):
        same(a, b, rtol=1e-5, atol=1e-5)


def test_replaced_parameter_is_used():
    m = nn.Linear(2, 1, bias=False)
    om, _ = compiled(m)
    x = ember.ones(1, 2)
    assert om(x).shape == (1, 1)
    m.weight = nn.Parameter(ember.full((1, 2), 3.0))
    assert om(x).item() == 6.0
    with ember.no_grad():
        m.weight.fill_(0.5)
    assert om(x).item() == 1.0


def test_tensor_attribute_read_in_python_is_current():
    class Scaled(nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = 2.0

        def forward(self, x):
            return x * self.scale

    m = Scaled()
    om, cnt = compiled(m)
    assert om(ember.ones(2)).tolist() == [2.0, 2.0]
    m.scale = 3.0
    assert om(ember.ones(2)).tolist() == [3.0, 3.0]
    m.scale = 4.0
    assert om(ember.ones(2)).tolist() == [4.0, 4.0]
    assert cnt.frame_count == 2  # the number became a graph input after one recompile


# ---- logs --------------------------------------------------------------------------------------
def _log_lines(text, artifact):
    return [ln for ln in text.splitlines() if f"[__{artifact}]" in ln]


def test_recompiles_log_one_line_per_recompile_naming_input_and_change(capsys):
    logs.set_logs(recompiles=True)
    cf, cnt = compiled(_sin_plus)
    cf(ember.ones(3))
    cf(ember.ones(3))
    assert _log_lines(capsys.readouterr().err, "recompiles") == []
    cf(ember.ones(3, dtype=ember.float64))
    cf(ember.ones(3, 3, dtype=ember.float64))
    cf(ember.ones(3, 3, dtype=ember.float64, requires_grad=True))
    lines = _log_lines(capsys.readouterr().err, "recompiles")
    assert len(lines) == 3 == cnt.frame_count - 1
    assert "x" in lines[0] and "dtype" in lines[0] and "float64" in lines[0]
    assert "x" in lines[1] and "rank" in lines[1]
    assert "x" in lines[2] and "requires_grad" in lines[2]
    assert all("_sin_plus" in ln for ln in lines)


def test_recompiles_log_for_a_size_change_says_now_dynamic(capsys):
    logs.set_logs(recompiles=True)
    cf, _ = compiled(_sin_plus)
    for n in (3, 4, 5):
        cf(ember.ones(n))
    lines = _log_lines(capsys.readouterr().err, "recompiles")
    assert len(lines) == 1
    assert "size 0 of x" in lines[0] and "3" in lines[0] and "4" in lines[0]
    assert "dynamic" in lines[0]


def _two_breaks(x):
    y = x.cos()
    v = y.sum().item()  # LOG-BREAK-1
    y = y * v
    z = _eager(y)  # LOG-BREAK-2
    return z + 1


@ember._dynamo.disable
def _eager(t):
    return t * 2


def _line(marker):
    with open(HERE, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if line.rstrip().endswith(f"# {marker}"):
                return n
    raise LookupError(marker)


def test_graph_breaks_log_one_line_per_break_with_file_line(capsys):
    logs.set_logs(graph_breaks=True)
    cf, _ = compiled(_two_breaks)
    cf(ember.ones(3))
    lines = _log_lines(capsys.readouterr().err, "graph_breaks")
    assert len(lines) == 2
    assert f"{HERE}:{_line('LOG-BREAK-1')}" in lines[0]
    assert f"{HERE}:{_line('LOG-BREAK-2')}" in lines[1]
    assert "disable" in lines[1]


def test_output_code_prints_what_the_backend_made(capsys):
    logs.set_logs(output_code=True)
    cf = ember.compile(lambda x: x.exp() * 3, backend="eager")
    cf(ember.ones(2))
    err = capsys.readouterr().err
    assert len(_log_lines(err, "output_code")) == 1
    assert "exp" in err and "def " in err
    cf(ember.ones(2))
    assert capsys.readouterr().err == ""  # a cache hit makes nothing new


def test_set_logs_replaces_previous_settings_as_torch(capsys):
    logs.set_logs(recompiles=True)
    logs.set_logs(graph_breaks=True)
    assert not logs.enabled("recompiles") and logs.enabled("graph_breaks")
    logs.set_logs()
    assert not logs.enabled("graph_breaks")
    logs.set_logs(recompiles_verbose=True, bytecode=True)  # torch's names are accepted
    assert logs.enabled("recompiles")
    with pytest.raises(TypeError):
        logs.set_logs(no_such_artifact=True)


def test_dynamo_component_level_switches_its_artifacts():
    import logging
    logs.set_logs(dynamo=logging.INFO)
    assert logs.enabled("recompiles") and logs.enabled("graph_breaks")
    logs.set_logs(dynamo=logging.WARNING)
    assert not logs.enabled("recompiles")


@pytest.mark.parametrize("text, on", [
    ("+dynamo", {"recompiles", "graph_breaks", "graph_code"}),
    ("all", {"recompiles", "graph_breaks", "graph_code", "output_code", "dynamic"}),
    ("inductor", {"output_code"}),
    ("recompiles, output_code", {"recompiles", "output_code"}),
    ("recompiles_verbose,graph", {"recompiles", "graph_code"}),
    ("bytecode,no_such_thing", set()),
])
def test_ember_logs_names(monkeypatch, text, on):
    monkeypatch.setenv("EMBER_LOGS", text)
    assert {a for a in logs.ARTIFACTS if logs.enabled(a)} == on


def test_ember_logs_environment_variable_is_read_when_it_changes(monkeypatch, capsys):
    cf, _ = compiled(_sin_plus)
    cf(ember.ones(3))
    monkeypatch.setenv("EMBER_LOGS", "recompiles,graph_breaks")
    cf(ember.ones(3, dtype=ember.float64))
    assert len(_log_lines(capsys.readouterr().err, "recompiles")) == 1
    monkeypatch.setenv("EMBER_LOGS", "")
    cf(ember.ones(3, dtype=ember.float16))
    assert capsys.readouterr().err == ""


def test_torch_logs_is_ignored_without_compat(monkeypatch):
    monkeypatch.setenv("TORCH_LOGS", "recompiles")
    assert not logs.enabled("recompiles")


_COMPAT_SCRIPT = r"""
import ember.compat
ember.compat.install()
import torch
f = torch.compile(lambda x: x + 1, backend="eager")
f(torch.ones(2)); f(torch.ones(2, dtype=torch.float64))
import torch._logging
torch._logging.set_logs(graph_breaks=True)
g = torch.compile(lambda x: torch._dynamo.graph_break() or x * 2, backend="eager")
g(torch.ones(2))
"""


def test_torch_logs_and_torch_logging_under_compat():
    env = dict(os.environ, TORCH_LOGS="recompiles", PYTHONPATH=ROOT)
    env.pop("EMBER_LOGS", None)
    out = subprocess.run([sys.executable, "-c", _COMPAT_SCRIPT], env=env, cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert len(_log_lines(out.stderr, "recompiles")) == 1
    assert "dtype" in _log_lines(out.stderr, "recompiles")[0]


_SCRIPT = """
import torch
def f(x):
    y = x.sin()
    print("sum", round(y.sum().item(), 3))
    return y * 2
g = torch.compile(f, backend="eager")
g(torch.ones(3))
"""


def test_python_m_ember_compat_reads_torch_logs(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(_SCRIPT)
    env = dict(os.environ, TORCH_LOGS="graph_breaks", PYTHONPATH=ROOT)
    env.pop("EMBER_LOGS", None)
    out = subprocess.run([sys.executable, "-m", "ember.compat", str(script)], env=env,
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "sum 2.524"
    (line,) = _log_lines(out.stderr, "graph_breaks")
    assert f"{script}:5" in line


# ---- cache size limit ------------------------------------------------------------------------------
_DTYPES = ("float32", "float64", "float16", "bfloat16", "int32", "int64", "int16", "int8")


def test_cache_size_limit_warns_once_and_keeps_compiling():
    cf, cnt = compiled(lambda x: x * 2)
    with config.patch(cache_size_limit=3):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for d in _DTYPES:
                x = ember.ones(2, dtype=getattr(ember, d))
                same(cf(x), x * 2)
                cf(x)  # the same again hits the cache
    limit_warnings = [w for w in caught if "cache_size_limit" in str(w.message)]
    assert len(limit_warnings) == 1
    msg = str(limit_warnings[0].message)
    assert "dtype" in msg  # the summary says what kept recompiling
    assert cnt.frame_count == len(_DTYPES)  # still compiled past the limit: no fall back


def test_cache_size_limit_generalises_what_varies():
    cf, cnt = compiled(lambda x: x + 1)
    with config.patch(cache_size_limit=2, automatic_dynamic_shapes=False):
        with pytest.warns(RuntimeWarning, match="cache_size_limit"):
            for n in range(2, 9):
                same(cf(ember.ones(n)), ember.full((n,), 2.0))
    # static graphs for 2 and 3, then at the limit size 0 becomes symbolic: one more graph
    assert cnt.frame_count == 3


def test_number_argument_changing_type():
    cf, _ = compiled(lambda x, s: x * s)
    for s in (2.0, 3.0, 3, 4, 2.5):
        same(cf(ember.ones(2), s), ember.full((2,), float(s)))


def test_int_then_float_number_argument():
    cf, _ = compiled(lambda x, s: x * s)
    for s in (2, 3, 2.5):
        same(cf(ember.ones(2), s), ember.full((2,), float(s)))
    for s in (2, 3, 4):
        same(cf(ember.ones(2, dtype=ember.int64), s), ember.full((2,), s, dtype=ember.int64))


def test_grad_mode_recompile_is_explained(capsys):
    logs.set_logs(recompiles=True)
    cf, _ = compiled(lambda w: (w * w).sum())
    w = ember.ones(2, requires_grad=True)
    cf(w)
    with ember.no_grad():
        cf(w)
    (line,) = _log_lines(capsys.readouterr().err, "recompiles")
    assert "grad mode changed from True to False" in line


def test_output_code_of_the_inductor_backend(capsys):
    logs.set_logs(output_code=True)
    cf = ember.compile(lambda x: (x.sin() * 2).sum(), backend="inductor")
    same(cf(ember.ones(4)), (ember.ones(4).sin() * 2).sum(), rtol=1e-5, atol=1e-6)
    err = capsys.readouterr().err
    assert "output code" in err and ("for (" in err or "def " in err)


def test_error_on_graph_break_setting_acts_as_fullgraph():
    cf, _ = compiled(lambda x: x + float(x.sum()))  # a value needed: a graph break
    with config.patch(error_on_graph_break=True):
        with pytest.raises(ember._dynamo.Unsupported):
            cf(ember.ones(1))
    assert cf(ember.ones(1)).shape == (1,)


@pytest.mark.parametrize("backend", [
    "eager",
    "aot_eager",
])
def test_parameter_requires_grad_toggled(backend):
    m = nn.Linear(2, 2)
    om = ember.compile(m, backend=backend)
    x = ember.ones(3, 2)
    for _ in range(2):
        om(x).sum().backward()
    m.weight.requires_grad_(False)
    m.weight.grad = m.bias.grad = None
    om(x).sum().backward()
    assert m.weight.grad is None and m.bias.grad.tolist() == [3.0, 3.0]
    m.bias.requires_grad_(False)
    out = om(x)
    assert not out.requires_grad and out.grad_fn is None


def test_module_recompile_names_the_forward_argument(capsys):
    logs.set_logs(recompiles=True)
    om = ember.compile(nn.Linear(2, 2), backend="eager")
    om(ember.ones(1, 2))
    om(ember.ones(3, 2))
    (line,) = _log_lines(capsys.readouterr().err, "recompiles")
    assert "Linear.forward" in line and "size 0 of input changed from 1 to 3" in line
